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
#include "api/codec.h"
#include "api/conditions.h"
#include "common/signals.h"
#include "common/units.h"
#include "controller/hub/agent_hub.h"
#include "controller/hub/grpc_server.h"
#include "controller/hub/hub_flags.h"
#include "common/backoff.h"
#include "common/clock.h"
#include "controller/kube/event_recorder.h"
#include "controller/kube/in_cluster_config.h"
#include "controller/kube/kubeconfig.h"
#include "controller/kube/leader_election.h"
#include "controller/metrics/exposition.h"
#include "controller/metrics/metrics_server.h"
#include "controller/metrics/run_metrics.h"
#include "controller/metrics/self_metrics.h"
#include "controller/operator/agent_token.h"
#include "controller/operator/executor.h"
#include "controller/operator/operator_runs.h"
#include "controller/operator/result_archiver.h"
#include "controller/operator/run_controller.h"
#include "controller/operator/run_status_client.h"
#include "controller/platform/kubernetes/kubernetes_platform.h"

namespace fairbench::controller {
namespace {

struct Flags {
  std::string kubeconfig;
  std::string context;
  std::string watch_namespace;            // "" = all
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
  std::string result_store;           // "" = none: finished runs stay in their ConfigMaps only
};

// Waiting for the API server (its first answer, the BenchmarkRun CRD): 1 s
// doubling to 30 s, each stretched by up to a tenth.
constexpr BackoffPolicy kApiServerWait{std::chrono::seconds(1), std::chrono::seconds(30), 2.0, 0.1};

int BadInput(const std::string& message) {
  std::fprintf(stderr, "fairbench-controller: %s\n", message.c_str());
  return 2;
}

// The flags that need more than a copy, checked.
struct Settings {
  std::chrono::milliseconds agent_timeout{0};
  std::chrono::milliseconds slot_timeout{0};
  std::chrono::seconds lease_duration{0};  // the leader Lease's and the load slot's
  std::chrono::milliseconds renew_deadline{0};
  std::chrono::milliseconds retry_period{0};
  HubSettings hub;
};

Result<Settings> Resolve(const Flags& f) {
  Settings s;
  struct {
    const char* flag;
    const std::string& text;
    std::chrono::milliseconds* out;
  } durations[] = {{"--agent-timeout", f.agent_timeout, &s.agent_timeout},
                   {"--slot-timeout", f.slot_timeout, &s.slot_timeout},
                   {"--leader-renew-deadline", f.renew_deadline, &s.renew_deadline},
                   {"--leader-retry-period", f.retry_period, &s.retry_period}};
  for (const auto& d : durations) {
    auto parsed = ParseDuration(d.text);
    if (!parsed.ok()) return Status::InvalidArgument(std::string(d.flag) + ": " + parsed.status().message());
    *d.out = std::chrono::duration_cast<std::chrono::milliseconds>(*parsed);
  }
  auto lease = ParseDuration(f.lease_duration);
  if (!lease.ok()) return Status::InvalidArgument("--leader-lease-duration: " + lease.status().message());
  s.lease_duration = std::chrono::duration_cast<std::chrono::seconds>(*lease);
  auto hub = ResolveHubFlags(f.hub);
  if (!hub.ok()) return hub.status();
  s.hub = std::move(*hub);
  if (f.hub.tls.enabled() && f.agent_tls_secret.empty()) {
    return Status::InvalidArgument(
        "--agent-tls-secret: required with --hub-tls-cert (the agent pods need the CA that signed it)");
  }
  if (!f.hub.tls.enabled() && (!f.agent_tls_secret.empty() || !f.agent_tls_server_name.empty())) {
    return Status::InvalidArgument(
        "--agent-tls-secret and --agent-tls-server-name need --hub-tls-cert (the hub speaks plain text)");
  }
  return s;
}

// The name of this controller in the Leases: --identity, else host and pid.
std::string Identity(const Flags& f) {
  if (!f.identity.empty()) return f.identity;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return std::string(host) + "-" + std::to_string(getpid());
}

// HOST:PORT the agent pods dial: --agent-address, else the Service on the
// port of --agent-listen (which must be fixed).
Result<std::string> AgentAddress(const Flags& f, const std::string& pod_ns) {
  const size_t colon = f.agent_listen.rfind(':');
  const std::string port = colon == std::string::npos ? "" : f.agent_listen.substr(colon + 1);
  if (port.empty() || port == "0") {
    return Status::InvalidArgument("--agent-listen: needs a fixed port (agents dial it), got '" + f.agent_listen + "'");
  }
  if (!f.agent_address.empty()) return f.agent_address;
  return "fairbench-controller." + pod_ns + ".svc:" + port;
}

KubernetesPlatformOptions PlatformOptions(const Flags& f, const Settings& s, const std::string& pod_ns,
                                          const std::string& agent_address, const std::string& identity) {
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
  po.slot.lease_duration = s.lease_duration;
  po.slot.renew_deadline = s.renew_deadline;
  po.slot.retry_period = s.retry_period;
  return po;
}

kube::LeaderElectionConfig LeaderElection(const Flags& f, const Settings& s, const std::string& pod_ns,
                                          const std::string& identity) {
  kube::LeaderElectionConfig le;
  le.ns = f.leader_election_namespace.empty() ? pod_ns : f.leader_election_namespace;
  le.name = f.leader_election_id;
  le.identity = identity;
  le.lease_duration = s.lease_duration;
  le.renew_deadline = s.renew_deadline;
  le.retry_period = s.retry_period;
  le.on_new_leader = [](const std::string& who) { spdlog::info("leader is {}", who); };
  return le;
}

// The hub's gRPC listener; the previous leader's port may take a moment to
// be free (tried for about 10 s).
std::optional<GrpcServer> ListenForAgents(AgentHub& hub, const std::string& address, const GrpcServerOptions& options) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto started = StartGrpcServer(&hub, address, options);
    if (started.ok()) return std::move(*started);
    if (attempt == 0) spdlog::warn("--agent-listen {}: {} (retrying)", address, started.status().message());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return std::nullopt;
}

// The process's and the runs' metrics, the hub's among them, served on
// `address` (none when empty) with /readyz true while `ready`.
Result<std::unique_ptr<metrics::MetricsServer>> ServeMetrics(const std::string& address,
                                                             metrics::MetricRegistry& registry,
                                                             metrics::RunMetrics& run_metrics, AgentHub& hub,
                                                             std::function<bool()> ready) {
  metrics::RegisterSelfMetrics(registry, FAIRBENCH_VERSION, nullptr);
  registry.AddCollector([&run_metrics, &hub] {
    const HubStats st = hub.stats();
    run_metrics.SetAgentHub(hub.Agents().size(), st.snapshots, st.missing);
    run_metrics.SetAgentRefusals(st.refused, st.refused_full, st.refused_pending, st.hello_timeouts);
  });
  if (address.empty()) return std::unique_ptr<metrics::MetricsServer>();
  return metrics::MetricsServer::Start(
      {address, [&registry] { return metrics::RenderText(registry.Collect()); }, std::move(ready)});
}

[[noreturn]] void Exit(int code) {
  std::fflush(nullptr);
  _exit(code);
}

int Main(const Flags& f) {
  spdlog::set_level(spdlog::level::from_str(f.log_level));
  auto settings = Resolve(f);
  if (!settings.ok()) return BadInput(settings.status().message());
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
  const std::string identity = Identity(f);

  // The agents' side: the token (an API server that cannot be reached is
  // waited for), the hub, listening only while this controller leads, so
  // that agents (and a Service in front of the controllers) reach the
  // leader alone. A Secret without a usable token fails each run until fixed.
  const auto token =
      WaitForAgentToken(client, pod_ns, f.agent_token_secret, config->server, kApiServerWait, stop.get_token());
  if (stop.stop_requested()) Exit(0);
  AgentHub hub(token.ok() ? *token : NewAgentToken(), identity, settings->hub.hub);
  AgentTokenGate token_gate(client, pod_ns, f.agent_token_secret, token,
                            [&hub](const std::string& t) { hub.SetToken(t); });
  const auto agent_address = AgentAddress(f, pod_ns);
  if (!agent_address.ok()) return BadInput(agent_address.status().message());
  std::optional<GrpcServer> grpc;

  // Prometheus, and /readyz true only while leading.
  std::unique_ptr<kube::LeaderElector> elector;
  auto leading = [&elector] { return elector && elector->IsLeader(); };
  metrics::MetricRegistry registry;
  metrics::RunMetrics run_metrics(registry, metrics::RunMetricsOptions{});
  auto metrics_server = ServeMetrics(f.metrics_address, registry, run_metrics, hub, leading);
  if (!metrics_server.ok()) return BadInput("--metrics-address: " + metrics_server.status().message());

  // The runs: one executed at a time by the orchestrator, the others
  // queued by the reconciler, which starts once BenchmarkRuns can be listed.
  SystemClock& clock = SystemClock::Instance();
  kube::EventRecorderOptions eo;
  eo.reporting_instance = identity;
  kube::EventRecorder events(client, clock, eo);
  RunStatusClient run_status(client, &events);
  auto platform =
      std::make_shared<KubernetesPlatform>(client, PlatformOptions(f, *settings, pod_ns, *agent_address, identity));
  OrchestratorOptions oo;
  oo.agent_timeout = settings->agent_timeout;
  oo.slot_timeout = settings->slot_timeout;
  oo.fairbench_version = FAIRBENCH_VERSION;
  std::unique_ptr<RunControllerStarter> starter;  // set before leading: no run ends before
  OrchestratorExecutor executor(hub, oo,
                                OperatorRuns(client, &events, run_status, token_gate, platform, run_metrics, leading),
                                [&starter] { starter->RequeueAll(); });
  ReconcilerOptions ro;
  ro.pod_namespace = pod_ns;
  // Every finished run into the result store, when there is one.
  std::unique_ptr<ResultArchiver> archiver;
  if (!f.result_store.empty()) {
    archiver = std::make_unique<ResultArchiver>(client, run_status, &events, ResultArchiverOptions{f.result_store});
    ro.on_finished = [&archiver](const api::BenchmarkRun& run) { archiver->Offer(run); };
    spdlog::info("finished runs go to the result store {}", RedactStoreLocation(f.result_store));
  }
  starter = std::make_unique<RunControllerStarter>(client, f.watch_namespace, executor, &events, ro, kApiServerWait);

  // Every way out is _exit: a standby takes over the runs (their records
  // hold every finished cell).
  kube::LeaderElectionConfig le = LeaderElection(f, *settings, pod_ns, identity);
  le.on_started_leading = [&] {
    spdlog::info("leading as {}", identity);
    grpc = ListenForAgents(hub, f.agent_listen, settings->hub.server);
    if (!grpc) {
      spdlog::error("cannot listen for agents on {}: exiting", f.agent_listen);
      Exit(1);
    }
    // On a thread of its own: this callback runs on the elector's thread,
    // which must go on renewing the lease meanwhile.
    starter->Start();
  };
  le.on_stopped_leading = [&] {
    // Another controller may lead now: stop every load at once (agents stop
    // within a second when their stream ends) and leave, as client-go's
    // controllers do; a restart becomes a standby.
    spdlog::error("lost the leadership: stopping the load and exiting");
    hub.Shutdown();
    starter->ReleaseForExit();
    executor.ReleaseForExit();
    Exit(stopping ? 0 : 1);
  };
  auto created = kube::LeaderElector::Create(client, clock, le);
  if (!created.ok()) return BadInput(created.status().message());
  elector = std::move(*created);
  spdlog::info("fairbench-controller {} as {}: agents dial {} ({}); waiting to lead", FAIRBENCH_VERSION, identity,
               *agent_address,
               !f.hub.tls.enabled()               ? "plain text"
               : f.hub.tls.client_ca_file.empty() ? "TLS"
                                                  : "mutual TLS");
  elector->Run(stop.get_token());  // until a signal, or leadership lost (which exits above)

  // A signal: stop the load at once and go; the lease is released above.
  hub.Shutdown();
  if (grpc) grpc->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  if (*metrics_server) (*metrics_server)->Stop();
  starter->ReleaseForExit();
  executor.ReleaseForExit();
  Exit(0);
}

}  // namespace
}  // namespace fairbench::controller

int main(int argc, char** argv) {
  fairbench::KeepLargeBlocksInTheHeap();
  fairbench::controller::Flags f;
  CLI::App app("fairbench-controller: the Kubernetes operator of fairbench");
  app.add_option("--kubeconfig", f.kubeconfig,
                 "Kubeconfig file (default: in-cluster, else $KUBECONFIG or ~/.kube/config)");
  app.add_option("--context", f.context, "Kubeconfig context");
  app.add_option("--namespace", f.watch_namespace, "Watch BenchmarkRuns in this namespace only (default: all)");
  app.add_option("--pod-namespace", f.pod_namespace,
                 "Namespace of the agent Secret and the leader Lease (default: default)");
  app.add_option("--agent-listen", f.agent_listen, "Address of the agents' gRPC hub (default 0.0.0.0:9090)");
  app.add_option("--agent-address", f.agent_address,
                 "HOST:PORT the agent pods dial (default: the Service fairbench-controller.<namespace>.svc)");
  app.add_option("--agent-image", f.agent_image, "Image of the agent pods (also carries fairbench-nofile)");
  app.add_option("--nofile-helper-path", f.nofile_helper_path,
                 "Where fairbench-nofile is in the agent image (default /usr/local/bin/fairbench-nofile)");
  app.add_option("--agent-token-secret", f.agent_token_secret,
                 "Secret holding the agents' token (created when missing)");
  app.add_option("--metrics-address", f.metrics_address,
                 "Serve /metrics, /healthz and /readyz (ready while leading) here");
  app.add_option("--identity", f.identity, "This controller's name in the Leases (default: host name and pid)");
  app.add_option("--leader-election-namespace", f.leader_election_namespace, "Namespace of the leader Lease");
  app.add_option("--leader-election-id", f.leader_election_id, "Name of the leader Lease");
  app.add_option("--leader-lease-duration", f.lease_duration,
                 "Leader Lease duration (default 15s; also the load-slot Lease's)");
  app.add_option("--leader-renew-deadline", f.renew_deadline, "Leader renew deadline (default 10s)");
  app.add_option("--leader-retry-period", f.retry_period, "Leader retry period (default 2s)");
  app.add_option("--load-slot-namespace", f.load_slot_namespace,
                 "Namespace of the load-slot Lease: installations that share it never load at the same time");
  app.add_option("--load-slot-name", f.load_slot_name, "Name of the load-slot Lease");
  app.add_option("--agent-timeout", f.agent_timeout, "How long agents may take to start and connect (default 5m)");
  app.add_option("--slot-timeout", f.slot_timeout, "How long a target waits for the load slot (default 24h)");
  app.add_option("--result-store", f.result_store,
                 "Store each finished run in this result store: an SQLite file or a postgresql:// URL "
                 "(default: $FAIRBENCH_RESULT_STORE; none: runs stay in their ConfigMaps only)")
      ->envname("FAIRBENCH_RESULT_STORE");
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
