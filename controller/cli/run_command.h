// `fairbench run FILE... [--output DIR] [--resume] [--metrics-address
// HOST:PORT] [--remote-write-url URL]`: benchmark the run's targets on this
// machine, one at a time, and write the report; optionally serve the live
// numbers to Prometheus and push them with remote write.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "controller/hub/hub_flags.h"

namespace fairbench::controller {

struct RunFlags {
  std::vector<std::string> files;
  std::string output;
  bool resume = false;
  std::string target_cpus;
  std::string agent_cpus;
  std::string lock_file = "/tmp/fairbench-load.lock";
  std::string listen = "127.0.0.1:0";
  std::string agent_binary;
  std::string perf = "perf";  // spec.profile's sampler: a path, or a name on PATH
  bool quiet = false;
  // Prometheus (controller/metrics): /metrics, /healthz, /readyz on this
  // address; samples pushed to this remote write URL; a finished run's
  // series kept this long; /metrics kept up this long after the last run.
  std::string metrics_address;
  std::string remote_write_url;
  std::string metrics_retention = "10m";
  std::string metrics_linger = "0s";
  // A target still running this long after SIGTERM is killed (SIGKILL).
  std::string target_stop_grace = "10s";
  // The hub's TLS and bounds; the TLS files the agents it starts are given.
  HubFlags hub;
  std::string agent_tls_ca;
  std::string agent_tls_cert;
  std::string agent_tls_key;
  std::string agent_tls_server_name;
  // Where targets run: "local" (processes) or "docker" (containers of their
  // images on the Docker engine at docker_host; docker_platform.h).
  std::string platform = "local";
  std::string docker_host;  // empty: $DOCKER_HOST, else unix:///var/run/docker.sock
  // --max-nofile: each target's nofile is at most this (0: not capped).
  int64_t max_nofile = 0;
  // --store: each finished run is stored there too (store_flag.h); empty: not stored.
  std::string store;
};

CLI::App* AddRunCommand(CLI::App& app, RunFlags& flags);
// Exit codes: 0 every cell succeeded; 1 the run could not be carried out
// (among others: the output folder could not be written — the error names
// the file and the system's reason, and results.json keeps the last record
// written whole); 2 bad input; 3 finished with failed or skipped cells;
// 128 + the signal's number when interrupted: 130 by SIGINT, 143 by SIGTERM
// (the load is stopped, targets and agents are stopped, and results.json
// says where the run stopped; a second signal exits at once, the children
// dying with the process). With --store, a run that could not be stored
// turns an exit code of 0 into 1 (its files are written all the same).
int RunRunCommand(const RunFlags& flags);

}  // namespace fairbench::controller
