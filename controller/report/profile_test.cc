// Folding perf script output into stacks, and a cell's profile in
// results.json.
#include "controller/report/profile.h"

#include <gtest/gtest.h>

#include "controller/report/run_record.h"

namespace fairbench::report {
namespace {

// What `perf script -F comm,tid,ip,sym,dso` prints: a header per sample,
// then its frames, leaf first.
constexpr const char* kScript =
    "nginx 4711 \n"
    "\tffffffff821ed4e6 do_syscall_64 ([kernel.kallsyms])\n"
    "\t           f8350 __GI___libc_write (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\t           1b4a1 ngx_http_write_filter (/usr/sbin/nginx)\n"
    "\t           2aa4 main (/usr/sbin/nginx)\n"
    "\n"
    "nginx 4712 \n"
    "\tffffffff821ed4e6 do_syscall_64 ([kernel.kallsyms])\n"
    "\t           f8350 __GI___libc_write (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\t           1b4a1 ngx_http_write_filter (/usr/sbin/nginx)\n"
    "\t           2aa4 main (/usr/sbin/nginx)\n"
    "\n"
    "Web Content 99 \n"
    "\t            5278 [unknown] (/usr/bin/yes)\n"
    "\t a790a790a790a79 [unknown] ([unknown])\n"
    "\n"
    "srv 7 \n"
    "\t  401000 std::map<int, int>::find(int const&) const+0x1f (/srv)\n"
    "\t  401200 a;b (/srv)\n"
    "\n"
    "idle 8 \n"
    "\n";

// Catches: stacks kept leaf first, threads of a process not merged, a
// thread id left in the process name, kernel frames not marked, unknown
// symbols losing their file, offsets kept (every address its own frame),
// names with spaces or ';' breaking the format, a sample with no frames
// dropped.
TEST(ProfileTest, FoldsPerfScriptOutput) {
  const Folded f = FoldPerfScript(kScript);
  EXPECT_EQ(f.samples, 5u);
  EXPECT_EQ(f.omitted_samples, 0u);
  EXPECT_EQ(f.stacks, (std::vector<FoldedStack>{
                          {"Web Content;[unknown];[yes]", 1},
                          {"idle", 1},
                          {"nginx;main;ngx_http_write_filter;__GI___libc_write;do_syscall_64_[k]", 2},
                          {"srv;a:b;std::map<int, int>::find(int const&) const", 1},
                      }));
}

// Catches: a profile of a busy server growing without bound: beyond the cap
// the rarest stacks go and their samples are counted.
TEST(ProfileTest, KeepsTheMostSampledStacks) {
  std::string text;
  for (int i = 0; i < 5; ++i) text += "s 1\n\t1 hot (/s)\n\n";
  for (int i = 0; i < 3; ++i) text += "s 1\n\t1 warm (/s)\n\n";
  text += "s 1\n\t1 cold (/s)\n\ns 1\n\t1 colder (/s)\n\n";
  const Folded f = FoldPerfScript(text, 2);
  EXPECT_EQ(f.samples, 10u);
  EXPECT_EQ(f.omitted_samples, 2u);
  EXPECT_EQ(f.stacks, (std::vector<FoldedStack>{{"s;hot", 5}, {"s;warm", 3}}));
}

CellProfile Recorded() {
  CellProfile p;
  p.command = "perf record -F 99 -g -p 4711";
  p.frequency_hz = 99;
  p.seconds = 10.02;
  p.samples = 3;
  p.stacks = {{"nginx;main;epoll_wait_[k]", 2}, {"nginx;main;ngx process 2", 1}};
  return p;
}

// The folded lines are the standard format (a flame graph tool reads them
// as they are), and the record reads back what it wrote. Catches: a name
// with spaces split at the wrong space, a field lost on the way back.
TEST(ProfileTest, RoundTripsThroughResultsJson) {
  RunRecord r;
  r.run.metadata.name = "p";
  CellRecord c;
  c.result.target = "a";
  c.result.scenario = "s";
  c.result.connections = 1;
  c.profile = Recorded();
  r.cells.push_back(c);
  r.run.status.results.push_back(c.result);
  CellRecord unavailable = c;
  unavailable.result.connections = 2;
  unavailable.profile = CellProfile{ProfileState::kUnavailable, "perf is not installed here", "", 99, 0, 0, 0, {}};
  r.cells.push_back(unavailable);
  r.run.status.results.push_back(unavailable.result);
  const nlohmann::ordered_json j = ToJson(r);
  EXPECT_EQ(j["cells"][0]["profile"]["folded"],
            (nlohmann::ordered_json{"nginx;main;epoll_wait_[k] 2", "nginx;main;ngx process 2 1"}));
  EXPECT_EQ(j["cells"][1]["profile"]["state"], "Unavailable");
  auto back = RunRecordFromJson(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->cells.size(), 2u);
  EXPECT_EQ(back->cells[0].profile, c.profile);
  EXPECT_EQ(back->cells[1].profile, unavailable.profile);
}

// Reading is strict: a broken profile is named by its path.
TEST(ProfileTest, ReadingNamesWhatIsWrong) {
  nlohmann::json j = nlohmann::json::parse(ToJson(Recorded()).dump());
  j["state"] = "Maybe";
  j["folded"][1] = "no count here";
  j["samples"] = -1;
  j["extra"] = 1;
  api::Diagnostics d;
  CellProfile p;
  ReadProfile(j, "cells[0].profile", d, p);
  EXPECT_EQ(d.Lines(""), (std::vector<std::string>{
                             "cells[0].profile.extra: unknown field",
                             "cells[0].profile.state: must be Recorded, Unavailable or Failed, got \"Maybe\"",
                             "cells[0].profile.samples: must be a whole number ≥ 0, got -1",
                             "cells[0].profile.folded[1]: must be \"frame;frame;… COUNT\", got \"no count here\"",
                         }));
}

}  // namespace
}  // namespace fairbench::report
