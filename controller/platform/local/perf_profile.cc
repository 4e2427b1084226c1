#include "controller/platform/local/perf_profile.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "host/process.h"
#include "controller/platform/local/program_path.h"

namespace fairbench::controller {
namespace {

using Clock = std::chrono::steady_clock;

// How long perf may take to write its samples once stopped, and to turn
// them into text.
constexpr std::chrono::seconds kRecordGrace{10};
constexpr std::chrono::seconds kScriptTimeout{60};

std::string ReadFrom(const std::string& path, std::streamoff offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(offset);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::streamoff FileSize(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<std::streamoff>(size);
}

// The line of perf's output that says what went wrong: the first one that
// is not "Error:" or perf's progress chatter.
std::string PerfError(const std::string& output) {
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    if (line.empty() || line == "Error:" || line.rfind("[ perf record:", 0) == 0) continue;
    if (line.rfind("Error: ", 0) == 0) line = line.substr(7);
    return line;
  }
  return "";
}

std::string Joined(const std::vector<pid_t>& pids) {
  std::string out;
  for (pid_t p : pids) out += (out.empty() ? "" : ",") + std::to_string(p);
  return out;
}

report::CellProfile NotRecorded(report::ProfileState state, std::string message, const std::string& command,
                                int32_t hz) {
  report::CellProfile p;
  p.state = state;
  p.message = std::move(message);
  p.command = command;
  p.frequency_hz = hz;
  return p;
}

class PerfSession final : public ProfileSession {
 public:
  PerfSession(host::Process process, std::string perf, PerfOptions options, std::string command, int32_t hz,
              std::streamoff log_offset)
      : process_(std::move(process)),
        perf_(std::move(perf)),
        options_(std::move(options)),
        command_(std::move(command)),
        hz_(hz),
        log_offset_(log_offset),
        started_(Clock::now()) {}

  ~PerfSession() override {
    if (!finished_) {
      process_.Stop(std::chrono::seconds(0));
      RemoveFiles();
    }
  }

  report::CellProfile Finish(std::stop_token stop) override {
    finished_ = true;
    const auto early = process_.Poll();
    const double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    // perf ended before it was stopped: it could not sample at all (or its
    // own time bound passed, and its file is complete).
    if (early && (!early->exited || early->code != 0 || FileSize(options_.data_file) == 0)) {
      RemoveFiles();
      std::string why = PerfError(ReadFrom(options_.log_file, log_offset_));
      if (why.empty()) why = "perf record " + early->ToString();
      const int paranoid = PerfEventParanoid();
      std::string msg = "perf could not sample: " + why;
      if (paranoid > -100) msg += " (kernel.perf_event_paranoid is " + std::to_string(paranoid) + ")";
      return NotRecorded(report::ProfileState::kUnavailable, msg + "; see " + options_.log_file, command_, hz_);
    }
    process_.Stop(kRecordGrace);  // SIGTERM: perf writes its file and ends
    if (FileSize(options_.data_file) == 0) {
      RemoveFiles();
      return NotRecorded(report::ProfileState::kFailed, "perf record wrote no samples; see " + options_.log_file,
                         command_, hz_);
    }
    const std::string text_file = options_.data_file + ".txt";
    host::ProcessOptions o;
    o.argv = {perf_, "script", "-F", "comm,tid,ip,sym,dso", "-i", options_.data_file};
    o.log_file = text_file;
    o.stderr_file = options_.log_file;
    auto script = host::Process::Start(o);
    if (!script.ok()) {
      RemoveFiles();
      return NotRecorded(report::ProfileState::kFailed, "perf script: " + script.status().message(), command_, hz_);
    }
    const auto deadline = Clock::now() + kScriptTimeout;
    std::optional<host::ExitInfo> exit;
    while (!(exit = script->Poll()) && Clock::now() < deadline && !stop.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!exit) {
      script->Stop(std::chrono::seconds(0));
      std::filesystem::remove(text_file);
      RemoveFiles();
      return NotRecorded(report::ProfileState::kFailed,
                         stop.stop_requested()
                             ? "stopped while reading the samples"
                             : "perf script took longer than " + std::to_string(kScriptTimeout.count()) + " s",
                         command_, hz_);
    }
    const std::string text = ReadFrom(text_file, 0);
    std::filesystem::remove(text_file);
    RemoveFiles();
    if (!exit->exited || exit->code != 0) {
      return NotRecorded(report::ProfileState::kFailed,
                         "perf script " + exit->ToString() + "; see " + options_.log_file, command_, hz_);
    }
    const report::Folded folded = report::FoldPerfScript(text);
    report::CellProfile p;
    p.state = report::ProfileState::kRecorded;
    p.command = command_;
    p.frequency_hz = hz_;
    p.seconds = seconds;
    p.samples = folded.samples;
    p.omitted_samples = folded.omitted_samples;
    p.stacks = folded.stacks;
    if (p.samples == 0) p.message = "no samples: the target did not run on a CPU while it was sampled";
    return p;
  }

 private:
  void RemoveFiles() {
    std::error_code ec;
    std::filesystem::remove(options_.data_file, ec);
    std::filesystem::remove(options_.data_file + ".old", ec);
  }

  host::Process process_;
  std::string perf_;
  PerfOptions options_;
  std::string command_;
  int32_t hz_;
  std::streamoff log_offset_;
  Clock::time_point started_;
  bool finished_ = false;
};

}  // namespace

int PerfEventParanoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int v = 0;
  return in >> v ? v : -100;
}

Result<std::unique_ptr<ProfileSession>> StartPerfProfile(const std::vector<pid_t>& pids, const ProfileRequest& request,
                                                         const PerfOptions& options) {
  const char* path_env = std::getenv("PATH");
  auto perf = ResolveProgram(options.perf, "", path_env != nullptr ? path_env : "");
  if (!perf.ok() || access(perf->c_str(), X_OK) != 0) {
    return Status::Unavailable("perf is not installed here (" +
                               (perf.ok() ? "'" + *perf + "' cannot be run" : perf.status().message()) +
                               "); Debian and Ubuntu have it in the linux-perf package");
  }
  if (pids.empty()) return Status::Unavailable("the target has no process left to sample");
  const auto bound = std::chrono::ceil<std::chrono::seconds>(request.max_duration);
  const std::vector<std::string> argv = {*perf,
                                         "record",
                                         "-F",
                                         std::to_string(request.frequency_hz),
                                         "-g",
                                         "-p",
                                         Joined(pids),
                                         "-o",
                                         options.data_file,
                                         "--",
                                         "sleep",
                                         std::to_string(std::max<int64_t>(1, bound.count()))};
  const std::string command = "perf record -F " + std::to_string(request.frequency_hz) + " -g -p " + Joined(pids);
  std::error_code ec;
  std::filesystem::remove(options.data_file, ec);
  const std::streamoff offset = FileSize(options.log_file);
  host::ProcessOptions o;
  o.argv = argv;
  o.log_file = options.log_file;
  auto process = host::Process::Start(o);
  if (!process.ok()) return Status::Unavailable("cannot run perf: " + process.status().message());
  return std::unique_ptr<ProfileSession>(
      new PerfSession(std::move(*process), *perf, options, command, request.frequency_hz, offset));
}

}  // namespace fairbench::controller
