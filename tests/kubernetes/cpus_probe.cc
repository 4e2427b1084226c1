// fairbench-test-cpus: what a container may run on, as the kernel tells
// the process itself: /proc/self/status's Cpus_allowed_list, printed once
// a second ("cpus 1") until killed. A static binary: the one file of its
// image (scripts/kube-node image).
#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

int main() {
  for (;;) {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
      const std::string key = "Cpus_allowed_list:";
      if (line.rfind(key, 0) != 0) continue;
      const size_t at = line.find_first_not_of(" \t", key.size());
      std::cout << "cpus " << (at == std::string::npos ? "" : line.substr(at)) << std::endl;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}
