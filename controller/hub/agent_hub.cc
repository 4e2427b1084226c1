#include "controller/hub/agent_hub.h"

#include <algorithm>
#include <deque>
#include <fstream>

#include <spdlog/spdlog.h>

#include "common/mutex.h"
#include "common/tsan_hand_off.h"
#include "common/wire.h"
#include "controller/hub/job_messages.h"
#include "controller/hub/job_stream.h"

namespace fairbench::controller {

class AgentSession final : public grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage> {
 public:
  static constexpr size_t kOutboxLimit = 16;

  // gRPC builds the session on one of its threads and runs the reactions on
  // others: `this` and &in_ state that order to TSan (common/tsan_hand_off.h).
  explicit AgentSession(AgentHub* hub) : hub_(hub) {
    TsanRelease(this);  // to the first OnWriteDone, OnCancel, OnDone
    TsanRelease(&in_);  // the read chain
    StartRead(&in_);
  }
  // A stream refused before its first read (the hub is full of pending ones).
  AgentSession(AgentHub* hub, const grpc::Status& refusal) : hub_(hub), finishing_(true) {
    TsanRelease(this);
    Finish(refusal);
  }

  // Thread-safe. False when the stream is finishing or the outbox is full.
  bool Send(v1::ControllerMessage msg) {
    const v1::ControllerMessage* first = nullptr;
    {
      MutexLock lock(mu_);
      if (finishing_ || outbox_.size() >= kOutboxLimit) return false;
      outbox_.push_back(std::move(msg));
      if (!writing_) {
        writing_ = true;
        first = &outbox_.front();
      }
    }
    if (first != nullptr) StartWrite(first);
    return true;
  }

  void End(const grpc::Status& status) {
    {
      MutexLock lock(mu_);
      if (finishing_) return;
      finishing_ = true;
    }
    Finish(status);
  }

  // Called by the hub with its lock held (lock order: hub, then session).
  AgentInfo Info() const {
    MutexLock lock(mu_);
    AgentInfo info = info_;
    info.job_id = job_id_;
    return info;
  }
  const std::string& id() const { return info_.id; }  // fixed after Hello

  // Called by the hub with its lock held, before the session is visible to
  // StartJob: the Welcome is the first message an agent reads, never after
  // a LoadJob.
  void Welcome(const std::string& controller_id) {
    v1::ControllerMessage welcome;
    welcome.mutable_welcome()->set_controller_id(controller_id);
    Send(std::move(welcome));
  }

  Status BeginJob(const v1::LoadJob& job, std::shared_ptr<JobObserver> observer) {
    {
      MutexLock lock(mu_);
      if (finishing_) return Status::Unavailable("agent " + info_.id + " is disconnecting");
      if (!job_id_.empty()) return Status::FailedPrecondition("agent " + info_.id + " is busy with job " + job_id_);
      job_id_ = job.job_id();
      observer_ = std::move(observer);
      stream_ = JobStream();
    }
    v1::ControllerMessage m;
    *m.mutable_load_job() = job;
    if (!Send(std::move(m))) {
      MutexLock lock(mu_);
      job_id_.clear();
      observer_.reset();
      return Status::Unavailable("agent " + info_.id + " cannot take a message now");
    }
    return Status::Ok();
  }

  void CancelJob(const std::string& job_id, const std::string& reason) {
    {
      MutexLock lock(mu_);
      if (job_id_ != job_id) return;
    }
    v1::ControllerMessage m;
    m.mutable_cancel()->set_job_id(job_id);
    m.mutable_cancel()->set_reason(reason);
    Send(std::move(m));
  }

 private:
  void OnReadDone(bool ok) override {
    TsanAcquire(&in_);
    if (!ok) {
      End(grpc::Status::OK);  // the agent closed its side or the stream broke
      TsanRelease(&in_);      // to OnDone
      return;
    }
    if (!welcomed_) {
      HandleHello();
    } else {
      switch (in_.body_case()) {
        case v1::AgentMessage::kSnapshot: HandleSnapshot(); break;
        case v1::AgentMessage::kJobDone: HandleDone(); break;
        case v1::AgentMessage::kJobFailed: Fail(in_.job_failed().job_id(), in_.job_failed().reason()); break;
        case v1::AgentMessage::kHello:
        case v1::AgentMessage::BODY_NOT_SET: break;
      }
    }
    bool finishing;
    {
      MutexLock lock(mu_);
      finishing = finishing_;
    }
    TsanRelease(&in_);  // to the next OnReadDone, or to OnDone
    if (!finishing) StartRead(&in_);
    TsanRelease(&done_);  // StartRead's own accesses, to OnDone
  }

  void HandleHello() {
    if (in_.body_case() != v1::AgentMessage::kHello || in_.hello().agent_id().empty()) {
      hub_->Refuse("bad-hello", "ended a stream whose first message was not Hello with an agent id");
      End(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first message must be Hello with an agent id"));
      return;
    }
    if (!hub_->TokenMatches(in_.hello().token())) {
      hub_->Refuse("token",
                   "refused agent " + in_.hello().agent_id() + " from " + in_.hello().node() + ": wrong token");
      End(grpc::Status(
          grpc::StatusCode::UNAUTHENTICATED,
          "wrong token: the controller expects the token of its Secret (fairbench run: the one it gave its "
          "agents)"));
      return;
    }
    info_.id = in_.hello().agent_id();
    info_.node = in_.hello().node();
    info_.cores = in_.hello().cores();
    info_.version = in_.hello().version();
    if (!in_.hello().cpu_view().empty()) {
      info_.cpus = CpuViewFromJson(nlohmann::json::parse(in_.hello().cpu_view(), nullptr, false));
    }
    if (grpc::Status s = hub_->Register(this); !s.ok()) {
      End(s);
      return;
    }
    welcomed_ = true;  // Register queued the Welcome
  }

  void HandleSnapshot() {
    const v1::Snapshot& msg = in_.snapshot();
    std::shared_ptr<JobObserver> observer;
    SnapshotTake take = SnapshotTake::kAccepted;
    auto decoded = DecodeJobSnapshot(msg);
    {
      MutexLock lock(mu_);
      if (msg.job_id() != job_id_ || !observer_) return;  // a late snapshot of a job already over
      const uint64_t missing_before = stream_.missing();
      take = TakeSnapshot(decoded, stream_);
      switch (take) {
        case SnapshotTake::kRefused:
          observer = std::move(observer_);
          job_id_.clear();
          break;
        case SnapshotTake::kAccepted:
          ++hub_counts_.snapshots;
          hub_counts_.missing += stream_.missing() - missing_before;
          observer = observer_;
          break;
        case SnapshotTake::kDuplicate: ++hub_counts_.duplicates; break;
      }
    }
    FlushCounts();
    switch (take) {
      case SnapshotTake::kDuplicate: return;
      case SnapshotTake::kRefused:
        CancelAfterFailure(msg.job_id());
        observer->OnFailed(info_.id, "bad snapshot: " + decoded.status().message());
        return;
      case SnapshotTake::kAccepted: observer->OnSnapshot(info_.id, std::move(*decoded)); return;
    }
  }

  void HandleDone() {
    const v1::JobDone& done = in_.job_done();
    std::shared_ptr<JobObserver> observer;
    JobSummary summary;
    {
      MutexLock lock(mu_);
      if (done.job_id() != job_id_ || !observer_) return;
      summary = SummarizeJobDone(done, stream_);
      observer = std::move(observer_);
      job_id_.clear();
    }
    observer->OnDone(info_.id, summary);
  }

  void Fail(const std::string& job_id, const std::string& reason) {
    std::shared_ptr<JobObserver> observer;
    {
      MutexLock lock(mu_);
      if (job_id != job_id_ || !observer_) return;
      observer = std::move(observer_);
      job_id_.clear();
    }
    observer->OnFailed(info_.id, reason);
  }

  void CancelAfterFailure(const std::string& job_id) {
    v1::ControllerMessage m;
    m.mutable_cancel()->set_job_id(job_id);
    m.mutable_cancel()->set_reason("the controller could not read this job's snapshots");
    Send(std::move(m));
  }

  void FlushCounts() {
    HubStats c;
    {
      MutexLock lock(mu_);
      c = hub_counts_;
      hub_counts_ = HubStats();
    }
    if (c.snapshots || c.duplicates || c.missing) hub_->Count(c.snapshots, c.duplicates, c.missing, 0);
  }

  void OnWriteDone(bool ok) override {
    TsanAcquire(this);
    const v1::ControllerMessage* next = nullptr;
    {
      MutexLock lock(mu_);
      outbox_.pop_front();
      if (!ok) {
        outbox_.clear();
        writing_ = false;
        return;
      }
      if (!outbox_.empty() && !finishing_) {
        next = &outbox_.front();
      } else {
        writing_ = false;
      }
    }
    if (next != nullptr) StartWrite(next);
    TsanRelease(&done_);
  }

  void OnDone() override {
    TsanAcquire(this);
    TsanAcquire(&in_);  // after the last read: info_, and the delete below
    TsanAcquire(&done_);
    std::shared_ptr<JobObserver> observer;
    {
      MutexLock lock(mu_);
      observer = std::move(observer_);
      job_id_.clear();
    }
    if (observer) observer->OnFailed(info_.id, "agent " + info_.id + " disconnected");
    hub_->Unregister(this);
    delete this;
  }

  void OnCancel() override {
    TsanAcquire(this);
    End(grpc::Status::CANCELLED);
    TsanRelease(&done_);
  }

  AgentHub* const hub_;
  v1::AgentMessage in_;    // only the reading reaction touches it
  bool welcomed_ = false;  // only the reading reaction touches it
  char done_ = 0;          // the address reactions release to OnDone (TSan builds)
  AgentInfo info_;         // written once, at Hello, before Register

  mutable Mutex mu_;
  std::deque<v1::ControllerMessage> outbox_ GUARDED_BY(mu_);
  bool writing_ GUARDED_BY(mu_) = false;
  bool finishing_ GUARDED_BY(mu_) = false;
  std::string job_id_ GUARDED_BY(mu_);
  std::shared_ptr<JobObserver> observer_ GUARDED_BY(mu_);
  JobStream stream_ GUARDED_BY(mu_);
  HubStats hub_counts_ GUARDED_BY(mu_);
};

AgentHub::AgentHub(std::string token, std::string controller_id, AgentHubOptions options)
    : token_(std::move(token)),
      controller_id_(std::move(controller_id)),
      options_(options),
      reaper_([this](std::stop_token stop) { ReapPending(stop); }) {}

AgentHub::~AgentHub() = default;

grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>* AgentHub::Connect(
    grpc::CallbackServerContext* context) {
  {
    MutexLock lock(mu_);
    ++stats_.streams;
    if (pending_.size() >= options_.max_pending) {
      ++stats_.refused_pending;
      LogRefusal("pending", "refused a stream from " + context->peer() + ": " + std::to_string(pending_.size()) +
                                " streams are waiting for their Hello (at most " +
                                std::to_string(options_.max_pending) + ")");
      // Not in all_ nor pending_: its OnDone finds nothing to remove.
      return new AgentSession(this, grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                                 "too many streams waiting for their Hello; retry later"));
    }
  }
  auto* session = new AgentSession(this);
  {
    MutexLock lock(mu_);
    all_.insert(session);  // after a shutdown, its Hello is refused by Register
    pending_[session] = std::chrono::steady_clock::now() + options_.hello_timeout;
  }
  cv_.notify_all();  // the reaper's next deadline may be this one
  return session;
}

void AgentHub::ReapPending(std::stop_token stop) {
  MutexLock lock(mu_);
  while (!stop.stop_requested()) {
    const auto now = std::chrono::steady_clock::now();
    auto next = now + std::chrono::hours(1);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second > now) {
        next = std::min(next, it->second);
        ++it;
        continue;
      }
      // Ended under the lock, as Shutdown does, so that it cannot be
      // deleted meanwhile; its OnDone removes it from all_.
      ++stats_.hello_timeouts;
      LogRefusal("hello",
                 "ended a stream that said no Hello within " + std::to_string(options_.hello_timeout.count()) + " ms");
      it->first->End(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                  "no Hello within " + std::to_string(options_.hello_timeout.count()) + " ms"));
      it = pending_.erase(it);
    }
    cv_.wait_until(lock, stop, next, [&]() REQUIRES(mu_) {
      return !pending_.empty() && std::min_element(pending_.begin(), pending_.end(), [](const auto& a, const auto& b) {
                                    return a.second < b.second;
                                  })->second < next;
    });
  }
}

void AgentHub::Refuse(const std::string& reason, const std::string& line) {
  MutexLock lock(mu_);
  ++stats_.refused;
  LogRefusal(reason, line);
}

void AgentHub::LogRefusal(const std::string& reason, const std::string& line) {
  Said& said = said_[reason];
  const auto now = std::chrono::steady_clock::now();
  if (now - said.at < std::chrono::seconds(1)) {
    ++said.unsaid;
    return;
  }
  if (said.unsaid > 0) {
    spdlog::warn("{} ({} more like it in the last second)", line, said.unsaid);
  } else {
    spdlog::warn("{}", line);
  }
  said.at = now;
  said.unsaid = 0;
}

void AgentHub::SetToken(std::string token) {
  MutexLock lock(mu_);
  token_ = std::move(token);
}

bool AgentHub::TokenMatches(const std::string& token) const {
  MutexLock lock(mu_);
  return token == token_;
}

grpc::Status AgentHub::Register(AgentSession* session) {
  AgentSession* replaced = nullptr;
  {
    MutexLock lock(mu_);
    if (shutdown_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "controller shutting down");
    // Ended by the reaper while its Hello was on the way.
    if (pending_.erase(session) == 0) return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Hello came too late");
    auto it = sessions_.find(session->id());
    if (it != sessions_.end() && it->second != session) replaced = it->second;
    if (replaced == nullptr && sessions_.size() >= options_.max_agents) {
      ++stats_.refused_full;
      LogRefusal("full", "refused agent " + session->id() + ": " + std::to_string(sessions_.size()) +
                             " agents are connected (at most " + std::to_string(options_.max_agents) + ")");
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "the controller serves at most " + std::to_string(options_.max_agents) + " agents");
    }
    session->Welcome(controller_id_);
    sessions_[session->id()] = session;
    if (replaced != nullptr) {
      // Ended under the lock so that it cannot be deleted meanwhile.
      replaced->End(grpc::Status(grpc::StatusCode::ABORTED, "replaced by a newer connection of the same agent"));
    }
  }
  spdlog::info("agent {} connected", session->id());
  cv_.notify_all();
  return grpc::Status::OK;
}

void AgentHub::Unregister(AgentSession* session) {
  {
    MutexLock lock(mu_);
    all_.erase(session);
    pending_.erase(session);
    auto it = sessions_.find(session->id());
    if (it != sessions_.end() && it->second == session) {
      sessions_.erase(it);
      spdlog::info("agent {} disconnected", session->id());
    }
  }
  cv_.notify_all();
}

void AgentHub::Count(uint64_t snapshots, uint64_t duplicates, uint64_t missing, uint64_t refused) {
  MutexLock lock(mu_);
  stats_.snapshots += snapshots;
  stats_.duplicates += duplicates;
  stats_.missing += missing;
  stats_.refused += refused;
}

std::vector<AgentInfo> AgentHub::Agents() const {
  MutexLock lock(mu_);
  std::vector<AgentInfo> out;
  for (const auto& [id, session] : sessions_) out.push_back(session->Info());
  return out;
}

AgentCpuView AgentHub::AgentCpus(const std::string& agent_id) const {
  MutexLock lock(mu_);
  auto it = sessions_.find(agent_id);
  if (it == sessions_.end()) return {agent_id, "", std::nullopt};
  const AgentInfo info = it->second->Info();
  return {agent_id, info.node, info.cpus};
}

Result<std::vector<std::string>> AgentHub::WaitForAgents(size_t count, std::chrono::milliseconds timeout,
                                                         const std::set<std::string>& ids, std::stop_token stop) {
  MutexLock lock(mu_);
  std::vector<std::string> idle;
  const bool ready = cv_.wait_for(lock, stop, timeout, [&]() REQUIRES(mu_) {
    idle.clear();
    for (const auto& [id, session] : sessions_) {
      if (!ids.empty() && ids.count(id) == 0) continue;
      if (session->Info().job_id.empty()) idle.push_back(id);
    }
    return shutdown_ || idle.size() >= count;
  });
  if (shutdown_) return Status::Cancelled("controller shutting down");
  if (!ready && stop.stop_requested()) return Status::Cancelled("stopped while waiting for agents");
  if (!ready) {
    return Status::DeadlineExceeded(std::to_string(idle.size()) + " of " + std::to_string(count) +
                                    " agents connected and idle after " + std::to_string(timeout.count()) + " ms");
  }
  idle.resize(count);
  return idle;
}

Status AgentHub::StartJob(const std::string& agent_id, const wire::JobSpec& job,
                          std::shared_ptr<JobObserver> observer) {
  v1::LoadJob proto;
  wire::ToProto(job, &proto);
  return StartJob(agent_id, proto, std::move(observer));
}

Status AgentHub::StartJob(const std::string& agent_id, const v1::LoadJob& job, std::shared_ptr<JobObserver> observer) {
  MutexLock lock(mu_);
  auto it = sessions_.find(agent_id);
  if (it == sessions_.end()) return Status::NotFound("agent " + agent_id + " is not connected");
  return it->second->BeginJob(job, std::move(observer));
}

void AgentHub::CancelJob(const std::string& agent_id, const std::string& job_id, const std::string& reason) {
  MutexLock lock(mu_);
  auto it = sessions_.find(agent_id);
  if (it != sessions_.end()) it->second->CancelJob(job_id, reason);
}

void AgentHub::Shutdown() {
  MutexLock lock(mu_);
  shutdown_ = true;
  for (AgentSession* s : all_) s->End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "controller shutting down"));
  cv_.notify_all();
}

std::string NewAgentToken() {
  std::ifstream in("/dev/urandom", std::ios::binary);
  unsigned char bytes[16] = {};
  in.read(reinterpret_cast<char*>(bytes), sizeof bytes);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

HubStats AgentHub::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

}  // namespace fairbench::controller
