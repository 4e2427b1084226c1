// MisbehavingStats: what fairbench-test-misbehaving-server counted, and the
// JSON it writes to --stats-file.
//
// The file is one JSON object, replaced atomically (write, then rename):
//   {"mode":"ok","snapshot":3,"settled":true,"connections_accepted":10,
//    "requests_read":100,"responses_written":100,"partial_responses":0,
//    "abandoned_responses":0}
// `snapshot` grows by one with each write, so a reader that asked for a new
// one (SIGUSR1) knows when it has arrived. Plain value; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace fairbench::testing {

struct MisbehavingStats {
  std::string mode;
  uint64_t snapshot = 0;
  // False if a write was still in progress when the snapshot was taken (a
  // client that stopped reading): then responses_written may be one short.
  bool settled = true;
  uint64_t connections_accepted = 0;
  uint64_t requests_read = 0;        // complete requests (headers and body)
  uint64_t responses_written = 0;    // complete responses handed to the kernel
  uint64_t partial_responses = 0;    // cut-off responses (reset-mid-response, close-after-headers)
  uint64_t abandoned_responses = 0;  // delay mode: the client left before the answer was due

  std::string ToJson() const;
  static Result<MisbehavingStats> FromJson(const std::string& text);
};

}  // namespace fairbench::testing
