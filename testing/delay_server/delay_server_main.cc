// fairbench-test-delay-server --port P [--host H] [--delay D]
//     [--stall-every N --stall D] [--records FILE] [--max-records N]
//
// Answers every HTTP/1.1 request "200 Hello, World!" exactly D after it
// arrived; with --stall-every N, every Nth request waits D + stall instead
// (see delay_server.h). Prints "listening on HOST:PORT" once it accepts
// connections (with --port 0 the kernel's choice). SIGUSR1 writes what it
// recorded to --records; SIGTERM or SIGINT writes it and exits 0. The file
// format is described in delay_records.h.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/units.h"
#include "testing/delay_server/delay_server.h"

namespace {

using fairbench::Status;

// Write to FILE.tmp, then rename: a reader never sees half a file.
Status WriteFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError("open " + tmp + ": " + std::strerror(errno));
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  close(fd);
  if (off != text.size() || rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::IoError("write " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "An HTTP/1.1 server that answers after an exact delay, recording when each request arrived and "
      "each response left."};
  int port = -1;
  std::string host = "127.0.0.1";
  std::string delay_text = "0";
  std::string stall_text = "0";
  uint64_t stall_every = 0;
  size_t max_records = 4'000'000;
  std::string records_file;
  bool record_requests = false;
  bool index_header = false;
  app.add_option("--port", port, "TCP port (0: any free port)")->required()->check(CLI::Range(0, 65535));
  app.add_option("--host", host, "numeric address to listen on");
  app.add_option("--delay", delay_text, "time from a request's arrival to its response (e.g. 1ms, 250us)");
  app.add_option("--stall-every", stall_every, "every Nth request (server-wide arrival order) is stalled; 0: none");
  app.add_option("--stall", stall_text, "extra delay of a stalled request (e.g. 50ms)");
  app.add_option("--max-records", max_records, "requests recorded at most (the rest are only counted)");
  app.add_option("--records", records_file, "where SIGUSR1 and SIGTERM write the records");
  app.add_flag("--record-requests", record_requests, "keep each request's bytes in its record");
  app.add_flag("--index-header", index_header, "answer with X-Request-Index: the request's place in arrival order");
  CLI11_PARSE(app, argc, argv);

  auto delay = fairbench::ParseDuration(delay_text);
  if (!delay.ok()) {
    std::fprintf(stderr, "--delay: %s\n", delay.status().message().c_str());
    return 2;
  }
  auto stall = fairbench::ParseDuration(stall_text);
  if (!stall.ok()) {
    std::fprintf(stderr, "--stall: %s\n", stall.status().message().c_str());
    return 2;
  }

  // Taken through the loop's signalfd: blocked before anything else.
  signal(SIGPIPE, SIG_IGN);
  const std::vector<int> signals = {SIGTERM, SIGINT, SIGUSR1};
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  sigprocmask(SIG_BLOCK, &set, nullptr);

  fairbench::testing::DelayServerOptions options;
  options.host = host;
  options.port = static_cast<uint16_t>(port);
  options.delay = *delay;
  options.stall_every = stall_every;
  options.stall = *stall;
  options.max_records = max_records;
  options.record_requests = record_requests;
  options.index_header = index_header;
  fairbench::testing::DelayServer server(options);
  if (Status s = server.Listen(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("listening on %s:%u\n", host.c_str(), static_cast<unsigned>(server.port()));
  std::fflush(stdout);

  const Status s = server.Run(signals, [&](int sig) {
    if (!records_file.empty()) {
      if (Status w = WriteFile(records_file, server.Snapshot().ToText()); !w.ok()) {
        std::fprintf(stderr, "%s\n", w.ToString().c_str());
      }
    }
    return sig == SIGUSR1;
  });
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
