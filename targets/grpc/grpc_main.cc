// fairbench-target-grpc --port P [--host H] [--threads N] [--request-log FILE]
//                       [--api callback|sync] [--delay-ms MS] [--stream-messages N]
//                       [--tls-cert FILE --tls-key FILE]
// The reference gRPC target: fairbench.echo.v1.Echo on Debian's gRPC C++;
// see echo_server.h.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <map>

#include "common/signals.h"
#include "targets/common/request_counter.h"
#include "targets/common/request_log.h"
#include "targets/common/target_flags.h"
#include "targets/grpc/echo_server.h"

int main(int argc, char** argv) {
  CLI::App app{"fairbench reference gRPC target (fairbench.echo.v1.Echo)"};
  fairbench::targets::TargetFlags flags;
  fairbench::targets::AddTargetFlags(app, &flags);
  fairbench::targets::EchoServerOptions options;
  const std::map<std::string, fairbench::targets::GrpcApi> apis{{"callback", fairbench::targets::GrpcApi::kCallback},
                                                                {"sync", fairbench::targets::GrpcApi::kSync}};
  app.add_option("--api", options.api, "the server API: callback (reactors) or sync (a thread per call)")
      ->transform(CLI::CheckedTransformer(apis, CLI::ignore_case))
      ->capture_default_str();
  app.add_option("--delay-ms", options.delay_ms, "wait before each reply (a request's delay_ms overrides it)")
      ->capture_default_str();
  app.add_option("--stream-messages", options.stream_messages,
                 "replies per ServerStream call (a request's messages overrides it)")
      ->capture_default_str();
  app.add_option("--tls-cert", options.tls_cert,
                 "TLS: the server's certificate chain, PEM (with --tls-key: h2 by ALPN)");
  app.add_option("--tls-key", options.tls_key, "TLS: the certificate's private key, PEM");
  CLI11_PARSE(app, argc, argv);
  options.host = flags.host;
  options.port = flags.port;
  options.threads = flags.threads;

  std::signal(SIGPIPE, SIG_IGN);
  const fairbench::BlockedSignals shutdown_signals({SIGTERM, SIGINT});

  fairbench::targets::RequestCounter counter;
  auto request_log = fairbench::targets::SampledRequestLog::Start(flags.request_log, &counter);
  if (!request_log.ok()) {
    std::fprintf(stderr, "%s\n", request_log.status().ToString().c_str());
    return 1;
  }
  fairbench::targets::EchoServer server(options, &counter);
  if (auto s = server.Start(); !s.ok()) {
    std::fprintf(stderr, "fairbench-target-grpc: %s\n", s.message().c_str());
    return s.code() == fairbench::Status::Code::kInvalidArgument ? 2 : 1;
  }
  std::printf("fairbench-target-grpc listening on %s:%u (%s) with the %s API\n", flags.host.c_str(),
              static_cast<unsigned>(server.port()), options.tls_cert.empty() ? "h2c" : "TLS, h2",
              options.api == fairbench::targets::GrpcApi::kCallback ? "callback" : "sync");
  std::fflush(stdout);

  shutdown_signals.Wait();
  server.Stop();
  if (*request_log) (*request_log)->Stop();
  return 0;
}
