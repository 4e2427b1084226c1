// RequestLog: the --request-log file every fairbench target writes, so that
// tests can prove which target served requests when, and how many.
//
// Format, one line each, appended (a file may hold several runs; each run
// ends with its own "total" line):
//   <unix time in ms at the start of a 100 ms interval> <requests served in it>
//   ...
//   total <requests served by this run>
// Intervals are aligned to multiples of 100 ms of wall-clock time so that
// logs of different processes line up; intervals with no request have no
// line. Every line is one write(2) on an O_APPEND descriptor, so a reader
// never sees half a line and nothing is lost if the process is killed
// after a line was written.
//
// RequestLog itself only formats and writes (not thread-safe: one writer).
// RequestLogSampler is the background thread that turns a RequestCounter
// into interval lines. SampledRequestLog is both, as a target that counts
// its own requests sets up its --request-log.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "targets/common/request_counter.h"

namespace fairbench::targets {

constexpr int64_t kRequestLogIntervalMs = 100;

class RequestLog {
 public:
  static Result<std::unique_ptr<RequestLog>> Open(const std::string& path);
  ~RequestLog();
  RequestLog(const RequestLog&) = delete;
  RequestLog& operator=(const RequestLog&) = delete;

  Status WriteInterval(int64_t interval_start_ms, uint64_t count);
  Status WriteTotal(uint64_t total);

 private:
  explicit RequestLog(int fd) : fd_(fd) {}
  Status WriteLine(const std::string& line);
  int fd_;
};

// Unix time in ms.
int64_t UnixMillisNow();

class RequestLogSampler {
 public:
  // Neither is owned; both must outlive the sampler.
  RequestLogSampler(const RequestCounter* counter, RequestLog* log) : counter_(counter), log_(log) {}
  ~RequestLogSampler();  // Stop()
  RequestLogSampler(const RequestLogSampler&) = delete;
  RequestLogSampler& operator=(const RequestLogSampler&) = delete;

  void Start();
  // Writes the current partial interval and the total; idempotent.
  void Stop();

 private:
  void Run();
  // Writes what the counter gained since the last sample, for the interval
  // that began at interval_start_ms.
  void Sample(int64_t interval_start_ms);

  const RequestCounter* counter_;
  RequestLog* log_;
  uint64_t last_total_ = 0;  // only the sampler thread (then Stop) touches it
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  bool stopped_ = false;
};

// The --request-log of a target that counts its requests in a
// RequestCounter: the file opened and sampled from Start() on.
class SampledRequestLog {
 public:
  // An empty path (no --request-log) gives nullptr. `counter` must outlive
  // the log.
  static Result<std::unique_ptr<SampledRequestLog>> Start(const std::string& path, const RequestCounter* counter);
  // Writes the current partial interval and the total; idempotent (the
  // destructor calls it).
  void Stop() { sampler_.Stop(); }

 private:
  SampledRequestLog(std::unique_ptr<RequestLog> log, const RequestCounter* counter)
      : log_(std::move(log)), sampler_(counter, log_.get()) {}
  std::unique_ptr<RequestLog> log_;
  RequestLogSampler sampler_;  // after log_: stopped before it is closed
};

}  // namespace fairbench::targets
