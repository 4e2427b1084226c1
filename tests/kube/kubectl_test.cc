// The independent check: the real kubectl (the one built with the cluster,
// the binary users run) against the real kube-apiserver over HTTPS with the
// administrator's client certificate, in the test's own namespace, beside
// fairbench's client writing the same objects: what the client writes is
// what a user sees with kubectl, and what kubectl writes the client reads.
#include <iterator>
#include <set>
#include <sstream>

#include "common/clock.h"
#include "controller/kube/event_recorder.h"
#include "tests/kube/kubectl_env.h"

namespace fairbench::kube {
namespace {

using namespace std::chrono_literals;
using testenv::TestRuns;

// The tests' BenchmarkRuns, as kubectl names them without ambiguity.
constexpr char kRuns[] = "benchmarkruns.kubetest.fairbench.dev";

// The cells of row `index` (0: the header) of a kubectl table.
std::vector<std::string> Row(const std::string& table, size_t index) {
  std::istringstream rows(table);
  std::string row;
  for (size_t i = 0; i <= index; ++i) {
    if (!std::getline(rows, row)) return {};
  }
  std::istringstream cells(row);
  return {std::istream_iterator<std::string>(cells), std::istream_iterator<std::string>()};
}

// Catches: the client's status patch sent to the object instead of its
// status subresource (the server then drops status: kubectl shows no phase
// nor progress), or sent as another patch type than the merge patch asked
// for (a JSON patch body is refused). Also checks the tests' CRD as users
// meet it: printer columns, short name, defaults, and the real server's 422
// with every cause.
TEST_F(Kubectl, ApplyGetYamlDeleteAndTheInvalidMessage) {
  InstallCrd();
  if (HasFatalFailure()) return;
  EXPECT_EQ(Ok({"apply", "-f", Data("benchmarkrun.yaml")}),
            "benchmarkrun.kubetest.fairbench.dev/cpp-frameworks created\n");
  // Applying the same file again is idempotent.
  EXPECT_EQ(Ok({"apply", "-f", Data("benchmarkrun.yaml")}),
            "benchmarkrun.kubetest.fairbench.dev/cpp-frameworks unchanged\n");

  // Printer columns. (By the full name: kbr, the CRD's short name, is
  // ambiguous while another test's CRD with the same short name exists.)
  auto status = client_->Patch(TestRuns(), ns(), "cpp-frameworks", PatchType::kMerge,
                               R"({"status":{"phase":"Running","progress":"3/12"}})", {}, "status");
  ASSERT_TRUE(status.ok()) << status.error().ToString();
  const std::string table = Ok({"get", kRuns});
  EXPECT_EQ(Row(table, 0), (std::vector<std::string>{"NAME", "PHASE", "THREADS", "PROGRESS", "AGE"})) << table;
  const std::vector<std::string> c = Row(table, 1);
  ASSERT_EQ(c.size(), 5u) << table;
  EXPECT_EQ(c[0], "cpp-frameworks");
  EXPECT_EQ(c[1], "Running");
  EXPECT_EQ(c[2], "8");
  EXPECT_EQ(c[3], "3/12");
  EXPECT_TRUE(Row(table, 2).empty()) << table;

  // -o yaml shows the stored object with its defaults.
  const std::string yaml = Ok({"get", kRuns, "cpp-frameworks", "-o", "yaml"});
  EXPECT_NE(yaml.find("duration: 30s"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("phase: Running"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("namespace: " + ns() + "\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("uid:"), std::string::npos);

  // An invalid object: kubectl shows the server's 422 with every cause.
  auto invalid = Run({"apply", "-f", Data("benchmarkrun-invalid.yaml")});
  EXPECT_NE(invalid.exit_code, 0);
  EXPECT_EQ(invalid.out, "");
  // The causes come in no fixed order (the server's schema validation).
  std::istringstream said(invalid.err);
  std::string first;
  std::getline(said, first);
  EXPECT_EQ(first, "The BenchmarkRun \"broken\" is invalid: ") << invalid.err;
  std::set<std::string> causes;
  for (std::string line; std::getline(said, line);) causes.insert(line);
  EXPECT_EQ(causes,
            (std::set<std::string>{
                "* spec.load.threads: Invalid value: 0: spec.load.threads in body should be greater than or equal to 1",
                "* spec.targets[0].port: Invalid value: 70000: spec.targets[0].port in body should be less than or "
                "equal to 65535",
                "* spec.targets[0].name: Invalid value: \"Drogon\": spec.targets[0].name in body should match "
                "'^[a-z0-9-]+$'"}))
      << invalid.err;

  EXPECT_EQ(Ok({"delete", kRuns, "cpp-frameworks"}),
            "benchmarkrun.kubetest.fairbench.dev \"cpp-frameworks\" deleted from " + ns() + " namespace\n");
  auto empty = Run({"get", kRuns});
  EXPECT_EQ(empty.exit_code, 0);
  EXPECT_EQ(empty.out, "");
  EXPECT_EQ(empty.err, "No resources found in " + ns() + " namespace.\n");
}

// Catches: a status patch of the client's that a watcher never sees as a
// change (sent to the object, where the status subresource ignores it; an
// empty or unchanged body), so that `kubectl get -w` never shows a run
// progress.
TEST_F(Kubectl, WatchPrintsEachChange) {
  InstallCrd();
  if (HasFatalFailure()) return;
  Ok({"apply", "-f", Data("benchmarkrun.yaml")});
  auto watch = testenv::ChildProcess::Spawn(kubectl_, Args({"get", kRuns, "--watch"}), {"HOME=" + dir_});
  ASSERT_TRUE(watch);
  ASSERT_TRUE(watch->WaitFor("cpp-frameworks", 10s)) << watch->output();
  EXPECT_NE(watch->output().find("PHASE"), std::string::npos);
  watch->Mark();
  ASSERT_TRUE(client_
                  ->Patch(TestRuns(), ns(), "cpp-frameworks", PatchType::kMerge,
                          R"({"status":{"phase":"Running","progress":"1/4"}})", {}, "status")
                  .ok());
  ASSERT_TRUE(watch->WaitFor("1/4", 10s)) << watch->output();
  watch->Mark();
  ASSERT_TRUE(client_
                  ->Patch(TestRuns(), ns(), "cpp-frameworks", PatchType::kMerge,
                          R"({"status":{"phase":"Succeeded","progress":"4/4"}})", {}, "status")
                  .ok());
  ASSERT_TRUE(watch->WaitFor("Succeeded", 10s)) << watch->output();
  watch->Kill();
}

// Server-side apply between kubectl and the client, each with its field
// manager. Catches: the client's Apply sent without its fieldManager (the
// server refuses an apply patch without one) or without force=true when
// asked (the conflict is not overridden), a merge patch whose
// field_manager is dropped (kubectl's conflict would name the client's
// default manager, not "fairbench-controller"), and a 409 from an apply not
// read as a conflict with the server's message.
TEST_F(Kubectl, ServerSideApplyAndConflicts) {
  InstallCrd();
  if (HasFatalFailure()) return;
  EXPECT_EQ(Ok({"apply", "--server-side", "-f", Data("benchmarkrun.yaml")}),
            "benchmarkrun.kubetest.fairbench.dev/cpp-frameworks serverside-applied\n");

  // The client applies a different thread count: kubectl's field.
  Json mine = testenv::BenchmarkRun("cpp-frameworks", 2, ns());
  mine["spec"] = {{"load", {{"threads", 2}}}};
  PatchOptions apply;
  apply.field_manager = "fairbench-controller";
  auto refused = client_->Apply(TestRuns(), mine, apply);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.reason(), Reason::kConflict) << refused.error().ToString();
  EXPECT_EQ(refused.error().http_code, 409);
  EXPECT_EQ(refused.error().message, "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.load.threads");
  apply.force = true;
  auto forced = client_->Apply(TestRuns(), mine, apply);
  ASSERT_TRUE(forced.ok()) << forced.error().ToString();
  EXPECT_EQ((*forced)["spec"]["load"]["threads"], 2);
  EXPECT_EQ(Ok({"get", kRuns, "cpp-frameworks", "-o", "jsonpath={.spec.load.threads}"}), "2");

  // Now kubectl's apply meets the client's field manager.
  auto conflict = Run({"apply", "--server-side", "-f", Data("benchmarkrun.yaml")});
  EXPECT_NE(conflict.exit_code, 0);
  EXPECT_NE(conflict.err.find("error: Apply failed with 1 conflict: conflict with \"fairbench-controller\": "
                              ".spec.load.threads\n"),
            std::string::npos)
      << conflict.out << conflict.err;
  Ok({"apply", "--server-side", "--force-conflicts", "-f", Data("benchmarkrun.yaml")});
  EXPECT_EQ(Ok({"get", kRuns, "cpp-frameworks", "-o", "jsonpath={.spec.load.threads}"}), "8");

  // A merge patch of the client's, with its manager: kubectl names it too,
  // now as an update's manager ("using" the version it wrote), not an
  // apply's.
  PatchOptions patch;
  patch.field_manager = "fairbench-controller";
  ASSERT_TRUE(
      client_->Patch(TestRuns(), ns(), "cpp-frameworks", PatchType::kMerge, R"({"spec":{"load":{"threads":3}}})", patch)
          .ok());
  conflict = Run({"apply", "--server-side", "-f", Data("benchmarkrun.yaml")});
  EXPECT_NE(conflict.exit_code, 0);
  EXPECT_NE(conflict.err.find("error: Apply failed with 1 conflict: conflict with \"fairbench-controller\" using "
                              "kubetest.fairbench.dev/v1alpha1: .spec.load.threads\n"),
            std::string::npos)
      << conflict.out << conflict.err;
}

// Catches: an Event of fairbench's EventRecorder that kubectl cannot show
// against its object (involvedObject without kind, name or namespace: it is
// missing from `kubectl describe`), or without the timestamps kubectl reads
// (LAST SEEN "<unknown>"), the source component or host missing (describe's
// FROM column), or a repeat not counted on the same Event (kubectl shows
// "x2").
// Also: discovery of the tests' CRD as kubectl reads it.
TEST_F(Kubectl, DiscoveryEventsAndBuiltInTables) {
  const std::string resources = Ok({"api-resources"});
  for (const char* r : {"pods", "configmaps", "leases", "customresourcedefinitions"}) {
    EXPECT_NE(resources.find(r), std::string::npos) << r;
  }
  EXPECT_NE(Ok({"get", "namespaces"}).find(ns() + " "), std::string::npos);
  InstallCrd();
  if (HasFatalFailure()) return;
  const std::string group = Ok({"api-resources", "--api-group", "kubetest.fairbench.dev"});
  EXPECT_EQ(Row(group, 1), (std::vector<std::string>{"benchmarkruns", "kbr", "kubetest.fairbench.dev/v1alpha1", "true",
                                                     "BenchmarkRun"}))
      << group;
  Ok({"apply", "-f", Data("benchmarkrun.yaml")});
  auto run = client_->Get(TestRuns(), ns(), "cpp-frameworks");
  ASSERT_TRUE(run.ok()) << run.error().ToString();

  EventRecorderOptions options;
  options.component = "fairbench-controller";
  options.host = "node-1";
  EventRecorder recorder(*client_, SystemClock::Instance(), options);
  ASSERT_TRUE(recorder.Normal(*run, "TargetDeployed", "drogon is ready").ok());
  ASSERT_TRUE(recorder.Warning(*run, "AgentLost", "agent 1 stopped answering").ok());
  ASSERT_TRUE(recorder.Warning(*run, "AgentLost", "agent 1 stopped answering").ok());

  // LAST SEEN is from lastTimestamp; the rows in the order of the
  // Events' names (<object>.<hex nanoseconds>: the order recorded).
  const std::string events = Ok({"get", "events", "--sort-by=.metadata.name"});
  EXPECT_EQ(Row(events, 0), (std::vector<std::string>{"LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}))
      << events;
  std::vector<std::string> deployed = Row(events, 1), lost = Row(events, 2);
  ASSERT_EQ(deployed.size(), 7u) << events;
  ASSERT_EQ(lost.size(), 8u) << events;
  EXPECT_TRUE(Row(events, 3).empty()) << events;
  // An age ("0s", "3s"): from lastTimestamp; "<unknown>" without one.
  EXPECT_TRUE(deployed[0].size() >= 2 && deployed[0].back() == 's' &&
              deployed[0].find_first_not_of("0123456789") == deployed[0].size() - 1)
      << events;
  EXPECT_EQ(
      std::vector<std::string>(deployed.begin() + 1, deployed.end()),
      (std::vector<std::string>{"Normal", "TargetDeployed", "benchmarkrun/cpp-frameworks", "drogon", "is", "ready"}))
      << events;
  EXPECT_EQ(std::vector<std::string>(lost.begin() + 1, lost.end()),
            (std::vector<std::string>{"Warning", "AgentLost", "benchmarkrun/cpp-frameworks", "agent", "1", "stopped",
                                      "answering"}))
      << events;
  // The repeat is counted on the one Event (the wide table's COUNT).
  const std::string counts =
      Ok({"get", "events", "--sort-by=.metadata.name", "-o",
          "custom-columns=REASON:.reason,COUNT:.count,FROM:.source.component,HOST:.source.host", "--no-headers"});
  EXPECT_EQ(Row(counts, 0), (std::vector<std::string>{"TargetDeployed", "1", "fairbench-controller", "node-1"}))
      << counts;
  EXPECT_EQ(Row(counts, 1), (std::vector<std::string>{"AgentLost", "2", "fairbench-controller", "node-1"})) << counts;

  const std::string described = Ok({"describe", kRuns, "cpp-frameworks"});
  const size_t section = described.find("Events:\n");
  ASSERT_NE(section, std::string::npos) << described;
  const std::string tail = described.substr(section);
  EXPECT_NE(tail.find("Normal   TargetDeployed"), std::string::npos) << tail;
  // FROM: kubectl 1.37 shows the component alone.
  EXPECT_NE(tail.find("fairbench-controller  drogon is ready"), std::string::npos) << tail;
  EXPECT_NE(tail.find("Warning  AgentLost"), std::string::npos) << tail;
  EXPECT_NE(tail.find("(x2 over"), std::string::npos) << tail;
}

}  // namespace
}  // namespace fairbench::kube
