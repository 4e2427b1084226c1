// TargetFlags: the command line every fairbench target accepts, so the
// orchestrator can start any of them the same way:
//   --port P (required)  --host H (127.0.0.1)  --threads N (4)
//   --request-log FILE (optional; see request_log.h)
// A target adds its own flags to the same CLI::App. Plain value.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace fairbench::targets {

struct TargetFlags {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  int threads = 4;
  std::string request_log;
};

void AddTargetFlags(CLI::App& app, TargetFlags* flags);

}  // namespace fairbench::targets
