// The report's "Environment and method" section: what the orchestrator read
// back from each target (the file limit in force, the facts a target
// reported about its own build) shown where a reader compares targets.
#include <gtest/gtest.h>

#include "controller/report/markdown.h"
#include "controller/report/study_figures.h"

namespace fairbench::report {
namespace {

RunRecord WithNotes(std::vector<std::string> notes) {
  RunRecord r = StudyFigures();
  r.environment.notes = std::move(notes);
  return r;
}

// Catches: the facts a target reported left out of the report, shown as a
// raw JSON line instead of a table, or attributed to the wrong target; the
// nofile in force not shown beside the one asked for.
TEST(EnvironmentTest, ReadBackFactsAndNofileJoinTheTargets) {
  const RunRecord base = StudyFigures();
  ASSERT_GE(base.run.spec.targets.size(), 2u);
  const std::string first = base.run.spec.targets[0].name;
  const std::string second = base.run.spec.targets[1].name;
  const std::string md = RenderMarkdown(WithNotes(
      {"target " + first +
           ": facts: {\"framework\":\"drogon\",\"version\":\"1.9.8\",\"workerModel\":\"event loop per thread\","
           "\"threads\":4,\"jsonLibrary\":\"jsoncpp 1.9.5\",\"allocator\":\"glibc malloc\",\"compiler\":\"gcc 12.2.0\","
           "\"flags\":\"-O3\",\"study\":\"hello answered text/html there\"}",
       "target " + second +
           ": nofile in force: 20000, read back from /proc/7/limits (asked for 65536; this "
           "machine's hard limit is lower)",
       "kernel.somaxconn = 4096"}));
  EXPECT_NE(md.find("| " + first +
                    " | drogon 1.9.8 | event loop per thread | 4 | jsoncpp 1.9.5 | glibc malloc | gcc "
                    "12.2.0, -O3 | hello answered text/html there |"),
            std::string::npos)
      << md.substr(md.find("Environment and method"), 3000);
  EXPECT_EQ(md.find("facts: {"), std::string::npos) << "the raw facts line is shown";
  EXPECT_NE(md.find("65,536 (in force: 20000)"), std::string::npos)
      << md.substr(md.find("Environment and method"), 3000);
  EXPECT_NE(md.find("nofile in force: 20000, read back from /proc/7/limits"), std::string::npos);
  EXPECT_NE(md.find("kernel.somaxconn = 4096"), std::string::npos);
}

// Catches: a broken facts line crashing the report or being dropped: it
// stays a plain note.
TEST(EnvironmentTest, BrokenFactsStayANote) {
  const RunRecord base = StudyFigures();
  const std::string first = base.run.spec.targets[0].name;
  const std::string md = RenderMarkdown(WithNotes({"target " + first + ": facts: {not json"}));
  EXPECT_NE(md.find("facts: {not json"), std::string::npos);
  EXPECT_EQ(md.find("differs from the study's server"), std::string::npos);
}

// A local target whose command asks for "{port}" gets a free port when it
// starts; the targets table shows the port read back from it, or "chosen at
// run time" for a record without one, never the spec's default 8080.
// Catches: the default port shown for a target that never listened there.
TEST(EnvironmentTest, APortChosenAtRunTimeIsShownAsSuch) {
  RunRecord r = StudyFigures();
  r.environment.platform = "local";
  ASSERT_GE(r.run.spec.targets.size(), 3u);
  r.run.spec.targets[0].local = api::LocalProcess{};
  r.run.spec.targets[0].local->command = {"server", "--port", "{port}"};
  r.run.spec.targets[1].local = api::LocalProcess{};
  r.run.spec.targets[1].local->command = {"server", "--port={port}"};
  r.run.spec.targets[2].local = api::LocalProcess{};
  r.run.spec.targets[2].local->command = {"server"};  // listens on spec.port itself
  r.run.spec.targets[2].port = 9000;
  const std::string first = r.run.spec.targets[0].name;
  r.environment.notes = {"target " + first + ": port: 40211 (chosen at run time)"};
  const std::string md = RenderMarkdown(r);
  EXPECT_NE(md.find("| " + first + " | server --port {port} | 40211 (chosen at run time) |"), std::string::npos)
      << md.substr(md.find("Environment and method"), 3000);
  EXPECT_NE(md.find("| " + r.run.spec.targets[1].name + " | server --port={port} | chosen at run time |"),
            std::string::npos);
  EXPECT_NE(md.find("| " + r.run.spec.targets[2].name + " | server | 9000 |"), std::string::npos);
  EXPECT_EQ(md.find("- target " + first + ": port:"), std::string::npos) << "the port is a table cell, not a note";
}

}  // namespace
}  // namespace fairbench::report
