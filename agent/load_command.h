// The standalone "fairbench-agent load" command: wrk's interface and output.
// RunLoadCommand's steps: the flags become a job (JobFromFlags), the job the
// engine's options (BuildEngineOptions, as for a hub's job), then the load
// runs and wrk's summary is printed.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "agent/job_options.h"
#include "common/status.h"
#include "common/wire_job.h"

namespace fairbench::agent {

struct LoadFlags {
  std::string url;
  std::string threads = "2";
  std::string connections = "10";
  std::string duration = "10s";
  std::string warmup = "0s";
  std::string timeout = "2s";
  std::vector<std::string> headers;
  std::string method;
  std::string body;
  std::string body_file;
  std::string requests_file;
  // -s: a wrk script, and what followed "--" (its init() arguments).
  std::string script;
  std::vector<std::string> script_args;
  double rate = 0;
  uint32_t pipeline = 1;
  bool no_keep_alive = false;
  bool latency = false;
  bool progress = false;
  bool busy_poll = false;  // --busy-poll: --idle-wait poll
  std::string idle_wait = "auto";
  std::string json_file;
  std::string cpus;
  // HTTPS (names apart from connect mode's --tls-* flags for the hub).
  bool verify = false;
  std::string target_ca_file;
  std::string sni;
  // HTTP/2: --h2 (https, ALPN h2) or --h2c (http, prior knowledge); the
  // rest are empty when not given.
  bool h2 = false;
  bool h2c = false;
  std::string streams;
  std::string h2_stream_window;
  std::string h2_connection_window;
  // gRPC: --grpc SERVICE/METHOD and its message, metadata, deadline.
  std::string grpc{};
  std::string message_file{};
  std::string message_json{};
  std::string descriptor_set{};
  std::vector<std::string> metadata{};
  std::string deadline{};
  std::string max_message_size{};
  // Vary (agent/vary.h): "{n}" in the URL's path, the headers and the body
  // becomes a new number for each request, and every vary_every-th answer
  // of a connection is checked against expect_body or expect_json.
  uint32_t vary_every = 0;  // 0: off
  uint64_t vary_seed = 0x5eed;
  std::string expect_body{};
  std::string expect_json{};
};

// The load the flags describe: the job a hub would send for it (built into
// the engine's options by the same BuildEngineOptions), what only this
// machine knows, and the URL the summary names (gRPC: with the method's path).
struct FlagsJob {
  wire::JobSpec job;
  JobLocal local;
  std::string shown_url;
};

// Checks the flags and reads the files they name (body, request mix,
// script, gRPC message). Errors are one line naming the flag (exit code 2).
Result<FlagsJob> JobFromFlags(const LoadFlags& flags);

// Registers the subcommand's options on `app`.
CLI::App* AddLoadCommand(CLI::App& app, LoadFlags& flags);
// Runs it; returns the process exit code (2 for bad input).
int RunLoadCommand(const LoadFlags& flags);

// --cpus (load and connect mode): a CPU list as api::ParseCpuList reads it
// ("0-3,6" → {0,1,2,3,6}, ascending), not empty, of CPUs this machine has.
Result<std::vector<int>> ParseCpusFlag(const std::string& text);

}  // namespace fairbench::agent
