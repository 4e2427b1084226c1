#include "controller/platform/local/local_platform.h"

#include <openssl/evp.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "api/cells.h"
#include "api/cpu_list.h"
#include "controller/platform/ready_probe.h"
#include "host/cgroup.h"
#include "controller/platform/local/environment.h"
#include "controller/platform/local/perf_profile.h"
#include "controller/platform/local/program_path.h"

namespace fairbench::controller {
namespace {

api::Time WallNow() { return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now()); }

std::string ThisHost() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

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

// "10 s", "1.5 s", "200 ms".
std::string FormatGrace(std::chrono::milliseconds d) {
  if (d.count() < 1000) return std::to_string(d.count()) + " ms";
  std::ostringstream s;
  s << static_cast<double>(d.count()) / 1000.0 << " s";
  return s.str();
}

// The soft "Max open files" of /proc/PID/limits ("65536", "unlimited").
std::optional<std::string> SoftNofile(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream fields(line.substr(std::strlen("Max open files")));
    std::string soft;
    if (fields >> soft) return soft;
  }
  return std::nullopt;
}

// Which binary ran: the program of the target's process (/proc/PID/exe,
// whatever PATH or a wrapper resolved) and the SHA-256 of its bytes.
std::string BinaryIdentity(pid_t pid) {
  const std::string exe = "/proc/" + std::to_string(pid) + "/exe";
  std::error_code ec;
  const std::filesystem::path program = std::filesystem::read_symlink(exe, ec);
  if (ec) return "identity: unknown, " + exe + " could not be read (" + ec.message() + ")";
  std::ifstream in(exe, std::ios::binary);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (!in || ctx == nullptr || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx);
    return "identity: binary " + program.string() + ", unknown digest (" + exe + " could not be read)";
  }
  std::vector<char> buffer(1 << 16);
  while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
    EVP_DigestUpdate(ctx, buffer.data(), static_cast<size_t>(in.gcount()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, digest, &len);
  EVP_MD_CTX_free(ctx);
  static const char* hex = "0123456789abcdef";
  std::string text;
  for (unsigned int i = 0; i < len; ++i) {
    text += hex[digest[i] >> 4];
    text += hex[digest[i] & 15];
  }
  return "identity: binary " + program.string() + " sha256:" + text;
}

class LocalTarget final : public TargetInstance {
 public:
  LocalTarget(std::string name, host::Process process, std::unique_ptr<host::TargetCgroup> cgroup, uint16_t port,
              ReadyCheck ready, std::string log, std::string description, int64_t nofile)
      : name_(std::move(name)),
        process_(std::move(process)),
        cgroup_(std::move(cgroup)),
        port_(port),
        ready_(std::move(ready)),
        log_(std::move(log)),
        description_(std::move(description)),
        nofile_(nofile) {}

  // The port came from "{port}" in the command: say which one was used.
  void SetPortChosen() { port_chosen_ = true; }
  void SetPinnedCpus(size_t count) { pinned_cpus_ = count; }

  // Read from the target's process by the kernel's account of it (its
  // /proc and cgroups): the local platform's pinning is all that keeps
  // agents off its CPUs.
  TargetCpuFacts Cpus() override {
    TargetCpuFacts f;
    if (pinned_cpus_ > 0) f.asked = api::CpuQuantity{static_cast<int64_t>(pinned_cpus_) * 1000};
    CpuView v = ReadCpuView(process_.pid());
    if (v.cpus.empty()) {
      f.not_read = v.unread.empty() ? "no CPU list for its process" : v.unread.front();
    } else {
      f.view = std::move(v);
    }
    return f;
  }
  void SetProfiling(std::string perf_program, std::string file_prefix) {
    perf_program_ = std::move(perf_program);
    profile_prefix_ = std::move(file_prefix);
  }

  Result<std::unique_ptr<ProfileSession>> StartProfile(const ProfileRequest& request) override {
    PerfOptions o;
    o.perf = perf_program_;
    o.data_file = profile_prefix_ + "-" + std::to_string(++profiles_) + ".data";
    o.log_file = profile_prefix_ + ".log";
    return StartPerfProfile(host::ProcessTreePids(process_.pid()), request, o);
  }

  // The limit the target process runs with: below the one asked for when
  // this machine's hard limit is lower.
  std::vector<std::string> ReadBack() override {
    const std::string where = "/proc/" + std::to_string(process_.pid()) + "/limits";
    const std::string asked = "asked for " + std::to_string(nofile_);
    auto soft = SoftNofile(process_.pid());
    std::vector<std::string> facts;
    if (port_chosen_) facts.push_back("port: " + std::to_string(port_) + " (chosen at run time)");
    if (!soft) {
      facts.push_back("nofile in force: unknown, " + where + " could not be read (" + asked + ")");
    } else {
      const bool short_of = *soft != "unlimited" && std::stoll(*soft) < nofile_;
      facts.push_back("nofile in force: " + *soft + ", read back from " + where + " (" + asked +
                      (short_of ? "; this machine's hard limit is lower" : "") + ")");
    }
    std::ifstream in(log_);
    std::string head(64 * 1024, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(in.gcount()));
    if (auto f = TargetFactsFromLog(head)) facts.push_back(*f);
    facts.push_back(BinaryIdentity(process_.pid()));
    return facts;
  }

  TargetPlacement placement() const override { return TargetPlacement{ThisHost(), "127.0.0.1", port_}; }
  std::string LogLocation() const override { return log_; }
  std::string Description() const override { return description_; }

  Status WaitReady(std::chrono::steady_clock::time_point deadline, std::stop_token stop) override {
    std::string last = "no answer yet";
    while (std::chrono::steady_clock::now() < deadline) {
      if (stop.stop_requested()) return Status::Cancelled(name_ + ": stopped while waiting for it to be ready");
      if (auto gone = Gone())
        return Status::Unavailable(name_ + " " + gone->text + " before it was ready (see " + log_ + ")");
      const Status ready = ProbeReady(ready_, std::chrono::milliseconds(500));
      if (ready.ok()) return Status::Ok();
      last = ready.message();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return Status::DeadlineExceeded(name_ + " did not answer on port " + std::to_string(port_) + " in time (" + last +
                                    "; see " + log_ + ")");
  }

  std::optional<report::TargetExit> Gone() override {
    auto e = process_.Poll();
    if (!e) return std::nullopt;
    report::TargetExit exit;
    if (e->exited) {
      exit.exit_code = e->code;
    } else {
      exit.signal = e->signal;
    }
    exit.oom_killed = cgroup_ && cgroup_->OomKilled();
    exit.text = exit.oom_killed ? "was OOMKilled (" + e->ToString() + ")" : e->ToString();
    return exit;
  }

  Result<TargetUsage> Usage() override {
    if (cgroup_) {
      auto memory = cgroup_->MemoryWorkingSet();
      auto cpu = cgroup_->CpuSeconds();
      if (memory.ok() && cpu.ok()) return TargetUsage{*memory, *cpu, WallNow()};
    }
    auto u = host::SampleProcessTree(process_.pid());
    if (!u.ok()) return u.status();
    return TargetUsage{u->rss_bytes, u->cpu_seconds, WallNow()};
  }

  Status Teardown() override {
    const host::ExitInfo e = process_.Stop(stop_grace_);
    spdlog::info("target {} stopped: {}", name_, e.ToString());
    cgroup_.reset();  // kills stragglers, removes the group
    if (e.killed_after_grace) {
      return Status::DeadlineExceeded("did not exit within " + FormatGrace(stop_grace_) +
                                      " of SIGTERM; killed (SIGKILL)");
    }
    return Status::Ok();
  }
  void SetStopGrace(std::chrono::milliseconds grace) { stop_grace_ = grace; }

 private:
  std::string name_;
  host::Process process_;
  std::unique_ptr<host::TargetCgroup> cgroup_;
  uint16_t port_;
  ReadyCheck ready_;
  std::string log_;
  std::string description_;
  int64_t nofile_;
  std::chrono::milliseconds stop_grace_{10000};
  bool port_chosen_ = false;
  size_t pinned_cpus_ = 0;
  std::string perf_program_ = "perf";
  std::string profile_prefix_;
  int profiles_ = 0;
};

class FileLockSlot final : public LoadSlot {
 public:
  explicit FileLockSlot(int fd) : fd_(fd) {}
  ~FileLockSlot() override {
    flock(fd_, LOCK_UN);
    close(fd_);
  }
  bool held() const override { return true; }

 private:
  int fd_;
};

}  // namespace

std::string CpuListText(const std::vector<int>& cpus) { return api::FormatCpuList(api::CpuList{cpus}); }

Result<std::unique_ptr<LocalPlatform>> LocalPlatform::Create(LocalPlatformOptions options) {
  const std::vector<int> allowed = host::AllowedCpus();
  auto [t, a] = api::SplitInHalves(api::CpuList{allowed});
  if (options.target_cpus.empty()) options.target_cpus = t.cpus;
  if (options.agent_cpus.empty()) options.agent_cpus = a.cpus;
  for (int c : options.target_cpus) {
    if (std::find(allowed.begin(), allowed.end(), c) == allowed.end()) {
      return Status::InvalidArgument("target CPU " + std::to_string(c) +
                                     " is not available (allowed: " + CpuListText(allowed) + ")");
    }
  }
  for (int c : options.agent_cpus) {
    if (std::find(allowed.begin(), allowed.end(), c) == allowed.end()) {
      return Status::InvalidArgument("agent CPU " + std::to_string(c) +
                                     " is not available (allowed: " + CpuListText(allowed) + ")");
    }
    if (allowed.size() > 1 &&
        std::find(options.target_cpus.begin(), options.target_cpus.end(), c) != options.target_cpus.end()) {
      return Status::InvalidArgument("CPU " + std::to_string(c) +
                                     " is both a target CPU and an agent CPU: they must not share a core");
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(options.log_dir, ec);
  if (ec) return Status::IoError("cannot create '" + options.log_dir + "': " + ec.message());
  return std::unique_ptr<LocalPlatform>(new LocalPlatform(std::move(options)));
}

LocalPlatform::~LocalPlatform() {
  for (host::Process& p : agents_) p.Stop(std::chrono::seconds(2));
}

report::Environment LocalPlatform::Describe() const {
  report::Environment e = DescribeEnvironment("local", options_.fairbench_version);
  e.target_cpus = options_.target_cpus;
  e.agent_cpus = options_.agent_cpus;
  std::vector<std::string> n = {"local platform: targets pinned to CPUs " + CpuListText(options_.target_cpus) +
                                ", agents to CPUs " + CpuListText(options_.agent_cpus)};
  if (options_.target_cpus == options_.agent_cpus) n.push_back("WARNING: a single CPU is shared by targets and agents");
  if (cgroups_used_) {
    n.push_back(
        "each target runs in a cgroup of its own: spec.resources are enforced (memory limit, CPU quota); memory is the "
        "cgroup's working set (usage minus inactive file cache, as docker stats shows it)");
  } else {
    n.push_back(
        "memory is the resident set of the target's process tree (from /proc): no writable cgroup here, so "
        "spec.resources are not enforced");
  }
  for (const auto& [name, what] : ran_) n.push_back("target " + name + " ran " + what);
  e.notes.insert(e.notes.end(), n.begin(), n.end());
  return e;
}

Result<std::unique_ptr<TargetInstance>> LocalPlatform::Deploy(const DeployRequest& request, std::stop_token stop) {
  const api::Target& target = request.target;
  if (stop.stop_requested()) return Status::Cancelled("stopped before deploying " + target.name);
  if (!target.local || target.local->command.empty()) {
    return Status::InvalidArgument("target " + target.name +
                                   " has no local.command: it cannot run on the local platform");
  }
  bool wants_port = false;
  for (const std::string& arg : target.local->command) wants_port |= arg.find("{port}") != std::string::npos;
  uint16_t port = static_cast<uint16_t>(target.port);
  if (wants_port) {
    auto free = FreePort();
    if (!free.ok()) return free.status();
    port = *free;
  }
  host::ProcessOptions o;
  for (const std::string& arg : target.local->command) o.argv.push_back(api::SubstitutePort(arg, port));
  for (const auto& [k, v] : target.env) o.env[k] = v;
  for (const auto& [k, v] : target.local->env) o.env[k] = api::SubstitutePort(v, port);
  o.working_dir = target.local->working_dir;
  if (!o.working_dir.empty() && std::filesystem::path(o.working_dir).is_relative()) {
    o.working_dir = (std::filesystem::path(options_.base_dir) / o.working_dir).string();
  }
  const char* path_env = std::getenv("PATH");
  auto program = ResolveProgram(o.argv[0], options_.program_dir, path_env != nullptr ? path_env : "");
  if (!program.ok()) return Status::InvalidArgument("target " + target.name + ": " + program.status().message());
  o.argv[0] = *program;
  o.cpus = options_.target_cpus;
  o.nofile = static_cast<uint64_t>(target.nofile);
  o.log_file = (std::filesystem::path(options_.log_dir) / (target.name + ".log")).string();
  std::unique_ptr<host::TargetCgroup> cgroup;
  if (options_.use_cgroups) {
    std::optional<int64_t> memory, cpu;
    if (target.resources.memory) memory = target.resources.memory->bytes;
    if (target.resources.cpu) cpu = target.resources.cpu->millicores;
    auto g = host::TargetCgroup::Create(
        target.name + "-" + std::to_string(getpid()) + "-" + std::to_string(++deployed_), memory, cpu);
    if (g.ok()) {
      cgroup = std::move(*g);
      o.cgroup_procs = cgroup->procs_files();
    } else if (!cgroup_warned_) {
      spdlog::warn("targets run without a cgroup of their own: {}", g.status().message());
      cgroup_warned_ = true;
    }
  }
  cgroups_used_ = cgroup != nullptr;
  auto process = host::Process::Start(o);
  if (!process.ok()) return Status::InvalidArgument("target " + target.name + ": " + process.status().message());
  spdlog::info("started target {} (pid {}) on 127.0.0.1:{}, CPUs {}{}", target.name, process->pid(), port,
               CpuListText(o.cpus), cgroup ? ", " + cgroup->Describe() : "");
  std::string description;
  for (const std::string& arg : o.argv) description += (description.empty() ? "" : " ") + arg;
  ran_[target.name] = description;
  auto instance =
      std::make_unique<LocalTarget>(target.name, std::move(*process), std::move(cgroup), port,
                                    ReadyCheck::For(target, "127.0.0.1", port), o.log_file, description, target.nofile);
  if (wants_port) instance->SetPortChosen();
  instance->SetPinnedCpus(o.cpus.size());
  instance->SetStopGrace(options_.target_stop_grace);
  instance->SetProfiling(options_.perf_program,
                         (std::filesystem::path(options_.log_dir) / ("profile-" + target.name)).string());
  return std::unique_ptr<TargetInstance>(std::move(instance));
}

Result<std::vector<std::string>> LocalPlatform::EnsureAgents(const AgentRequest& request, std::stop_token stop) {
  // One machine: the agents are kept off the target's CPUs, not its node.
  const int count = request.count;
  if (stop.stop_requested()) return Status::Cancelled("stopped before starting agents");
  // Restart any agent that died, then add agents up to the count.
  for (size_t i = 0; i < agents_.size(); ++i) {
    if (auto e = agents_[i].Poll()) {
      spdlog::warn("agent {} {}; starting a new one", agent_ids_[i], e->ToString());
      agents_[i] = host::Process();
      agent_ids_[i].clear();
    }
  }
  while (agents_.size() < static_cast<size_t>(count)) {
    agents_.emplace_back();
    agent_ids_.emplace_back();
  }
  for (size_t i = 0; i < static_cast<size_t>(count); ++i) {
    if (!agent_ids_[i].empty()) continue;
    const std::string id = "local-agent-" + std::to_string(i) + "-" + std::to_string(agent_generation_++);
    host::ProcessOptions o;
    o.argv = {options_.agent_binary,
              "--controller",
              options_.controller_address,
              "--id",
              id,
              "--cpus",
              CpuListText(options_.agent_cpus),
              "--give-up-after",
              "10"};
    o.argv.insert(o.argv.end(), options_.agent_args.begin(), options_.agent_args.end());
    o.env["FAIRBENCH_AGENT_TOKEN"] = options_.token;  // not on the command line, where ps shows it
    o.cpus = options_.agent_cpus;
    o.nofile = 1 << 20;  // capped at the hard limit
    o.log_file = (std::filesystem::path(options_.log_dir) / ("agent-" + std::to_string(i) + ".log")).string();
    auto p = host::Process::Start(o);
    if (!p.ok()) return Status::InvalidArgument("cannot start an agent: " + p.status().message());
    agents_[i] = std::move(*p);
    agent_ids_[i] = id;
  }
  return std::vector<std::string>(agent_ids_.begin(), agent_ids_.begin() + count);
}

void LocalPlatform::KillAgent(size_t index, int signal) {
  if (index < agents_.size()) agents_[index].Kill(signal);
}

std::vector<pid_t> LocalPlatform::AgentPids() {
  std::vector<pid_t> out;
  for (const host::Process& p : agents_) out.push_back(p.pid());
  return out;
}

Result<std::unique_ptr<LoadSlot>> LocalPlatform::AcquireSlot(const std::string& holder,
                                                             std::chrono::milliseconds timeout, std::stop_token stop) {
  const int fd = open(options_.lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return Status::IoError("cannot open lock file '" + options_.lock_file + "': " + std::strerror(errno));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool logged = false;
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      close(fd);
      return Status::IoError("cannot lock '" + options_.lock_file + "': " + std::strerror(errno));
    }
    if (!logged) {
      spdlog::info("waiting for the load slot: another fairbench run holds {}", options_.lock_file);
      logged = true;
    }
    if (stop.stop_requested()) {
      close(fd);
      return Status::Cancelled("stopped while waiting for the load slot");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      close(fd);
      return Status::DeadlineExceeded("another fairbench run holds the load slot (" + options_.lock_file + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Leave the holder's name in the file for people who wonder who holds it.
  if (ftruncate(fd, 0) == 0) {
    const std::string who = holder + " pid " + std::to_string(getpid()) + "\n";
    [[maybe_unused]] const ssize_t n = pwrite(fd, who.data(), who.size(), 0);
  }
  return std::unique_ptr<LoadSlot>(new FileLockSlot(fd));
}

}  // namespace fairbench::controller
