// The agent hub over real gRPC on loopback, with the real fairbench-agent
// binary in connect mode and a real nginx as the target.
#include "controller/hub/agent_hub.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>

#include "common/wire.h"
#include "controller/hub/grpc_server.h"
#include "controller/hub/recording_observer.h"
#include "testing/support/bin_dir.h"
#include "testing/support/nginx_fixture.h"
#include "testing/support/subprocess.h"

namespace fairbench::controller {
namespace {

using namespace std::chrono_literals;

using Recorder = RecordingObserver;

class AgentHubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    hub_ = std::make_unique<AgentHub>("secret");
    auto server = StartGrpcServer(hub_.get(), "127.0.0.1:0");
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }
  void TearDown() override {
    hub_->Shutdown();
    if (server_.server) server_.server->Shutdown(std::chrono::system_clock::now() + 2s);
  }
  testing::Subprocess StartAgent(const std::string& id, const std::string& token = "secret") {
    testing::SubprocessOptions o;
    o.argv = {testing::BinaryPath("fairbench-agent"), "--controller", "127.0.0.1:" + std::to_string(server_.port),
              "--id", id};
    o.env["FAIRBENCH_AGENT_TOKEN"] = token;
    o.stdout_to = testing::Redirect::Null();
    o.stderr_to = testing::Redirect::Pipe();
    auto p = testing::Subprocess::Start(o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return std::move(*p);
  }
  void StartNginx() {
    testing::NginxOptions o;
    o.keepalive_requests = 1000000000;
    nginx_ = std::make_unique<testing::NginxFixture>(o);
    const Status s = nginx_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  v1::LoadJob Job(const std::string& id, std::chrono::milliseconds duration = 1000ms) {
    v1::LoadJob job;
    job.set_job_id(id);
    job.set_host("127.0.0.1");
    job.set_port(nginx_->port());
    v1::Request* r = job.add_requests();
    r->set_method("GET");
    r->set_target("/");
    job.set_connections(4);
    job.set_threads(1);
    job.set_duration_ns(std::chrono::nanoseconds(duration).count());
    job.set_timeout_ns(std::chrono::nanoseconds(2s).count());
    job.set_interval_ns(std::chrono::nanoseconds(250ms).count());
    job.set_keep_alive(true);
    return job;
  }

  std::unique_ptr<AgentHub> hub_;
  GrpcServer server_;
  std::unique_ptr<testing::NginxFixture> nginx_;
};

TEST_F(AgentHubTest, RunsAJobAndStreamsEverySnapshot) {
  StartNginx();
  auto agent = StartAgent("a1");
  auto ids = hub_->WaitForAgents(1, 10s);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(ids->front(), "a1");
  auto rec = std::make_shared<Recorder>();
  ASSERT_TRUE(hub_->StartJob("a1", Job("job-1"), rec).ok());
  EXPECT_FALSE(hub_->StartJob("a1", Job("job-2"), std::make_shared<Recorder>()).ok()) << "one job at a time";
  ASSERT_TRUE(rec->WaitEnd(10s));
  ASSERT_TRUE(rec->done) << rec->failure;
  ASSERT_EQ(rec->snapshots.size(), 4u);
  Counters sum;
  for (size_t i = 0; i < rec->snapshots.size(); ++i) {
    EXPECT_EQ(rec->snapshots[i].sequence, i + 1);
    EXPECT_EQ(rec->snapshots[i].stats.latency.count(), rec->snapshots[i].stats.counters.requests);
    sum.Add(rec->snapshots[i].stats.counters);
  }
  EXPECT_TRUE(rec->summary.consistent);
  EXPECT_EQ(rec->summary.totals, sum);
  EXPECT_GT(sum.requests, 100u);
  ASSERT_TRUE(nginx_->Stop().ok());
  auto log = nginx_->AccessLog();
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->size(), sum.requests + rec->summary.end.drained);
  // The agent is idle again and takes the next job.
  auto again = hub_->WaitForAgents(1, 5s);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(hub_->stats().snapshots, 4u);
}

// Catches: the agent ignoring the controller's send offset (every snapshot
// of a cell's agents then reaches the controller at the same instant), or
// holding the last snapshot too (the cell would end an offset late). With a
// wall-clock start S, a 500 ms interval and a 300 ms offset, snapshot 1
// cannot arrive before S + 800 ms; the last one follows the one before it by
// about 500 − 300 ms, not 500.
TEST_F(AgentHubTest, SnapshotsWaitForTheirSendOffsetButTheLastGoesAtOnce) {
  StartNginx();
  auto agent = StartAgent("a1");
  ASSERT_TRUE(hub_->WaitForAgents(1, 10s).ok());
  auto rec = std::make_shared<Recorder>();
  wire::JobSpec job;
  job.job_id = "offset";
  job.host = "127.0.0.1";
  job.port = static_cast<uint16_t>(nginx_->port());
  job.requests.push_back({});
  job.connections = 2;
  job.threads = 1;
  job.duration = 1500ms;
  job.interval = 500ms;
  job.send_offset = 300ms;
  const auto start = std::chrono::system_clock::now() + 300ms;
  job.start = start;
  ASSERT_TRUE(hub_->StartJob("a1", job, rec).ok());
  ASSERT_TRUE(rec->WaitEnd(10s));
  ASSERT_TRUE(rec->done) << rec->failure;
  ASSERT_EQ(rec->arrivals.size(), 3u);
  EXPECT_GE(rec->arrivals[0] - start, 790ms);
  EXPECT_GE(rec->arrivals[1] - rec->arrivals[0], 400ms);
  EXPECT_LT(rec->arrivals[2] - rec->arrivals[1], 400ms)
      << "the last snapshot was held: " << std::chrono::duration<double>(rec->arrivals[2] - rec->arrivals[1]).count();
}

TEST_F(AgentHubTest, AWrongTokenIsRefused) {
  auto agent = StartAgent("intruder", "not-the-secret");
  auto status = agent.Wait(10s);
  ASSERT_TRUE(status.ok()) << "the agent must give up on a wrong token";
  EXPECT_EQ(status->exit_code, 1);
  auto err = agent.ReadStderr(1s);
  ASSERT_TRUE(err.ok());
  EXPECT_NE(err->find("wrong token"), std::string::npos) << *err;
  EXPECT_NE(err->find("refused this agent (UNAUTHENTICATED)"), std::string::npos) << *err;
  EXPECT_NE(err->find("--token-file or FAIRBENCH_AGENT_TOKEN"), std::string::npos) << *err;
  EXPECT_TRUE(hub_->Agents().empty());
  EXPECT_EQ(hub_->stats().refused, 1u);
}

TEST_F(AgentHubTest, AKilledAgentFailsItsJob) {
  StartNginx();
  auto agent = StartAgent("a1");
  ASSERT_TRUE(hub_->WaitForAgents(1, 10s).ok());
  auto rec = std::make_shared<Recorder>();
  ASSERT_TRUE(hub_->StartJob("a1", Job("job-1", 30s), rec).ok());
  ASSERT_TRUE(rec->WaitSnapshots(2, 10s));
  ASSERT_TRUE(agent.Kill(SIGKILL).ok());
  ASSERT_TRUE(rec->WaitEnd(5s)) << "a dead agent must fail its job promptly";
  EXPECT_TRUE(rec->failed);
  EXPECT_NE(rec->failure.find("disconnected"), std::string::npos) << rec->failure;
}

TEST_F(AgentHubTest, TheLoadStopsWithinASecondWhenTheControllerGoes) {
  StartNginx();
  auto agent = StartAgent("a1");
  ASSERT_TRUE(hub_->WaitForAgents(1, 10s).ok());
  auto rec = std::make_shared<Recorder>();
  ASSERT_TRUE(hub_->StartJob("a1", Job("job-1", 30s), rec).ok());
  ASSERT_TRUE(rec->WaitSnapshots(2, 10s));
  const double gone = static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count()) /
                      1e6;
  hub_->Shutdown();
  server_.server->Shutdown(std::chrono::system_clock::now() + 100ms);
  server_.server.reset();
  std::this_thread::sleep_for(2s);
  ASSERT_TRUE(nginx_->Stop().ok());
  auto log = nginx_->AccessLog();
  ASSERT_TRUE(log.ok());
  ASSERT_FALSE(log->empty());
  double last = 0;
  for (const auto& e : *log) last = std::max(last, e.msec);
  EXPECT_LT(last - gone, 1.0) << "requests kept coming " << (last - gone) << " s after the controller went away";
  ASSERT_TRUE(agent.Terminate(SIGTERM, 5s).ok());
}

// A hand-written agent that breaks the sequence on purpose.
TEST_F(AgentHubTest, DuplicateSnapshotsAreDroppedAndGapsReported) {
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_.port), grpc::InsecureChannelCredentials());
  auto stub = v1::AgentHub::NewStub(channel);
  grpc::ClientContext ctx;
  auto stream = stub->Connect(&ctx);
  v1::AgentMessage hello;
  hello.mutable_hello()->set_agent_id("fake");
  hello.mutable_hello()->set_token("secret");
  ASSERT_TRUE(stream->Write(hello));
  v1::ControllerMessage in;
  ASSERT_TRUE(stream->Read(&in));
  ASSERT_TRUE(in.has_welcome());
  auto rec = std::make_shared<Recorder>();
  v1::LoadJob job;
  job.set_job_id("j");
  ASSERT_TRUE(hub_->StartJob("fake", job, rec).ok());
  ASSERT_TRUE(stream->Read(&in));
  ASSERT_TRUE(in.has_load_job());
  auto send = [&](uint64_t seq, uint64_t requests) {
    Snapshot s;
    s.sequence = seq;
    s.stats.counters.requests = requests;
    for (uint64_t i = 0; i < requests; ++i) s.stats.latency.Record(100);
    v1::AgentMessage m;
    wire::ToProto(s, "j", m.mutable_snapshot());
    ASSERT_TRUE(stream->Write(m));
  };
  send(1, 10);
  send(2, 20);
  send(2, 20);  // resent
  send(4, 40);  // 3 went missing
  v1::AgentMessage done;
  done.mutable_job_done()->set_job_id("j");
  done.mutable_job_done()->set_last_sequence(4);
  done.mutable_job_done()->mutable_totals()->set_requests(100);
  ASSERT_TRUE(stream->Write(done));
  ASSERT_TRUE(rec->WaitEnd(5s));
  ASSERT_TRUE(rec->done);
  ASSERT_EQ(rec->snapshots.size(), 3u);
  EXPECT_EQ(rec->snapshots[2].sequence, 4u);
  EXPECT_FALSE(rec->summary.consistent);
  EXPECT_EQ(rec->summary.missing_snapshots, 1u);
  EXPECT_EQ(rec->summary.duplicate_snapshots, 1u);
  EXPECT_EQ(hub_->stats().duplicates, 1u);
  EXPECT_EQ(hub_->stats().missing, 1u);
  stream->WritesDone();
  ctx.TryCancel();
}

TEST_F(AgentHubTest, TheFirstMessageMustBeHello) {
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_.port), grpc::InsecureChannelCredentials());
  auto stub = v1::AgentHub::NewStub(channel);
  grpc::ClientContext ctx;
  auto stream = stub->Connect(&ctx);
  v1::AgentMessage m;
  m.mutable_snapshot()->set_sequence(1);
  ASSERT_TRUE(stream->Write(m));
  v1::ControllerMessage in;
  EXPECT_FALSE(stream->Read(&in));
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// Catches: the hub making an agent visible to StartJob before its Welcome is
// queued, so that a job started the instant the agent registers reaches the
// agent before the Welcome (the agent then drops the stream). A thread
// starts the job as fast as it can while each agent says Hello.
TEST_F(AgentHubTest, WelcomeComesBeforeAJobStartedTheInstantTheAgentRegisters) {
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_.port), grpc::InsecureChannelCredentials());
  auto stub = v1::AgentHub::NewStub(channel);
  for (int i = 0; i < 30; ++i) {
    const std::string id = "racer-" + std::to_string(i);
    auto rec = std::make_shared<Recorder>();
    std::atomic<bool> started{false};
    std::thread starter([&] {
      v1::LoadJob job;
      job.set_job_id("j" + std::to_string(i));
      const auto until = std::chrono::steady_clock::now() + 5s;
      while (std::chrono::steady_clock::now() < until) {
        if (hub_->StartJob(id, job, rec).ok()) {
          started = true;
          return;
        }
      }
    });
    grpc::ClientContext ctx;
    auto stream = stub->Connect(&ctx);
    v1::AgentMessage hello;
    hello.mutable_hello()->set_agent_id(id);
    hello.mutable_hello()->set_token("secret");
    ASSERT_TRUE(stream->Write(hello));
    v1::ControllerMessage first, second;
    ASSERT_TRUE(stream->Read(&first));
    starter.join();
    ASSERT_TRUE(started);
    EXPECT_TRUE(first.has_welcome()) << "round " << i << ": first message " << first.ShortDebugString();
    ASSERT_TRUE(stream->Read(&second));
    EXPECT_TRUE(second.has_load_job()) << "round " << i << ": second message " << second.ShortDebugString();
    stream->WritesDone();
    ctx.TryCancel();
    stream->Finish().ok();
  }
}

}  // namespace
}  // namespace fairbench::controller
