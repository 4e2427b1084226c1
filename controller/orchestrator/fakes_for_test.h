// Fakes of the orchestrator's seams, for tests: a platform, an agent pool,
// a store in memory and an observer. No process, no socket. They behave
// like the real parts where the orchestrator can tell (agents stream
// snapshots after the job's start and answer a cancel; a target's usage
// carries the platform's own timestamps; a slot can be lost) and record
// what they were asked to do.
//
// Time is virtual: everything waits on SharedState::clock, a FakeClock that
// jumps ahead whenever every thread holding it sleeps (FakeClock::kWhenIdle).
// Each fake agent holds it while it runs, so that a cell's time never runs
// ahead of what the agents report; give the orchestrator's options the
// clock, and hold it (RunOnThread) from any thread that acts on a run in
// progress.
#pragma once

#include <atomic>
#include <functional>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/clock.h"
#include "controller/orchestrator/orchestrator.h"

namespace fairbench::controller::fakes {

using namespace std::chrono_literals;

class Log {
 public:
  void Add(const std::string& e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(e);
  }
  std::vector<std::string> Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  size_t Count(const std::string& prefix) const {
    size_t n = 0;
    for (const std::string& e : Get()) n += e.rfind(prefix, 0) == 0;
    return n;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> events_;
};

struct SharedState {
  // The time of the run (see above).
  FakeClock clock{FakeClock::Mode::kWhenIdle};
  Log log;
  std::atomic<int> deployed{0};  // targets up right now
  std::atomic<int> max_deployed{0};
  std::shared_ptr<std::atomic<bool>> slot;  // the slot held now (null: none)
  std::mutex slot_mu;
  std::atomic<int> violations{0};  // jobs started without the slot or with two targets up
  // Profiles: whether targets can be sampled, and when sampling ran
  // (the clock's wall time), with the frequency asked for.
  std::atomic<bool> profiling{true};
  struct ProfileWindow {
    std::chrono::system_clock::time_point start, stop;
    int32_t hz = 0;
  };
  std::mutex profile_mu;
  std::vector<ProfileWindow> profile_windows;
  // What Teardown returns (a target that had to be killed).
  std::string teardown_error;
};

// Sampling that records when it ran and folds to two stacks.
class FakeProfile final : public ProfileSession {
 public:
  FakeProfile(SharedState& s, int32_t hz) : s_(s), hz_(hz), start_(s.clock.WallNow()) {}
  report::CellProfile Finish(std::stop_token) override {
    {
      std::lock_guard<std::mutex> lock(s_.profile_mu);
      s_.profile_windows.push_back({start_, s_.clock.WallNow(), hz_});
    }
    report::CellProfile p;
    p.command = "fake-perf";
    p.frequency_hz = hz_;
    p.samples = 30;
    p.stacks = {{"server;main;handle", 20}, {"server;main;poll_[k]", 10}};
    return p;
  }

 private:
  SharedState& s_;
  int32_t hz_;
  std::chrono::system_clock::time_point start_;
};

class FakeSlot final : public LoadSlot {
 public:
  FakeSlot(SharedState& s, std::string holder, std::shared_ptr<std::atomic<bool>> held)
      : s_(s), holder_(std::move(holder)), held_(std::move(held)) {}
  ~FakeSlot() override {
    s_.log.Add("release " + holder_);
    std::lock_guard<std::mutex> lock(s_.slot_mu);
    s_.slot.reset();
  }
  bool held() const override { return held_->load(); }

 private:
  SharedState& s_;
  std::string holder_;
  std::shared_ptr<std::atomic<bool>> held_;
};

class FakeTarget final : public TargetInstance {
 public:
  FakeTarget(SharedState& s, std::string name, bool block_ready, bool stale_usage = false,
             std::optional<TargetCpuFacts> cpus = std::nullopt)
      : cpus_(std::move(cpus)),
        s_(s),
        name_(std::move(name)),
        block_ready_(block_ready),
        stale_usage_(stale_usage),
        deployed_at_(std::chrono::time_point_cast<std::chrono::nanoseconds>(s.clock.WallNow())) {}
  TargetPlacement placement() const override { return TargetPlacement{"node-a", "10.1.2.3", 8080}; }
  Status WaitReady(Clock::Steady deadline, std::stop_token stop) override {
    if (!block_ready_) return Status::Ok();
    s_.log.Add("waiting ready " + name_);
    if (!s_.clock.SleepUntil(deadline, stop)) return Status::Cancelled("stopped");
    return Status::DeadlineExceeded(name_ + " not ready");
  }
  std::optional<report::TargetExit> Gone() override {
    std::lock_guard<std::mutex> lock(mu_);
    return gone_;
  }
  void Kill(report::TargetExit how) {
    std::lock_guard<std::mutex> lock(mu_);
    gone_ = std::move(how);
  }
  // The platform's clock: each sample is one second after the previous one
  // (from the moment of deployment) and 1.5 CPU-seconds more, so the target
  // used exactly 1.5 cores — whatever the controller's own sampling rhythm.
  // The first sample (idle) shows 32 MiB, every later one 64 MiB. With
  // stale usage, every sample is the idle one (a kubelet that has not
  // refreshed its figures since).
  Result<TargetUsage> Usage() override {
    const int n = stale_usage_ ? 1 : ++samples_;
    TargetUsage u;
    u.memory_bytes = n == 1 ? 32u << 20 : 64u << 20;
    u.cpu_seconds = 1.5 * n;
    u.sampled_at = deployed_at_ + std::chrono::seconds(n);
    return u;
  }
  std::vector<std::string> ReadBack() override { return {"nofile in force: 4096, read back by the fake"}; }
  TargetCpuFacts Cpus() override { return cpus_ ? *cpus_ : TargetInstance::Cpus(); }
  Result<std::unique_ptr<ProfileSession>> StartProfile(const ProfileRequest& r) override {
    if (!s_.profiling) return Status::Unavailable("perf is not installed here");
    return std::unique_ptr<ProfileSession>(new FakeProfile(s_, r.frequency_hz));
  }
  Status Teardown() override {
    s_.log.Add("teardown " + name_);
    --s_.deployed;
    if (!s_.teardown_error.empty()) return Status::DeadlineExceeded(s_.teardown_error);
    return Status::Ok();
  }
  std::string LogLocation() const override { return "logs/" + name_ + ".log"; }
  std::string Description() const override { return name_ + "-server"; }

 private:
  const std::optional<TargetCpuFacts> cpus_;
  SharedState& s_;
  std::string name_;
  bool block_ready_;
  bool stale_usage_;
  const api::Time deployed_at_;
  std::mutex mu_;
  std::optional<report::TargetExit> gone_;
  std::atomic<int> samples_{0};
};

class FakePlatform final : public Platform {
 public:
  explicit FakePlatform(SharedState& s) : s_(s) {}
  bool block_slot = false;
  bool block_ready = false;
  bool stale_usage = false;            // the targets' usage samples never refresh
  std::optional<TargetCpuFacts> cpus;  // what the targets say they got (unset: not read)
  std::set<std::string> fail_deploy;

  std::string name() const override { return "fake"; }
  Result<std::unique_ptr<TargetInstance>> Deploy(const DeployRequest& r, std::stop_token) override {
    s_.log.Add("deploy " + r.target.name + " run=" + r.run.name + " uid=" + r.run.uid +
               " index=" + std::to_string(r.target_index) + " node=" + r.placement.node_name);
    if (fail_deploy.count(r.target.name)) return Status::Unavailable("image pull failed");
    const int now = ++s_.deployed;
    int max = s_.max_deployed.load();
    while (now > max && !s_.max_deployed.compare_exchange_weak(max, now)) {
    }
    auto t = std::make_unique<FakeTarget>(s_, r.target.name, block_ready, stale_usage, cpus);
    std::lock_guard<std::mutex> lock(mu_);
    targets.push_back(t.get());
    return std::unique_ptr<TargetInstance>(std::move(t));
  }
  Result<std::vector<std::string>> EnsureAgents(const AgentRequest& r, std::stop_token) override {
    s_.log.Add("agents " + std::to_string(r.count) + " threads=" + std::to_string(r.threads) +
               " avoid=" + r.target.node);
    std::vector<std::string> ids;
    for (int i = 0; i < r.count; ++i) ids.push_back("agent-" + std::to_string(i));
    return ids;
  }
  Result<std::unique_ptr<LoadSlot>> AcquireSlot(const std::string& holder, std::chrono::milliseconds,
                                                std::stop_token stop) override {
    s_.log.Add("slot " + holder);
    if (block_slot && !s_.clock.SleepFor(60s, stop)) return Status::Cancelled("stopped while waiting for the slot");
    auto held = std::make_shared<std::atomic<bool>>(true);
    {
      std::lock_guard<std::mutex> lock(s_.slot_mu);
      s_.slot = held;
    }
    return std::unique_ptr<LoadSlot>(new FakeSlot(s_, holder, held));
  }
  report::Environment Describe() const override {
    report::Environment e;
    e.platform = "fake";
    e.hostname = "node-a";
    e.notes = {"fake platform"};
    return e;
  }
  FakeTarget* target(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return i < targets.size() ? targets[i] : nullptr;
  }

 private:
  SharedState& s_;
  std::mutex mu_;
  std::vector<FakeTarget*> targets;
};

// Agents. kNormal: after the job's start + warmup + duration (the clock's
// wall time, as a real agent), two measure intervals of 1,000 responses each
// (900 at 1 ms, 100 at 5 ms) and 0.25 CPU-seconds, then JobDone with 2 s
// measured. kHang: from the start, an interval every 50 ms until cancelled, then JobDone
// stopped early. kFail: the stream breaks after 100 ms. Each job runs on a
// thread of its own that holds the clock while it is awake.
enum class AgentMode { kNormal, kHang, kFail };

class FakeAgents final : public AgentPool {
 public:
  explicit FakeAgents(SharedState& s) : s_(s) {}
  ~FakeAgents() override {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads.swap(threads_);
      for (auto& [id, cancel] : cancel_) cancel.request_stop();
    }
    for (std::thread& t : threads) t.join();
  }
  std::atomic<AgentMode> mode{AgentMode::kNormal};
  bool block_wait = false;
  // A server whose behaviour depends on the offered rate (constant-rate jobs
  // only): its latency in µs, and the share of answers that are errors. The
  // agents then answer exactly the rate asked for. Set before the run.
  std::function<int64_t(double rate)> latency_at_rate;
  std::function<double(double rate)> errors_at_rate;
  // What each agent says of its own CPUs (agent id → view). Set before the run.
  std::map<std::string, CpuView> cpus;

  AgentCpuView AgentCpus(const std::string& id) const override {
    auto it = cpus.find(id);
    if (it == cpus.end()) return {id, "", std::nullopt};
    return {id, "node-b", it->second};
  }

  Result<std::vector<std::string>> WaitForAgents(size_t count, std::chrono::milliseconds,
                                                 const std::set<std::string>& ids, std::stop_token stop) override {
    if (block_wait) {
      s_.log.Add("waiting for agents");
      if (!s_.clock.SleepFor(60s, stop)) return Status::Cancelled("stopped while waiting for agents");
    }
    std::vector<std::string> out(ids.begin(), ids.end());
    out.resize(std::min(count, out.size()));
    return out;
  }

  Status StartJob(const std::string& agent, const wire::JobSpec& job, std::shared_ptr<JobObserver> observer) override {
    {
      std::lock_guard<std::mutex> lock(s_.slot_mu);
      if (!s_.slot || !s_.slot->load() || s_.deployed != 1) ++s_.violations;
    }
    s_.log.Add("job " + agent + " " + job.job_id);
    std::lock_guard<std::mutex> lock(mu_);
    jobs.push_back(job);
    std::stop_source& cancel = cancel_[agent + "|" + job.job_id];
    const AgentMode m = mode.load();
    // Held from now: the clock cannot run past the job's start before its
    // thread is there.
    auto hold = std::make_unique<FakeClock::Hold>(s_.clock);
    threads_.emplace_back([this, agent, job, observer, stop = cancel.get_token(), m, hold = std::move(hold)]() mutable {
      hold->Bind();
      Serve(agent, job, observer, stop, m);
      hold.reset();
    });
    return Status::Ok();
  }

  void CancelJob(const std::string& agent, const std::string& job_id, const std::string& reason) override {
    s_.log.Add("cancel " + agent + " " + reason);
    std::lock_guard<std::mutex> lock(mu_);
    cancel_times.push_back(s_.clock.Now());
    auto it = cancel_.find(agent + "|" + job_id);
    if (it != cancel_.end()) it->second.request_stop();
  }

  std::vector<wire::JobSpec> Jobs() {
    std::lock_guard<std::mutex> lock(mu_);
    return jobs;
  }
  std::vector<Clock::Steady> CancelTimes() {
    std::lock_guard<std::mutex> lock(mu_);
    return cancel_times;
  }
  // When the newest job's agent last sent an interval.
  std::atomic<int64_t> last_interval_ns{0};

  static Snapshot Interval(uint64_t seq, int64_t end_ns) {
    Snapshot s;
    s.sequence = seq;
    s.phase = Phase::kMeasure;
    s.start_ns = end_ns - 1'000'000'000;
    s.end_ns = end_ns;
    s.stats.counters.requests = 1000;
    s.stats.counters.bytes_read = 150'000;
    s.stats.counters.status_classes[2] = 1000;
    for (int i = 0; i < 900; ++i) s.stats.latency.Record(1000);
    for (int i = 0; i < 100; ++i) s.stats.latency.Record(5000);
    s.cpu_seconds = 0.25;
    return s;
  }

 private:
  void Serve(const std::string& agent, const wire::JobSpec& job, const std::shared_ptr<JobObserver>& observer,
             std::stop_token cancelled, AgentMode m) {
    JobSummary summary;
    summary.end.connections_peak = job.connections;
    if (m == AgentMode::kFail) {
      s_.clock.SleepFor(100ms);
      observer->OnFailed(agent, "stream broken: the agent went away");
      return;
    }
    if (m == AgentMode::kHang) {
      uint64_t seq = 0;
      s_.clock.SleepFor(*job.start - s_.clock.WallNow(), cancelled);
      while (s_.clock.SleepFor(50ms, cancelled)) {
        ++seq;
        observer->OnSnapshot(agent, Interval(seq, static_cast<int64_t>(seq) * 1'000'000'000));
        last_interval_ns = s_.clock.Now().time_since_epoch().count();
      }
      summary.end.stopped_early = true;
      summary.end.measure_seconds = 0.1;
      observer->OnDone(agent, summary);
      return;
    }
    s_.clock.SleepFor(*job.start + job.warmup + job.duration - s_.clock.WallNow(), cancelled);
    if (job.rate > 0 && latency_at_rate) {
      for (uint64_t seq : {1u, 2u}) {
        Snapshot s = Interval(seq, static_cast<int64_t>(seq) * 1'000'000'000);
        s.stats.latency = Histogram();
        const auto answered = static_cast<uint64_t>(job.rate);
        const uint64_t errors = errors_at_rate ? static_cast<uint64_t>(errors_at_rate(job.rate) * job.rate) : 0;
        s.stats.counters.requests = answered - errors;
        s.stats.counters.status_classes[2] = answered - errors;
        s.stats.counters.errors.status = errors;
        for (uint64_t i = 0; i < answered - errors; ++i) s.stats.latency.Record(latency_at_rate(job.rate));
        observer->OnSnapshot(agent, s);
      }
    } else {
      observer->OnSnapshot(agent, Interval(1, 1'000'000'000));
      observer->OnSnapshot(agent, Interval(2, 2'000'000'000));
    }
    summary.end.measure_seconds = 2.0;
    summary.totals.requests = 2000;
    observer->OnDone(agent, summary);
  }

  SharedState& s_;
  std::mutex mu_;
  std::vector<std::thread> threads_;
  std::map<std::string, std::stop_source> cancel_;  // by agent|job
  std::vector<wire::JobSpec> jobs;
  std::vector<Clock::Steady> cancel_times;
};

class MemoryStore final : public RunStore {
 public:
  std::optional<report::RunRecord> stored;
  int saves = 0;
  std::vector<std::string> cell_keys;
  Result<std::optional<report::RunRecord>> Load() override { return stored; }
  Status Save(const report::RunRecord& record) override {
    stored = record;
    ++saves;
    return Status::Ok();
  }
  Status SaveCell(const api::Cell& cell, const report::CellRecord&) override {
    cell_keys.push_back(cell.Key());
    return Status::Ok();
  }
};

class Recorder final : public RunObserver {
 public:
  void OnStage(const api::BenchmarkRun&, const api::CurrentCell& c) override {
    std::lock_guard<std::mutex> lock(mu_);
    stages.push_back(c.target + ":" + std::string(api::ToString(*c.stage)));
  }
  void OnLive(const api::CurrentCell&, double, double) override {}
  void OnCellDone(const report::RunRecord&, const report::CellRecord&) override { ++cells_done; }
  void OnMessage(const std::string& m) override {
    std::lock_guard<std::mutex> lock(mu_);
    messages.push_back(m);
  }
  void OnPersist(const report::RunRecord&) override { ++persists; }
  void OnTargetReady(const std::string&, const std::string& target, const TargetPlacement& where) override {
    std::lock_guard<std::mutex> lock(mu_);
    ready.push_back(target + "@" + where.node + "/" + where.host + ":" + std::to_string(where.port));
  }
  std::mutex mu_;
  std::vector<std::string> stages;
  std::vector<std::string> messages;
  std::vector<std::string> ready;
  std::atomic<int> cells_done{0};
  std::atomic<int> persists{0};
};

// The record of an earlier attempt at `run` in which the cell (alpha,
// hello, 10 connections) finished with `requests` requests.
inline report::RunRecord EarlierAttempt(const api::BenchmarkRun& run, uint64_t requests) {
  report::RunRecord earlier;
  earlier.run = run;
  report::CellRecord kept;
  kept.result.target = "alpha";
  kept.result.scenario = "hello";
  kept.result.connections = 10;
  kept.result.repetition = 1;
  kept.result.state = api::CellState::kSucceeded;
  kept.result.requests = requests;
  earlier.cells.push_back(kept);
  return earlier;
}

// A run of `targets` × one scenario "hello" × `connections`: short
// durations, no cooldown, the target placement pinned to node-a.
inline api::BenchmarkRun MakeRun(std::vector<std::string> targets, std::vector<int64_t> connections, int agents = 1) {
  api::BenchmarkRun run;
  run.metadata.name = "demo";
  run.metadata.uid = "uid-1";
  run.metadata.generation = 3;
  for (const std::string& t : targets) {
    api::Target target;
    target.name = t;
    target.image = "example.org/" + t;
    run.spec.targets.push_back(target);
  }
  api::Scenario hello;
  hello.name = "hello";
  hello.request = api::Request{};
  hello.request->path = "/";
  run.spec.scenarios.push_back(hello);
  run.spec.load.connections = std::move(connections);
  run.spec.load.threads = 2;
  run.spec.load.agents = agents;
  run.spec.load.warmup = 0ms;
  run.spec.load.duration = 200ms;
  run.spec.load.timeout = 1s;
  run.spec.cooldown = 0ms;
  run.spec.placement.target.node_name = "node-a";
  return run;
}

}  // namespace fairbench::controller::fakes
