#include "controller/kube/reflector.h"
#include "common/mutex.h"

#include <random>

#include <spdlog/spdlog.h>

namespace fairbench::kube {

Reflector::Reflector(Client& client, ResourceType resource, std::string ns, ReflectorOptions options,
                     ReflectorSink& sink, Clock& clock)
    : client_(client),
      resource_(std::move(resource)),
      ns_(std::move(ns)),
      options_(std::move(options)),
      sink_(sink),
      clock_(clock) {}

std::string Reflector::last_resource_version() const {
  MutexLock lock(mu_);
  return last_rv_;
}

Reflector::Stats Reflector::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

void Reflector::SetRv(const std::string& rv) {
  if (rv.empty()) return;
  MutexLock lock(mu_);
  last_rv_ = rv;
}

bool Reflector::Wait(const ApiError* error, Backoff& backoff, std::stop_token stop, const char* what,
                     const char* next) {
  std::chrono::nanoseconds wait = backoff.Next();
  if (error && error->reason == Reason::kTooManyRequests) {
    MutexLock lock(mu_);
    ++stats_.throttled;
  }
  const bool told = error && error->retry_after && error->retry_after->count() > 0;
  if (told) wait = std::min<std::chrono::nanoseconds>(*error->retry_after, options_.max_retry_after);
  if (error) {
    spdlog::warn("{} {}: {}; {} in {} ms{}", what, resource_.plural, RetryCause(*error), next,
                 std::chrono::duration_cast<std::chrono::milliseconds>(wait).count(), told ? " (Retry-After)" : "");
  }
  return clock_.SleepFor(wait, stop);
}

void Reflector::Run(std::stop_token stop) {
  Backoff backoff(options_.backoff);
  std::mt19937_64 rng{std::random_device{}()};
  State state = State::kList;
  while (!stop.stop_requested()) {
    switch (state) {
      case State::kList: {
        {
          MutexLock lock(mu_);
          ++stats_.lists;
        }
        ListOptions lo;
        lo.label_selector = options_.label_selector;
        lo.field_selector = options_.field_selector;
        lo.limit = options_.page_size;
        auto list = client_.ListAll(resource_, ns_, lo);
        if (!list.ok()) {
          {
            MutexLock lock(mu_);
            ++stats_.failures;
          }
          if (!Wait(&list.error(), backoff, stop, "list", "listing again")) return;
          break;
        }
        SetRv(list->resource_version);
        sink_.Replace(std::move(list->items), list->resource_version);
        state = State::kWatch;
        break;
      }
      case State::kWatch: {
        std::uniform_int_distribution<int64_t> pick(
            options_.min_watch_timeout.count(),
            std::max(options_.min_watch_timeout, options_.max_watch_timeout).count());
        WatchOptions wo;
        wo.label_selector = options_.label_selector;
        wo.field_selector = options_.field_selector;
        wo.resource_version = last_resource_version();
        wo.allow_bookmarks = true;
        wo.timeout_seconds = std::chrono::seconds(pick(rng));
        {
          MutexLock lock(mu_);
          ++stats_.watches;
        }
        bool gone = false;
        std::optional<ApiError> error_event;
        uint64_t events = 0;
        uint64_t bookmarks = 0;
        auto started = clock_.Now();
        auto end = client_.Watch(
            resource_, ns_, wo,
            [&](WatchEvent&& ev) {
              switch (ev.type) {
                case WatchEvent::Type::kError:
                  if (ev.error.reason == Reason::kGone) {
                    gone = true;
                  } else {
                    error_event = ev.error;
                  }
                  return;
                case WatchEvent::Type::kBookmark:
                  // Only the RV of a bookmark means anything.
                  ++bookmarks;
                  SetRv(ev.ResourceVersion());
                  return;
                default:
                  ++events;
                  sink_.Apply(ev);
                  SetRv(ev.ResourceVersion());
                  return;
              }
            },
            stop);
        {
          MutexLock lock(mu_);
          stats_.events += events;
        }
        if (stop.stop_requested()) return;
        // The watch worked (events, or bookmarks on a quiet resource): the
        // next failure starts with a short wait. Counting events alone, a
        // quiet watch cut a few times would wait the maximum (30 s) and
        // leave the cache that far behind.
        if (events > 0 || bookmarks > 0) backoff.Reset();
        if (gone || (!end.ok() && end.reason() == Reason::kGone)) {
          spdlog::warn("watch {} from resourceVersion {}: 410 Expired; listing again", resource_.plural,
                       wo.resource_version);
          MutexLock lock(mu_);
          ++stats_.relists_after_gone;
          state = State::kList;
          break;
        }
        if (!end.ok() || error_event) {
          const ApiError& err = end.ok() ? *error_event : end.error();
          {
            MutexLock lock(mu_);
            ++stats_.failures;
          }
          // Transport failures and overload keep the RV and re-watch; other
          // errors may mean the RV is unusable: list again.
          bool rewatch = err.Retriable();
          if (!Wait(&err, backoff, stop, "watch", rewatch ? "watching again" : "listing again")) return;
          state = rewatch ? State::kWatch : State::kList;
          break;
        }
        // A clean close. A very short, empty one hints at a misbehaving
        // server: pause so that the loop cannot spin.
        if (events == 0 && clock_.Now() - started < std::chrono::seconds(1)) {
          if (!Wait(nullptr, backoff, stop, "watch", "watching again")) return;
        }
        state = State::kWatch;
        break;
      }
    }
  }
}

}  // namespace fairbench::kube
