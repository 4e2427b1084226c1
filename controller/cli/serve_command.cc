#include "controller/cli/serve_command.h"

#include <csignal>
#include <cstdio>

#include "common/signals.h"
#include "controller/cli/store_flag.h"
#include "controller/results/result_store.h"
#include "controller/serve/store_server.h"

namespace fairbench::controller {
namespace {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "fairbench serve: %s\n", message.c_str());
  return code;
}

}  // namespace

CLI::App* AddServeCommand(CLI::App& app, ServeFlags& flags) {
  CLI::App* cmd = app.add_subcommand("serve",
                                     "A read-only web page over a result store: runs, reports, series, "
                                     "change points, comparisons");
  AddStoreOption(*cmd, flags.store, "The result store", false);
  cmd->add_option("--listen", flags.listen,
                  "Address to listen on, HOST:PORT (default 127.0.0.1:8089; port 0: a free one)");
  return cmd;
}

int RunServeCommand(const ServeFlags& flags) {
  if (flags.store.empty()) return Fail(2, "--store: required (or set FAIRBENCH_STORE)");
  serve::ServeOptions options;
  options.store = flags.store;
  if (Status s = serve::ParseListen(flags.listen, options.host, options.port); !s.ok()) return Fail(2, s.message());
  // The store must be there now: a mistyped path is said at once, not on
  // every page. The server opens its own. Its description, not the
  // location, goes to the log: a URL's password stays out.
  std::string described;
  {
    results::OpenOptions oo;
    oo.create = false;
    auto store = results::OpenResultStore(options.store, oo);
    if (!store.ok())
      return Fail(store.status().code() == Status::Code::kInvalidArgument ? 2 : 1, store.status().message());
    described = (*store)->Describe();
  }
  // Blocked before the server's threads start, so that only the wait
  // below takes them. A browser that goes away costs an EPIPE, not the
  // process.
  std::signal(SIGPIPE, SIG_IGN);
  const BlockedSignals stop_signals({SIGINT, SIGTERM});
  auto server = serve::StoreServer::Start(options);
  if (!server.ok()) return Fail(1, server.status().message());
  std::printf("%s\n", (*server)->url().c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "fairbench serve: %s, read only, on %s (Ctrl-C stops)\n", described.c_str(),
               (*server)->url().c_str());
  const int signal = stop_signals.Wait();
  (*server)->Stop();
  std::fprintf(stderr, "fairbench serve: stopped (%s)\n", signal == SIGTERM ? "SIGTERM" : "SIGINT");
  return 0;
}

}  // namespace fairbench::controller
