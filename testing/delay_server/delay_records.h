// DelayRecords: what fairbench-test-delay-server saw — the server-side truth
// that latency tests compare a load generator's numbers with — and the text
// file it writes them to.
//
// One Record per request the server read: which connection, its place on
// that connection and in the whole server's arrival order, whether it was
// stalled, when its last byte arrived and when the first byte of its
// response was handed to the kernel (CLOCK_MONOTONIC nanoseconds, the clock
// the agent measures with, so times of both processes compare directly).
//
// The file, replaced atomically (write, then rename):
//   fairbench-delay-records 1
//   snapshot 3
//   connections 8
//   requests 1240
//   served 1234
//   abandoned 0
//   dropped 0
//   conn seq index stalled arrived_ns sent_ns
//   0 0 1 0 5123456789 5124456800
//   …
// `sent_ns` is 0 for a request whose response never left (the client went
// away first). When the server records requests (--record-requests), each
// line ends in a seventh field: the request's bytes (head and body) with
// every byte outside '!'..'~' and '%' itself written as %XX. Plain values;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace fairbench::testing {

struct DelayRecord {
  uint32_t conn = 0;       // connection number, from 0 in accept order
  uint32_t seq = 0;        // request number on its connection, from 0
  uint64_t index = 0;      // request number in the server's arrival order, from 1
  bool stalled = false;    // this response waited delay + stall
  int64_t arrived_ns = 0;  // the request's last byte arrived (kernel receive time when known)
  int64_t sent_ns = 0;     // its response's first byte was handed to the kernel; 0: never
  std::string request;     // with --record-requests: the request as read (head and body)

  int64_t server_ns() const { return sent_ns - arrived_ns; }
  bool operator==(const DelayRecord&) const = default;
};

struct DelayRecords {
  uint64_t snapshot = 0;             // grows by one with each file written
  uint64_t connections = 0;          // accepted
  uint64_t requests = 0;             // complete requests read
  uint64_t served = 0;               // complete responses handed to the kernel
  uint64_t abandoned = 0;            // requests read whose client left before the whole response went out
  uint64_t dropped = 0;              // requests beyond the record limit: counted, not recorded
  std::vector<DelayRecord> records;  // in arrival order

  std::string ToText() const;
  static Result<DelayRecords> FromText(const std::string& text);
};

}  // namespace fairbench::testing
