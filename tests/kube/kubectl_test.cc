// The independent check: the real kubectl (the same binary users run)
// against the test API server over HTTPS with a client certificate.
// kubectl must be present (PATH or .tools/bin from `scripts/setup
// --with-tools`); if it is not, these tests fail and say so.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <sstream>

#include "controller/kube/exec_credential.h"
#include "tests/kube/kubectl_env.h"
#include "testing/support/bin_dir.h"

namespace fairbench::kube {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST_F(Kubectl, ApplyGetYamlDeleteAndTheInvalidMessage) {
  EXPECT_NE(Ok({"apply", "-f", Data("benchmarkrun-crd.yaml")}).find(
                "customresourcedefinition.apiextensions.k8s.io/benchmarkruns.fairbench.dev created"),
            std::string::npos);
  Ok({"wait", "--for=condition=Established", "crd/benchmarkruns.fairbench.dev", "--timeout=10s"});
  EXPECT_NE(Ok({"apply", "-f", Data("benchmarkrun.yaml")}).find("benchmarkrun.fairbench.dev/cpp-frameworks created"),
            std::string::npos);
  // Applying the same file again is idempotent.
  EXPECT_NE(Ok({"apply", "-f", Data("benchmarkrun.yaml")}).find("benchmarkrun.fairbench.dev/cpp-frameworks unchanged"),
            std::string::npos);
  EXPECT_NE(Ok({"apply", "-f", Data("benchmarkrun-crd.yaml")}).find("unchanged"), std::string::npos);

  // Printer columns, via the short name too.
  auto status = client_->Patch(resources::BenchmarkRuns(), "default", "cpp-frameworks", PatchType::kMerge,
                               R"({"status":{"phase":"Running","progress":"3/12"}})", {}, "status");
  ASSERT_TRUE(status.ok()) << status.error().ToString();
  std::string table = Ok({"get", "br"});
  EXPECT_NE(table.find("NAME"), std::string::npos) << table;
  for (const char* column : {"PHASE", "THREADS", "PROGRESS", "AGE"}) {
    EXPECT_NE(table.find(column), std::string::npos) << column << "\n" << table;
  }
  std::istringstream rows(table);
  std::string header, row;
  std::getline(rows, header);
  std::getline(rows, row);
  std::istringstream cells(row);
  std::vector<std::string> c{std::istream_iterator<std::string>(cells), std::istream_iterator<std::string>()};
  ASSERT_GE(c.size(), 5u) << table;
  EXPECT_EQ(c[0], "cpp-frameworks");
  EXPECT_EQ(c[1], "Running");
  EXPECT_EQ(c[2], "8");
  EXPECT_EQ(c[3], "3/12");

  // -o yaml shows the stored object with its defaults.
  std::string yaml = Ok({"get", "benchmarkrun", "cpp-frameworks", "-o", "yaml"});
  EXPECT_NE(yaml.find("duration: 30s"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("phase: Running"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("uid:"), std::string::npos);

  // An invalid object: kubectl shows the server's 422 with every cause.
  auto invalid = Run({"apply", "-f", Data("benchmarkrun-invalid.yaml")});
  EXPECT_NE(invalid.exit_code, 0);
  std::string message = invalid.out + invalid.err;
  EXPECT_NE(message.find("The BenchmarkRun \"broken\" is invalid"), std::string::npos) << message;
  EXPECT_NE(message.find("spec.load.threads: Invalid value: 0: spec.load.threads in body should be greater than or "
                         "equal to 1"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("spec.targets[0].port"), std::string::npos) << message;

  EXPECT_NE(Ok({"delete", "benchmarkrun", "cpp-frameworks"}).find("benchmarkrun.fairbench.dev \"cpp-frameworks\" deleted"),
            std::string::npos);
  auto empty = Run({"get", "benchmarkruns"});
  EXPECT_EQ(empty.exit_code, 0);
  EXPECT_NE((empty.out + empty.err).find("No resources found in default namespace."), std::string::npos);
}

TEST_F(Kubectl, WatchPrintsEachChange) {
  Ok({"apply", "-f", Data("benchmarkrun-crd.yaml")});
  Ok({"wait", "--for=condition=Established", "crd/benchmarkruns.fairbench.dev", "--timeout=10s"});
  Ok({"apply", "-f", Data("benchmarkrun.yaml")});
  auto watch = testenv::ChildProcess::Spawn(kubectl_, Args({"get", "benchmarkruns", "--watch"}), {"HOME=" + dir_});
  ASSERT_TRUE(watch);
  ASSERT_TRUE(watch->WaitFor("cpp-frameworks", 10s)) << watch->output();
  EXPECT_NE(watch->output().find("PHASE"), std::string::npos);
  watch->Mark();
  ASSERT_TRUE(client_->Patch(resources::BenchmarkRuns(), "default", "cpp-frameworks", PatchType::kMerge,
                             R"({"status":{"phase":"Running","progress":"1/4"}})", {}, "status").ok());
  ASSERT_TRUE(watch->WaitFor("1/4", 10s)) << watch->output();
  watch->Mark();
  ASSERT_TRUE(client_->Patch(resources::BenchmarkRuns(), "default", "cpp-frameworks", PatchType::kMerge,
                             R"({"status":{"phase":"Succeeded","progress":"4/4"}})", {}, "status").ok());
  ASSERT_TRUE(watch->WaitFor("Succeeded", 10s)) << watch->output();
  watch->Kill();
}

TEST_F(Kubectl, ServerSideApplyAndConflicts) {
  Ok({"apply", "-f", Data("benchmarkrun-crd.yaml")});
  Ok({"wait", "--for=condition=Established", "crd/benchmarkruns.fairbench.dev", "--timeout=10s"});
  EXPECT_NE(Ok({"apply", "--server-side", "-f", Data("benchmarkrun.yaml")}).find("serverside-applied"),
            std::string::npos);
  Ok({"patch", "benchmarkrun", "cpp-frameworks", "--type", "merge", "-p", R"({"spec":{"load":{"threads":2}}})"});
  auto conflict = Run({"apply", "--server-side", "-f", Data("benchmarkrun.yaml")});
  EXPECT_NE(conflict.exit_code, 0);
  EXPECT_NE((conflict.out + conflict.err).find("conflict with \"kubectl-patch\""), std::string::npos)
      << conflict.out << conflict.err;
  Ok({"apply", "--server-side", "--force-conflicts", "-f", Data("benchmarkrun.yaml")});
  EXPECT_EQ(Ok({"get", "br", "cpp-frameworks", "-o", "jsonpath={.spec.load.threads}"}), "8");
}

TEST_F(Kubectl, DiscoveryEventsAndBuiltInTables) {
  std::string resources = Ok({"api-resources"});
  for (const char* r : {"pods", "configmaps", "leases", "customresourcedefinitions"}) {
    EXPECT_NE(resources.find(r), std::string::npos) << r;
  }
  EXPECT_NE(Ok({"get", "namespaces"}).find("kube-system"), std::string::npos);
  Ok({"apply", "-f", Data("benchmarkrun-crd.yaml")});
  Ok({"wait", "--for=condition=Established", "crd/benchmarkruns.fairbench.dev", "--timeout=10s"});
  EXPECT_NE(Ok({"api-resources", "--api-group", "fairbench.dev"}).find("BenchmarkRun"), std::string::npos);
  Ok({"apply", "-f", Data("benchmarkrun.yaml")});
  auto run = client_->Get(resources::BenchmarkRuns(), "default", "cpp-frameworks");
  ASSERT_TRUE(run.ok());
  {
    Json ev = {{"apiVersion", "v1"},
               {"kind", "Event"},
               {"metadata", {{"name", "cpp-frameworks.1"}, {"namespace", "default"}}},
               {"involvedObject", {{"apiVersion", "fairbench.dev/v1alpha1"}, {"kind", "BenchmarkRun"},
                                   {"name", "cpp-frameworks"}, {"namespace", "default"},
                                   {"uid", (*run)["metadata"]["uid"]}}},
               {"reason", "TargetDeployed"},
               {"message", "drogon is ready"},
               {"type", "Normal"},
               {"lastTimestamp", (*run)["metadata"]["creationTimestamp"]}};
    ASSERT_TRUE(client_->Create(resources::Events(), "default", ev).ok());
  }
  std::string events = Ok({"get", "events"});
  EXPECT_NE(events.find("TargetDeployed"), std::string::npos) << events;
  EXPECT_NE(events.find("benchmarkrun/cpp-frameworks"), std::string::npos) << events;
}

}  // namespace
}  // namespace fairbench::kube

namespace fairbench::kube {
namespace {

// The program a person or a demo runs: it writes a kubeconfig that both
// kubectl and the fairbench client use, with a bearer token over HTTPS.
TEST(TestApiServerProgram, ServesKubectlThroughTheKubeconfigItWrites) {
  std::string kubectl = fairbench::testing::FindTool("kubectl");
  ASSERT_FALSE(kubectl.empty()) << "kubectl not found on PATH nor in " << FAIRBENCH_SOURCE_DIR
                                << "/.tools/bin: run scripts/setup --with-tools";
  char tmpl[] = "/tmp/fairbench-program-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string kubeconfig = dir + "/kubeconfig";
  auto server = testenv::ChildProcess::Spawn(TEST_APISERVER_BIN, {"--listen", "127.0.0.1:0", "--tls-dir", dir + "/tls",
                                                                  "--token", "demo-token", "--write-kubeconfig",
                                                                  kubeconfig});
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->WaitFor("listening on https://127.0.0.1:", 10s)) << server->output();
  for (const char* f : {"ca.crt", "server.crt", "server.key", "admin.crt", "admin.key"}) {
    EXPECT_TRUE(fs::exists(dir + "/tls/" + f)) << f;
  }
  auto r = RunCommand(kubectl, {"--kubeconfig", kubeconfig, "--cache-dir", dir + "/cache", "get", "namespaces"},
                      {{"HOME", dir}, {"KUBECONFIG", ""}}, 30s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
  EXPECT_NE(r->out.find("kube-system"), std::string::npos) << r->out;
  auto cfg = LoadKubeconfig({{kubeconfig}, "", nullptr});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto client = Client::Create(*cfg, testenv::FastRetries());
  ASSERT_TRUE(client.ok());
  EXPECT_TRUE((*client)->List(resources::Namespaces(), "").ok());
  client->reset();
  server->Kill();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fairbench::kube
