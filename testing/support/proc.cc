#include "testing/support/proc.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fairbench::testing {
namespace {

std::string ReadStat(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::vector<pid_t> ChildProcesses(pid_t parent, const std::string& name) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    // "PID (comm) state ppid …": comm may hold spaces and parentheses.
    const std::string stat = ReadStat(entry.path().string() + "/stat");
    const size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 2 > stat.size()) continue;
    if (!name.empty() && stat.compare(open + 1, close - open - 1, name) != 0) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(pid)));
  }
  return out;
}

bool GoneOrZombie(pid_t pid) {
  const std::string stat = ReadStat("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  return close == std::string::npos || stat.compare(close + 2, 1, "Z") == 0;
}

}  // namespace fairbench::testing
