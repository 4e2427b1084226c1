// fairbench-nofile: sets RLIMIT_NOFILE, then runs a command in its place.
// Kubernetes has no pod field for the open-files limit; a target pod runs
// its server through this helper, which an init container copies into an
// emptyDir (it is linked statically, so it runs in any image).
//
//   fairbench-nofile --nofile=N [--at-most] -- COMMAND [ARGS...]
//   fairbench-nofile --install DEST
//
// --nofile=N sets the soft limit to min(N, hard); when N is above the hard
// limit it first tries to raise the hard limit to N as well (this needs
// CAP_SYS_RESOURCE and N <= fs.nr_open). It then reads back the limit in
// force. Below N: one line on stderr and exit 2, or with --at-most a warning
// and the command runs anyway. Then "fairbench-nofile: nofile S" on stderr,
// then what the container really got, read from inside it (common/cpu_view.h:
// the CPUs it may run on, the CPUs online, its CPU quota and memory limit,
// the kernel's boot id) as "fairbench-cpus: {JSON}", and execvp(COMMAND). Exit codes: 2 bad usage or limit not reached, 126/127
// the command cannot be run.
//
// --install DEST copies this executable to DEST (mode 0755), for an init
// container whose image may have no cp.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/cpu_view.h"

namespace {

int Usage(const char* why) {
  std::fprintf(stderr, "fairbench-nofile: %s\n", why);
  std::fprintf(stderr,
               "usage: fairbench-nofile --nofile=N [--at-most] -- COMMAND [ARGS...]\n"
               "       fairbench-nofile --install DEST\n");
  return 2;
}

bool ParseCount(const char* text, rlim_t* out) {
  if (text == nullptr || *text == '\0') return false;
  rlim_t v = 0;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return false;
    const rlim_t digit = static_cast<rlim_t>(*p - '0');
    if (v > (RLIM_INFINITY - digit) / 10) return false;
    v = v * 10 + digit;
  }
  if (v == 0) return false;
  *out = v;
  return true;
}

std::string LimitText(rlim_t v) { return v == RLIM_INFINITY ? "unlimited" : std::to_string(v); }

// fs.nr_open, or 0 when it cannot be read.
rlim_t NrOpen() {
  FILE* f = std::fopen("/proc/sys/fs/nr_open", "re");
  if (f == nullptr) return 0;
  unsigned long long v = 0;
  if (std::fscanf(f, "%llu", &v) != 1) v = 0;
  std::fclose(f);
  return static_cast<rlim_t>(v);
}

int Install(const char* dest) {
  const int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    std::fprintf(stderr, "fairbench-nofile: cannot read /proc/self/exe: %s\n", std::strerror(errno));
    return 1;
  }
  const std::string tmp = std::string(dest) + ".tmp";
  const int out = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  if (out < 0) {
    std::fprintf(stderr, "fairbench-nofile: cannot create %s: %s\n", tmp.c_str(), std::strerror(errno));
    close(in);
    return 1;
  }
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = read(in, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "fairbench-nofile: read: %s\n", std::strerror(errno));
      close(in);
      close(out);
      return 1;
    }
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = write(out, buf + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        std::fprintf(stderr, "fairbench-nofile: write %s: %s\n", tmp.c_str(), std::strerror(errno));
        close(in);
        close(out);
        return 1;
      }
      done += w;
    }
  }
  close(in);
  if (fchmod(out, 0755) != 0 || close(out) != 0 || rename(tmp.c_str(), dest) != 0) {
    std::fprintf(stderr, "fairbench-nofile: cannot install %s: %s\n", dest, std::strerror(errno));
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  rlim_t wanted = 0;
  bool at_most = false;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--install") {
      if (i + 2 != argc) return Usage("--install takes one destination and nothing else");
      return Install(argv[i + 1]);
    }
    if (a == "--at-most") {
      at_most = true;
    } else if (a.rfind("--nofile=", 0) == 0) {
      if (!ParseCount(argv[i] + 9, &wanted))
        return Usage(("--nofile: '" + a.substr(9) + "' is not a positive count").c_str());
    } else if (a == "--nofile" && i + 1 < argc) {
      if (!ParseCount(argv[++i], &wanted))
        return Usage(("--nofile: '" + std::string(argv[i]) + "' is not a positive count").c_str());
    } else {
      return Usage(("unknown option '" + a + "'").c_str());
    }
  }
  if (wanted == 0) return Usage("--nofile=N is required");
  if (i >= argc) return Usage("no command after --");

  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    std::fprintf(stderr, "fairbench-nofile: getrlimit: %s\n", std::strerror(errno));
    return 2;
  }
  const rlim_t hard_before = lim.rlim_max;
  int raise_errno = 0;
  if (wanted > lim.rlim_max) {
    const rlimit both{wanted, wanted};
    if (setrlimit(RLIMIT_NOFILE, &both) != 0) raise_errno = errno;
  }
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    const rlimit soft{wanted < lim.rlim_max ? wanted : lim.rlim_max, lim.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &soft) != 0) {
      std::fprintf(stderr, "fairbench-nofile: setrlimit(RLIMIT_NOFILE, %s): %s\n", LimitText(soft.rlim_cur).c_str(),
                   std::strerror(errno));
      return 2;
    }
  }
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    std::fprintf(stderr, "fairbench-nofile: getrlimit: %s\n", std::strerror(errno));
    return 2;
  }
  if (lim.rlim_cur < wanted) {
    std::string why = "cannot be raised";
    const rlim_t nr_open = NrOpen();
    if (nr_open > 0 && wanted > nr_open) {
      why += " (above fs.nr_open, " + std::to_string(nr_open) + ")";
    } else if (raise_errno == EPERM) {
      why += " (no CAP_SYS_RESOURCE)";
    } else if (raise_errno != 0) {
      why += std::string(" (") + std::strerror(raise_errno) + ")";
    }
    std::fprintf(stderr, "fairbench-nofile: asked for nofile %s, the hard limit is %s and %s%s\n",
                 LimitText(wanted).c_str(), LimitText(hard_before).c_str(), why.c_str(),
                 at_most ? "; continuing with less (--at-most)" : "");
    if (!at_most) return 2;
  }
  std::fprintf(stderr, "fairbench-nofile: nofile %s\n", LimitText(lim.rlim_cur).c_str());
  const std::string cpus = fairbench::CpuViewToJson(fairbench::ReadCpuView()).dump();
  std::fprintf(stderr, "%s%s\n", std::string(fairbench::kCpuViewPrefix).c_str(), cpus.c_str());
  std::fflush(stderr);
  execvp(argv[i], argv + i);
  const int e = errno;
  std::fprintf(stderr, "fairbench-nofile: cannot run '%s': %s\n", argv[i], std::strerror(e));
  return e == ENOENT ? 127 : 126;
}
