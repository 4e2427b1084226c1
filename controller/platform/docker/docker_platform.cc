#include "controller/platform/docker/docker_platform.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "api/cells.h"
#include "api/cpu_list.h"
#include "api/time_text.h"
#include "common/units.h"
#include "controller/platform/ready_probe.h"
#include "common/json_read.h"
#include "host/container_cgroup.h"
#include "controller/platform/docker/image_port.h"
#include "controller/platform/local/environment.h"

namespace fairbench::controller {
namespace jr = json_read;
namespace {

Result<uint16_t> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return Status::IoError(std::string("cannot find a free port: ") + std::strerror(errno));
  }
  close(fd);
  return ntohs(a.sin_port);
}

std::string ThisHost() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

// Field 22 of /proc/PID/stat: the start time in clock ticks after boot.
std::string StartTimeOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(in, text);
  const size_t close_paren = text.rfind(')');
  if (close_paren == std::string::npos) return "";
  std::istringstream fields(text.substr(close_paren + 2));
  std::string f;
  // After "pid (comm) ": state is field 3; start time is field 22.
  for (int i = 3; i <= 22 && (fields >> f); ++i) {
    if (i == 22) return f;
  }
  return "";
}

int64_t HardNofile() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_max == RLIM_INFINITY) return -1;
  return static_cast<int64_t>(r.rlim_max);
}

// The last line of a log with something on it, cut to 200 characters.
std::string LastLine(const std::string& log) {
  size_t end = log.size();
  while (end > 0) {
    while (end > 0 && (log[end - 1] == '\n' || log[end - 1] == '\r' || log[end - 1] == ' ')) --end;
    const size_t start = log.rfind('\n', end == 0 ? 0 : end - 1);
    const size_t from = start == std::string::npos ? 0 : start + 1;
    std::string line = log.substr(from, end - from);
    if (!line.empty()) return line.size() > 200 ? line.substr(0, 200) + "…" : line;
    end = from;
  }
  return "";
}

// How the container ended ("exited with code 1", "was OOMKilled (…; exit
// code 137)"), or nullopt while it runs.
std::optional<report::TargetExit> GoneFromInspect(const nlohmann::json& inspect) {
  const nlohmann::json& state = jr::Object(inspect, "State");
  const std::string status = jr::String(state, "Status");
  if (jr::Bool(state, "Running") || status == "created" || status == "restarting") return std::nullopt;
  const int32_t code = jr::Int32(state, "ExitCode");
  report::TargetExit exit;
  exit.exit_code = code;
  exit.oom_killed = jr::Bool(state, "OOMKilled");
  if (exit.oom_killed) {
    exit.text = "was OOMKilled (the kernel's OOM killer, through the container's memory limit; exit code " +
                std::to_string(code) + ")";
  } else if (code > 128 && code < 128 + 65) {
    exit.signal = code - 128;
    exit.text = "exited with code " + std::to_string(code) + " (killed by signal " + std::to_string(code - 128) + ")";
  } else {
    exit.text = "exited with code " + std::to_string(code);
  }
  const std::string error = jr::String(state, "Error");
  if (!error.empty()) exit.text += ": " + error;
  return exit;
}

class DockerTarget final : public TargetInstance {
 public:
  DockerTarget(std::shared_ptr<docker::DockerClient> client, std::shared_ptr<std::set<std::string>> live,
               std::string name, std::string id, uint16_t port, ReadyCheck ready, std::string log,
               std::string description, int64_t nofile, bool port_chosen, std::chrono::milliseconds grace,
               std::string capped, std::shared_ptr<std::vector<std::string>> notes)
      : notes_(std::move(notes)),
        client_(std::move(client)),
        live_(std::move(live)),
        name_(std::move(name)),
        id_(std::move(id)),
        port_(port),
        ready_(std::move(ready)),
        log_(std::move(log)),
        description_(std::move(description)),
        nofile_(nofile),
        port_chosen_(port_chosen),
        grace_(grace),
        capped_(std::move(capped)) {}

  ~DockerTarget() override {
    if (!removed_) (void)Remove();
  }

  TargetPlacement placement() const override { return TargetPlacement{ThisHost(), "127.0.0.1", port_}; }
  std::string LogLocation() const override { return log_; }
  std::string Description() const override { return description_; }

  Status WaitReady(std::chrono::steady_clock::time_point deadline, std::stop_token stop) override {
    std::string last = "no answer yet";
    while (std::chrono::steady_clock::now() < deadline) {
      if (stop.stop_requested()) return Status::Cancelled(name_ + ": stopped while waiting for it to be ready");
      if (auto gone = Gone()) {
        const std::string line = LastLine(SaveLog());
        return Status::Unavailable(name_ + " " + gone->text + " before it was ready" +
                                   (line.empty() ? "" : ": \"" + line + "\"") + " (see " + log_ + ")");
      }
      const Status ready = ProbeReady(ready_, std::chrono::milliseconds(500));
      if (ready.ok()) return Status::Ok();
      last = ready.message();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    SaveLog();
    return Status::DeadlineExceeded(name_ + " did not answer on port " + std::to_string(port_) + " in time (" + last +
                                    "; see " + log_ + ")");
  }

  std::optional<report::TargetExit> Gone() override {
    if (gone_) return gone_;
    auto inspect = client_->InspectContainer(id_);
    if (!inspect.ok()) {
      if (inspect.status().code() == Status::Code::kNotFound) {
        gone_ = report::TargetExit{std::nullopt, std::nullopt, false,
                                   "was removed from the Docker engine (container " + id_.substr(0, 12) + ")"};
        return gone_;
      }
      return std::nullopt;  // the engine did not answer: nothing known yet
    }
    gone_ = GoneFromInspect(*inspect);
    if (gone_) SaveLog();
    return gone_;
  }

  Result<TargetUsage> Usage() override {
    if (!cgroup_looked_up_) {
      cgroup_looked_up_ = true;
      if (auto inspect = client_->InspectContainer(id_); inspect.ok()) {
        const int64_t pid = jr::Int(jr::Object(*inspect, "State"), "Pid");
        if (pid > 0) cgroup_ = host::ContainerCgroup::Of(pid);
      }
    }
    if (auto u = cgroup_.Read()) return TargetUsage{u->memory_bytes, u->cpu_seconds, u->sampled_at};
    // The cgroup's files cannot be read (another driver or hierarchy): the
    // engine's stats, with its own timestamp.
    auto stats = client_->Stats(id_);
    if (!stats.ok()) return stats.status();
    auto read = api::ParseTime(jr::String(*stats, "read"));
    if (!read.ok() || read->time_since_epoch().count() <= 0) {
      return Status::Unavailable("the Docker engine has no stats of " + name_ + " (not running)");
    }
    const nlohmann::json& cpu = jr::Object(jr::Object(*stats, "cpu_stats"), "cpu_usage");
    const nlohmann::json& memory = jr::Object(*stats, "memory_stats");
    const nlohmann::json& mstats = jr::Object(memory, "stats");
    const int64_t usage = jr::Int(memory, "usage");
    // cgroup v1 names it total_inactive_file, v2 inactive_file.
    int64_t inactive = jr::Int(mstats, "total_inactive_file", -1);
    if (inactive < 0) inactive = jr::Int(mstats, "inactive_file", 0);
    TargetUsage u;
    u.memory_bytes = static_cast<uint64_t>(std::max<int64_t>(0, usage - std::min(usage, inactive)));
    u.cpu_seconds = static_cast<double>(jr::Int(cpu, "total_usage")) / 1e9;
    u.sampled_at = *read;
    peak_ = std::max(peak_, jr::Int(memory, "max_usage"));
    return u;
  }

  void SetPinnedCpus(size_t count) { pinned_cpus_ = count; }

  // The container's process, by the kernel's account of it (its /proc and
  // cgroups, from the host: the engine runs here): the platform's pinning
  // is all that keeps agents off its CPUs.
  TargetCpuFacts Cpus() override {
    TargetCpuFacts f;
    if (pinned_cpus_ > 0) f.asked = api::CpuQuantity{static_cast<int64_t>(pinned_cpus_) * 1000};
    auto inspect = client_->InspectContainer(id_);
    const int64_t pid = inspect.ok() ? jr::Int(jr::Object(*inspect, "State"), "Pid") : 0;
    if (pid <= 0) {
      f.not_read = "the container's process could not be found (" +
                   (inspect.ok() ? std::string("no State.Pid") : inspect.status().message()) + ")";
      return f;
    }
    CpuView v = ReadCpuView(static_cast<int>(pid));
    if (v.cpus.empty()) {
      f.not_read = v.unread.empty() ? "no CPU list for the container's process" : v.unread.front();
    } else {
      f.view = std::move(v);
    }
    return f;
  }

  std::vector<std::string> ReadBack() override {
    std::vector<std::string> facts;
    if (port_chosen_) facts.push_back("port: " + std::to_string(port_) + " (chosen at run time)");
    facts.push_back("container: " + id_.substr(0, 12) + " (" + description_ + ")");
    const std::string asked = "asked for " + std::to_string(nofile_);
    auto inspect = client_->InspectContainer(id_);
    const int64_t pid = inspect.ok() ? jr::Int(jr::Object(*inspect, "State"), "Pid") : 0;
    // Which image ran: the engine's id of it (the digest of its config).
    const std::string image_id = inspect.ok() ? jr::String(*inspect, "Image") : "";
    facts.push_back(image_id.empty() ? "identity: unknown, the engine did not say which image ran"
                                     : "identity: image " + image_id);
    std::string soft;
    if (pid > 0) {
      std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
      std::string line;
      while (std::getline(in, line)) {
        if (line.rfind("Max open files", 0) != 0) continue;
        std::istringstream fields(line.substr(std::strlen("Max open files")));
        fields >> soft;
      }
    }
    if (soft.empty()) {
      facts.push_back("nofile in force: unknown, the container's process could not be read (" + asked + ")");
    } else {
      facts.push_back("nofile in force: " + soft + ", read back from /proc/" + std::to_string(pid) +
                      "/limits of the container's process (" + asked + (capped_.empty() ? "" : "; " + capped_) + ")");
    }
    auto logs = client_->Logs(id_);
    if (logs.ok()) {
      if (auto f = TargetFactsFromLog(logs->substr(0, 64 * 1024))) facts.push_back(*f);
    }
    return facts;
  }

  Status Teardown() override {
    // Before the container (and its cgroup) goes: its peak memory.
    if (!cgroup_looked_up_) (void)Usage();
    int64_t peak = cgroup_.Peak().value_or(0);
    if (peak <= 0) peak = peak_;
    if (peak > 0) {
      std::ostringstream mib;
      mib.precision(1);
      mib << std::fixed << static_cast<double>(peak) / (1024.0 * 1024.0);
      notes_->push_back("target " + name_ + ": memory peak " + mib.str() +
                        " MiB over the container's life (its cgroup's high-water mark, page cache included)");
    }
    Status stopped = client_->StopContainer(
        id_, std::chrono::duration_cast<std::chrono::seconds>(grace_ + std::chrono::milliseconds(999)));
    bool killed = false;
    if (auto inspect = client_->InspectContainer(id_); inspect.ok()) {
      const nlohmann::json& state = jr::Object(*inspect, "State");
      // Stopped by the engine's SIGKILL after the grace: exit code 137 with
      // no OOM kill, and we asked for a stop.
      killed = stopped.ok() && jr::Int(state, "ExitCode") == 137 && !jr::Bool(state, "OOMKilled") && !gone_;
    }
    SaveLog();
    Status removed = Remove();
    spdlog::info("target {} container {} stopped and removed", name_, id_.substr(0, 12));
    if (!stopped.ok()) return stopped;
    if (!removed.ok()) return removed;
    if (killed) {
      return Status::DeadlineExceeded("did not exit within " + std::to_string(grace_.count()) +
                                      " ms of SIGTERM; killed (SIGKILL) by the Docker engine");
    }
    return Status::Ok();
  }

 private:
  // The engine's log of the container, written to log_ (replacing what was
  // there: the engine keeps the whole output).
  std::string SaveLog() {
    auto logs = client_->Logs(id_);
    if (!logs.ok()) return "";
    std::ofstream out(log_, std::ios::trunc | std::ios::binary);
    out << *logs;
    return *logs;
  }
  Status Remove() {
    Status s = client_->RemoveContainer(id_);
    if (s.ok()) {
      removed_ = true;
      live_->erase(id_);
    }
    return s;
  }

  std::shared_ptr<std::vector<std::string>> notes_;
  std::shared_ptr<docker::DockerClient> client_;
  std::shared_ptr<std::set<std::string>> live_;
  std::string name_;
  std::string id_;
  uint16_t port_;
  ReadyCheck ready_;
  std::string log_;
  std::string description_;
  int64_t nofile_;
  bool port_chosen_;
  size_t pinned_cpus_ = 0;
  std::chrono::milliseconds grace_;
  std::string capped_;
  std::optional<report::TargetExit> gone_;
  host::ContainerCgroup cgroup_;
  bool cgroup_looked_up_ = false;
  int64_t peak_ = 0;
  bool removed_ = false;
};

}  // namespace

std::string DockerOwnerOfThisProcess() { return std::to_string(getpid()) + " " + StartTimeOf(getpid()); }

bool DockerOwnerAlive(const std::string& owner) {
  std::istringstream in(owner);
  long pid = 0;
  std::string start;
  if (!(in >> pid >> start) || pid <= 0) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  return StartTimeOf(static_cast<pid_t>(pid)) == start;
}

Result<std::unique_ptr<DockerPlatform>> DockerPlatform::Create(DockerPlatformOptions options) {
  auto socket = docker::SocketFromHost(options.docker_host);
  if (!socket.ok()) return Status::InvalidArgument("--docker-host: " + socket.status().message());
  auto client = std::make_shared<docker::DockerClient>(*socket);
  auto version = client->Version();
  if (!version.ok()) return Status::Unavailable(version.status().message());
  auto local = LocalPlatform::Create(options.local);
  if (!local.ok()) return local.status();
  std::unique_ptr<DockerPlatform> p(new DockerPlatform(std::move(options), std::move(*local), std::move(client)));
  p->engine_version_ = "Docker Engine " + jr::String(*version, "Version") + " (API " +
                       jr::String(*version, "ApiVersion") + ", " + jr::String(*version, "Os") + " " +
                       jr::String(*version, "KernelVersion") + ")";
  p->owner_ = DockerOwnerOfThisProcess();
  if (Status s = p->RemoveLeftovers(); !s.ok()) return s;
  return p;
}

Status DockerPlatform::RemoveLeftovers() {
  auto list = client_->ListContainers({{api::label::kManagedBy, api::label::kFairbenchRun}});
  if (!list.ok()) return list.status();
  for (const nlohmann::json& c : *list) {
    const std::string owner = jr::String(jr::Object(c, "Labels"), api::label::kOwner);
    if (DockerOwnerAlive(owner)) continue;  // another fairbench run's, still going
    const std::string id = jr::String(c, "Id");
    if (Status s = client_->RemoveContainer(id); !s.ok()) return s;
    ++removed_leftovers_;
    spdlog::warn("removed container {} ({}), left by a fairbench run that is gone (owner {})", id.substr(0, 12),
                 jr::String(jr::Object(c, "Labels"), api::label::kTarget), owner);
  }
  return Status::Ok();
}

DockerPlatform::~DockerPlatform() {
  for (const std::string& id : std::set<std::string>(*live_)) (void)client_->RemoveContainer(id);
}

Result<std::unique_ptr<TargetInstance>> DockerPlatform::Deploy(const DeployRequest& request, std::stop_token stop) {
  const api::Target& target = request.target;
  const std::string field = "spec.targets[" + std::to_string(request.target_index) + "]";
  if (stop.stop_requested()) return Status::Cancelled("stopped before deploying " + target.name);
  if (target.image.empty()) {
    return Status::InvalidArgument("target " + target.name + " has no image: it cannot run on the docker platform");
  }
  auto image = client_->InspectImage(target.image);
  if (!image.ok()) {
    if (image.status().code() == Status::Code::kNotFound) {
      return Status::InvalidArgument("target " + target.name + ": image " + target.image +
                                     " is not in the Docker engine (build it with scripts/images, or docker pull it)");
    }
    return image.status();
  }
  // `fairbench run` checked this before the run; the image may have changed
  // since, and other callers deploy without that check.
  if (Status s = CheckTargetPort(target, request.target_index, ExposedTcpPorts(*image)); !s.ok()) return s;
  bool wants_port = false;
  for (const auto* list : {&target.command, &target.args}) {
    for (const std::string& a : *list) wants_port |= a.find("{port}") != std::string::npos;
  }
  uint16_t port = static_cast<uint16_t>(target.port);
  if (wants_port) {
    auto free = FreePort();
    if (!free.ok()) return free.status();
    port = *free;
  }
  int64_t nofile = target.nofile;
  std::string capped;
  if (options_.max_nofile && nofile > *options_.max_nofile) {
    capped = "capped at " + std::to_string(*options_.max_nofile) + " by --max-nofile";
    capped_.push_back("target " + target.name + ": nofile " + std::to_string(nofile) + " " + capped);
    nofile = *options_.max_nofile;
  }

  nlohmann::json config;
  config["Image"] = target.image;
  if (!target.command.empty()) {
    nlohmann::json e = nlohmann::json::array();
    for (const std::string& a : target.command) e.push_back(api::SubstitutePort(a, port));
    config["Entrypoint"] = e;
  }
  if (!target.args.empty()) {
    nlohmann::json c = nlohmann::json::array();
    for (const std::string& a : target.args) c.push_back(api::SubstitutePort(a, port));
    config["Cmd"] = c;
  }
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [k, v] : target.env) env.push_back(k + "=" + api::SubstitutePort(v, port));
  config["Env"] = env;
  config["Labels"] = {{api::label::kManagedBy, api::label::kFairbenchRun},
                      {api::label::kRun, request.run.name},
                      {api::label::kTarget, target.name},
                      {api::label::kOwner, owner_}};
  nlohmann::json host;
  host["NetworkMode"] = "host";
  host["CpusetCpus"] = CpuListText(local_->target_cpus());
  std::string limits = "CPUs " + CpuListText(local_->target_cpus());
  if (target.resources.cpu) {
    // A CFS quota per 100 ms period, as `docker run --cpus` sets it — but
    // through CpuQuota, which the engine takes above the machine's CPU
    // count (NanoCpus is refused there: "Range of CPUs is from 0.01 to
    // 2.00"), as the kernel does. The study's 4 CPUs on a smaller machine
    // are then bounded by the CPU set, and the report says so.
    const int64_t millicores = target.resources.cpu->millicores;
    host["CpuPeriod"] = 100000;
    host["CpuQuota"] = millicores * 100;
    std::ostringstream cores;
    cores << static_cast<double>(millicores) / 1000.0;
    limits += ", CPU quota " + cores.str() + " cores";
    const size_t pinned = local_->target_cpus().size();
    if (static_cast<double>(millicores) > 1000.0 * static_cast<double>(pinned)) {
      quota_notes_.push_back("target " + target.name + ": CPU quota " + cores.str() + " cores is more than the " +
                             std::to_string(pinned) + " CPU(s) it is pinned to: the CPU set is its limit");
    }
  }
  if (target.resources.memory) {
    host["Memory"] = target.resources.memory->bytes;
    host["MemorySwap"] = target.resources.memory->bytes;  // no swap
    limits += ", memory " + std::to_string(target.resources.memory->bytes) + " bytes (no swap)";
  }
  host["Ulimits"] = nlohmann::json::array({{{"Name", "nofile"}, {"Soft", nofile}, {"Hard", nofile}}});
  limits += ", nofile " + std::to_string(nofile);
  config["HostConfig"] = host;

  const std::string name = "fairbench-" + request.run.name + "-" + target.name + "-" + std::to_string(getpid()) + "-" +
                           std::to_string(++deployed_);
  auto id = client_->CreateContainer(name, config);
  if (!id.ok()) return Status::InvalidArgument("target " + target.name + ": " + id.status().message());
  live_->insert(*id);
  if (Status s = client_->StartContainer(*id); !s.ok()) {
    (void)client_->RemoveContainer(*id);
    live_->erase(*id);
    if (s.message().find("rlimit type 7") != std::string::npos ||
        s.message().find("RLIMIT_NOFILE") != std::string::npos) {
      const int64_t hard = HardNofile();
      return Status::InvalidArgument(
          field + ".nofile: " + std::to_string(nofile) + " is more than the Docker engine may give a container here" +
          (hard > 0 ? " (this machine's hard limit of open files is " + std::to_string(hard) + ")" : "") +
          ": lower it, or run with --max-nofile " + (hard > 0 ? std::to_string(hard) : "N"));
    }
    return Status::InvalidArgument("target " + target.name + ": " + s.message());
  }
  const std::string log = (std::filesystem::path(options_.local.log_dir) / (target.name + ".log")).string();
  const std::string description =
      "container of " + target.image + " (" + limits + ", host network, port " + std::to_string(port) + ")";
  ran_[target.name] = description;
  spdlog::info("started target {} as container {} ({})", target.name, id->substr(0, 12), description);
  auto instance = std::make_unique<DockerTarget>(client_, live_, target.name, *id, port,
                                                 ReadyCheck::For(target, "127.0.0.1", port), log, description, nofile,
                                                 wants_port, options_.local.target_stop_grace, capped, notes_);
  instance->SetPinnedCpus(local_->target_cpus().size());
  return std::unique_ptr<TargetInstance>(std::move(instance));
}

Result<std::vector<std::string>> DockerPlatform::EnsureAgents(const AgentRequest& request, std::stop_token stop) {
  return local_->EnsureAgents(request, stop);
}

Result<std::unique_ptr<LoadSlot>> DockerPlatform::AcquireSlot(const std::string& holder,
                                                              std::chrono::milliseconds timeout, std::stop_token stop) {
  return local_->AcquireSlot(holder, timeout, stop);
}

report::Environment DockerPlatform::Describe() const {
  report::Environment e = DescribeEnvironment("docker", options_.local.fairbench_version);
  e.target_cpus = local_->target_cpus();
  e.agent_cpus = local_->agent_cpus();
  e.notes.push_back("docker platform: each target a container on " + engine_version_ +
                    ", host network, pinned to CPUs " + CpuListText(e.target_cpus) +
                    "; spec.resources enforced by the kernel through the engine (CPU quota, memory without swap, "
                    "nofile as the container's RLIMIT_NOFILE); memory is the container's working set (usage minus "
                    "inactive file cache, as docker stats shows it)");
  e.notes.push_back("agents: fairbench-agent processes next to the engine, pinned to CPUs " +
                    CpuListText(e.agent_cpus) + ", without limits");
  for (const std::string& c : capped_) e.notes.push_back(c);
  for (const std::string& q : quota_notes_) e.notes.push_back(q);
  for (const std::string& n : *notes_) e.notes.push_back(n);
  for (const auto& [name, what] : ran_) e.notes.push_back("target " + name + " ran as a " + what);
  return e;
}

}  // namespace fairbench::controller
