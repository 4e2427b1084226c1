#include "controller/cli/run_command.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "common/api/cells.h"
#include "common/api/cpu_list.h"
#include "common/api/loader.h"
#include "common/api/validate.h"
#include "common/report/html.h"
#include "common/report/markdown.h"
#include "common/signals.h"
#include "common/tls_files.h"
#include "common/units.h"
#include "controller/cli/progress.h"
#include "controller/hub/agent_hub.h"
#include "controller/hub/grpc_server.h"
#include "controller/metrics/exposition.h"
#include "controller/metrics/metrics_server.h"
#include "controller/metrics/remote_writer.h"
#include "controller/metrics/run_metrics.h"
#include "controller/metrics/self_metrics.h"
#include "controller/orchestrator/observer_fanout.h"
#include "controller/orchestrator/orchestrator.h"
#include "controller/platform/docker/docker_platform.h"
#include "controller/platform/local/local_platform.h"
#include "controller/store/file_run_store.h"

namespace fairbench::controller {
namespace {

int BadInput(const std::string& message) {
  std::fprintf(stderr, "fairbench: %s\n", message.c_str());
  return 2;
}

std::string SelfDir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

Result<std::vector<int>> CpuFlag(const std::string& text, const std::string& flag) {
  if (text.empty()) return std::vector<int>{};
  auto list = api::ParseCpuList(text);
  if (!list.ok()) return Status::InvalidArgument(flag + ": " + list.status().message());
  return list->cpus;
}

// The TLS flags of the agents this command starts, checked against the
// hub's: the agents must trust the hub's certificate, and show one of their
// own when the hub asks for it. Absolute paths: the agents may run elsewhere.
Result<std::vector<std::string>> AgentTlsArgs(const RunFlags& f) {
  std::vector<std::string> args;
  if (!f.hub.tls.enabled()) {
    if (!f.agent_tls_ca.empty() || !f.agent_tls_cert.empty() || !f.agent_tls_key.empty() ||
        !f.agent_tls_server_name.empty()) {
      return Status::InvalidArgument("--agent-tls-*: the hub speaks plain text without --hub-tls-cert");
    }
    return args;
  }
  if (f.agent_tls_ca.empty()) {
    return Status::InvalidArgument("--agent-tls-ca: required with --hub-tls-cert (the agents verify the hub against it)");
  }
  if (auto ca = tls::ReadCertificates(f.agent_tls_ca, "--agent-tls-ca"); !ca.ok()) return ca.status();
  auto absolute = [](const std::string& p) { return std::filesystem::absolute(p).string(); };
  args = {"--tls-ca", absolute(f.agent_tls_ca)};
  if (!f.hub.tls.client_ca_file.empty() && f.agent_tls_cert.empty()) {
    return Status::InvalidArgument(
        "--agent-tls-cert and --agent-tls-key: required with --hub-tls-client-ca (the hub asks the agents for a certificate)");
  }
  if (f.agent_tls_cert.empty() != f.agent_tls_key.empty()) {
    return Status::InvalidArgument("--agent-tls-cert and --agent-tls-key go together");
  }
  if (!f.agent_tls_cert.empty()) {
    auto cert = tls::ReadCertificates(f.agent_tls_cert, "--agent-tls-cert");
    if (!cert.ok()) return cert.status();
    auto key = tls::ReadPrivateKey(f.agent_tls_key, "--agent-tls-key");
    if (!key.ok()) return key.status();
    if (Status s = tls::CheckKeyPair(*cert, *key, "--agent-tls-cert and --agent-tls-key"); !s.ok()) return s;
    args.insert(args.end(), {"--tls-cert", absolute(f.agent_tls_cert), "--tls-key", absolute(f.agent_tls_key)});
  }
  if (!f.agent_tls_server_name.empty()) args.insert(args.end(), {"--tls-server-name", f.agent_tls_server_name});
  return args;
}

}  // namespace

CLI::App* AddRunCommand(CLI::App& app, RunFlags& f) {
  CLI::App* cmd = app.add_subcommand("run", "Benchmark the targets of one or more BenchmarkRun files on this machine");
  cmd->add_option("files", f.files, "BenchmarkRun files (YAML or JSON), run one after the other")->required();
  cmd->add_option("-o,--output", f.output, "Directory for report.md, report.html, results.json (default: out/<run name>)");
  cmd->add_flag("--resume", f.resume, "Continue an interrupted run from OUTPUT/results.json, keeping finished cells");
  cmd->add_option("--target-cpus", f.target_cpus, "CPUs for the targets (default: the first half)");
  cmd->add_option("--agent-cpus", f.agent_cpus, "CPUs for the agents (default: the second half)");
  cmd->add_option("--lock-file", f.lock_file, "Machine-wide lock that serialises fairbench runs");
  cmd->add_option("--listen", f.listen, "Address the agents dial (default 127.0.0.1:0, a free port)");
  cmd->add_option("--agent-binary", f.agent_binary, "Path of fairbench-agent (default: next to this program)");
  cmd->add_option("--perf", f.perf, "The perf program that samples targets for spec.profile (default: perf on PATH)");
  cmd->add_flag("-q,--quiet", f.quiet, "No progress on stderr");
  cmd->add_option("--metrics-address", f.metrics_address,
                  "Serve Prometheus /metrics, /healthz and /readyz on HOST:PORT (e.g. 127.0.0.1:9464)");
  cmd->add_option("--remote-write-url", f.remote_write_url,
                  "Push every one-second interval to this Prometheus remote write endpoint");
  cmd->add_option("--metrics-retention", f.metrics_retention, "How long a finished run's series stay (default 10m)");
  cmd->add_option("--metrics-linger", f.metrics_linger,
                  "Keep serving /metrics this long after the last run, so scrapers see the final values (default 0s)");
  cmd->add_option("--target-stop-grace", f.target_stop_grace,
                  "How long a target may take to exit after SIGTERM before it is killed (default 10s)");
  cmd->add_option("--platform", f.platform,
                  "Where targets run: local (processes, targets[].local.command) or docker (containers of "
                  "targets[].image on the Docker engine, resources enforced)")
      ->check(CLI::IsMember({"local", "docker"}));
  cmd->add_option("--docker-host", f.docker_host,
                  "With --platform docker: the engine's socket (default $DOCKER_HOST, else unix:///var/run/docker.sock)");
  cmd->add_option("--max-nofile", f.max_nofile,
                  "Cap every target's nofile at N (a container cannot get more than the machine's hard limit); the "
                  "report says so")
      ->check(CLI::PositiveNumber);
  AddHubFlags(*cmd, f.hub);
  cmd->add_option("--agent-tls-ca", f.agent_tls_ca, "With --hub-tls-cert: the CA the agents verify the hub against");
  cmd->add_option("--agent-tls-cert", f.agent_tls_cert, "The agents' client certificate (for --hub-tls-client-ca)");
  cmd->add_option("--agent-tls-key", f.agent_tls_key, "The private key of --agent-tls-cert");
  cmd->add_option("--agent-tls-server-name", f.agent_tls_server_name,
                  "The name the agents expect in the hub's certificate (default: the host of --listen)");
  return cmd;
}

int RunRunCommand(const RunFlags& f) {
  std::vector<api::BenchmarkRun> runs;
  std::vector<std::string> bases;
  for (const std::string& file : f.files) {
    api::LoadOptions lo;
    lo.validation.platform = f.platform == "docker" ? api::Platform::kDocker : api::Platform::kLocal;
    auto run = api::LoadRunFile(file, lo);
    if (!run.ok()) {
      std::fprintf(stderr, "%s\n", run.status().message().c_str());
      return 2;
    }
    for (const std::string& w : api::Warnings(run->spec)) std::fprintf(stderr, "%s: warning: %s\n", file.c_str(), w.c_str());
    runs.push_back(std::move(*run));
    bases.push_back(api::BaseDirectory(file).string());
  }
  auto target_cpus = CpuFlag(f.target_cpus, "--target-cpus");
  if (!target_cpus.ok()) return BadInput(target_cpus.status().message());
  auto agent_cpus = CpuFlag(f.agent_cpus, "--agent-cpus");
  if (!agent_cpus.ok()) return BadInput(agent_cpus.status().message());
  const std::string agent_binary = f.agent_binary.empty() ? SelfDir() + "/fairbench-agent" : f.agent_binary;
  if (access(agent_binary.c_str(), X_OK) != 0) return BadInput("cannot find fairbench-agent at " + agent_binary);

  auto stop_grace = ParseDuration(f.target_stop_grace);
  if (!stop_grace.ok()) return BadInput("--target-stop-grace: " + stop_grace.status().message());

  // SIGINT / SIGTERM: the first cancels the run (finished cells are kept for
  // --resume; the record says where it stopped); a second one ends the
  // process at once (its children die with it: PR_SET_PDEATHSIG).
  // Taken before any thread starts, so that only the watcher sees them.
  std::signal(SIGPIPE, SIG_IGN);
  Orchestrator* current = nullptr;
  std::mutex current_mu;
  std::atomic<int> interrupted{0};  // the first signal taken
  auto signal_name = [](int sig) { return std::string(sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "a signal"); };
  SignalWatcher watcher({SIGINT, SIGTERM}, [&](int sig) {
    std::lock_guard<std::mutex> lock(current_mu);
    if (interrupted != 0) {
      std::fprintf(stderr, "\nfairbench: %s again: exiting at once\n", signal_name(sig).c_str());
      _exit(128 + interrupted);
    }
    interrupted = sig;
    std::fprintf(stderr, "\nfairbench: %s: stopping the load and the run; finished cells are kept (run again with "
                 "--resume); a second signal exits at once\n", signal_name(sig).c_str());
    if (current != nullptr) current->Cancel("interrupted by " + signal_name(sig));
  });

  auto hub_settings = ResolveHubFlags(f.hub);
  if (!hub_settings.ok()) return BadInput(hub_settings.status().message());
  auto agent_args = AgentTlsArgs(f);
  if (!agent_args.ok()) return BadInput(agent_args.status().message());

  // The agents get the token in their environment (never in argv, which
  // every user of the machine sees in ps).
  const std::string token = NewAgentToken();
  AgentHub hub(token, "fairbench-controller", hub_settings->hub);
  auto server = StartGrpcServer(&hub, f.listen, hub_settings->server);
  if (!server.ok()) return BadInput(server.status().message());
  const std::string host = f.listen.substr(0, f.listen.rfind(':'));
  const std::string address = host + ":" + std::to_string(server->port);
  const bool tty = isatty(STDERR_FILENO) != 0;
  Progress progress(tty, f.quiet);

  // Prometheus: the live series, served and/or pushed, when asked for.
  auto retention = ParseDuration(f.metrics_retention);
  if (!retention.ok()) return BadInput("--metrics-retention: " + retention.status().message());
  auto linger = ParseDuration(f.metrics_linger);
  if (!linger.ok()) return BadInput("--metrics-linger: " + linger.status().message());
  const bool with_metrics = !f.metrics_address.empty() || !f.remote_write_url.empty();
  metrics::MetricRegistry registry;
  std::unique_ptr<metrics::RemoteWriter> remote;
  if (!f.remote_write_url.empty()) {
    metrics::RemoteWriterOptions ro;
    ro.url = f.remote_write_url;
    ro.user_agent = std::string("fairbench/") + FAIRBENCH_VERSION;
    auto w = metrics::RemoteWriter::Start(ro);
    if (!w.ok()) return BadInput("--remote-write-url: " + w.status().message());
    remote = std::move(*w);
  }
  metrics::RunMetricsOptions mo;
  mo.retention = std::chrono::duration_cast<std::chrono::milliseconds>(*retention);
  mo.remote = remote.get();
  metrics::RunMetrics run_metrics(registry, mo);
  metrics::RegisterSelfMetrics(registry, FAIRBENCH_VERSION, remote.get());
  registry.AddCollector([&] {
    const HubStats st = hub.stats();
    run_metrics.SetAgentHub(hub.Agents().size(), st.snapshots, st.missing);
    run_metrics.SetAgentRefusals(st.refused, st.refused_full, st.refused_pending, st.hello_timeouts);
  });
  std::unique_ptr<metrics::MetricsServer> metrics_server;
  if (!f.metrics_address.empty()) {
    metrics::MetricsServerOptions so;
    so.address = f.metrics_address;
    so.render = [&registry] { return metrics::RenderText(registry.Collect()); };
    auto started = metrics::MetricsServer::Start(so);
    if (!started.ok()) return BadInput("--metrics-address: " + started.status().message());
    metrics_server = std::move(*started);
    if (!f.quiet) {
      const std::string& h = metrics_server->host();
      const std::string shown = h.find(':') != std::string::npos ? "[" + h + "]" : h;
      std::fprintf(stderr, "fairbench: Prometheus metrics on http://%s:%u/metrics\n", shown.c_str(),
                   static_cast<unsigned>(metrics_server->port()));
    }
  }
  for (const api::BenchmarkRun& run : runs) run_metrics.RunQueued(run.metadata.name);
  ObserverFanout fanout({&progress, &run_metrics});
  RunObserver* observer = with_metrics ? static_cast<RunObserver*>(&fanout) : &progress;

  int exit_code = 0;
  for (size_t i = 0; i < runs.size() && !interrupted; ++i) {
    const api::BenchmarkRun& run = runs[i];
    std::string output = f.output;
    if (output.empty()) output = "out/" + run.metadata.name;
    else if (runs.size() > 1) output = (std::filesystem::path(output) / run.metadata.name).string();
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(output) / "logs", ec);
    if (ec) {
      std::fprintf(stderr, "fairbench: cannot create '%s': %s\n", output.c_str(), ec.message().c_str());
      exit_code = 1;
      break;
    }
    // The controller's own log goes to a file; the terminal shows progress.
    auto logger = spdlog::basic_logger_mt("fairbench-" + std::to_string(i), (std::filesystem::path(output) / "logs" / "controller.log").string());
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(logger);

    FileRunStore store(output);
    if (f.resume) {
      if (!store.HasRecord()) {
        exit_code = BadInput("--resume: nothing to resume in " + output + " (no results.json)");
        break;
      }
      // Read now, so that a broken file is bad input (exit 2) before anything starts.
      if (auto rec = store.Load(); !rec.ok()) {
        exit_code = BadInput("--resume: " + rec.status().message());
        break;
      }
    } else if (store.HasRecord()) {
      std::fprintf(stderr, "fairbench: %s already holds results; continue it with --resume or choose another --output\n",
                   output.c_str());
      exit_code = 2;
      break;
    }

    LocalPlatformOptions po;
    po.agent_binary = agent_binary;
    po.controller_address = address;
    po.token = token;
    po.agent_args = *agent_args;
    po.log_dir = (std::filesystem::path(output) / "logs").string();
    po.base_dir = bases[i];
    po.lock_file = f.lock_file;
    po.program_dir = SelfDir();
    po.fairbench_version = FAIRBENCH_VERSION;
    po.perf_program = f.perf;
    po.target_cpus = !target_cpus->empty() ? *target_cpus : run.spec.local.target_cpus.cpus;
    po.agent_cpus = !agent_cpus->empty() ? *agent_cpus : run.spec.local.agent_cpus.cpus;
    po.target_stop_grace = std::chrono::duration_cast<std::chrono::milliseconds>(*stop_grace);
    std::unique_ptr<Platform> platform;
    std::vector<int> shown_target_cpus, shown_agent_cpus;
    if (f.platform == "docker") {
      DockerPlatformOptions dop;
      dop.docker_host = f.docker_host.empty() ? docker::DefaultDockerHost() : f.docker_host;
      dop.local = po;
      if (f.max_nofile > 0) dop.max_nofile = f.max_nofile;
      auto created = DockerPlatform::Create(dop);
      if (!created.ok()) {
        exit_code = BadInput(created.status().message());
        break;
      }
      if ((*created)->removed_leftovers() > 0 && !f.quiet) {
        std::fprintf(stderr, "fairbench: removed %d container(s) left by an earlier fairbench run that is gone\n",
                     (*created)->removed_leftovers());
      }
      shown_target_cpus = (*created)->target_cpus();
      shown_agent_cpus = (*created)->agent_cpus();
      platform = std::move(*created);
    } else {
      if (f.max_nofile > 0) {
        exit_code = BadInput("--max-nofile: only with --platform docker (locally, a target's nofile is capped at this "
                             "machine's hard limit, and the report says so)");
        break;
      }
      auto created = LocalPlatform::Create(po);
      if (!created.ok()) {
        exit_code = BadInput(created.status().message());
        break;
      }
      shown_target_cpus = (*created)->target_cpus();
      shown_agent_cpus = (*created)->agent_cpus();
      platform = std::move(*created);
    }

    OrchestratorOptions oo;
    oo.fairbench_version = FAIRBENCH_VERSION;
    Orchestrator orchestrator(*platform, hub, oo, observer);
    {
      std::lock_guard<std::mutex> lock(current_mu);
      current = &orchestrator;
      if (interrupted != 0) orchestrator.Cancel("interrupted by " + signal_name(interrupted));
    }
    if (!f.quiet) {
      std::fprintf(stderr, "fairbench: run %s: %zu cells; targets on CPUs %s, agents on CPUs %s; output in %s\n",
                   run.metadata.name.c_str(), api::CountCells(run.spec), CpuListText(shown_target_cpus).c_str(),
                   CpuListText(shown_agent_cpus).c_str(), output.c_str());
    }
    auto record = orchestrator.Run(run, store, f.resume);
    {
      std::lock_guard<std::mutex> lock(current_mu);
      current = nullptr;
    }
    progress.Finish();
    if (!record.ok()) {
      if (record.status().code() == Status::Code::kIoError) {
        // The output folder cannot be written (full, read-only…): the run
        // stopped at once; say what the last record written whole holds.
        std::string kept = "no record was written";
        if (auto stored = store.Load(); stored.ok() && stored->has_value()) {
          kept = store.results_path().string() + " holds the last record written whole: " +
                 std::to_string((*stored)->cells.size()) + " of " + std::to_string(api::CountCells(run.spec)) +
                 " cells (continue with --resume once the folder can be written)";
        } else if (!stored.ok()) {
          kept = stored.status().message();
        }
        std::fprintf(stderr, "fairbench: the run stopped: %s; %s\n", record.status().message().c_str(), kept.c_str());
        exit_code = 1;
        break;  // the next run's folder is most likely on the same disk
      }
      std::fprintf(stderr, "fairbench: %s\n", record.status().message().c_str());
      exit_code = record.status().code() == Status::Code::kFailedPrecondition ? 2 : 1;
      continue;
    }
    const std::string markdown = report::RenderMarkdown(*record);
    for (const auto& [name, text] : {std::pair<const char*, std::string>{"report.md", markdown},
                                     std::pair<const char*, std::string>{"report.html", report::RenderHtml(*record)}}) {
      if (Status s = WriteFileAtomically(std::filesystem::path(output) / name, text); !s.ok()) {
        std::fprintf(stderr, "fairbench: %s (results.json holds the whole record)\n", s.message().c_str());
        exit_code = 1;
      }
    }
    std::fputs(markdown.c_str(), stdout);
    std::fflush(stdout);
    if (!f.quiet) {
      std::fprintf(stderr, "fairbench: report in %s/report.md and report.html; every number in %s/results.json\n",
                   output.c_str(), output.c_str());
    }
    if (record->run.status.phase == api::RunPhase::kCancelled) {
      for (const api::Condition& c : record->run.status.conditions) {
        if (c.type == api::condition::kProgressing) std::fprintf(stderr, "fairbench: %s\n", c.message.c_str());
      }
      exit_code = 128 + (interrupted != 0 ? interrupted.load() : SIGINT);
    } else if (record->run.status.phase != api::RunPhase::kSucceeded && exit_code == 0) exit_code = 3;
  }
  if (interrupted != 0 && exit_code == 0) exit_code = 128 + interrupted;  // runs left out
  if (metrics_server) {
    // Scrapers get the final values before the endpoint goes; SIGINT or
    // SIGTERM ends the wait (an interrupted run does not wait at all).
    const auto until = std::chrono::steady_clock::now() + *linger;
    while (std::chrono::steady_clock::now() < until) {
      if (interrupted) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (remote) {
    remote->Stop(std::chrono::seconds(10));
    const metrics::RemoteWriterStats st = remote->stats();
    if (!f.quiet || st.samples_dropped > 0) {
      std::fprintf(stderr, "fairbench: remote write: %llu samples sent in %llu requests, %llu dropped%s%s\n",
                   static_cast<unsigned long long>(st.samples_sent), static_cast<unsigned long long>(st.requests),
                   static_cast<unsigned long long>(st.samples_dropped), st.last_error.empty() ? "" : "; last error: ",
                   st.last_error.c_str());
    }
  }
  if (metrics_server) metrics_server->Stop();
  hub.Shutdown();
  server->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  watcher.Stop();
  return exit_code;
}

}  // namespace fairbench::controller
