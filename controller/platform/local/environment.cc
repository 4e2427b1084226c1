#include "controller/platform/local/environment.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace fairbench::controller {

report::Environment DescribeEnvironment(const std::string& platform, const std::string& version) {
  report::Environment e;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  e.hostname = host;
  utsname u{};
  if (uname(&u) == 0) e.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      e.cpu_model = line.substr(line.find(':') + 2);
      break;
    }
  }
  e.cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  e.memory_bytes = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  e.platform = platform;
  e.fairbench_version = version;
  for (const char* sysctl : {"/proc/sys/net/core/somaxconn", "/proc/sys/net/ipv4/ip_local_port_range",
                             "/proc/sys/net/ipv4/tcp_tw_reuse", "/proc/sys/net/ipv4/tcp_congestion_control"}) {
    std::ifstream in(sysctl);
    std::string value;
    if (std::getline(in, value)) {
      std::string name = std::string(sysctl).substr(10);
      for (char& c : name) {
        if (c == '/') c = '.';
      }
      e.notes.push_back(name + " = " + value);
    }
  }
  return e;
}

}  // namespace fairbench::controller
