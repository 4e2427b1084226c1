// AccessLogTail: turns the nginx target's access log (one "$msec" line per
// request, e.g. "1796005913.555") into the request log every fairbench
// target writes (targets/common/request_log.h).
//
// Poll() reads the lines appended since the last call and writes the
// 100 ms intervals that are complete: those that ended more than a grace
// period ago, since a worker writes its line a moment after the response.
// A line that arrives later than that for an interval already written gets
// a second line for the same interval (rare; readers add lines up). Finish()
// reads the rest, writes every interval left and the total.
// Not thread-safe: one thread polls, then the same or another (after a
// join) finishes.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/status.h"
#include "targets/common/request_log.h"

namespace fairbench::targets {

class AccessLogTail {
 public:
  // `log` is not owned. The access log may not exist yet.
  AccessLogTail(std::string access_log_path, RequestLog* log, int64_t grace_ms = 300)
      : path_(std::move(access_log_path)), log_(log), grace_ms_(grace_ms) {}
  ~AccessLogTail();
  AccessLogTail(const AccessLogTail&) = delete;
  AccessLogTail& operator=(const AccessLogTail&) = delete;

  Status Poll(int64_t now_ms);
  Status Finish();
  uint64_t total() const { return total_; }

 private:
  Status ReadNewLines();
  Status WriteIntervalsBefore(int64_t limit_ms);

  std::string path_;
  RequestLog* log_;
  int64_t grace_ms_;
  int fd_ = -1;
  std::string partial_;                  // an incomplete last line
  std::map<int64_t, uint64_t> pending_;  // interval start (ms) → requests
  uint64_t total_ = 0;
};

// "1796005913.555" → 1796005913555; InvalidArgument if not nginx's $msec.
Result<int64_t> ParseMsec(std::string_view text);

}  // namespace fairbench::targets
