#include "controller/cli/run_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "api/cpu_list.h"
#include "api/loader.h"
#include "api/validate.h"
#include "common/tls_files.h"
#include "common/units.h"
#include "controller/bootstrap/agent_endpoint.h"
#include "controller/bootstrap/controller_metrics.h"
#include "controller/bootstrap/shutdown_signals.h"
#include "controller/cli/local_run.h"
#include "controller/cli/progress.h"
#include "controller/cli/store_flag.h"
#include "controller/orchestrator/observer_fanout.h"
#include "controller/platform/docker/image_port.h"

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
    return Status::InvalidArgument(
        "--agent-tls-ca: required with --hub-tls-cert (the agents verify the hub against it)");
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

struct LoadedRun {
  api::BenchmarkRun run;
  std::string base_dir;  // its files (bodies) are relative to this
};

// Every run file, checked, before anything starts; their warnings printed.
// The error is the file's own line(s).
Result<std::vector<LoadedRun>> LoadRunFiles(const RunFlags& f) {
  std::vector<LoadedRun> runs;
  for (const std::string& file : f.files) {
    api::LoadOptions lo;
    lo.validation.platform = f.platform == "docker" ? api::Platform::kDocker : api::Platform::kLocal;
    auto run = api::LoadRunFile(file, lo);
    if (!run.ok()) return run.status();
    for (const std::string& w : api::Warnings(run->spec))
      std::fprintf(stderr, "%s: warning: %s\n", file.c_str(), w.c_str());
    runs.push_back({std::move(*run), api::BaseDirectory(file).string()});
  }
  return runs;
}

// With --platform docker, every target's port against the image it runs
// (image_port.h), before anything starts; the error is the file's line. An
// engine that does not answer is left to the platform to report.
Status CheckDockerPorts(const RunFlags& f, const std::vector<LoadedRun>& runs) {
  auto socket = docker::SocketFromHost(f.docker_host.empty() ? docker::DefaultDockerHost() : f.docker_host);
  if (!socket.ok()) return Status::Ok();
  const docker::DockerClient client(*socket);
  for (size_t i = 0; i < runs.size(); ++i) {
    if (Status s = CheckImagePorts(client, runs[i].run.spec); !s.ok()) {
      return Status::InvalidArgument(f.files[i] + ": " + s.message());
    }
  }
  return Status::Ok();
}

// The flags, checked before anything starts; the error names the flag.
struct RunSetup {
  std::vector<int> target_cpus, agent_cpus;
  std::string program_dir;
  std::string agent_binary;
  std::chrono::milliseconds target_stop_grace{};
  HubSettings hub;
  std::vector<std::string> agent_args;
  ControllerMetricsOptions metrics;
  std::chrono::nanoseconds metrics_linger{};
};

Result<RunSetup> ResolveFlags(const RunFlags& f) {
  RunSetup s;
  auto target_cpus = CpuFlag(f.target_cpus, "--target-cpus");
  if (!target_cpus.ok()) return target_cpus.status();
  s.target_cpus = *target_cpus;
  auto agent_cpus = CpuFlag(f.agent_cpus, "--agent-cpus");
  if (!agent_cpus.ok()) return agent_cpus.status();
  s.agent_cpus = *agent_cpus;
  s.program_dir = SelfDir();
  s.agent_binary = f.agent_binary.empty() ? s.program_dir + "/fairbench-agent" : f.agent_binary;
  if (access(s.agent_binary.c_str(), X_OK) != 0)
    return Status::InvalidArgument("cannot find fairbench-agent at " + s.agent_binary);
  auto stop_grace = ParseDuration(f.target_stop_grace);
  if (!stop_grace.ok()) return Status::InvalidArgument("--target-stop-grace: " + stop_grace.status().message());
  s.target_stop_grace = std::chrono::duration_cast<std::chrono::milliseconds>(*stop_grace);
  auto hub = ResolveHubFlags(f.hub);
  if (!hub.ok()) return hub.status();
  s.hub = *hub;
  auto agent_args = AgentTlsArgs(f);
  if (!agent_args.ok()) return agent_args.status();
  s.agent_args = *agent_args;
  auto retention = ParseDuration(f.metrics_retention);
  if (!retention.ok()) return Status::InvalidArgument("--metrics-retention: " + retention.status().message());
  auto linger = ParseDuration(f.metrics_linger);
  if (!linger.ok()) return Status::InvalidArgument("--metrics-linger: " + linger.status().message());
  s.metrics_linger = *linger;
  s.metrics.address = f.metrics_address;
  s.metrics.remote_write_url = f.remote_write_url;
  s.metrics.retention = std::chrono::duration_cast<std::chrono::milliseconds>(*retention);
  s.metrics.version = FAIRBENCH_VERSION;
  return s;
}

}  // namespace

CLI::App* AddRunCommand(CLI::App& app, RunFlags& f) {
  CLI::App* cmd = app.add_subcommand("run", "Benchmark the targets of one or more BenchmarkRun files on this machine");
  cmd->add_option("files", f.files, "BenchmarkRun files (YAML or JSON), run one after the other")->required();
  cmd->add_option("-o,--output", f.output,
                  "Directory for report.md, report.html, results.json (default: out/<run name>)");
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
  cmd->add_option(
      "--docker-host", f.docker_host,
      "With --platform docker: the engine's socket (default $DOCKER_HOST, else unix:///var/run/docker.sock)");
  cmd->add_option("--max-nofile", f.max_nofile,
                  "Cap every target's nofile at N (a container cannot get more than the machine's hard limit); the "
                  "report says so")
      ->check(CLI::PositiveNumber);
  AddStoreOption(*cmd, f.store, "Also store each finished run in this result store");
  AddHubFlags(*cmd, f.hub);
  cmd->add_option("--agent-tls-ca", f.agent_tls_ca, "With --hub-tls-cert: the CA the agents verify the hub against");
  cmd->add_option("--agent-tls-cert", f.agent_tls_cert, "The agents' client certificate (for --hub-tls-client-ca)");
  cmd->add_option("--agent-tls-key", f.agent_tls_key, "The private key of --agent-tls-cert");
  cmd->add_option("--agent-tls-server-name", f.agent_tls_server_name,
                  "The name the agents expect in the hub's certificate (default: the host of --listen)");
  return cmd;
}

int RunRunCommand(const RunFlags& f) {
  auto runs = LoadRunFiles(f);
  if (!runs.ok()) {
    std::fprintf(stderr, "%s\n", runs.status().message().c_str());
    return 2;
  }
  auto setup = ResolveFlags(f);
  if (!setup.ok()) return BadInput(setup.status().message());
  if (f.platform == "docker") {
    if (Status s = CheckDockerPorts(f, *runs); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 2;
    }
  }

  // SIGINT / SIGTERM: the first cancels the run (finished cells are kept for
  // --resume; the record says where it stopped); a second one ends the
  // process at once (its children die with it: PR_SET_PDEATHSIG).
  // Taken before any thread starts, so that only the watcher sees them.
  Orchestrator* current = nullptr;
  std::mutex current_mu;
  ShutdownSignals signals(
      [&](int sig) {
        std::lock_guard<std::mutex> lock(current_mu);
        std::fprintf(stderr,
                     "\nfairbench: %s: stopping the load and the run; finished cells are kept (run again with "
                     "--resume); a second signal exits at once\n",
                     SignalName(sig).c_str());
        if (current != nullptr) current->Cancel("interrupted by " + SignalName(sig));
      },
      [](int first, int again) {
        std::fprintf(stderr, "\nfairbench: %s again: exiting at once\n", SignalName(again).c_str());
        return 128 + first;
      });

  // The agents get the token in their environment (never in argv, which
  // every user of the machine sees in ps).
  const std::string token = NewAgentToken();
  AgentEndpoint endpoint(token, "fairbench-controller", setup->hub);
  if (Status s = endpoint.Listen(f.listen); !s.ok()) return BadInput(s.message());
  Progress progress(isatty(STDERR_FILENO) != 0, f.quiet);
  // Prometheus: the live series, served and/or pushed, when asked for.
  auto metrics = ControllerMetrics::Start(setup->metrics, endpoint.hub());
  if (!metrics.ok()) return BadInput(metrics.status().message());
  if (!f.quiet && !(*metrics)->url().empty()) {
    std::fprintf(stderr, "fairbench: Prometheus metrics on %s\n", (*metrics)->url().c_str());
  }
  for (const LoadedRun& r : *runs) (*metrics)->runs().RunQueued(r.run.metadata.name);
  ObserverFanout fanout({&progress, &(*metrics)->runs()});

  LocalRunContext context{f,
                          setup->target_cpus,
                          setup->agent_cpus,
                          setup->program_dir,
                          setup->agent_binary,
                          setup->agent_args,
                          endpoint.hub(),
                          token,
                          endpoint.address(),
                          setup->target_stop_grace,
                          (*metrics)->enabled() ? static_cast<RunObserver*>(&fanout) : &progress,
                          progress,
                          signals,
                          [&](Orchestrator* o) {
                            std::lock_guard<std::mutex> lock(current_mu);
                            current = o;
                            if (o != nullptr && signals.first() != 0)
                              o->Cancel("interrupted by " + SignalName(signals.first()));
                          }};
  int exit_code = 0;
  for (size_t i = 0; i < runs->size() && signals.first() == 0; ++i) {
    if (!CarryOutRun((*runs)[i].run, (*runs)[i].base_dir, runs->size(), context, &exit_code)) break;
  }
  if (signals.first() != 0 && exit_code == 0) exit_code = 128 + signals.first();  // runs left out

  // Scrapers get the final values before the endpoint goes; SIGINT or
  // SIGTERM ends the wait (an interrupted run does not wait at all).
  if (!(*metrics)->url().empty()) {
    const auto until = std::chrono::steady_clock::now() + setup->metrics_linger;
    while (std::chrono::steady_clock::now() < until && signals.first() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (auto pushed = (*metrics)->Stop(std::chrono::seconds(10)); pushed && (!f.quiet || pushed->samples_dropped > 0)) {
    std::fprintf(stderr, "fairbench: remote write: %llu samples sent in %llu requests, %llu dropped%s%s\n",
                 static_cast<unsigned long long>(pushed->samples_sent),
                 static_cast<unsigned long long>(pushed->requests),
                 static_cast<unsigned long long>(pushed->samples_dropped),
                 pushed->last_error.empty() ? "" : "; last error: ", pushed->last_error.c_str());
  }
  endpoint.Shutdown();
  signals.Stop();
  return exit_code;
}

}  // namespace fairbench::controller
