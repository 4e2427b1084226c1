// fairbench-test-misbehaving-server --port P --mode M [--delay D]
//     [--host H] [--stats-file FILE] [--ignore-sigterm]
//
// Prints "listening on HOST:PORT" once it accepts connections (with --port 0
// the kernel's choice). SIGUSR1 writes the counters to --stats-file;
// SIGTERM or SIGINT writes them and exits 0 — except with --ignore-sigterm,
// where SIGTERM only writes them and the server goes on (a server that does
// not stop when asked: only SIGINT or SIGKILL end it). See
// misbehaving_server.h.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/signals.h"
#include "common/units.h"
#include "testing/support/misbehaving_server.h"

namespace {

using fairbench::Status;

// Write to FILE.tmp, then rename: a reader never sees half a file.
Status WriteStatsFile(const std::string& path, const std::string& json) {
  std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError("open " + tmp + ": " + std::strerror(errno));
  std::string data = json + "\n";
  bool ok = write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0)
    return Status::IoError("write " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A deliberately bad HTTP/1.1 server for testing load generators."};
  int port = -1;
  std::string host = "127.0.0.1";
  std::string mode_name;
  std::string delay_text = "1s";
  std::string stats_file;
  app.add_option("--port", port, "TCP port (0: any free port)")->required()->check(CLI::Range(0, 65535));
  app.add_option("--host", host, "numeric address to listen on");
  app.add_option("--mode", mode_name, "how to misbehave")->required();
  app.add_option("--delay", delay_text, "delay mode: time before answering (e.g. 500ms, 3s)");
  app.add_option("--stats-file", stats_file, "where SIGUSR1 and SIGTERM write the counters as JSON");
  bool ignore_sigterm = false;
  app.add_flag("--ignore-sigterm", ignore_sigterm, "keep serving after SIGTERM (SIGINT still ends the server)");
  CLI11_PARSE(app, argc, argv);

  auto mode = fairbench::testing::ParseMode(mode_name);
  if (!mode.ok()) {
    std::fprintf(stderr, "--mode: %s\n", mode.status().message().c_str());
    return 2;
  }
  auto delay = fairbench::ParseDuration(delay_text);
  if (!delay.ok()) {
    std::fprintf(stderr, "--delay: %s\n", delay.status().message().c_str());
    return 2;
  }

  // Signals are taken synchronously by this thread; every thread started
  // later inherits the mask. Writes to closed sockets must fail, not kill.
  signal(SIGPIPE, SIG_IGN);
  const fairbench::BlockedSignals signals({SIGTERM, SIGINT, SIGUSR1});

  fairbench::testing::MisbehavingServerOptions options;
  options.host = host;
  options.port = static_cast<uint16_t>(port);
  options.mode = *mode;
  options.delay = std::chrono::duration_cast<std::chrono::milliseconds>(*delay);
  fairbench::testing::MisbehavingServer server(options);
  if (Status s = server.Listen(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  server.Serve();
  std::printf("listening on %s:%u mode %s\n", host.c_str(), static_cast<unsigned>(server.port()), mode_name.c_str());
  std::fflush(stdout);

  while (true) {
    const int sig = signals.Wait();
    if (!stats_file.empty()) {
      if (Status s = WriteStatsFile(stats_file, server.TakeStats().ToJson()); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
      }
    }
    if (sig == SIGTERM && ignore_sigterm) {
      std::printf("SIGTERM ignored\n");
      std::fflush(stdout);
      continue;
    }
    if (sig != SIGUSR1) {
      std::fflush(stdout);
      // Connection threads are detached and may be blocked in I/O: leave
      // without running destructors under their feet.
      _exit(0);
    }
  }
}
