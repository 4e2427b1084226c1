#include "targets/common/request_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fairbench::targets {

int64_t UnixMillisNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<std::unique_ptr<RequestLog>> RequestLog::Open(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError("--request-log " + path + ": " + std::strerror(errno));
  return std::unique_ptr<RequestLog>(new RequestLog(fd));
}

RequestLog::~RequestLog() { close(fd_); }

Status RequestLog::WriteLine(const std::string& line) {
  ssize_t n;
  do {
    n = write(fd_, line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(line.size()))
    return Status::IoError(std::string("request log: ") + std::strerror(errno));
  return Status::Ok();
}

Status RequestLog::WriteInterval(int64_t interval_start_ms, uint64_t count) {
  return WriteLine(std::to_string(interval_start_ms) + " " + std::to_string(count) + "\n");
}

Status RequestLog::WriteTotal(uint64_t total) { return WriteLine("total " + std::to_string(total) + "\n"); }

RequestLogSampler::~RequestLogSampler() { Stop(); }

void RequestLogSampler::Start() {
  thread_ = std::thread([this] { Run(); });
}

void RequestLogSampler::Sample(int64_t interval_start_ms) {
  const uint64_t total = counter_->Total();
  if (total != last_total_) {
    // A failed write has nobody to tell on this thread; the total line at
    // Stop() still reports the count.
    (void)log_->WriteInterval(interval_start_ms, total - last_total_);
    last_total_ = total;
  }
}

void RequestLogSampler::Run() {
  int64_t interval_start = UnixMillisNow() / kRequestLogIntervalMs * kRequestLogIntervalMs;
  std::unique_lock lock(mu_);
  while (!stop_) {
    const int64_t next = interval_start + kRequestLogIntervalMs;
    const int64_t wait_ms = next - UnixMillisNow();
    if (wait_ms > 0 && cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [this] { return stop_; })) break;
    if (UnixMillisNow() < next) continue;  // woke early; keep the alignment
    lock.unlock();
    Sample(interval_start);
    lock.lock();
    // After a long stall (suspended process), restart at the current interval.
    interval_start = std::max(next, UnixMillisNow() / kRequestLogIntervalMs * kRequestLogIntervalMs);
  }
}

void RequestLogSampler::Stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // The partial interval we are in, then a total that equals the lines' sum.
  Sample(UnixMillisNow() / kRequestLogIntervalMs * kRequestLogIntervalMs);
  if (Status s = log_->WriteTotal(last_total_); !s.ok()) std::fprintf(stderr, "request log: %s\n", s.message().c_str());
}

Result<std::unique_ptr<SampledRequestLog>> SampledRequestLog::Start(const std::string& path,
                                                                    const RequestCounter* counter) {
  if (path.empty()) return std::unique_ptr<SampledRequestLog>();
  auto log = RequestLog::Open(path);
  if (!log.ok()) return log.status();
  std::unique_ptr<SampledRequestLog> sampled(new SampledRequestLog(std::move(*log), counter));
  sampled->sampler_.Start();
  return sampled;
}

}  // namespace fairbench::targets
