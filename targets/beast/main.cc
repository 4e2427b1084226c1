// fairbench-target-beast --port P [--host H] [--threads N] [--request-log FILE]
// The study's endpoints on Boost.Beast; see beast_server.h.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "targets/beast/beast_server.h"
#include "targets/common/request_counter.h"
#include "targets/common/request_log.h"
#include "targets/common/shutdown_signal.h"
#include "targets/common/target_flags.h"

int main(int argc, char** argv) {
  CLI::App app{"fairbench reference target on Boost.Beast"};
  fairbench::targets::TargetFlags flags;
  fairbench::targets::AddTargetFlags(app, &flags);
  CLI11_PARSE(app, argc, argv);

  fairbench::targets::BlockShutdownSignals();

  fairbench::targets::RequestCounter counter;
  std::unique_ptr<fairbench::targets::RequestLog> log;
  std::unique_ptr<fairbench::targets::RequestLogSampler> sampler;
  if (!flags.request_log.empty()) {
    auto opened = fairbench::targets::RequestLog::Open(flags.request_log);
    if (!opened.ok()) {
      std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
      return 1;
    }
    log = std::move(*opened);
    sampler = std::make_unique<fairbench::targets::RequestLogSampler>(&counter, log.get());
    sampler->Start();
  }

  fairbench::targets::BeastServer server({flags.host, flags.port, flags.threads}, &counter);
  if (auto s = server.Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("fairbench-target-beast listening on %s:%u with %d threads\n", flags.host.c_str(),
              static_cast<unsigned>(flags.port), flags.threads);
  std::fflush(stdout);

  fairbench::targets::WaitForShutdownSignal();
  server.Stop();
  if (sampler) sampler->Stop();
  return 0;
}
