// The operator from the chart, as a user installs it (chart_cluster.h): the
// controllers are the chart's Deployment running as containers with its
// service account and RBAC (the API server authorizes every request), the
// targets and agents are containers of the images this build made, in a
// namespace that enforces the restricted Pod Security Standard.
#include <atomic>
#include <regex>

#include "tests/containers/chart_cluster.h"

namespace fairbench::containers {
namespace {

class ChartE2eTest : public ChartCluster {
 protected:
  // The names of the running containers of the target (the engine's own
  // view, polled every 100 ms while `busy` holds): the most seen at once,
  // and the nodes the agents ran on.
  struct EngineWatch {
    std::atomic<bool> stop{false};
    std::atomic<int> most_targets{0};
    std::set<std::string> agent_nodes;
    std::set<std::string> target_nodes;
    std::mutex mu;
    std::thread thread;
    ~EngineWatch() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  };
  // A run of three targets applied; returns its first cell's result once
  // that cell has finished (null if none finishes within 120 s).
  json StartThreeTargetRun(const std::string& name) {
    Apply(name,
          RunText(name,
                  Target("one", "cpp-httplib-debian") + Target("two", "beast") + Target("three", "cpp-httplib-debian"),
                  "2s"));
    json r;
    const bool started = Eventually(
        [&] {
          r = Get("br/" + name);
          return r.is_object() && r["status"].value("completedCells", 0) >= 1;
        },
        120s);
    return started ? r["status"]["results"][0] : json();
  }
  // Each of the run's `cells` finished once: one CellFinished Event each.
  void ExpectEachCellFinishedOnce(const std::string& run, size_t cells) {
    std::map<std::string, int> finished;
    for (const json& e :
         Get("events", "--field-selector", "involvedObject.name=" + run).value("items", json::array())) {
      if (e["reason"] == "CellFinished") finished[e["message"].get<std::string>().substr(0, 20)]++;
    }
    for (const auto& [cell, n] : finished) EXPECT_EQ(n, 1) << cell;
    EXPECT_EQ(finished.size(), cells);
  }
  void WatchEngine(EngineWatch& w) {
    w.thread = std::thread([&w] {
      while (!w.stop) {
        auto r = Docker({"ps", "--filter", "label=io.kubernetes.pod.namespace=fairbench", "--format",
                         "{{.Label \"io.kubernetes.container.name\"}} {{.Label \"fairbench.dev/test-kubelet-node\"}}"});
        std::istringstream in(r.out);
        std::string container, node;
        int targets = 0;
        while (in >> container >> node) {
          std::lock_guard<std::mutex> lock(w.mu);
          if (container == "target") {
            targets++;
            w.target_nodes.insert(node);
          }
          if (container == "agent") w.agent_nodes.insert(node);
        }
        if (targets > w.most_targets) w.most_targets = targets;
        std::this_thread::sleep_for(100ms);
      }
    });
  }
};

// The whole path a user takes: helm install of the chart,
// a two-target run to Succeeded, what kubectl and fairbench fetch show;
// then a root target refused by Pod Security admission (its cells end
// with the plugin's message, an Event names the checks); then a target too
// small for its memory (OOMKilled by the kernel, the run goes on); then a
// run deleted mid-cell and the chart uninstalled: nothing of either is left
// on any node.
// Catches: an image that does not run under the chart's securityContext or
// in a restricted namespace; in-cluster configuration or a chart RBAC rule
// missing (a 403 here); two targets loaded at once (the engine's own view);
// an agent on the target node; kubectl columns or Events docs/operator.md names
// missing; the record not fetched; the run's securityContext not reaching
// the pod, or admission not enforced; OOMKilled not reported from the engine;
// a container left after deletion (kubelet, operator or Deployment GC);
// helm's release storage (protobuf Secrets) not written or not deleted.
TEST_F(ChartE2eTest, TheChartInstalledAsAUserWouldRunsTheOperatorEndToEnd) {
  EngineWatch watch;
  WatchEngine(watch);
  const auto applied = std::chrono::steady_clock::now();
  Apply("duo", RunText("duo", Target("httplib", "cpp-httplib-debian") + Target("beast", "beast")));
  // apply → first target container started (the engine's view).
  ASSERT_TRUE(
      Eventually([&] { return !ContainersLabelled("io.kubernetes.container.name=target", true).empty(); }, 120s))
      << Logs();
  const double first_target_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - applied).count();
  std::cout << "apply -> first target container running: " << first_target_s << " s\n";
  ASSERT_TRUE(Finishes("duo")) << Phase("duo") << "\n" << Logs();
  watch.stop = true;
  if (watch.thread.joinable()) watch.thread.join();
  const json run = Get("br/duo");
  ASSERT_EQ(run["status"]["phase"], "Succeeded") << run["status"].dump(1) << Logs();
  for (const json& r : run["status"]["results"]) {
    EXPECT_EQ(r["state"], "Succeeded") << r.dump();
    EXPECT_GT(r["requests"].get<uint64_t>(), 50u) << r.dump();
  }
  EXPECT_EQ(watch.most_targets, 1) << "two target containers ran at once";
  EXPECT_EQ(watch.target_nodes, (std::set<std::string>{"chart-target"}));
  EXPECT_EQ(watch.agent_nodes, (std::set<std::string>{"chart-load-1", "chart-load-2"}));
  // kubectl shows what docs/operator.md says: PHASE and PROGRESS, then the
  // conditions and the Events cell by cell.
  const std::string got = Ok({"get", "br", "duo", "-n", kNamespace});
  EXPECT_TRUE(std::regex_search(got, std::regex(R"(duo\s+Succeeded\s+2/2)"))) << got;
  const std::string described = Ok({"describe", "br", "duo", "-n", kNamespace});
  for (const char* want : {"Queued", "CellFinished", "RunSucceeded", "Completed Cells:  2"}) {
    EXPECT_NE(described.find(want), std::string::npos) << want << "\n" << described;
  }
  // fairbench fetch writes the record the cluster holds.
  const fs::path fetched = root_ / "fetched";
  auto fetch = kube::RunCommand(
      testing::BinaryPath("fairbench"),
      {"fetch", "duo", "--namespace", kNamespace, "--kubeconfig", kubeconfig_, "--output", fetched.string()}, {}, 60s);
  ASSERT_TRUE(fetch.ok());
  ASSERT_EQ(fetch->exit_code, 0) << fetch->err;
  const json record = json::parse(ReadFile(fetched / "results.json"), nullptr, false);
  ASSERT_FALSE(record.is_discarded());
  ASSERT_EQ(record["cells"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(record["cells"][i]["result"]["requests"], run["status"]["results"][i]["requests"]);
  }
  EXPECT_TRUE(fs::exists(fetched / "report.md"));
  const std::string notes = record["environment"]["notes"].dump();
  EXPECT_NE(notes.find("nofile in force: 8192, read back in the pod by fairbench-nofile"), std::string::npos) << notes;
  EXPECT_NE(notes.find("runs as the restricted Pod Security Standard asks"), std::string::npos) << notes;

  // A framework image that must run as root (spec.targets[].securityContext)
  // in a namespace that enforces restricted: admission refuses its pod, the
  // cell ends with the reason, and an Event names the checks.
  Apply("root", RunText("root", Target("rooted", "cpp-httplib-debian") +
                                    "    securityContext: {runAsNonRoot: false, runAsUser: 0}\n"));
  ASSERT_TRUE(Finishes("root", 60s)) << Logs();
  const json rooted = Get("br/root");
  EXPECT_EQ(rooted["status"]["phase"], "Failed");
  const std::string why = rooted["status"]["results"][0].value("message", std::string());
  EXPECT_NE(why.find("violates PodSecurity \"restricted:latest\": runAsNonRoot != true (container \"target\" must "
                     "not set securityContext.runAsNonRoot=false), runAsUser=0 (container \"target\" must not set "
                     "runAsUser=0)"),
            std::string::npos)
      << rooted["status"].dump(1);
  const std::string told = Ok({"get", "events", "-n", kNamespace, "--field-selector", "involvedObject.name=root"});
  EXPECT_NE(told.find("runAsUser=0"), std::string::npos) << told;

  // A target whose memory is too small: the kernel kills it, the engine
  // says OOMKilled, the cell says so, and the next target still runs.
  const std::string greedy_port = std::to_string(FreePort());
  Apply("oom", RunText("oom", "  - name: greedy\n    image: " + Image("fairbench-target-beast") +
                                  "\n    port: " + greedy_port +
                                  "\n    command: [/bin/sh, -c, \"/usr/local/bin/fairbench-target-beast --host 0.0.0.0 "
                                  "--port " +
                                  greedy_port +
                                  " --threads 1 & sleep 1.5; x=0123456789; while :; do x=$x$x; done\"]\n"
                                  "    resources: {cpu: \"1\", memory: 32Mi}\n    nofile: 4096\n" +
                                  Target("after", "cpp-httplib-debian")));
  ASSERT_TRUE(Finishes("oom")) << Logs();
  const json oom = Get("br/oom");
  ASSERT_EQ(oom["status"]["results"].size(), 2u) << oom["status"].dump(1);
  EXPECT_NE(oom["status"]["results"][0]["state"], "Succeeded");
  EXPECT_NE(oom["status"]["results"][0].dump().find("OOMKilled"), std::string::npos) << oom["status"].dump(1);
  EXPECT_EQ(oom["status"]["results"][1]["state"], "Succeeded") << oom["status"].dump(1);

  // Deleted mid-cell, then the chart uninstalled: no container of the run
  // or of the controllers is left on any node.
  Apply("gone", RunText("gone", Target("long", "cpp-httplib-debian"), "60s"));
  ASSERT_TRUE(Eventually(
      [&] {
        return Run({"get", "br", "gone", "-n", kNamespace, "-o", "jsonpath={.status.current}"}).out.find("long") !=
               std::string::npos;
      },
      120s))
      << Logs();
  ASSERT_TRUE(Eventually([&] { return !ContainersLabelled("io.kubernetes.container.name=agent", true).empty(); }, 60s));
  Ok({"delete", "br", "gone", "-n", kNamespace, "--timeout=60s"});
  auto uninstalled = Helm({"uninstall", "fairbench", "--namespace", kNamespace, "--wait", "--timeout", "60s"});
  ASSERT_EQ(uninstalled.exit_code, 0) << uninstalled.out << uninstalled.err;
  EXPECT_TRUE(Eventually(
      [&] {
        for (const char* n : kNodes) {
          if (!ContainersLabelled(std::string("fairbench.dev/test-kubelet-node=") + n).empty()) return false;
        }
        return true;
      },
      60s))
      << Docker({"ps", "-a"}).out << Logs();
  EXPECT_EQ(Run({"get", "pods", "-n", kNamespace, "-o", "name"}).out, "");
  // The release is gone with its storage (helm's Secrets, owner=helm).
  EXPECT_EQ(Helm({"list", "--namespace", kNamespace, "-o", "json"}).out, "[]\n");
  EXPECT_EQ(Run({"get", "secrets", "-n", kNamespace, "-l", "owner=helm", "-o", "name"}).out, "");
}

// The leader's container killed from outside while a run goes on (the
// kubelet restarts it after its 10 s back-off, longer than the 4 s Lease):
// the standby takes over through the Lease and resumes the run from its record;
// the cells finished before stay as they were and none is run twice.
// Catches: a standby that never leads, a run restarted from the top (a
// finished cell's figures change) or losing a cell, a cell counted twice.
TEST_F(ChartE2eTest, KillingTheLeadersContainerTheStandbyResumes) {
  const std::string old_leader = Leader();
  const json before = StartThreeTargetRun("resume");
  ASSERT_TRUE(before.is_object()) << Logs();
  // The leader's container, by its pod's name.
  const auto ids = ContainersLabelled("io.kubernetes.pod.name=" + old_leader, true);
  ASSERT_EQ(ids.size(), 1u) << old_leader;
  ASSERT_EQ(Docker({"kill", ids[0]}).exit_code, 0);
  ASSERT_TRUE(Eventually(
      [&] {
        const std::string l = Leader();
        return !l.empty() && l != old_leader;
      },
      30s))
      << Logs();
  ASSERT_TRUE(Finishes("resume", 240s)) << Logs();
  const json run = Get("br/resume");
  ASSERT_EQ(run["status"]["phase"], "Succeeded") << run["status"].dump(1);
  ASSERT_EQ(run["status"]["results"].size(), 3u);
  EXPECT_EQ(run["status"]["results"][0], before) << "a finished cell was changed or run again";
  ExpectEachCellFinishedOnce("resume", 3);
}

// `helm upgrade` to the chart's next version while a run is in flight, as a
// user upgrades: the controllers' image under a new tag, a new argument
// (--log-level=debug), a readiness probe polled twice as often, and the CRD
// with one more printer column. kube-controller-manager rolls the
// Deployment through a new ReplicaSet (maxSurge 0, maxUnavailable 100%:
// the old controllers go before the new ones come); the new leader resumes
// the run from its record.
// Catches: an upgrade the real server refuses or merges wrong (helm's
// patch of the containers list losing a field), a Deployment that does not
// roll, a CRD left at the old version, a run lost, or a cell lost or
// measured twice across the upgrade.
TEST_F(ChartE2eTest, AHelmUpgradeRollsTheControllersAndTheRunInFlightFinishes) {
  ASSERT_EQ(Docker({"tag", Image("fairbench-controller"), "fairbench.test/fairbench-controller:test2"}).exit_code, 0);
  // The chart's next version: a copy with the probe and the CRD changed.
  const fs::path next = root_ / "chart-next";
  fs::copy(kRoot / "charts/fairbench", next, fs::copy_options::recursive);
  auto edit = [&](const fs::path& file, const std::string& from, const std::string& to) {
    std::string text = ReadFile(file);
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << file << " changed shape: no " << from;
    text.replace(at, from.size(), to);
    std::ofstream(file) << text;
  };
  edit(next / "Chart.yaml", "version: 0.1.0", "version: 0.1.1");
  edit(next / "templates/deployment.yaml",
       "              path: /readyz\n              port: metrics\n            periodSeconds: 2",
       "              path: /readyz\n              port: metrics\n            periodSeconds: 1");
  edit(next / "templates/crds.yaml", "        - name: Age\n",
       "        - name: Leader\n          type: string\n          jsonPath: .status.leader\n          priority: 1\n"
       "        - name: Age\n");
  auto revision = [&] {
    return Run({"get", "deployment", "fairbench-controller", "-n", kNamespace, "-o",
                "jsonpath={.metadata.annotations.deployment\\.kubernetes\\.io/revision}"})
        .out;
  };
  ASSERT_EQ(revision(), "1");
  const std::string old_leader = Leader();

  const json before = StartThreeTargetRun("rolled");
  ASSERT_TRUE(before.is_object()) << Logs();
  std::vector<std::string> args = {"upgrade", "fairbench", next.string()};
  const auto values = Values();
  args.insert(args.end(), values.begin(), values.end());
  args.insert(args.end(), {"--set", "controller.image.tag=test2", "--set", "controller.logLevel=debug"});
  auto r = Helm(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << Logs();

  // Rolled: a second revision, every controller pod of the new template.
  ASSERT_TRUE(Eventually(
      [&] {
        if (revision() != "2") return false;
        const json pods = Get("pods", "-l", "app.kubernetes.io/component=controller");
        if (!pods.is_object()) return false;  // kubectl failed (the API server busy with the upgrade): ask again
        int new_ones = 0;
        for (const json& p : pods.value("items", json::array())) {
          const json& c = p["spec"]["containers"][0];
          if (p["metadata"].contains("deletionTimestamp")) return false;
          if (c["image"] != "fairbench.test/fairbench-controller:test2") return false;
          new_ones++;
        }
        return new_ones == 2;
      },
      120s))
      << Run({"get", "rs,pods", "-n", kNamespace, "-o", "wide"}).out << Logs();
  const json pod = Get("pods", "-l", "app.kubernetes.io/component=controller")["items"][0];
  const json& c = pod["spec"]["containers"][0];
  const std::string args_text = c["args"].dump();
  EXPECT_NE(args_text.find("--log-level=debug"), std::string::npos) << args_text;
  EXPECT_EQ(c["readinessProbe"]["periodSeconds"], 1) << c["readinessProbe"].dump();
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"], "/readyz") << "a field of the probe lost in the upgrade";
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"], "/healthz") << "the liveness probe lost in the upgrade";
  const json sets = Get("rs", "-l", "app.kubernetes.io/component=controller");
  EXPECT_EQ(sets["items"].size(), 2u) << "no new ReplicaSet: " << sets.dump().substr(0, 2000);
  EXPECT_NE(Ok({"get", "crd", "benchmarkruns.fairbench.dev", "-o",
                "jsonpath={.spec.versions[0].additionalPrinterColumns[*].name}"})
                .find("Leader"),
            std::string::npos)
      << "the CRD was not upgraded";

  // The run in flight ends, every cell once, the one finished before as it was.
  ASSERT_TRUE(Eventually(
      [&] {
        const std::string l = Leader();
        return !l.empty() && l != old_leader;
      },
      60s))
      << Logs();
  ASSERT_TRUE(Finishes("rolled", 240s)) << Logs();
  const json run = Get("br/rolled");
  ASSERT_EQ(run["status"]["phase"], "Succeeded") << run["status"].dump(1);
  ASSERT_EQ(run["status"]["results"].size(), 3u);
  EXPECT_EQ(run["status"]["results"][0], before) << "a finished cell was changed or run again";
  ExpectEachCellFinishedOnce("rolled", 3);
}

// The chart's Role with one rule removed (patch on benchmarkruns/status,
// the chart's RBAC applied again without it): the
// controller's writes are refused with the API server's 403, which its log
// and a Warning Event name; nothing crashes; the rule applied back with
// kubectl, the same controller writes the status and the run ends.
// Catches: a crash or a silent stall on 403, the refusal not named, a
// controller that needs a restart to recover.
TEST_F(ChartE2eTest, AStatusRuleRemovedIsNamedAndRestoringItRecovers) {
  const std::string chart = Render("templates/rbac.yaml");
  std::ofstream(root_ / "rbac.yaml") << chart;
  const std::string rule =
      "  - apiGroups: [fairbench.dev]\n    resources: [benchmarkruns/status]\n    verbs: [patch]\n";
  const size_t at = chart.find(rule);
  ASSERT_NE(at, std::string::npos) << "the chart's rule changed shape";
  std::string without = chart;
  without.erase(at, rule.size());
  std::ofstream(root_ / "rbac-without.yaml") << without;
  Ok({"apply", "-f", (root_ / "rbac-without.yaml").string()});
  const std::string leader = Leader();
  Apply("denied", RunText("denied", Target("solo", "cpp-httplib-debian")));
  ASSERT_TRUE(Eventually(
      [&] {
        return Ok({"get", "events", "-n", kNamespace, "--field-selector", "reason=StatusForbidden"}).find("403") !=
               std::string::npos;
      },
      60s))
      << Logs();
  const std::string log = Ok({"logs", leader, "-n", kNamespace});
  EXPECT_NE(log.find("forbidden"), std::string::npos) << log.substr(log.size() > 3000 ? log.size() - 3000 : 0);
  EXPECT_EQ(Phase("denied"), "");
  Ok({"apply", "-f", (root_ / "rbac.yaml").string()});
  ASSERT_TRUE(Finishes("denied", 120s)) << Logs();
  EXPECT_EQ(Phase("denied"), "Succeeded");
  // The same controller, never restarted.
  EXPECT_EQ(Leader(), leader);
  const json pods = Get("pods", "-l", "app.kubernetes.io/component=controller");
  for (const json& p : pods["items"]) EXPECT_EQ(p["status"]["containerStatuses"][0]["restartCount"], 0) << p.dump();
}

}  // namespace
}  // namespace fairbench::containers
