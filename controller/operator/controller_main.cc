// fairbench-controller: the Kubernetes operator. Reconciles BenchmarkRuns:
// targets and agents as pinned pods, one target under load cluster-wide
// (the load-slot Lease), status and Events on the run, the record in
// ConfigMaps owned by it. Leader-elected: one active controller; a standby
// takes over when the leader dies and resumes its runs from the stored
// records, keeping every finished cell.
//
//   fairbench-controller [--kubeconfig F] [--namespace NS] [--agent-listen HOST:PORT]
//                        [--agent-address HOST:PORT] [--agent-image IMAGE] [--metrics-address HOST:PORT]
//                        [--hub-tls-cert F --hub-tls-key F [--hub-tls-client-ca F] --agent-tls-secret NAME] …
//
// The agents' token comes from a Secret (read through the API, never a
// flag); TLS files from a mounted Secret, read when the hub starts
// listening (a rotated certificate takes a restart: the chart's pods roll
// when it changes).
//
// Without --kubeconfig: in-cluster configuration in a pod, else $KUBECONFIG
// or ~/.kube/config.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <optional>
#include <memory>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "common/allocator.h"
#include "common/api/codec.h"
#include "common/api/conditions.h"
#include "common/base64.h"
#include "common/signals.h"
#include "common/units.h"
#include "controller/hub/agent_hub.h"
#include "controller/hub/grpc_server.h"
#include "controller/hub/hub_flags.h"
#include "common/backoff.h"
#include "controller/kube/clock.h"
#include "controller/kube/event_recorder.h"
#include "controller/kube/in_cluster_config.h"
#include "controller/kube/kubeconfig.h"
#include "controller/kube/leader_election.h"
#include "controller/metrics/exposition.h"
#include "controller/metrics/metrics_server.h"
#include "controller/metrics/run_metrics.h"
#include "controller/metrics/self_metrics.h"
#include "controller/operator/executor.h"
#include "controller/operator/run_controller.h"
#include "controller/operator/run_status_client.h"
#include "controller/operator/status_writer.h"
#include "controller/orchestrator/observer_fanout.h"
#include "controller/platform/kubernetes/kubernetes_platform.h"
#include "controller/store/configmap_run_store.h"

namespace fairbench::controller {
namespace {

struct Flags {
  std::string kubeconfig;
  std::string context;
  std::string watch_namespace;  // "" = all
  std::string pod_namespace = "default";  // where pods, Secret and Leases live unless told otherwise
  std::string agent_listen = "0.0.0.0:9090";
  std::string agent_address;  // default: the Service fairbench-controller.<ns>.svc:<port>
  std::string agent_image = "ghcr.io/fairbench/fairbench-agent:" FAIRBENCH_VERSION;
  std::string agent_token_secret = "fairbench-agent-token";
  std::string nofile_helper_path = "/usr/local/bin/fairbench-nofile";
  std::string metrics_address;
  std::string identity;
  std::string leader_election_namespace;
  std::string leader_election_id = "fairbench-controller";
  std::string load_slot_namespace = "default";
  std::string load_slot_name = "fairbench-load-slot";
  std::string lease_duration = "15s";  // leader election, client-go's defaults
  std::string renew_deadline = "10s";
  std::string retry_period = "2s";
  std::string agent_timeout = "5m";
  std::string slot_timeout = "24h";
  std::string log_level = "info";
  HubFlags hub;
  std::string agent_tls_secret;       // the agent pods mount it: ca.crt (tls.crt, tls.key with mutual TLS)
  std::string agent_tls_server_name;  // the name the agents expect in the hub's certificate
};

// Waiting for the API server (its first answer, the BenchmarkRun CRD): 1 s
// doubling to 30 s, each stretched by up to a tenth.
constexpr BackoffPolicy kApiServerWait{std::chrono::seconds(1), std::chrono::seconds(30), 2.0, 0.1};

int BadInput(const std::string& message) {
  std::fprintf(stderr, "fairbench-controller: %s\n", message.c_str());
  return 2;
}

kube::ResourceType Secrets() { return {"", "v1", "Secret", "secrets", kube::Scope::kNamespaced}; }

// The agents' token from the Secret, which is created when missing (the
// chart creates it; a bare install gets one here).
Result<std::string> AgentToken(kube::Client& client, const std::string& ns, const std::string& name) {
  auto secret = client.Get(Secrets(), ns, name);
  if (secret.ok()) {
    const kube::Json* data = secret->contains("data") ? &(*secret)["data"] : nullptr;
    if (data != nullptr && data->contains("token") && (*data)["token"].is_string()) {
      auto decoded = Base64Decode((*data)["token"].get<std::string>());
      if (decoded.ok() && !decoded->empty()) return *decoded;
    }
    return Status::FailedPrecondition("Secret " + ns + "/" + name + " has no data.token");
  }
  if (secret.error().reason != kube::Reason::kNotFound) {
    return Status::Unavailable("Secret " + ns + "/" + name + ": " + secret.error().message);
  }
  const std::string token = NewAgentToken();
  const kube::Json object = {{"apiVersion", "v1"},
                             {"kind", "Secret"},
                             {"metadata", {{"name", name}, {"labels", {{api::label::kManagedBy, api::label::kFairbench}}}}},
                             {"type", "Opaque"},
                             {"stringData", {{"token", token}}}};
  auto created = client.Create(Secrets(), ns, object);
  if (!created.ok() && created.error().reason != kube::Reason::kAlreadyExists) {
    return Status::Unavailable("creating Secret " + ns + "/" + name + ": " + created.error().message);
  }
  if (!created.ok()) return AgentToken(client, ns, name);  // another controller created it first
  spdlog::info("created Secret {}/{} with a new agent token", ns, name);
  return token;
}

// The status writer and the metrics of one run, as one observer. The
// platform's node choice for the run goes to status.nodes as soon as it is
// made (the target's at deploy, the agents' at their first cell).
class RunObservers final : public RunObserver {
 public:
  RunObservers(std::unique_ptr<StatusWriter> status, RunObserver* metrics,
               std::shared_ptr<const KubernetesPlatform> platform, std::string run)
      : status_(std::move(status)), fanout_({status_.get(), metrics}), platform_(std::move(platform)), run_(std::move(run)) {}
  void OnStage(const api::BenchmarkRun& run, const api::CurrentCell& c) override {
    fanout_.OnStage(run, c);
    SyncNodes();
  }
  void OnLive(const api::CurrentCell& c, double rps, double elapsed) override { fanout_.OnLive(c, rps, elapsed); }
  void OnCellDone(const report::RunRecord& r, const report::CellRecord& c) override {
    fanout_.OnCellDone(r, c);
    SyncNodes();
  }
  void OnMessage(const std::string& m) override { fanout_.OnMessage(m); }
  void OnTargetReady(const std::string& run, const std::string& target, const TargetPlacement& where) override {
    fanout_.OnTargetReady(run, target, where);
    SyncNodes();
  }
  void OnInterval(const std::string& run, const api::CurrentCell& c, const Snapshot& s, api::Time end) override {
    fanout_.OnInterval(run, c, s, end);
  }
  void OnTargetUsage(const std::string& run, const api::CurrentCell& c, const TargetUsage& u) override {
    fanout_.OnTargetUsage(run, c, u);
  }
  void OnPersist(const report::RunRecord& r) override {
    fanout_.OnPersist(r);
    SyncNodes();
  }
  StatusWriter& status() { return *status_; }

 private:
  // Called from the orchestrator's thread only.
  void SyncNodes() {
    if (!platform_) return;
    const std::optional<k8s::NodeChoice> choice = platform_->node_choice(run_);
    if (!choice || choice->target_node.empty()) return;
    api::RunNodes nodes{choice->target_node, choice->agent_nodes};
    if (nodes == last_) return;
    last_ = nodes;
    status_->SetNodes(nodes);
  }

  std::unique_ptr<StatusWriter> status_;
  ObserverFanout fanout_;
  const std::shared_ptr<const KubernetesPlatform> platform_;
  const std::string run_;
  api::RunNodes last_;
};

int Main(const Flags& f) {
  spdlog::set_level(spdlog::level::from_str(f.log_level));
  auto agent_timeout = ParseDuration(f.agent_timeout);
  if (!agent_timeout.ok()) return BadInput("--agent-timeout: " + agent_timeout.status().message());
  auto slot_timeout = ParseDuration(f.slot_timeout);
  if (!slot_timeout.ok()) return BadInput("--slot-timeout: " + slot_timeout.status().message());
  auto lease_duration = ParseDuration(f.lease_duration);
  if (!lease_duration.ok()) return BadInput("--leader-lease-duration: " + lease_duration.status().message());
  auto renew_deadline = ParseDuration(f.renew_deadline);
  if (!renew_deadline.ok()) return BadInput("--leader-renew-deadline: " + renew_deadline.status().message());
  auto retry_period = ParseDuration(f.retry_period);
  if (!retry_period.ok()) return BadInput("--leader-retry-period: " + retry_period.status().message());
  auto hub_settings = ResolveHubFlags(f.hub);
  if (!hub_settings.ok()) return BadInput(hub_settings.status().message());
  if (f.hub.tls.enabled() && f.agent_tls_secret.empty()) {
    return BadInput("--agent-tls-secret: required with --hub-tls-cert (the agent pods need the CA that signed it)");
  }
  if (!f.hub.tls.enabled() && (!f.agent_tls_secret.empty() || !f.agent_tls_server_name.empty())) {
    return BadInput("--agent-tls-secret and --agent-tls-server-name need --hub-tls-cert (the hub speaks plain text)");
  }

  // Before any thread: SIGTERM and SIGINT end the process the way a lost
  // leadership does (below), so that a standby resumes the runs.
  std::signal(SIGPIPE, SIG_IGN);
  std::atomic<bool> stopping{false};
  std::stop_source stop;
  SignalWatcher signals({SIGINT, SIGTERM}, [&](int) {
    if (stopping.exchange(true)) _exit(130);
    stop.request_stop();
  });

  Result<kube::RestConfig> config = f.kubeconfig.empty() && f.context.empty()
                                        ? kube::DefaultRestConfig()
                                        : kube::LoadKubeconfig({{f.kubeconfig}, f.context, nullptr});
  if (!config.ok()) return BadInput(config.status().message());
  auto client_or = kube::Client::Create(*config);
  if (!client_or.ok()) return BadInput(client_or.status().message());
  kube::Client& client = **client_or;
  const std::string pod_ns = f.pod_namespace.empty() ? client.default_namespace() : f.pod_namespace;
  std::string identity = f.identity;
  if (identity.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    identity = std::string(host) + "-" + std::to_string(getpid());
  }

  // The agents' side: the token, the hub, the address they dial. An API
  // server that cannot be reached is waited for (capped backoff, one line
  // per attempt) until it answers or a signal comes.
  Result<std::string> token = Status::Unavailable("not read yet");
  Backoff api_backoff(kApiServerWait);
  while (!stop.stop_requested()) {
    token = AgentToken(client, pod_ns, f.agent_token_secret);
    if (token.ok() || token.status().code() == Status::Code::kFailedPrecondition) break;
    const auto wait = api_backoff.Next();
    spdlog::error("cannot reach the API server {}: {} (retrying in {} ms)", config->server, token.status().message(),
                  wait.count());
    if (!kube::SystemClock::Instance().SleepFor(wait, stop.get_token())) break;
  }
  if (stop.stop_requested()) {
    std::fflush(nullptr);
    _exit(0);
  }
  // A Secret without a usable data.token is the operator's to fix: the
  // controller keeps running and fails each run it would start with a
  // condition and an Event naming the Secret.
  std::string token_problem;
  if (!token.ok()) {
    token_problem = token.status().message() +
                    ": agents cannot authenticate; put a token in it (or delete it: the controller then creates one); "
                    "it is read again before the next run starts";
    spdlog::error("{}", token_problem);
  }
  // The hub listens only while this controller leads, so that agents (and
  // a Service in front of the controllers) reach the leader alone.
  AgentHub hub(token.ok() ? *token : NewAgentToken(), identity, hub_settings->hub);
  const size_t colon = f.agent_listen.rfind(':');
  const std::string listen_port = colon == std::string::npos ? "" : f.agent_listen.substr(colon + 1);
  if (listen_port.empty() || listen_port == "0") {
    return BadInput("--agent-listen: needs a fixed port (agents dial it), got '" + f.agent_listen + "'");
  }
  std::string agent_address = f.agent_address;
  if (agent_address.empty()) agent_address = "fairbench-controller." + pod_ns + ".svc:" + listen_port;
  std::optional<GrpcServer> grpc;

  // Prometheus, and /readyz true only while leading.
  metrics::MetricRegistry registry;
  metrics::RunMetrics run_metrics(registry, metrics::RunMetricsOptions{});
  metrics::RegisterSelfMetrics(registry, FAIRBENCH_VERSION, nullptr);
  registry.AddCollector([&] {
    const HubStats st = hub.stats();
    run_metrics.SetAgentHub(hub.Agents().size(), st.snapshots, st.missing);
    run_metrics.SetAgentRefusals(st.refused, st.refused_full, st.refused_pending, st.hello_timeouts);
  });
  std::unique_ptr<kube::LeaderElector> elector;
  std::unique_ptr<metrics::MetricsServer> metrics_server;
  if (!f.metrics_address.empty()) {
    metrics::MetricsServerOptions so;
    so.address = f.metrics_address;
    so.render = [&registry] { return metrics::RenderText(registry.Collect()); };
    so.ready = [&elector] { return elector && elector->IsLeader(); };
    auto started = metrics::MetricsServer::Start(so);
    if (!started.ok()) return BadInput("--metrics-address: " + started.status().message());
    metrics_server = std::move(*started);
  }

  kube::SystemClock& clock = kube::SystemClock::Instance();
  kube::EventRecorderOptions eo;
  eo.reporting_instance = identity;
  kube::EventRecorder events(client, clock, eo);
  RunStatusClient run_status(client, &events);

  KubernetesPlatformOptions po;
  po.ns = pod_ns;
  po.agent_image = f.agent_image;
  po.agent_token_secret = f.agent_token_secret;
  po.agent_tls_secret = f.agent_tls_secret;
  po.agent_tls_client_certificate = !f.hub.tls.client_ca_file.empty();
  po.agent_tls_server_name = f.agent_tls_server_name;
  po.nofile_helper_path = f.nofile_helper_path;
  po.controller_address = agent_address;
  po.identity = identity;
  po.fairbench_version = FAIRBENCH_VERSION;
  po.slot.ns = f.load_slot_namespace;
  po.slot.name = f.load_slot_name;
  // The slot Lease runs on the same clock as the leader Lease: a dead
  // leader's slot expires when its leadership does.
  po.slot.lease_duration = std::chrono::duration_cast<std::chrono::seconds>(*lease_duration);
  po.slot.renew_deadline = std::chrono::duration_cast<std::chrono::milliseconds>(*renew_deadline);
  po.slot.retry_period = std::chrono::duration_cast<std::chrono::milliseconds>(*retry_period);
  auto platform = std::make_shared<KubernetesPlatform>(client, po);

  OrchestratorOptions oo;
  oo.agent_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*agent_timeout);
  oo.slot_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*slot_timeout);
  oo.fairbench_version = FAIRBENCH_VERSION;

  std::unique_ptr<RunController> controller;
  std::mutex controller_mu;
  std::jthread starter;  // starts `controller` once BenchmarkRuns can be listed
  std::atomic<bool> starter_done{false};
  // Every way out is _exit (a standby takes over the runs). A starter that
  // has finished is joined first, so that it is not a thread left unjoined;
  // one still waiting for the API server is detached, to end with the
  // process (it could finish before the exit: a leak to ThreadSanitizer).
  auto reap_starter = [&] {
    if (!starter.joinable()) return;
    if (starter_done.load()) {
      starter.join();
    } else {
      starter.detach();
    }
  };
  auto may_write = [&elector] { return elector && elector->IsLeader(); };
  OrchestratorExecutor executor(
      hub, oo,
      [&](const api::BenchmarkRun& run) -> Result<RunParts> {
        if (!token_problem.empty()) {
          // Fixed since? The Secret is read again before each run.
          auto again = AgentToken(client, pod_ns, f.agent_token_secret);
          if (again.ok()) {
            hub.SetToken(*again);
            token_problem.clear();
            spdlog::info("Secret {}/{} has a token now: agents can authenticate", pod_ns, f.agent_token_secret);
          } else {
            token_problem = again.status().message() +
                            ": agents cannot authenticate; put a token in it (or delete it: the controller then "
                            "creates one); it is read again before the next run starts";
            run_status.Fail(run, api::reason::kAgentTokenMissing, token_problem, true);
            return Status::FailedPrecondition(token_problem);
          }
        }
        RunParts parts;
        parts.platform = platform;
        auto store = std::make_unique<ConfigMapRunStore>(client, ConfigMapRunStoreOptions::ForRun(run));
        ConfigMapRunStore* store_ptr = store.get();
        parts.store = std::move(store);
        StatusWriterOptions so = StatusWriterOptions::ForRun(run);
        so.may_write = may_write;
        // The nodes recorded in status: a resumed run keeps them; a new run
        // (or one that never got that far) starts with no choice.
        k8s::NodeChoice kept;
        if (run.status.nodes) kept = k8s::NodeChoice{run.status.nodes->target, run.status.nodes->agents};
        platform->SetNodeChoice(run.metadata.name, kept);
        auto writer = std::make_unique<StatusWriter>(client, &events, so);
        if (run.status.nodes) writer->SetNodes(*run.status.nodes);
        auto observers = std::make_unique<RunObservers>(std::move(writer), &run_metrics, platform, run.metadata.name);
        RunObservers* observers_ptr = observers.get();
        parts.observer = std::move(observers);
        run_metrics.RunQueued(run.metadata.name);
        parts.finish = [store_ptr, observers_ptr, &run_status, run, platform](const Result<report::RunRecord>& record) {
          // Its agents go: their CPUs are for the next run.
          if (Status s = platform->ReleaseRun(run.metadata.name); !s.ok()) {
            spdlog::warn("agents of {}: {}", run.metadata.name, s.message());
          }
          if (record.ok()) {
            if (Status s = store_ptr->SaveReport(*record); !s.ok()) spdlog::error("report of {}: {}", run.metadata.name, s.message());
          } else {
            // The run could not be carried out at all (its stored record is
            // unreadable, or of another spec): Failed, naming why.
            run_status.Fail(run, api::reason::kRunError, record.status().message(), false);
          }
          if (Status s = observers_ptr->status().Flush(std::chrono::seconds(10)); !s.ok()) {
            spdlog::warn("status of {}: {}", run.metadata.name, s.message());
          }
        };
        return parts;
      },
      [&] {
        std::lock_guard<std::mutex> lock(controller_mu);
        if (controller) controller->RequeueAll();
      });

  kube::LeaderElectionConfig le;
  le.ns = f.leader_election_namespace.empty() ? pod_ns : f.leader_election_namespace;
  le.name = f.leader_election_id;
  le.identity = identity;
  le.lease_duration = std::chrono::duration_cast<std::chrono::seconds>(*lease_duration);
  le.renew_deadline = std::chrono::duration_cast<std::chrono::milliseconds>(*renew_deadline);
  le.retry_period = std::chrono::duration_cast<std::chrono::milliseconds>(*retry_period);
  le.on_started_leading = [&] {
    spdlog::info("leading as {}", identity);
    // The previous leader's port may take a moment to be free.
    for (int attempt = 0; attempt < 100 && !grpc; ++attempt) {
      auto started = StartGrpcServer(&hub, f.agent_listen, hub_settings->server);
      if (started.ok()) {
        grpc.emplace(std::move(*started));
      } else {
        if (attempt == 0) spdlog::warn("--agent-listen {}: {} (retrying)", f.agent_listen, started.status().message());
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    if (!grpc) {
      spdlog::error("cannot listen for agents on {}: exiting", f.agent_listen);
      std::fflush(nullptr);
      _exit(1);
    }
    // The reconciler starts on a thread of its own: this callback runs on
    // the elector's thread, which must go on renewing the lease while the
    // BenchmarkRun informer waits for its first list (a CRD not installed
    // yet, an API server gone for a while).
    starter = std::jthread([&](std::stop_token st) {
      struct Done {
        std::atomic<bool>& flag;
        ~Done() { flag.store(true); }
      } done{starter_done};
      Backoff backoff(kApiServerWait);
      std::string said;
      while (!st.stop_requested()) {
        ReconcilerOptions ro;
        ro.pod_namespace = pod_ns;
        auto candidate = std::make_unique<RunController>(client, f.watch_namespace, executor, &events, ro);
        if (candidate->Start(std::chrono::seconds(5))) {
          std::lock_guard<std::mutex> lock(controller_mu);
          controller = std::move(candidate);
          if (!said.empty()) spdlog::info("BenchmarkRuns can be listed now: reconciling");
          return;
        }
        candidate.reset();
        kube::ListOptions lo;
        lo.limit = 1;
        lo.timeout = std::chrono::seconds(5);
        auto listed = client.List(kube::resources::BenchmarkRuns(), f.watch_namespace, lo);
        std::string why;
        if (!listed.ok() && listed.error().reason == kube::Reason::kNotFound) {
          why = "the BenchmarkRun CRD is not installed (kubectl apply -k manifests/)";
        } else if (!listed.ok()) {
          why = "cannot list BenchmarkRuns: " + listed.error().ToString();
        } else {
          why = "the BenchmarkRun informer did not sync";
        }
        const auto wait = backoff.Next();
        // One line per cause, not one per attempt.
        if (why != said) spdlog::error("{} (retrying)", why);
        said = why;
        if (!kube::SystemClock::Instance().SleepFor(wait, st)) return;
      }
    });
  };
  le.on_stopped_leading = [&] {
    // Another controller may lead now: stop every load at once (agents
    // stop within a second when their stream ends) and leave, as
    // client-go's controllers do; a restart becomes a standby.
    spdlog::error("lost the leadership: stopping the load and exiting");
    hub.Shutdown();
    reap_starter();
    executor.ReleaseForExit();
    std::fflush(nullptr);
    _exit(stopping ? 0 : 1);
  };
  le.on_new_leader = [&](const std::string& who) { spdlog::info("leader is {}", who); };
  auto created = kube::LeaderElector::Create(client, clock, le);
  if (!created.ok()) return BadInput(created.status().message());
  elector = std::move(*created);
  spdlog::info("fairbench-controller {} as {}: agents dial {} ({}); waiting to lead", FAIRBENCH_VERSION, identity,
               agent_address,
               !f.hub.tls.enabled()                ? "plain text"
               : f.hub.tls.client_ca_file.empty() ? "TLS"
                                                  : "mutual TLS");
  elector->Run(stop.get_token());  // until a signal, or leadership lost (which exits above)

  // A signal: stop the load at once and go, leaving the runs to a standby
  // (their records hold every finished cell); the lease is released above.
  hub.Shutdown();
  if (grpc) grpc->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  if (metrics_server) metrics_server->Stop();
  reap_starter();
  executor.ReleaseForExit();
  std::fflush(nullptr);
  _exit(0);
}

}  // namespace
}  // namespace fairbench::controller

int main(int argc, char** argv) {
  fairbench::KeepLargeBlocksInTheHeap();
  fairbench::controller::Flags f;
  CLI::App app("fairbench-controller: the Kubernetes operator of fairbench");
  app.add_option("--kubeconfig", f.kubeconfig, "Kubeconfig file (default: in-cluster, else $KUBECONFIG or ~/.kube/config)");
  app.add_option("--context", f.context, "Kubeconfig context");
  app.add_option("--namespace", f.watch_namespace, "Watch BenchmarkRuns in this namespace only (default: all)");
  app.add_option("--pod-namespace", f.pod_namespace, "Namespace of the agent Secret and the leader Lease (default: default)");
  app.add_option("--agent-listen", f.agent_listen, "Address of the agents' gRPC hub (default 0.0.0.0:9090)");
  app.add_option("--agent-address", f.agent_address,
                 "HOST:PORT the agent pods dial (default: the Service fairbench-controller.<namespace>.svc)");
  app.add_option("--agent-image", f.agent_image, "Image of the agent pods (also carries fairbench-nofile)");
  app.add_option("--nofile-helper-path", f.nofile_helper_path,
                 "Where fairbench-nofile is in the agent image (default /usr/local/bin/fairbench-nofile)");
  app.add_option("--agent-token-secret", f.agent_token_secret, "Secret holding the agents' token (created when missing)");
  app.add_option("--metrics-address", f.metrics_address, "Serve /metrics, /healthz and /readyz (ready while leading) here");
  app.add_option("--identity", f.identity, "This controller's name in the Leases (default: host name and pid)");
  app.add_option("--leader-election-namespace", f.leader_election_namespace, "Namespace of the leader Lease");
  app.add_option("--leader-election-id", f.leader_election_id, "Name of the leader Lease");
  app.add_option("--leader-lease-duration", f.lease_duration, "Leader Lease duration (default 15s; also the load-slot Lease's)");
  app.add_option("--leader-renew-deadline", f.renew_deadline, "Leader renew deadline (default 10s)");
  app.add_option("--leader-retry-period", f.retry_period, "Leader retry period (default 2s)");
  app.add_option("--load-slot-namespace", f.load_slot_namespace,
                 "Namespace of the load-slot Lease: installations that share it never load at the same time");
  app.add_option("--load-slot-name", f.load_slot_name, "Name of the load-slot Lease");
  app.add_option("--agent-timeout", f.agent_timeout, "How long agents may take to start and connect (default 5m)");
  app.add_option("--slot-timeout", f.slot_timeout, "How long a target waits for the load slot (default 24h)");
  app.add_option("--log-level", f.log_level, "trace, debug, info, warn or error");
  fairbench::controller::AddHubFlags(app, f.hub);
  app.add_option("--agent-tls-secret", f.agent_tls_secret,
                 "With --hub-tls-cert: the Secret the agent pods mount (ca.crt; tls.crt and tls.key with "
                 "--hub-tls-client-ca)");
  app.add_option("--agent-tls-server-name", f.agent_tls_server_name,
                 "The name the agents expect in the hub's certificate (default: the host of --agent-address)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return fairbench::controller::Main(f);
}
