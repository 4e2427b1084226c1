#include "testing/support/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace fairbench::testing {

Status InNetns(const std::string& netns, const std::function<void()>& f) {
  const std::string path = netns.find('/') == std::string::npos ? "/run/netns/" + netns : netns;
  const int target = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (target < 0) return Status::Unavailable("network namespace " + path + ": " + std::strerror(errno));
  const int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (home < 0 || setns(target, CLONE_NEWNET) != 0) {
    const std::string why = std::strerror(errno);
    close(target);
    if (home >= 0) close(home);
    return Status::Unavailable("cannot enter network namespace " + path + ": " + why);
  }
  f();
  const bool back = setns(home, CLONE_NEWNET) == 0;
  close(target);
  close(home);
  if (!back) std::abort();  // this thread would go on in the wrong network
  return Status::Ok();
}

}  // namespace fairbench::testing
