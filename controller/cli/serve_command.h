// `fairbench serve [--store PATH|URL] [--listen HOST:PORT]`: a read-only
// web page over a result store (controller/serve/): the runs, each run's
// report, each series as a chart with its change points, two runs
// compared. Listens on 127.0.0.1:8089 by default (loopback: nothing guards
// the pages); port 0 takes a free port. The first line on stdout is the
// address it listens on ("http://127.0.0.1:40123/"), for scripts and tests.
// SIGINT or SIGTERM stop it: the listener closes and requests under way
// finish (up to the keep-alive timeout, 2 s).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace fairbench::controller {

struct ServeFlags {
  std::string store;
  std::string listen = "127.0.0.1:8089";
};

CLI::App* AddServeCommand(CLI::App& app, ServeFlags& flags);
// Exit codes: 0 stopped by a signal; 1 the store cannot be opened, or the
// address cannot be bound; 2 bad input (a bad --listen, no store given).
// Failures are one line on stderr.
int RunServeCommand(const ServeFlags& flags);

}  // namespace fairbench::controller
