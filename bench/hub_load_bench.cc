// The controller's AgentHub under 100 agents: what it costs the controller
// to take one realistic snapshot per second from each of them.
//
// The controller is a separate process (this program again, exec'd): the
// real AgentHub behind StartGrpcServer on 127.0.0.1, one job per agent, each
// job's snapshots going to its own CellAggregator as the orchestrator's
// would. This process holds the agents: one real gRPC stream each (its own
// channel and TCP connection, the agent's keepalive settings), Hello with
// the token, then one snapshot per second (bench/realistic_snapshot.h,
// encoded with common/wire.h), then JobDone.
//
// Measured: the controller process's CPU over the sending window
// (/proc/<pid>/stat, every thread of it: gRPC's and the aggregation's), as
// % of one core, and over 3 s before it with every stream open and no
// snapshot (the keepalive pings alone); the ingest latency of each snapshot, from just before the
// agent's Write to the aggregator's merge of it (the interval callback) —
// both stamped with CLOCK_MONOTONIC, which all processes share — split at
// the hub's hand-over to the job's observer (read and decoded); and the
// controller's RSS. Targets: CPU ≤ 10 % of one core, p99 ≤ 1 ms.
// Reference: bench/ingest_bench (decode + merge of one snapshot, 110 µs).
//
// Three schedules: "cell" (the agents of one cell: they share their interval
// boundaries, and each holds its snapshot for the send offset the controller
// gave it, wire::SendOffset: 100 agents one after another over 250 ms),
// "staggered" (sends spread evenly over the second, as independent jobs
// would be), and "burst" (every agent at the same instant, no offsets: how a
// cell's agents sent before the offsets; shown for comparison, its queueing
// is the point, so no target applies).
//
// --controller-cpu C pins the controller to CPU C and the agents to the
// others (this process's affinity, so set it before the threads start).
//
//   hub_load_bench [--agents N] [--seconds S] [--schedule cell|staggered|burst|all] [--controller-cpu C]
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "bench/realistic_snapshot.h"
#include "common/allocator.h"
#include "common/wire.h"
#include "common/wire_job.h"
#include "controller/hub/agent_hub.h"
#include "controller/hub/cell_aggregator.h"
#include "controller/hub/grpc_server.h"
#include "fairbench/v1/agent.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC: the same in both processes
using fairbench::controller::AgentHub;
using fairbench::controller::CellAggregator;
namespace v1 = fairbench::v1;

constexpr double kCpuTarget = 10.0;      // % of one core
constexpr double kP99TargetUs = 1000.0;  // ingest latency p99

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Stamps each snapshot's arrival (the hub has read and decoded it) and
// hands it on to the job's CellAggregator.
class Stamping final : public fairbench::controller::JobObserver {
 public:
  Stamping(std::shared_ptr<CellAggregator> next, std::atomic<int64_t>* arrived, int seconds)
      : next_(std::move(next)), arrived_(arrived), seconds_(seconds) {}
  void OnSnapshot(const std::string& agent_id, fairbench::Snapshot snapshot) override {
    if (snapshot.sequence >= 1 && snapshot.sequence <= static_cast<uint64_t>(seconds_)) {
      arrived_[snapshot.sequence - 1].store(NowNs());
    }
    next_->OnSnapshot(agent_id, std::move(snapshot));
  }
  void OnDone(const std::string& agent_id, const fairbench::controller::JobSummary& summary) override {
    next_->OnDone(agent_id, summary);
  }
  void OnFailed(const std::string& agent_id, const std::string& reason) override { next_->OnFailed(agent_id, reason); }

 private:
  const std::shared_ptr<CellAggregator> next_;
  std::atomic<int64_t>* const arrived_;
  const int seconds_;
};

// ---- The controller process ------------------------------------------------

// Writes its port to `port_fd`, serves `agents` jobs of `seconds` snapshots,
// writes the merge times (agents × seconds int64, 0 = never merged) to
// `out_fd`, then waits for EOF on `quit_fd`.
int ControllerMain(const std::string& token, int agents, int seconds, int port_fd, int out_fd, int quit_fd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (std::getenv("HUB_BENCH_DEFAULT_MALLOC") == nullptr)
    fairbench::KeepLargeBlocksInTheHeap();  // as the controllers do
  spdlog::set_level(spdlog::level::warn);
  AgentHub hub(token, "hub-load-bench");
  auto server = fairbench::controller::StartGrpcServer(&hub, "127.0.0.1:0");
  if (!server.ok()) {
    std::fprintf(stderr, "controller: %s\n", server.status().message().c_str());
    return 1;
  }
  const int32_t port = server->port;
  WriteAll(port_fd, &port, sizeof port);
  close(port_fd);

  auto ids = hub.WaitForAgents(static_cast<size_t>(agents), std::chrono::seconds(60));
  if (!ids.ok()) {
    std::fprintf(stderr, "controller: %s\n", ids.status().message().c_str());
    return 1;
  }
  // Merge times, preallocated: [agent][sequence - 1].
  // Arrival and merge times, preallocated: [agent][sequence - 1].
  std::vector<std::atomic<int64_t>> merged(static_cast<size_t>(agents) * static_cast<size_t>(seconds));
  std::vector<std::atomic<int64_t>> arrived(merged.size());
  for (auto& m : merged) m.store(0);
  for (auto& m : arrived) m.store(0);
  std::vector<std::shared_ptr<CellAggregator>> aggregators;
  for (const std::string& id : *ids) {
    const int index = std::atoi(id.c_str() + std::strlen("agent-"));
    auto agg = std::make_shared<CellAggregator>(1);
    agg->SetIntervalCallback([&merged, index, seconds](const fairbench::Snapshot& s) {
      if (s.sequence >= 1 && s.sequence <= static_cast<uint64_t>(seconds)) {
        merged[static_cast<size_t>(index) * static_cast<size_t>(seconds) + s.sequence - 1].store(NowNs());
      }
    });
    v1::LoadJob job;
    job.set_job_id("job-" + std::to_string(index));
    job.set_host("127.0.0.1");
    job.set_port(80);
    job.set_connections(100);
    job.set_threads(1);
    job.set_duration_ns(int64_t{seconds} * 1'000'000'000);
    job.set_interval_ns(1'000'000'000);
    job.set_keep_alive(true);
    auto stamping =
        std::make_shared<Stamping>(agg, &arrived[static_cast<size_t>(index) * static_cast<size_t>(seconds)], seconds);
    if (auto s = hub.StartJob(id, job, stamping); !s.ok()) {
      std::fprintf(stderr, "controller: %s\n", s.message().c_str());
      return 1;
    }
    aggregators.push_back(std::move(agg));
  }
  const auto deadline = Clock::now() + std::chrono::seconds(seconds + 60);
  int failures = 0;
  for (auto& agg : aggregators) {
    if (agg->Wait(fairbench::SystemClock::Instance(), deadline) != CellAggregator::Outcome::kDone && failures++ == 0) {
      std::fprintf(stderr, "controller: a job did not end well: %s\n", agg->failure().c_str());
    }
  }
  for (auto& agg : aggregators) agg->SetIntervalCallback(nullptr);
  std::vector<int64_t> out(2 * merged.size());
  for (size_t i = 0; i < merged.size(); ++i) {
    out[i] = arrived[i].load();
    out[merged.size() + i] = merged[i].load();
  }
  WriteAll(out_fd, out.data(), out.size() * sizeof(int64_t));
  close(out_fd);
  char c;
  while (read(quit_fd, &c, 1) > 0) {
  }
  hub.Shutdown();
  server->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return 0;
}

// ---- /proc readings of the controller -------------------------------------

double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  const size_t close_paren = line.rfind(')');
  if (close_paren == std::string::npos) return -1;
  std::istringstream rest(line.substr(close_paren + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double StatusKiB(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::atof(line.c_str() + key.size() + 1);
  }
  return -1;
}

// ---- The agents (this process) ---------------------------------------------

struct Result {
  bool ok = false;
  double cpu_percent = 0;
  double idle_cpu_percent = 0;  // streams open, no snapshots
  double p50_us = 0, p99_us = 0, max_us = 0;
  size_t samples = 0, missing = 0;
  double rss_mib = 0, hwm_mib = 0;
  // p50, p99, max of the parts: the agent's Write call; send → the hub
  // has read and decoded it (transport, gRPC, decode); → merged.
  double write[3] = {}, transport[3] = {}, merge[3] = {};
  uint64_t connections_ok = 0;
};

enum class Schedule { kCell, kStaggered, kBurst };

// When agent i of n sends within each second, in ns after the boundary.
int64_t SendOffsetNs(Schedule schedule, int i, int agents) {
  switch (schedule) {
    case Schedule::kCell: return fairbench::wire::SendOffset(i, agents, std::chrono::seconds(1)).count();
    case Schedule::kStaggered: return int64_t{1'000'000'000} * i / agents;
    case Schedule::kBurst: return 0;
  }
  return 0;
}

void PinTo(const cpu_set_t& set) { sched_setaffinity(0, sizeof set, &set); }

// The controller process of one run: this program again (exec'd: a fresh
// process, no state of this one's gRPC), told which descriptors to use.
// Going, it closes the quit pipe and gives the controller up to 5 s to end
// by itself before it is killed.
class ControllerProcess {
 public:
  // nullptr when the pipes or the fork fail.
  static std::unique_ptr<ControllerProcess> Start(const std::string& token, int agents, int seconds,
                                                  int controller_cpu) {
    int port_pipe[2], out_pipe[2], quit_pipe[2];
    if (pipe(port_pipe) != 0 || pipe(out_pipe) != 0 || pipe(quit_pipe) != 0) return nullptr;
    std::fflush(nullptr);
    const pid_t child = fork();
    if (child < 0) return nullptr;
    if (child == 0) {
      close(port_pipe[0]);
      close(out_pipe[0]);
      close(quit_pipe[1]);
      if (controller_cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(controller_cpu, &set);
        PinTo(set);
      }
      const std::string a = std::to_string(agents), sec = std::to_string(seconds), p = std::to_string(port_pipe[1]),
                        o = std::to_string(out_pipe[1]), q = std::to_string(quit_pipe[0]);
      execl("/proc/self/exe", "hub_load_bench", "--controller", token.c_str(), a.c_str(), sec.c_str(), p.c_str(),
            o.c_str(), q.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(port_pipe[1]);
    close(out_pipe[1]);
    close(quit_pipe[0]);
    return std::unique_ptr<ControllerProcess>(new ControllerProcess(child, port_pipe[0], out_pipe[0], quit_pipe[1]));
  }
  ControllerProcess(const ControllerProcess&) = delete;
  ControllerProcess& operator=(const ControllerProcess&) = delete;
  ~ControllerProcess() {
    if (quit_fd_ >= 0) close(quit_fd_);
    for (int i = 0; i < 50; ++i) {  // up to 5 s to end by itself
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      usleep(100'000);
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

  pid_t pid() const { return pid_; }
  int port_fd() const { return port_fd_; }  // the controller's port, an int32
  int out_fd() const { return out_fd_; }    // its arrival and merge times

 private:
  ControllerProcess(pid_t pid, int port_fd, int out_fd, int quit_fd)
      : pid_(pid), port_fd_(port_fd), out_fd_(out_fd), quit_fd_(quit_fd) {}

  const pid_t pid_;
  const int port_fd_;
  const int out_fd_;
  const int quit_fd_;
};

// The agents on every CPU but the controller's.
void PinAgentsAwayFrom(int controller_cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c = 0; c < CPU_SETSIZE && c < static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)); ++c) {
    if (c != controller_cpu) CPU_SET(c, &set);
  }
  if (CPU_COUNT(&set) > 0) PinTo(set);
}

// One encoded snapshot per second of the job (the job id set per agent),
// and the totals JobDone reports.
struct Workload {
  std::vector<v1::Snapshot> snapshots;
  fairbench::Counters totals;

  explicit Workload(int seconds) : snapshots(static_cast<size_t>(seconds)) {
    for (int k = 0; k < seconds; ++k) {
      const fairbench::Snapshot s = fairbench::bench::RealisticSnapshot(static_cast<uint64_t>(k) + 1);
      fairbench::wire::ToProto(s, "", &snapshots[static_cast<size_t>(k)]);
      totals.Add(s.stats.counters);
    }
  }
};

using AgentStream = grpc::ClientReaderWriter<v1::AgentMessage, v1::ControllerMessage>;

// The agents of one run, a thread each: connect, take the job, wait for
// every other agent, then send a snapshot per second on the schedule and
// JobDone. Records when each snapshot was sent and when its Write returned.
class AgentFleet {
 public:
  AgentFleet(std::string address, std::string token, int agents, int seconds, Schedule schedule,
             const Workload& workload)
      : address_(std::move(address)),
        token_(std::move(token)),
        agents_(agents),
        seconds_(seconds),
        schedule_(schedule),
        workload_(workload),
        sent_(static_cast<size_t>(agents) * static_cast<size_t>(seconds), 0),
        written_(sent_.size(), 0),
        sync_(agents + 1) {}

  void Start() {
    for (int i = 0; i < agents_; ++i) threads_.emplace_back([this, i] { RunAgent(i); });
  }
  int ready() const { return ready_.load(); }
  int failed() const { return failed_.load(); }
  uint64_t finished_ok() const { return finished_ok_.load(); }
  // Sets the start of the first second, then lets every agent begin.
  void SetStart(int64_t start_ns) { start_ns_.store(start_ns); }
  int64_t start_ns() const { return start_ns_.load(); }
  void Release() { sync_.arrive_and_wait(); }
  void Join() {
    for (auto& t : threads_) t.join();
  }
  // Per agent and second (agent-major), 0 where none was sent.
  const std::vector<int64_t>& sent() const { return sent_; }
  const std::vector<int64_t>& written() const { return written_; }

 private:
  void RunAgent(int i) {
    grpc::ChannelArguments args;  // fairbench-agent's own, plus: a connection of its own
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 500);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 500);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("fairbench.bench_agent", i);
    auto channel = grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), args);
    auto stub = v1::AgentHub::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds_ + 120));
    auto stream = stub->Connect(&ctx);
    std::string job_id;
    bool ok = AwaitJob(*stream, i, &job_id);
    // A read always outstanding, as the real agent has (its Run() reads
    // the stream): it is what drives the transport here, keepalive ping
    // acks included. Ends when the controller ends the stream.
    std::thread reader([&stream] {
      v1::ControllerMessage ignored;
      while (stream->Read(&ignored)) {
      }
    });
    ready_.fetch_add(1);
    sync_.arrive_and_wait();  // every agent has its job
    if (ok && failed_.load() == 0) {
      ok = SendSnapshots(*stream, i, job_id);
      if (!ok && complaints_.fetch_add(1) < 3) std::fprintf(stderr, "agent-%d: a write failed\n", i);
    }
    stream->WritesDone();
    if (!ok) ctx.TryCancel();
    reader.join();
    grpc::Status st = stream->Finish();
    if (!st.ok() && complaints_.fetch_add(1) < 3) {
      std::fprintf(stderr, "agent-%d: stream ended: %s\n", i, st.error_message().c_str());
    }
    if (ok && st.ok()) finished_ok_.fetch_add(1);
  }

  // Hello with the token, then the Welcome and the LoadJob, in either order
  // (as the real agent takes them: the hub may queue the job before the
  // Welcome).
  bool AwaitJob(AgentStream& stream, int i, std::string* job_id) {
    v1::AgentMessage hello;
    hello.mutable_hello()->set_agent_id("agent-" + std::to_string(i));
    hello.mutable_hello()->set_node("bench");
    hello.mutable_hello()->set_cores(1);
    hello.mutable_hello()->set_version("hub_load_bench");
    hello.mutable_hello()->set_token(token_);
    v1::ControllerMessage in;
    bool ok = stream.Write(hello);
    bool welcomed = false;
    while (ok && (!welcomed || job_id->empty())) {
      ok = stream.Read(&in);
      if (ok && in.has_welcome()) welcomed = true;
      if (ok && in.has_load_job()) *job_id = in.load_job().job_id();
    }
    if (!ok) {
      failed_.fetch_add(1);
      std::fprintf(stderr, "agent-%d: no Welcome and LoadJob (last message: %d)\n", i,
                   static_cast<int>(in.body_case()));
    }
    return ok;
  }

  // A snapshot at each second's boundary plus this agent's offset, then
  // JobDone; false when a write failed.
  bool SendSnapshots(AgentStream& stream, int i, const std::string& job_id) {
    const int64_t offset = SendOffsetNs(schedule_, i, agents_);
    bool ok = true;
    for (int k = 0; k < seconds_ && ok; ++k) {
      const int64_t when = start_ns_.load() + int64_t{k + 1} * 1'000'000'000 + offset;
      std::this_thread::sleep_until(Clock::time_point(std::chrono::nanoseconds(when)));
      v1::AgentMessage m;
      *m.mutable_snapshot() = workload_.snapshots[static_cast<size_t>(k)];
      m.mutable_snapshot()->set_job_id(job_id);
      const size_t at = static_cast<size_t>(i) * static_cast<size_t>(seconds_) + static_cast<size_t>(k);
      sent_[at] = NowNs();
      ok = stream.Write(m);
      written_[at] = NowNs();
    }
    v1::AgentMessage done;
    done.mutable_job_done()->set_job_id(job_id);
    done.mutable_job_done()->set_last_sequence(static_cast<uint64_t>(seconds_));
    fairbench::wire::ToProto(workload_.totals, done.mutable_job_done()->mutable_totals());
    done.mutable_job_done()->set_measure_seconds(seconds_);
    return ok && stream.Write(done);
  }

  const std::string address_;
  const std::string token_;
  const int agents_;
  const int seconds_;
  const Schedule schedule_;
  const Workload& workload_;
  std::vector<int64_t> sent_;
  std::vector<int64_t> written_;  // when Write returned
  std::atomic<int64_t> start_ns_{0};
  std::atomic<int> ready_{0}, failed_{0};
  std::atomic<uint64_t> finished_ok_{0};
  std::atomic<int> complaints_{0};  // failures printed (the first few)
  std::barrier<> sync_;
  std::vector<std::thread> threads_;
};

// p50, p99 and max of `v` (sorted here); left as they are when it is empty.
void Percentiles(std::vector<double>& v, double* p50, double* p99, double* max) {
  if (v.empty()) return;
  std::sort(v.begin(), v.end());
  auto at = [&](double p) { return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))]; };
  *p50 = at(0.50);
  *p99 = at(0.99);
  *max = v.back();
}

// The ingest latency and its parts from the four stamps of each snapshot;
// a snapshot missing one of them counts as missing.
void ComputeLatencies(const std::vector<int64_t>& sent, const std::vector<int64_t>& written,
                      const std::vector<int64_t>& arrived, const std::vector<int64_t>& merged, Result* result) {
  std::vector<double> lat, write, transport, merge;
  for (size_t i = 0; i < sent.size(); ++i) {
    if (sent[i] == 0 || merged[i] == 0 || arrived[i] == 0) {
      ++result->missing;
      continue;
    }
    lat.push_back(static_cast<double>(merged[i] - sent[i]) / 1e3);
    write.push_back(static_cast<double>(written[i] - sent[i]) / 1e3);
    transport.push_back(static_cast<double>(arrived[i] - sent[i]) / 1e3);
    merge.push_back(static_cast<double>(merged[i] - arrived[i]) / 1e3);
  }
  result->samples = lat.size();
  Percentiles(lat, &result->p50_us, &result->p99_us, &result->max_us);
  Percentiles(write, &result->write[0], &result->write[1], &result->write[2]);
  Percentiles(transport, &result->transport[0], &result->transport[1], &result->transport[2]);
  Percentiles(merge, &result->merge[0], &result->merge[1], &result->merge[2]);
}

// The controller's CPU over `window`, as % of one core.
double CpuPercentOver(pid_t pid, const std::function<void()>& window) {
  const double cpu0 = CpuSeconds(pid);
  const int64_t t0 = NowNs();
  window();
  return 100.0 * (CpuSeconds(pid) - cpu0) / (static_cast<double>(NowNs() - t0) / 1e9);
}

Result RunOnce(int agents, int seconds, Schedule schedule, int controller_cpu) {
  Result result;
  const std::string token = fairbench::controller::NewAgentToken();
  const std::unique_ptr<ControllerProcess> controller =
      ControllerProcess::Start(token, agents, seconds, controller_cpu);
  if (!controller) return result;
  const pid_t child = controller->pid();
  int32_t port = 0;
  if (!ReadAll(controller->port_fd(), &port, sizeof port)) {
    std::fprintf(stderr, "the controller did not start\n");
    return result;
  }
  close(controller->port_fd());
  if (controller_cpu >= 0) PinAgentsAwayFrom(controller_cpu);

  const Workload workload(seconds);
  AgentFleet fleet("127.0.0.1:" + std::to_string(port), token, agents, seconds, schedule, workload);
  fleet.Start();
  // Wait (bounded by the agents' own deadlines) until every agent has its job.
  for (int i = 0; i < 600 && fleet.ready() < agents; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (fleet.ready() < agents) {
    std::fprintf(stderr, "only %d of %d agents connected\n", fleet.ready(), agents);
    kill(child, SIGKILL);  // the streams break, the threads end
  }
  // The controller's baseline: every stream open, every job started, no
  // snapshot yet (the keepalive pings of the agents only).
  result.idle_cpu_percent = CpuPercentOver(child, [] { std::this_thread::sleep_for(std::chrono::seconds(3)); });
  fleet.SetStart(NowNs());
  result.cpu_percent = CpuPercentOver(child, [&] {
    fleet.Release();
    // The window: from the start to just after the last send (plus the
    // schedule's spread), the keepalive pings of 100 agents included.
    std::this_thread::sleep_until(
        Clock::time_point(std::chrono::nanoseconds(fleet.start_ns() + int64_t{seconds} * 1'000'000'000 +
                                                   SendOffsetNs(schedule, agents - 1, agents) + 200'000'000)));
  });
  fleet.Join();
  result.connections_ok = fleet.finished_ok();
  if (fleet.failed() > 0) {
    std::fprintf(stderr, "%d agents were refused or got no job\n", fleet.failed());
    return result;
  }

  std::vector<int64_t> arrived(fleet.sent().size(), 0), merged(fleet.sent().size(), 0);
  if (!ReadAll(controller->out_fd(), arrived.data(), arrived.size() * sizeof(int64_t)) ||
      !ReadAll(controller->out_fd(), merged.data(), merged.size() * sizeof(int64_t))) {
    std::fprintf(stderr, "no merge times from the controller\n");
    return result;
  }
  close(controller->out_fd());
  result.rss_mib = StatusKiB(child, "VmRSS") / 1024;
  result.hwm_mib = StatusKiB(child, "VmHWM") / 1024;
  ComputeLatencies(fleet.sent(), fleet.written(), arrived, merged, &result);
  result.ok = result.missing == 0;
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  if (argc == 8 && std::string(argv[1]) == "--controller") {
    return ControllerMain(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]), std::atoi(argv[6]),
                          std::atoi(argv[7]));
  }
  int agents = 100, seconds = 20;
  std::string schedule = "all";
  int controller_cpu = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--agents") agents = std::atoi(argv[i + 1]);
    else if (flag == "--seconds") seconds = std::atoi(argv[i + 1]);
    else if (flag == "--schedule") schedule = argv[i + 1];
    else if (flag == "--controller-cpu") controller_cpu = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr,
                   "usage: %s [--agents N] [--seconds S] [--schedule cell|staggered|burst|all] [--controller-cpu C]\n",
                   argv[0]);
      return 2;
    }
  }
  if (agents < 1 || agents > 1000 || seconds < 1 || seconds > 600) {
    std::fprintf(stderr, "agents 1..1000, seconds 1..600\n");
    return 2;
  }
  std::vector<std::pair<std::string, Schedule>> runs;
  if (schedule == "cell" || schedule == "all") runs.emplace_back("cell", Schedule::kCell);
  if (schedule == "staggered" || schedule == "all") runs.emplace_back("staggered", Schedule::kStaggered);
  if (schedule == "burst" || schedule == "all") runs.emplace_back("burst", Schedule::kBurst);
  if (runs.empty()) {
    std::fprintf(stderr, "--schedule: cell, staggered, burst or all\n");
    return 2;
  }

  std::printf(
      "AgentHub: %d agents (one gRPC stream each), 1 realistic snapshot/s per agent, %d s, controller in its own process\n",
      agents, seconds);
  std::printf("reference: bench/ingest_bench BM_IngestSnapshot (decode + merge of one snapshot, one thread)\n\n");
  std::printf("%-10s | %-24s | %-28s | %-28s | %-10s | %-20s | %s\n", "schedule", "controller CPU (≤ 10 %)",
              "ingest p50 / p99 (≤ 1 ms)", "ingest max", "snapshots", "controller RSS / peak", "met");
  bool all_ok = true;
  for (const auto& [name, sched] : runs) {
    Result r = RunOnce(agents, seconds, sched, controller_cpu);
    if (!r.ok) {
      std::printf("%-10s | failed (%zu of %d snapshots merged, %zu missing)\n", name.c_str(), r.samples,
                  agents * seconds, r.missing);
      all_ok = false;
      continue;
    }
    const bool cpu_met = r.cpu_percent <= kCpuTarget;
    const bool p99_met = r.p99_us <= kP99TargetUs;
    const bool judged = sched != Schedule::kBurst;
    if (judged) all_ok = all_ok && cpu_met && p99_met;
    std::printf("%-10s | %21.1f %% | %10.0f µs / %8.0f µs | %24.0f µs | %10zu | %7.1f / %7.1f MiB | %s\n", name.c_str(),
                r.cpu_percent, r.p50_us, r.p99_us, r.max_us, r.samples, r.rss_mib, r.hwm_mib,
                !judged              ? "for comparison"
                : cpu_met && p99_met ? "CPU yes, p99 yes"
                : cpu_met            ? "CPU yes, p99 NO"
                : p99_met            ? "CPU NO, p99 yes"
                                     : "CPU NO, p99 NO");
    std::printf(
        "%-10s |   controller CPU with every stream open and no snapshot (keepalive only): %.1f %%; "
        "per snapshot: %.0f µs of controller CPU\n",
        "", r.idle_cpu_percent, r.cpu_percent / 100.0 * 1e6 / agents);
    std::printf(
        "%-10s |   parts, p50 / p99 / max: agent's Write call %.0f / %.0f / %.0f µs; send → read and decoded by the hub "
        "%.0f / %.0f / %.0f µs; → merged by the CellAggregator %.0f / %.0f / %.0f µs\n",
        "", r.write[0], r.write[1], r.write[2], r.transport[0], r.transport[1], r.transport[2], r.merge[0], r.merge[1],
        r.merge[2]);
    std::fflush(stdout);
  }
  return all_ok ? 0 : 1;
}
