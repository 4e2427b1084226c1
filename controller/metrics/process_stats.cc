#include "controller/metrics/process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fairbench::metrics {
namespace {

// Seconds since the epoch at which the machine booted (/proc/stat "btime").
double BootTime() {
  std::ifstream in("/proc/stat");
  std::string key;
  while (in >> key) {
    if (key == "btime") {
      double t = 0;
      in >> t;
      return t;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace

Result<ProcessStats> ReadProcessStats() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return Status::IoError("cannot read /proc/self/stat");
  // The command name (field 2) may hold spaces and parentheses: fields
  // resume after the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return Status::IoError("unexpected /proc/self/stat");
  std::istringstream fields(line.substr(close + 2));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  std::string token;
  while (fields >> token) f.push_back(token);
  if (f.size() < 22) return Status::IoError("unexpected /proc/self/stat");
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  ProcessStats s;
  // Fields 14 utime, 15 stime, 22 starttime (ticks since boot), 23 vsize, 24 rss (pages).
  s.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / ticks;
  s.start_time_seconds = BootTime() + std::stod(f[19]) / ticks;
  s.virtual_memory_bytes = std::stod(f[20]);
  s.resident_memory_bytes = std::stod(f[21]) * page;
  std::error_code ec;
  size_t fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++fds;
  }
  // The directory iterator's own descriptor is one of them.
  s.open_fds = static_cast<double>(fds > 0 ? fds - 1 : 0);
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) s.max_fds = static_cast<double>(rl.rlim_cur);
  return s;
}

}  // namespace fairbench::metrics
