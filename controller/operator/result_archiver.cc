#include "controller/operator/result_archiver.h"

#include <spdlog/spdlog.h>

#include <random>

#include "api/time_text.h"
#include "api/well_known.h"
#include "controller/results/pg_result_store.h"
#include "controller/store/configmap_run_store.h"

namespace fairbench::controller {
namespace {

bool Terminal(const std::optional<api::RunPhase>& p) {
  return p == api::RunPhase::kSucceeded || p == api::RunPhase::kFailed || p == api::RunPhase::kCancelled;
}

}  // namespace

std::string RedactStoreLocation(const std::string& location) {
  // The PostgreSQL store's own spelling of its URL without the password
  // (in the user part or a ?password= parameter alike).
  if (location.starts_with("postgres://") || location.starts_with("postgresql://")) {
    return results::PgUrlWithoutPassword(location);
  }
  return location;
}

ResultArchiver::ResultArchiver(kube::Client& client, RunStatusClient& run_status, kube::EventRecorder* events,
                               ResultArchiverOptions options)
    : client_(client), run_status_(run_status), events_(events), options_(std::move(options)) {
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

ResultArchiver::~ResultArchiver() {
  thread_.request_stop();
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string ResultArchiver::Key(const api::BenchmarkRun& run) {
  return run.metadata.namespace_ + "/" + run.metadata.name + "#" + run.metadata.uid;
}

bool ResultArchiver::Wants(const api::BenchmarkRun& run) {
  return Terminal(run.status.phase) && !(run.status.stored && run.status.stored->id > 0);
}

void ResultArchiver::Offer(const api::BenchmarkRun& run) {
  if (!Wants(run)) return;
  const std::string key = Key(run);
  {
    std::lock_guard lock(mu_);
    if (queued_.contains(key) || done_.contains(key)) return;
    queued_.insert(key);
    queue_.push_back(Job{run, 0, std::chrono::steady_clock::now(), ""});
  }
  cv_.notify_all();
}

bool ResultArchiver::WaitIdle(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mu_);
  while (!queue_.empty() || busy_) {
    if (cv_.wait_until(lock, until) == std::cv_status::timeout && (!queue_.empty() || busy_)) return false;
  }
  return true;
}

ResultArchiverStats ResultArchiver::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

Status ResultArchiver::OpenStore() {
  if (store_) return Status::Ok();
  auto store = results::OpenResultStore(options_.store);
  if (!store.ok()) return store.status();
  store_ = std::move(*store);
  return Status::Ok();
}

Status ResultArchiver::Attempt(Job& job, bool& done) {
  done = false;
  const api::BenchmarkRun& run = job.run;
  ConfigMapRunStore records(client_, ConfigMapRunStoreOptions::ForRun(run));
  auto record = records.Load();
  if (!record.ok()) return Status::Unavailable("reading its record: " + record.status().message());
  if (!record->has_value()) {
    spdlog::info("BenchmarkRun {}/{} has no record to store", run.metadata.namespace_, run.metadata.name);
    std::lock_guard lock(mu_);
    ++stats_.skipped;
    done = true;
    return Status::Ok();
  }
  if (Status s = OpenStore(); !s.ok()) return s;
  auto receipt = store_->Store(**record);
  if (!receipt.ok()) {
    store_.reset();  // a connection that failed is opened anew
    return receipt.status();
  }
  const std::string where = store_->Describe();
  nlohmann::json stored = {{"id", receipt->id},
                           {"store", where},
                           {"time", api::FormatTime(std::chrono::system_clock::now())},
                           {"error", nullptr}};
  const RunIdentity id = RunStatusClient::IdentityOf(run);
  auto patched = run_status_.Patch(id, {{"stored", stored}});
  if (!patched.ok()) {
    // Stored, but the status does not say so yet: the next attempt finds
    // the run in the store ("already stored") and writes the status again.
    if (patched.error().http_code == 404) {
      done = true;  // the run is gone; its record is in the store
      return Status::Ok();
    }
    return Status::Unavailable("stored as run " + std::to_string(receipt->id) +
                               ", but the status was not written: " + patched.error().ToString());
  }
  const std::string text = results::ReceiptText(*receipt) + " in " + where;
  spdlog::info("BenchmarkRun {}/{}: {}", run.metadata.namespace_, run.metadata.name, text);
  if (events_ != nullptr) {
    if (auto s = events_->Normal(RunStatusClient::ObjectOf(id), api::reason::kResultStored, text); !s.ok()) {
      spdlog::warn("Event {} not recorded: {}", api::reason::kResultStored, s.error().ToString());
    }
  }
  std::lock_guard lock(mu_);
  ++stats_.stored;
  done = true;
  return Status::Ok();
}

void ResultArchiver::Loop(std::stop_token stop) {
  std::mt19937_64 rng(std::random_device{}());
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    if (queue_.empty()) {
      cv_.wait(lock, stop, [this] { return !queue_.empty(); });
      continue;
    }
    // The job due first.
    auto next = queue_.begin();
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->due < next->due) next = it;
    }
    if (next->due > std::chrono::steady_clock::now()) {
      const auto due = next->due;
      cv_.wait_until(lock, stop, due, [] { return false; });
      continue;
    }
    Job job = std::move(*next);
    queue_.erase(next);
    busy_ = true;
    lock.unlock();

    bool done = false;
    const Status s = Attempt(job, done);
    const std::string key = Key(job.run);
    if (!done) {
      const std::string why = s.message();
      spdlog::warn("BenchmarkRun {}/{} not stored in the result store: {}", job.run.metadata.namespace_,
                   job.run.metadata.name, why);
      if (why != job.last_error) {
        // The status and an Event say why, once per reason.
        job.last_error = why;
        const RunIdentity id = RunStatusClient::IdentityOf(job.run);
        const std::string where = store_ ? store_->Describe() : RedactStoreLocation(options_.store);
        nlohmann::json stored = {{"store", where}, {"error", why}};
        if (auto p = run_status_.Patch(id, {{"stored", stored}}); !p.ok()) {
          spdlog::warn("status of {}: {}", key, p.error().ToString());
        }
        if (events_ != nullptr) {
          (void)events_->Warning(RunStatusClient::ObjectOf(id), api::reason::kResultStoreFailed,
                                 "not stored in the result store (retrying): " + why);
        }
      }
      job.due = std::chrono::steady_clock::now() +
                BackoffDelay(options_.retry_backoff, static_cast<uint32_t>(job.attempt), rng());
      ++job.attempt;
    }

    lock.lock();
    busy_ = false;
    if (done) {
      queued_.erase(key);
      done_.insert(key);
    } else {
      ++stats_.failures;
      stats_.last_error = s.message();
      queue_.push_back(std::move(job));
    }
    cv_.notify_all();
  }
}

}  // namespace fairbench::controller
