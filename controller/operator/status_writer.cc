#include "controller/operator/status_writer.h"

#include <cstdio>

#include <spdlog/spdlog.h>

#include "api/cells.h"
#include "api/codec.h"
#include "api/conditions.h"
#include "common/mutex.h"

namespace fairbench::controller {
namespace {

using Json = nlohmann::json;
using Steady = std::chrono::steady_clock;

// Every field of status and of status.current, as the codec names them.
constexpr const char* kStatusFields[] = {
    "phase",      "observedGeneration", "current",        "nodes",   "progress", "completedCells",
    "totalCells", "startTime",          "completionTime", "results", "cpus",     "conditions"};
constexpr const char* kCurrentFields[] = {"target", "scenario", "connections", "repetition", "stage", "rateLevel"};

std::string CellKey(const api::CellResult& r) { return api::CellOf(r).Key(); }

std::string Rate(double rps) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", rps);
  return buf;
}

api::Time WallNow() { return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now()); }

// What the node picker's refusals start with (node_picker.cc).
bool IsPlacementMessage(const std::string& message) { return message.rfind("spec.placement", 0) == 0; }

}  // namespace

StatusWriterOptions StatusWriterOptions::ForRun(const api::BenchmarkRun& run) {
  StatusWriterOptions o;
  o.ns = run.metadata.namespace_;
  o.name = run.metadata.name;
  o.uid = run.metadata.uid;
  return o;
}

Json StatusWriter::StatusPatch(const Json& status_json, const Json& previous) {
  Json patch = Json::object();
  const bool known = previous.is_object();
  for (const char* field : kStatusFields) {
    const bool now_set = status_json.contains(field);
    const bool was_set = known && previous.contains(field);
    if (!now_set) {
      if (!known || was_set) patch[field] = nullptr;
      continue;
    }
    const Json& value = status_json[field];
    if (was_set && previous[field] == value) continue;
    if (std::string_view(field) == "current") {
      // A merge patch merges objects: fields of the old current that the
      // new one leaves out must be removed explicitly.
      Json current = value;
      for (const char* sub : kCurrentFields) {
        if (!current.contains(sub)) current[sub] = nullptr;
      }
      patch[field] = std::move(current);
    } else {
      patch[field] = value;
    }
  }
  return patch;
}

StatusWriter::StatusWriter(kube::Client& client, kube::EventRecorder* events, StatusWriterOptions options)
    : events_(events),
      options_(std::move(options)),
      ns_(options_.ns.empty() ? client.default_namespace() : options_.ns),
      status_client_(client, events, options_.field_manager) {
  thread_ = std::thread([this] { Run(); });
}

StatusWriter::~StatusWriter() { Stop(); }

void StatusWriter::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool StatusWriter::MayWrite() const { return !options_.may_write || options_.may_write(); }

RunIdentity StatusWriter::Identity() const { return RunIdentity{options_.name, ns_, options_.uid}; }

void StatusWriter::ChangedLocked(bool urgent) {
  have_wanted_ = true;
  ++version_;
  urgent_ = urgent_ || urgent;
  cv_.notify_all();
}

void StatusWriter::EnqueueLocked(bool warning, std::string reason, std::string message) {
  if (events_ == nullptr) return;
  if (queue_.size() >= options_.event_queue_limit) {
    queue_.pop_front();
    ++stats_.events_dropped;
  }
  queue_.push_back({warning, std::move(reason), std::move(message)});
  cv_.notify_all();
}

void StatusWriter::CellEventsLocked(const report::CellRecord& cell) {
  const api::CellResult& r = cell.result;
  if (r.state == api::CellState::kSucceeded) {
    EnqueueLocked(false, api::reason::kCellFinished, CellKey(r) + ": " + Rate(r.requests_per_second) + " requests/s");
    return;
  }
  if ((r.reason == api::CellReason::kDeployFailed || r.reason == api::CellReason::kAgentsUnavailable) &&
      IsPlacementMessage(r.message)) {
    if (!announced_.insert("placement/" + r.message).second) return;
    api::Condition c;
    c.type = api::condition::kPlaced;
    c.status = api::ConditionStatus::kFalse;
    c.reason = api::reason::kPlacementFailed;
    c.message = r.message;
    c.observed_generation = wanted_.observed_generation;
    api::SetCondition(own_conditions_, c, WallNow());
    ApplyOwnLocked(wanted_);
    EnqueueLocked(true, api::reason::kPlacementFailed, "target " + r.target + ": " + r.message);
    return;
  }
  std::string reason;
  if (r.reason == api::CellReason::kNotReady) {
    reason = api::reason::kTargetNotReady;
  } else if (r.reason == api::CellReason::kVerificationFailed) {
    reason = api::reason::kVerificationFailed;
  } else if (r.reason == api::CellReason::kTargetExited) {
    reason =
        cell.target_exit && cell.target_exit->oom_killed ? api::reason::kTargetOomKilled : api::reason::kTargetExited;
  }
  if (reason.empty()) {
    // A reason the orchestrator gives every remaining cell of a target
    // (DeployFailed, SlotUnavailable) comes with one message: one Event.
    const std::string cell_reason(api::ToString(r.reason));
    if (r.state == api::CellState::kFailed &&
        announced_.insert(r.target + "/" + cell_reason + "/" + r.message).second) {
      EnqueueLocked(true, api::reason::kCellFailed, CellKey(r) + ": " + cell_reason + ": " + r.message);
    }
    return;
  }
  // The orchestrator records one reason on every remaining cell of the
  // target: one Event per target and reason.
  if (!announced_.insert(r.target + "/" + reason).second) return;
  EnqueueLocked(true, reason, "target " + r.target + ": " + r.message + " (from cell " + CellKey(r) + ")");
}

void StatusWriter::RunEventLocked(const api::BenchmarkRunStatus& status) {
  if (!status.phase) return;
  const api::RunPhase phase = *status.phase;
  if (phase != api::RunPhase::kSucceeded && phase != api::RunPhase::kFailed && phase != api::RunPhase::kCancelled) {
    return;
  }
  if (!announced_.insert("run/" + std::string(api::ToString(phase))).second) return;
  std::string message;
  for (const api::Condition& c : status.conditions) {
    if ((c.type == api::condition::kComplete || c.type == api::condition::kFailed) &&
        c.status == api::ConditionStatus::kTrue) {
      message = c.message;
    }
  }
  if (message.empty()) {
    for (const api::Condition& c : status.conditions) {
      if (c.type == api::condition::kProgressing) message = c.message;
    }
  }
  const std::string cells =
      std::to_string(status.progress.completed) + " of " + std::to_string(status.progress.total) + " cells";
  message = message.empty() ? cells : message + " (" + cells + ")";
  switch (phase) {
    case api::RunPhase::kSucceeded: EnqueueLocked(false, api::reason::kRunSucceeded, message); break;
    case api::RunPhase::kFailed: EnqueueLocked(true, api::reason::kRunFailed, message); break;
    default: EnqueueLocked(false, api::reason::kRunCancelled, message); break;
  }
}

void StatusWriter::SetNodes(const api::RunNodes& nodes) {
  MutexLock lock(mu_);
  if (nodes_ == nodes) return;
  nodes_ = nodes;
  if (!have_wanted_) return;
  wanted_.nodes = nodes;
  ChangedLocked(true);
}

void StatusWriter::ApplyOwnLocked(api::BenchmarkRunStatus& status) const {
  if (nodes_) status.nodes = nodes_;
  for (const api::Condition& own : own_conditions_) {
    bool replaced = false;
    for (api::Condition& c : status.conditions) {
      if (c.type == own.type) {
        c = own;
        replaced = true;
      }
    }
    if (!replaced) status.conditions.push_back(own);
  }
}

void StatusWriter::StageEventsLocked(const api::CurrentCell& current) {
  if (!current.stage) return;
  const api::Stage stage = *current.stage;
  auto it = last_stage_.find(current.target);
  const bool was_waiting = it != last_stage_.end() && it->second == api::Stage::kWaitingForSlot;
  if (stage == api::Stage::kWaitingForSlot && !was_waiting) ++attempt_[current.target];
  if (stage == api::Stage::kDeploying && was_waiting &&
      announced_.insert("slot/" + current.target + "/" + std::to_string(attempt_[current.target])).second) {
    EnqueueLocked(false, api::reason::kSlotTaken, "load slot taken for target " + current.target);
  }
  last_stage_[current.target] = stage;
}

void StatusWriter::OnStage(const api::BenchmarkRun& run, const api::CurrentCell& current) {
  MutexLock lock(mu_);
  StageEventsLocked(current);
  api::BenchmarkRunStatus next = run.status;
  next.current = current;
  ApplyOwnLocked(next);
  if (have_wanted_ && next == wanted_) return;
  wanted_ = std::move(next);
  ChangedLocked(true);
}

void StatusWriter::OnLive(const api::CurrentCell& current, double /*requests_per_second*/, double /*elapsed_seconds*/) {
  MutexLock lock(mu_);
  if (wanted_.current == current) return;
  wanted_.current = current;
  // Before any whole status (OnPersist, OnStage, OnCellDone) a write would
  // null every other field: current waits for one.
  if (have_wanted_) ChangedLocked(false);
}

void StatusWriter::OnCellDone(const report::RunRecord& record, const report::CellRecord& cell) {
  MutexLock lock(mu_);
  std::optional<api::CurrentCell> current = wanted_.current;
  wanted_ = record.run.status;
  wanted_.current = std::move(current);
  ApplyOwnLocked(wanted_);
  CellEventsLocked(cell);
  ChangedLocked(true);
}

void StatusWriter::OnMessage(const std::string&) {}

void StatusWriter::OnTargetReady(const std::string&, const std::string& target, const TargetPlacement& where) {
  MutexLock lock(mu_);
  const std::string attempt = std::to_string(attempt_[target]);
  if (!where.node.empty() && announced_.insert("scheduled/" + target + "/" + attempt).second) {
    EnqueueLocked(false, api::reason::kTargetScheduled, "target " + target + " scheduled on node " + where.node);
  }
  if (announced_.insert("ready/" + target + "/" + attempt).second) {
    EnqueueLocked(false, api::reason::kTargetReady,
                  "target " + target + " is ready on " + where.host + ":" + std::to_string(where.port));
  }
}

void StatusWriter::OnPersist(const report::RunRecord& record) {
  MutexLock lock(mu_);
  std::optional<api::CurrentCell> current = wanted_.current;
  wanted_ = record.run.status;
  if (wanted_.phase == api::RunPhase::kRunning) wanted_.current = std::move(current);
  else wanted_.current.reset();
  ApplyOwnLocked(wanted_);
  ChangedLocked(true);
  RunEventLocked(wanted_);
}

Status StatusWriter::Flush(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  ++flush_waiters_;
  cv_.notify_all();
  const bool done = cv_.wait_for(lock, timeout, [&]() REQUIRES(mu_) {
    return stop_ || ((!have_wanted_ || written_version_ == version_) && queue_.empty() && !event_in_flight_);
  });
  --flush_waiters_;
  const bool complete = (!have_wanted_ || written_version_ == version_) && queue_.empty() && !event_in_flight_;
  if (done && complete) return Status::Ok();
  std::string why = stats_.last_error.empty() ? "" : ": " + stats_.last_error;
  lock.unlock();
  if (!MayWrite()) why = ": this controller may not write (not the leader)";
  if (!done) {
    return Status::DeadlineExceeded("the status of BenchmarkRun " + ns_ + "/" + options_.name +
                                    " was not written within " + std::to_string(timeout.count()) + " ms" + why);
  }
  return Status::Cancelled("the status writer of BenchmarkRun " + ns_ + "/" + options_.name + " was stopped" + why);
}

StatusWriterStats StatusWriter::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

void StatusWriter::Run() {
  Backoff backoff(options_.retry_backoff);
  Steady::time_point last_attempt{};  // long ago
  Steady::time_point retry_at{};
  const std::string key = ns_ + "/" + options_.name;
  MutexLock lock(mu_);
  while (!stop_) {
    const bool may_write = MayWrite();
    const Steady::time_point now = Steady::now();
    const bool pending = have_wanted_ && written_version_ != version_;
    if (!may_write) {
      // Not the leader: Events are dropped, the newest status waits.
      stats_.events_dropped += queue_.size();
      queue_.clear();
      cv_.notify_all();
      cv_.wait_for(lock, std::chrono::milliseconds(100), [&]() REQUIRES(mu_) { return stop_; });
      continue;
    }
    Steady::time_point due = now;
    if (pending) {
      const auto interval = flush_waiters_ > 0 ? std::chrono::milliseconds(0)
                            : urgent_          ? options_.min_interval
                                               : options_.live_interval;
      due = std::max(retry_at, last_attempt + interval);
    }
    if (pending && now >= due) {
      const uint64_t version = version_;
      const api::BenchmarkRunStatus wanted = wanted_;
      lock.unlock();
      const Json status_json = api::ToJson(wanted);
      const Json patch = StatusPatch(status_json, written_json_);
      kube::ApiResult<Json> result = Json();
      bool sent = false;
      if (!patch.empty()) {
        result = status_client_.Patch(Identity(), patch);
        sent = true;
      }
      lock.lock();
      last_attempt = Steady::now();
      if (result.ok()) {
        written_json_ = status_json;
        written_version_ = std::max(written_version_, version);
        if (written_version_ == version_) urgent_ = false;
        if (sent) ++stats_.writes;
        backoff.Reset();
        retry_at = {};
      } else {
        const kube::ApiError& e = result.error();
        ++stats_.failed_writes;
        stats_.last_error = e.ToString();
        const bool give_up = e.reason == kube::Reason::kNotFound || e.reason == kube::Reason::kInvalid ||
                             e.reason == kube::Reason::kBadRequest;
        if (give_up) {
          spdlog::warn("BenchmarkRun {}: status not written: {}", key, e.ToString());
          written_version_ = std::max(written_version_, version);
          if (written_version_ == version_) urgent_ = false;
          written_json_ = Json();  // unknown now: the next write sends every field
          backoff.Reset();
          retry_at = {};
        } else {
          std::chrono::nanoseconds wait = backoff.Next();
          const bool told = e.retry_after && e.retry_after->count() > 0;  // 429: the server says when
          if (told) wait = std::min<std::chrono::nanoseconds>(*e.retry_after, std::chrono::seconds(30));
          retry_at = last_attempt + std::chrono::duration_cast<Steady::duration>(wait);
          // Only 429, 503 and 409 say that nothing was written; after a 500,
          // a 504 or a cut connection the patch may have taken effect, and a
          // later patch made against the status last known written would
          // leave out a field it set that the newer status clears. So the
          // next write sends every field (a merge patch of the whole status
          // is the same whether this one took effect or not).
          if (e.reason != kube::Reason::kTooManyRequests && e.reason != kube::Reason::kServiceUnavailable &&
              e.reason != kube::Reason::kConflict) {
            written_json_ = Json();
          }
          // Refused by authorization (a Role without benchmarkruns/status
          // patch): the status client says so once as an Event; the writes
          // go on, and succeed once the rule is back.
          spdlog::warn("PATCH {}: {}; retrying in {} ms{}",
                       kube::resources::BenchmarkRuns().Path(ns_, options_.name, "status"), kube::RetryCause(e),
                       std::chrono::duration_cast<std::chrono::milliseconds>(wait).count(),
                       told ? " (Retry-After)" : "");
        }
      }
      cv_.notify_all();
      continue;
    }
    if (!queue_.empty()) {
      PendingEvent ev = std::move(queue_.front());
      queue_.pop_front();
      event_in_flight_ = true;
      lock.unlock();
      kube::ApiStatus recorded =
          events_->Record(RunStatusClient::ObjectOf(Identity()),
                          ev.warning ? kube::EventType::kWarning : kube::EventType::kNormal, ev.reason, ev.message);
      lock.lock();
      event_in_flight_ = false;
      if (recorded.ok()) {
        ++stats_.events;
      } else {
        ++stats_.events_dropped;
        stats_.last_error = recorded.error().ToString();
        spdlog::warn("BenchmarkRun {}: Event {} not recorded: {}", key, ev.reason, recorded.error().ToString());
      }
      cv_.notify_all();
      continue;
    }
    if (pending) {
      cv_.wait_until(lock, due);
    } else {
      cv_.wait(lock, [&]() REQUIRES(mu_) {
        return stop_ || (have_wanted_ && written_version_ != version_) || !queue_.empty();
      });
    }
  }
  cv_.notify_all();
}

}  // namespace fairbench::controller
