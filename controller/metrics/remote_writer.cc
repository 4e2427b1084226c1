#include "controller/metrics/remote_writer.h"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>

#include "common/backoff.h"
#include "common/mutex.h"

namespace fairbench::metrics {
namespace {

using Clock = std::chrono::steady_clock;

size_t KeepSome(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  const size_t len = size * n;
  if (out->size() < 512) out->append(data, std::min(len, 512 - out->size()));
  return len;
}

std::string OneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

Result<std::unique_ptr<RemoteWriter>> RemoteWriter::Start(RemoteWriterOptions options) {
  if (options.url.rfind("http://", 0) != 0 && options.url.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("remote write URL '" + options.url + "': must start with http:// or https://");
  }
  if (options.max_samples_per_request == 0 || options.max_queued_samples == 0 || options.max_attempts < 1) {
    return Status::InvalidArgument("remote write: queue and request sizes must be positive");
  }
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<RemoteWriter> w(new RemoteWriter(std::move(options)));
  CURL* h = curl_easy_init();
  if (h == nullptr) return Status::Internal("remote write: cannot create a libcurl handle");
  w->curl_ = h;
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Encoding: snappy");
  headers = curl_slist_append(headers, "Content-Type: application/x-protobuf");
  headers = curl_slist_append(headers, "X-Prometheus-Remote-Write-Version: 0.1.0");
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  w->headers_ = headers;
  curl_easy_setopt(h, CURLOPT_URL, w->options_.url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_USERAGENT, w->options_.user_agent.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &KeepSome);
  w->thread_ = std::thread([self = w.get()] { self->Loop(); });
  return w;
}

RemoteWriter::~RemoteWriter() {
  Stop(std::chrono::milliseconds(0));
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
  if (headers_ != nullptr) curl_slist_free_all(static_cast<curl_slist*>(headers_));
}

bool RemoteWriter::Enqueue(std::vector<RemoteSample> batch) {
  if (batch.empty()) return true;
  {
    MutexLock lock(mu_);
    if (stopping_ || stats_.samples_queued + batch.size() > options_.max_queued_samples) {
      stats_.samples_dropped += batch.size();
      return false;
    }
    stats_.samples_queued += batch.size();
    queue_.push_back(std::move(batch));
  }
  cv_.notify_all();
  return true;
}

void RemoteWriter::Stop(std::chrono::milliseconds flush) {
  {
    MutexLock lock(mu_);
    if (!stopping_) {
      stopping_ = true;
      deadline_ = Clock::now() + flush;
    }
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

RemoteWriterStats RemoteWriter::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

bool RemoteWriter::Backoff(std::chrono::milliseconds d) {
  MutexLock lock(mu_);
  const auto until = Clock::now() + d;
  // A stop does not cut the wait short unless the flush deadline comes first.
  while (Clock::now() < until) {
    if (stopping_ && until > deadline_) return false;
    cv_.wait_until(lock, until);
  }
  return true;
}

RemoteWriter::PostOutcome RemoteWriter::Post(const std::string& body, std::chrono::milliseconds timeout,
                                             std::string* error) {
  CURL* h = static_cast<CURL*>(curl_);
  std::string response;
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &response);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<int64_t>(1, timeout.count())));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::max<int64_t>(1, timeout.count())));
  const CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK) {
    *error = std::string("POST ") + options_.url + ": " + curl_easy_strerror(rc);
    return PostOutcome::kRetry;
  }
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  if (code >= 200 && code < 300) return PostOutcome::kOk;
  *error =
      "POST " + options_.url + ": HTTP " + std::to_string(code) + (response.empty() ? "" : ": " + OneLine(response));
  return code >= 500 || code == 429 ? PostOutcome::kRetry : PostOutcome::kFinal;
}

void RemoteWriter::Loop() {
  for (;;) {
    std::vector<RemoteSample> samples;
    {
      MutexLock lock(mu_);
      cv_.wait(lock, [&]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      if (stopping_ && Clock::now() >= deadline_) {
        for (const auto& b : queue_) stats_.samples_dropped += b.size();
        queue_.clear();
        stats_.samples_queued = 0;
        return;
      }
      // Whole batches, as many as fit in one request (at least one).
      while (!queue_.empty() &&
             (samples.empty() || samples.size() + queue_.front().size() <= options_.max_samples_per_request)) {
        auto& b = queue_.front();
        samples.insert(samples.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
        queue_.pop_front();
      }
    }
    const std::string body = SnappyCompress(EncodeWriteRequest(samples));
    const BackoffPolicy retry{options_.min_backoff, options_.max_backoff, 2.0, 0.0};
    bool delivered = false;
    std::string error;
    for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
      auto timeout = options_.request_timeout;
      {
        MutexLock lock(mu_);
        if (stopping_) {
          const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
          if (left.count() <= 0) break;
          timeout = std::min(timeout, left);
        }
      }
      const PostOutcome outcome = Post(body, timeout, &error);
      if (outcome == PostOutcome::kOk) {
        delivered = true;
        break;
      }
      {
        MutexLock lock(mu_);
        ++stats_.failed_requests;
        stats_.last_error = error;
      }
      if (outcome == PostOutcome::kFinal || attempt == options_.max_attempts ||
          !Backoff(std::chrono::duration_cast<std::chrono::milliseconds>(
              BackoffDelay(retry, static_cast<uint32_t>(attempt - 1), 0)))) {
        break;
      }
    }
    MutexLock lock(mu_);
    stats_.samples_queued -= samples.size();
    if (delivered) {
      stats_.samples_sent += samples.size();
      ++stats_.requests;
    } else {
      stats_.samples_dropped += samples.size();
    }
  }
}

}  // namespace fairbench::metrics
