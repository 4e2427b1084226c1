// RemoteWriter: pushes samples to a Prometheus remote write 1.0 endpoint
// from its own thread, so that nothing on the load's or the orchestrator's
// path ever waits for the network.
//
// Enqueue() never blocks: it appends a batch to a queue bounded in samples,
// or, when the batch does not fit, drops it and counts its samples as
// dropped. The sender thread takes batches in order, up to
// max_samples_per_request at a time, encodes them (write_request.h) and
// POSTs them with libcurl. A 2xx is success; a 5xx, a 429 or a network
// error is retried with exponential backoff (min_backoff doubling up to
// max_backoff, at most max_attempts tries) while later batches wait; any
// other status is final for that request (the receiver refused the data:
// retrying cannot help) and its samples are counted as dropped.
//
// Stop() lets the sender work through the queue until the flush deadline,
// then drops (and counts) what is left and joins the thread. Stats are
// readable at any time, e.g. by a /metrics collector. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "controller/metrics/sample_sink.h"
#include "controller/metrics/write_request.h"

namespace fairbench::metrics {

struct RemoteWriterOptions {
  std::string url;  // http:// or https://
  size_t max_queued_samples = 100'000;
  size_t max_samples_per_request = 2'000;
  std::chrono::milliseconds request_timeout{5000};
  std::chrono::milliseconds min_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  int max_attempts = 8;
  std::string user_agent = "fairbench";
};

struct RemoteWriterStats {
  uint64_t samples_sent = 0;
  uint64_t samples_dropped = 0;
  uint64_t samples_queued = 0;   // now
  uint64_t requests = 0;         // successful POSTs
  uint64_t failed_requests = 0;  // attempts that did not succeed (each retry counts)
  std::string last_error;        // the newest failure, "" if none
};

class RemoteWriter final : public SampleSink {
 public:
  static Result<std::unique_ptr<RemoteWriter>> Start(RemoteWriterOptions options);
  ~RemoteWriter() override;  // Stop(0)
  RemoteWriter(const RemoteWriter&) = delete;
  RemoteWriter& operator=(const RemoteWriter&) = delete;

  // False when the batch was dropped (queue full, or stopped).
  bool Enqueue(std::vector<RemoteSample> batch) override;
  // Flushes until `flush` has passed, then drops the rest. Idempotent.
  void Stop(std::chrono::milliseconds flush);
  RemoteWriterStats stats() const;
  const std::string& url() const { return options_.url; }

 private:
  explicit RemoteWriter(RemoteWriterOptions options) : options_(std::move(options)) {}
  void Loop();
  enum class PostOutcome { kOk, kRetry, kFinal };
  PostOutcome Post(const std::string& body, std::chrono::milliseconds timeout, std::string* error);
  // Waits `d` unless the flush deadline passes first; false if it did.
  bool Backoff(std::chrono::milliseconds d);

  const RemoteWriterOptions options_;
  void* curl_ = nullptr;     // CURL*, used by the sender thread only
  void* headers_ = nullptr;  // curl_slist*
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::vector<RemoteSample>> queue_ GUARDED_BY(mu_);
  RemoteWriterStats stats_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point deadline_ GUARDED_BY(mu_);  // valid when stopping_
  std::thread thread_;
};

}  // namespace fairbench::metrics
