// The one builder of the engine's options: a load job (wire::JobSpec, what
// the hub sends and what `fairbench-agent load` parses its flags into) plus
// the few settings only this machine knows (JobLocal) become EngineOptions.
//
// Both front doors go through BuildEngineOptions, so a setting one of them
// applies cannot be missed by the other. It resolves the target (a blocking
// DNS lookup), sets up the job's wrk script (setup() and init() run here,
// before any load) and ends with ValidateOptions (engine.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/engine_options.h"
#include "agent/script.h"
#include "common/status.h"
#include "common/wire_job.h"

namespace fairbench::agent {

// What a job leaves to the machine it runs on. A hub's job runs with the
// defaults (and the agent's --cpus); the CLI fills them from its flags.
struct JobLocal {
  std::vector<int> cpus;  // pin worker i to cpus[i % size]; empty: no pinning
  // https: verify the server's certificate (against target_ca_file, or the
  // system's CAs) and send `sni` (empty: the host's name). Hub jobs never
  // verify, as wrk.
  bool verify = false;
  std::string target_ca_file;
  std::string sni;
  // HTTP/2: our receive windows (unset: the codec's defaults).
  std::optional<uint32_t> h2_stream_window;
  std::optional<uint32_t> h2_connection_window;
  // A script's wrk.url and wrk.port: the URL as typed, and whether it named
  // a port. Empty url: scheme://host:port/ with the port always named.
  std::string url;
  bool port_implicit = false;
  // Called once the script is set up, before ValidateOptions: the CLI's own
  // words for a script its flags cannot run with (e.g. delay() and --rate).
  std::function<Status(const Script&, const EngineOptions&)> check_script;
};

// The engine's options for `job` (wire::FromProto's defaults applied). With
// a script, *script holds it, set up, and the options point to it; it must
// outlive the engine. Errors name the job's fields ("job.requests[1]: ...").
Result<EngineOptions> BuildEngineOptions(const wire::JobSpec& job, const JobLocal& local,
                                         std::unique_ptr<Script>* script);

}  // namespace fairbench::agent
