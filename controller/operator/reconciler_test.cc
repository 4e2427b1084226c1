// The reconciler against Kubernetes' own control plane (the shared cluster,
// a namespace per test, the controller watching only that namespace) with
// the product CRD (manifests/), driven the way a user drives it: the
// cluster's kubectl apply, get, describe, annotate and delete, as the
// cluster's administrator over TLS (watches included). The executor is a
// fake that records what it was asked to run; the real one runs the
// orchestrator.
#include "controller/operator/run_controller.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <mutex>

#include <spdlog/spdlog.h>

#include "api/cells.h"
#include "api/validate.h"
#include "common/clock.h"
#include "controller/kube/exec_credential.h"
#include "controller/kube/kubeconfig.h"
#include "controller/store/test_records.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::controller {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using kube::Json;
using kube::testenv::Eventually;

class FakeExecutor final : public RunExecutor {
 public:
  explicit FakeExecutor(kube::Client& client) : client_(client) {}
  std::function<void()> on_idle;

  std::string Active() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return active_;
  }
  Status Start(const std::string& key, const api::BenchmarkRun& run) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!active_.empty()) ++overlaps_;
    active_ = key;
    started_.push_back(key);
    cells_[key] = api::CountCells(run.spec);
    for (const api::Scenario& s : run.spec.scenarios) {
      if (s.script) scripts_[key] = s.script->Text();
    }
    return Status::Ok();
  }
  void Cancel(const std::string& key) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_.push_back(key);
    }
    Finish(key, "Cancelled");
  }
  // The run ends: its status written as the real executor writes it, then idle.
  void Finish(const std::string& key, const std::string& phase) {
    const std::string ns = key.substr(0, key.find('/'));
    const std::string name = key.substr(key.find('/') + 1);
    const Json patch = {{"status", {{"phase", phase}}}};
    (void)client_.Patch(kube::resources::BenchmarkRuns(), ns, name, kube::PatchType::kMerge, patch.dump(), {},
                        "status");
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (active_ == key) active_.clear();
    }
    if (on_idle) on_idle();
  }
  std::vector<std::string> started() const {
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }
  std::vector<std::string> cancelled() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }
  int overlaps() const {
    std::lock_guard<std::mutex> lock(mu_);
    return overlaps_;
  }
  std::string script(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = scripts_.find(key);
    return it == scripts_.end() ? "" : it->second;
  }
  size_t cells(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cells_.find(key);
    return it == cells_.end() ? 0 : it->second;
  }

 private:
  kube::Client& client_;
  mutable std::mutex mu_;
  std::string active_;
  std::vector<std::string> started_, cancelled_;
  std::map<std::string, size_t> cells_;
  std::map<std::string, std::string> scripts_;  // the text of a run's script
  int overlaps_ = 0;
};

std::string RunYaml(const std::string& name, const std::string& extra_load = "") {
  return "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: " + name +
         "}\nspec:\n  targets:\n  - {name: nginx, image: example.org/fairbench/nginx:1, port: 8080}\n"
         "  scenarios:\n  - name: hello\n    request: {path: /}\n    connections: [100, 1000]\n"
         "  load: {threads: 2, duration: 5s" +
         extra_load + "}\n";
}

class ReconcilerTest : public kube::testenv::KubeTest {
 protected:
  void SetUp() override {
    spdlog::set_level(spdlog::level::warn);
    KubeTest::SetUp();
    if (HasFatalFailure()) return;
    kubectl_ = cluster_->kubectl();
    char tmpl[] = "/tmp/fairbench-reconciler-XXXXXX";
    dir_ = mkdtemp(tmpl);
    // The administrator's kubeconfig in the test's namespace: the
    // controller's client and kubectl talk TLS to the API server itself.
    kubeconfig_ = dir_ + "/kubeconfig";
    testrecords::WriteAdminKubeconfig(*cluster_, ns(), kubeconfig_);
    if (HasFatalFailure()) return;
    auto cfg = kube::LoadKubeconfig({{kubeconfig_}, "", nullptr});
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    ASSERT_EQ(cfg->default_namespace, ns());
    auto c = kube::Client::Create(*cfg, kube::testenv::FastRetries());
    ASSERT_TRUE(c.ok());
    client_ = std::move(*c);
    // The product CRD, shared by every test in the cluster: created if absent.
    testrecords::InstallGeneratedCrd(*cluster_, *client_, ns());
    if (HasFatalFailure()) return;
    executor_ = std::make_unique<FakeExecutor>(*client_);
    events_ = std::make_unique<kube::EventRecorder>(*client_, clock_);
    // This namespace only: runs of tests beside it are not this controller's.
    controller_ = std::make_unique<RunController>(*client_, ns(), *executor_, events_.get());
    executor_->on_idle = [this] { controller_->RequeueAll(); };
    ASSERT_TRUE(controller_->Start(10s));
  }
  void TearDown() override {
    if (controller_) controller_->Stop();
    controller_.reset();
    // The runs' finalizer is the controller's to remove, and it is stopped:
    // removed here, or the namespace's deletion would wait for it forever.
    if (client_ && ns_) {
      auto runs = client_->List(kube::resources::BenchmarkRuns(), ns());
      for (const Json& run : runs.ok() ? runs->items : std::vector<Json>{}) {
        (void)client_->Patch(kube::resources::BenchmarkRuns(), ns(), run["metadata"].value("name", ""),
                             kube::PatchType::kMerge, R"({"metadata":{"finalizers":null}})");
      }
    }
    events_.reset();
    executor_.reset();
    KubeTest::TearDown();
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  kube::CommandResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--kubeconfig", kubeconfig_, "--cache-dir", dir_ + "/cache"});
    auto r = kube::RunCommand(kubectl_, args, {{"HOME", dir_}, {"KUBECONFIG", ""}}, 60s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : kube::CommandResult{};
  }
  std::string Ok(std::vector<std::string> args) {
    std::string shown;
    for (const auto& a : args) shown += " " + a;
    auto r = Run(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << "kubectl" << shown << "\n" << r.out << r.err;
    return r.out;
  }
  void Apply(const std::string& yaml) {
    const std::string file = dir_ + "/run.yaml";
    std::ofstream(file) << yaml;
    Ok({"apply", "-f", file});
  }
  std::string Phase(const std::string& name) {
    auto r = Run({"get", "br", name, "-o", "jsonpath={.status.phase}"});
    return r.exit_code == 0 ? r.out : "<" + r.err + ">";
  }
  bool PhaseBecomes(const std::string& name, const std::string& phase) {
    return Eventually([&] { return Phase(name) == phase; }, 10s);
  }
  Json Get(const std::string& name) {
    auto r = Run({"get", "br", name, "-o", "json"});
    return r.exit_code == 0 ? Json::parse(r.out) : Json();
  }

  // "NS/name": the key of run `name` in the test's namespace.
  std::string Key(const std::string& name) const { return ns() + "/" + name; }

  std::string kubectl_, dir_, kubeconfig_;
  SystemClock clock_;
  std::unique_ptr<FakeExecutor> executor_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<RunController> controller_;
};

// Catches: a fractional CPU queued without a Warning event naming the field.
TEST_F(ReconcilerTest, AFractionalCpuIsWarnedAbout) {
  std::string yaml = RunYaml("shared");
  const std::string plain = "port: 8080}";
  yaml.replace(yaml.find(plain), plain.size(), "port: 8080, resources: {cpu: 1500m, memory: 1Gi}}");
  Apply(yaml);
  ASSERT_TRUE(Eventually(
      [&] {
        const std::string d = Ok({"describe", "br", "shared"});
        return d.find("SpecWarning") != std::string::npos &&
               d.find("spec.targets[0].resources.cpu: 1500m is not a whole number of CPUs") != std::string::npos;
      },
      10s))
      << Ok({"describe", "br", "shared"});
}

// Catches: a run not queued (no phase, no event), the finalizer not added,
// runs started out of creation order or two at a time, the next run not
// started when the executor becomes idle.
TEST_F(ReconcilerTest, RunsAreQueuedAndExecutedOneAtATimeInOrderOfCreation) {
  Apply(RunYaml("first"));
  std::this_thread::sleep_for(1100ms);  // creation timestamps are to the second
  Apply(RunYaml("second"));
  ASSERT_TRUE(PhaseBecomes("second", "Queued")) << Phase("second");
  ASSERT_TRUE(Eventually([&] { return executor_->started().size() == 1; }, 10s));
  EXPECT_EQ(executor_->started(), std::vector<std::string>{Key("first")});
  EXPECT_EQ(executor_->cells(Key("first")), 2u);
  const Json second = Get("second");
  EXPECT_EQ(second["metadata"]["finalizers"], Json::array({api::kFinalizer}));
  EXPECT_EQ(second["status"]["progress"], "0/2");
  EXPECT_EQ(second["status"]["totalCells"], 2);
  EXPECT_EQ(second["status"]["conditions"][0]["reason"], "Queued");
  // kubectl get shows the phase column; describe shows the Queued event.
  EXPECT_NE(Ok({"get", "br", "second"}).find("Queued"), std::string::npos);
  EXPECT_TRUE(Eventually(
      [&] {
        return Ok({"describe", "br", "second"}).find("2 cells queued") != std::string::npos;
      },
      10s));

  executor_->Finish(Key("first"), "Succeeded");
  ASSERT_TRUE(Eventually([&] { return executor_->started().size() == 2; }, 10s));
  EXPECT_EQ(executor_->started()[1], Key("second"));
  executor_->Finish(Key("second"), "Succeeded");
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(executor_->started().size(), 2u) << "a finished run must not start again";
  EXPECT_EQ(executor_->overlaps(), 0);
}

// Catches: a finished run started again because the informer's cache lags
// the server (a watch cut or a relist after 410 still under way when the
// executor goes idle): the executor would redo its setup and rewrite its
// finished status. A run still runnable on the server does start.
TEST_F(ReconcilerTest, ARunFinishedOnTheServerIsNotStartedFromAStaleCache) {
  controller_->Stop();  // the reconciler is driven by hand below
  Apply(RunYaml("stale"));
  auto set_phase = [&](const std::string& phase) {
    const Json patch = {{"status", {{"phase", phase}}}};
    auto r = client_->Patch(kube::resources::BenchmarkRuns(), ns(), "stale", kube::PatchType::kMerge, patch.dump(), {},
                            "status");
    ASSERT_TRUE(r.ok()) << r.error().ToString();
  };
  Json finalizer = Get("stale");
  finalizer["metadata"]["finalizers"] = Json::array({api::kFinalizer});
  ASSERT_TRUE(client_->Update(kube::resources::BenchmarkRuns(), finalizer).ok());
  set_phase("Running");
  kube::Informer runs(*client_, kube::resources::BenchmarkRuns(), ns());
  runs.Start();
  ASSERT_TRUE(runs.WaitForSync(10s));
  ASSERT_TRUE(
      Eventually([&] { return PhaseOf(runs.Get(Key("stale")).value_or(Json())) == api::RunPhase::kRunning; }, 10s));
  runs.Stop();  // the cache stays as it is: Running
  set_phase("Succeeded");
  FakeExecutor executor(*client_);
  Reconciler reconciler(*client_, runs, executor, nullptr);
  Reconciler::Outcome out = reconciler.Reconcile(Key("stale"));
  EXPECT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_TRUE(executor.started().empty()) << "a run the server has as Succeeded was started again";
  EXPECT_GT(out.requeue_after.count(), 0) << "not looked at again once the cache catches up";
  // Still Running on the server (a leader died mid-run): resumed.
  set_phase("Running");
  out = reconciler.Reconcile(Key("stale"));
  EXPECT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(executor.started(), std::vector<std::string>{Key("stale")});
}

// Catches: a run the model refuses (the CRD schema lets it through) left
// queued or started, or failed without naming the field.
TEST_F(ReconcilerTest, AnInvalidRunFailsWithTheFieldNamed) {
  // 3 connections cannot be spread over 2 agents × 2 threads: the schema
  // has no rule for that, the model has.
  Apply(
      "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: bad}\nspec:\n"
      "  targets:\n  - {name: nginx, image: example.org/fairbench/nginx:1}\n"
      "  scenarios:\n  - name: hello\n    request: {path: /}\n"
      "  load: {threads: 2, agents: 2, connections: [3]}\n");
  ASSERT_TRUE(PhaseBecomes("bad", "Failed")) << Phase("bad");
  const Json bad = Get("bad");
  const Json& c = bad["status"]["conditions"][0];
  EXPECT_EQ(c["reason"], "InvalidSpec");
  EXPECT_NE(c["message"].get<std::string>().find("spec.load.connections[0]"), std::string::npos) << c.dump();
  EXPECT_TRUE(executor_->started().empty());
  EXPECT_TRUE(Eventually([&] { return Ok({"describe", "br", "bad"}).find("InvalidSpec") != std::string::npos; }, 10s));
}

// Catches: load.rate with load.pipeline > 1 getting past the API server (the
// CRD's CEL rule missing, or wrong about a rate written as a string such as
// "10k"), to be deployed and fail at every agent; the refusal naming another
// field than spec.load.pipeline or saying other words than `fairbench run`;
// or the rule refusing either setting alone.
TEST_F(ReconcilerTest, TheApiServerRefusesARateWithPipelining) {
  const auto text = [](const std::string& name, const std::string& load) {
    return "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: " + name +
           "}\nspec:\n"
           "  targets:\n  - {name: nginx, image: example.org/fairbench/nginx:1}\n"
           "  scenarios:\n  - name: hello\n    request: {path: /}\n"
           "  load: {" +
           load + "}\n";
  };
  const std::string file = dir_ + "/rated.yaml";
  for (const std::string load : {"rate: 100, pipeline: 4", "rate: 10k, pipeline: 2"}) {
    std::ofstream(file) << text("rated", load);
    const kube::CommandResult r = Run({"apply", "-f", file});
    EXPECT_NE(r.exit_code, 0) << load << ": " << r.out;
    EXPECT_NE(r.err.find("spec.load.pipeline"), std::string::npos) << load << ": " << r.err;
    EXPECT_NE(r.err.find(std::string(api::kPipelineWithRate)), std::string::npos) << load << ": " << r.err;
    EXPECT_NE(Run({"get", "br", "rated"}).err.find("NotFound"), std::string::npos) << load;
  }
  int i = 0;
  for (const std::string load : {"rate: 100", "pipeline: 4", "rate: \"0\", pipeline: 4"}) {
    std::ofstream(file) << text("alone-" + std::to_string(++i), load);
    const kube::CommandResult r = Run({"apply", "-f", file});
    EXPECT_EQ(r.exit_code, 0) << load << ": " << r.err;
  }
}

// A scenario's script from a ConfigMap: a run naming a ConfigMap that is
// not there fails at once with the field named; with the ConfigMap, the run
// starts with its key's text as the script. Catches: configMapRef not read
// (agents sent an empty script), a missing ConfigMap left queued or started.
TEST_F(ReconcilerTest, AScriptIsReadFromItsConfigMap) {
  const std::string run =
      "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: NAME}\nspec:\n"
      "  targets:\n  - {name: nginx, image: example.org/fairbench/nginx:1}\n"
      "  scenarios:\n  - name: echo\n"
      "    script: {configMapRef: {name: scripts, key: post.lua}, args: [x]}\n";
  auto named = [&](const std::string& name) {
    std::string y = run;
    y.replace(y.find("NAME"), 4, name);
    return y;
  };
  Apply(named("nocm"));
  ASSERT_TRUE(PhaseBecomes("nocm", "Failed")) << Phase("nocm");
  const Json failed = Get("nocm");
  EXPECT_EQ(failed["status"]["conditions"][0]["reason"], "InvalidSpec");
  EXPECT_NE(failed["status"]["conditions"][0]["message"].get<std::string>().find(
                "spec.scenarios[0].script.configMapRef.name: no ConfigMap \"scripts\" in namespace \"" + ns() + "\""),
            std::string::npos)
      << failed["status"].dump();
  Apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: scripts}\ndata:\n  post.lua: 'wrk.method = \"POST\"'\n");
  Apply(named("withcm"));
  ASSERT_TRUE(Eventually([&] { return executor_->script(Key("withcm")) == "wrk.method = \"POST\""; }, 10s))
      << "started: " << executor_->started().size();
}

// Catches: a deleted run left loading, the objects it created left behind
// (orphans), the finalizer never removed (the delete hanging).
TEST_F(ReconcilerTest, DeletingTheActiveRunCancelsItAndRemovesWhatItCreated) {
  Apply(RunYaml("doomed"));
  ASSERT_TRUE(Eventually([&] { return executor_->Active() == Key("doomed"); }, 10s));
  const Json labels = {{api::label::kRun, "doomed"}};
  ASSERT_TRUE(client_
                  ->Create(kube::resources::ConfigMaps(), ns(),
                           kube::testenv::ConfigMapJson("doomed-results-0", {{"a", "b"}}, labels))
                  .ok());
  ASSERT_TRUE(
      client_->Create(kube::resources::ConfigMaps(), ns(), kube::testenv::ConfigMapJson("unrelated", {{"a", "b"}}))
          .ok());
  Ok({"delete", "br", "doomed", "--wait=true", "--timeout=20s"});
  EXPECT_EQ(executor_->cancelled(), std::vector<std::string>{Key("doomed")});
  EXPECT_NE(Run({"get", "br", "doomed"}).exit_code, 0);
  EXPECT_NE(Run({"get", "configmap", "doomed-results-0"}).exit_code, 0) << "an object the run created was left behind";
  EXPECT_EQ(Run({"get", "configmap", "unrelated"}).exit_code, 0) << "an object of no run was deleted";
}

// Catches: the documented cancel annotation ignored, or the record of a
// cancelled run deleted (cancel keeps it; delete removes it).
TEST_F(ReconcilerTest, TheCancelAnnotationStopsARunAndKeepsItsRecord) {
  Apply(RunYaml("running"));
  ASSERT_TRUE(Eventually([&] { return executor_->Active() == Key("running"); }, 10s));
  std::this_thread::sleep_for(1100ms);
  Apply(RunYaml("waiting"));
  ASSERT_TRUE(PhaseBecomes("waiting", "Queued"));
  Ok({"annotate", "br", "waiting", std::string(api::annotation::kCancel) + "=true"});
  ASSERT_TRUE(PhaseBecomes("waiting", "Cancelled")) << Phase("waiting");
  Ok({"annotate", "br", "running", std::string(api::annotation::kCancel) + "=true"});
  ASSERT_TRUE(PhaseBecomes("running", "Cancelled")) << Phase("running");
  EXPECT_EQ(executor_->cancelled(), std::vector<std::string>{Key("running")});
  EXPECT_EQ(executor_->started(), std::vector<std::string>{Key("running")}) << "a cancelled queued run must not start";
  EXPECT_EQ(Run({"get", "br", "waiting"}).exit_code, 0);
  EXPECT_EQ(Run({"get", "br", "running"}).exit_code, 0);
}

}  // namespace
}  // namespace fairbench::controller
