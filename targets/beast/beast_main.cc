// fairbench-target-beast --port P [--host H] [--threads N] [--request-log FILE]
// The study's endpoints on Boost.Beast; see beast_server.h.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>

#include "common/signals.h"
#include "targets/beast/beast_server.h"
#include "targets/common/request_counter.h"
#include "targets/common/request_log.h"
#include "targets/common/target_flags.h"

int main(int argc, char** argv) {
  CLI::App app{"fairbench reference target on Boost.Beast"};
  fairbench::targets::TargetFlags flags;
  fairbench::targets::AddTargetFlags(app, &flags);
  CLI11_PARSE(app, argc, argv);

  // SIGTERM/SIGINT: taken by the wait at the end, blocked before any thread
  // starts. A client that goes away costs an EPIPE, not the process.
  std::signal(SIGPIPE, SIG_IGN);
  const fairbench::BlockedSignals shutdown_signals({SIGTERM, SIGINT});

  fairbench::targets::RequestCounter counter;
  auto request_log = fairbench::targets::SampledRequestLog::Start(flags.request_log, &counter);
  if (!request_log.ok()) {
    std::fprintf(stderr, "%s\n", request_log.status().ToString().c_str());
    return 1;
  }

  fairbench::targets::BeastServer server({flags.host, flags.port, flags.threads}, &counter);
  if (auto s = server.Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("fairbench-target-beast listening on %s:%u with %d threads\n", flags.host.c_str(),
              static_cast<unsigned>(flags.port), flags.threads);
  std::fflush(stdout);

  shutdown_signals.Wait();
  server.Stop();
  if (*request_log) (*request_log)->Stop();
  return 0;
}
