// The agent stream's defences over real gRPC on loopback: TLS and mutual
// TLS (certificates made with OpenSSL at test time), the hub's bounds
// (agents, pending streams, the Hello deadline, message size), and what an
// agent process exposes (no listening socket, no token in its command line).
// Real fairbench-agent processes where the agent's own behaviour is the
// subject; in-process gRPC clients where a test plays a hostile one.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "agent/agent_client.h"
#include "bench/realistic_snapshot.h"
#include "common/wire.h"
#include "controller/hub/agent_hub.h"
#include "controller/hub/grpc_server.h"
#include "controller/hub/raw_agent.h"
#include "controller/hub/recording_observer.h"
#include "testing/kubetest/tls_material.h"
#include "testing/support/bin_dir.h"
#include "testing/support/nginx_fixture.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench::controller {
namespace {

using namespace std::chrono_literals;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

using Recorder = RecordingObserver;

// Sockets of process `pid` that accept connections: TCP in LISTEN, and
// UDP bound without a peer. /proc/<pid>/net/* lists the whole network
// namespace; the process's own are those whose inode is among its fds.
std::vector<std::string> ListeningSockets(pid_t pid) {
  std::set<std::string> inodes;
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  if (DIR* d = opendir(fd_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      char target[256] = {};
      const std::string link = fd_dir + "/" + e->d_name;
      const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
      const std::string t(target, n > 0 ? static_cast<size_t>(n) : 0);
      if (t.rfind("socket:[", 0) == 0) inodes.insert(t.substr(8, t.size() - 9));
    }
    closedir(d);
  }
  std::vector<std::string> out;
  for (const std::string table : {"tcp", "tcp6", "udp", "udp6"}) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/net/" + table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      if (inodes.count(inode) == 0) continue;
      const bool tcp = table.rfind("tcp", 0) == 0;
      const bool unconnected = remote.find_first_not_of("0:") == std::string::npos;
      if ((tcp && state == "0A") || (!tcp && unconnected)) out.push_back(table + " " + local);
    }
  }
  return out;
}

// Certificates for one test: a CA with a server certificate for 127.0.0.1,
// localhost and "hub.fairbench.test", a client certificate it signed, and
// a client certificate of another CA.
struct Certificates {
  std::string ca, server_cert, server_key, client_cert, client_key, other_ca, other_cert, other_key;

  static Certificates Make(const testing::TempDir& dir) {
    auto m = kubetest::TlsMaterial::Generate({"hub.fairbench.test"});
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    auto client = m->IssueClient("fairbench-agent");
    auto other = kubetest::TlsMaterial::Generate();
    EXPECT_TRUE(client.ok() && other.ok());
    auto other_client = other->IssueClient("fairbench-agent");
    EXPECT_TRUE(other_client.ok());
    Certificates c{dir.File("ca.crt"),     dir.File("server.crt"),   dir.File("server.key"), dir.File("client.crt"),
                   dir.File("client.key"), dir.File("other-ca.crt"), dir.File("other.crt"),  dir.File("other.key")};
    WriteText(c.ca, m->ca.cert_pem);
    WriteText(c.server_cert, m->server.cert_pem);
    WriteText(c.server_key, m->server.key_pem);
    WriteText(c.client_cert, client->cert_pem);
    WriteText(c.client_key, client->key_pem);
    WriteText(c.other_ca, other->ca.cert_pem);
    WriteText(c.other_cert, other_client->cert_pem);
    WriteText(c.other_key, other_client->key_pem);
    return c;
  }
};

class HubSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-hub-security");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
  }
  void TearDown() override {
    if (hub_) hub_->Shutdown();
    if (server_.server) server_.server->Shutdown(std::chrono::system_clock::now() + 2s);
  }
  void Start(AgentHubOptions options = {}, HubTls tls = {}, int max_message = kDefaultMaxAgentMessageBytes) {
    hub_ = std::make_unique<AgentHub>("secret", "test-controller", options);
    GrpcServerOptions so;
    so.tls = tls;
    so.max_receive_message_bytes = max_message;
    auto server = StartGrpcServer(hub_.get(), "127.0.0.1:0", so);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }
  std::string Address() const { return "127.0.0.1:" + std::to_string(server_.port); }
  // A real fairbench-agent; its stderr goes to <dir>/<id>.err.
  testing::Subprocess StartAgent(const std::string& id, std::vector<std::string> extra = {},
                                 const std::string& token = "secret") {
    testing::SubprocessOptions o;
    o.argv = {testing::BinaryPath("fairbench-agent"), "--controller", Address(), "--id", id};
    o.argv.insert(o.argv.end(), extra.begin(), extra.end());
    o.env["FAIRBENCH_AGENT_TOKEN"] = token;
    o.stdout_to = testing::Redirect::Null();
    o.stderr_to = testing::Redirect::File(dir_->File(id + ".err"));
    auto p = testing::Subprocess::Start(o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return std::move(*p);
  }
  std::string Stderr(const std::string& id) { return ReadText(dir_->File(id + ".err")); }
  v1::LoadJob Job(const std::string& id, uint16_t port) {
    v1::LoadJob job;
    job.set_job_id(id);
    job.set_host("127.0.0.1");
    job.set_port(port);
    v1::Request* r = job.add_requests();
    r->set_method("GET");
    r->set_target("/");
    job.set_connections(4);
    job.set_threads(1);
    job.set_duration_ns(std::chrono::nanoseconds(1s).count());
    job.set_timeout_ns(std::chrono::nanoseconds(2s).count());
    job.set_interval_ns(std::chrono::nanoseconds(250ms).count());
    job.set_keep_alive(true);
    return job;
  }

  std::optional<testing::TempDir> dir_;
  std::unique_ptr<AgentHub> hub_;
  GrpcServer server_;
};

// --- TLS ---------------------------------------------------------------

// The happy path, all real: a fairbench-agent process verifies the hub's
// certificate, shows its own, runs a load job against nginx, and every
// snapshot and the totals arrive.
TEST_F(HubSecurityTest, AnAgentRunsAJobOverMutualTls) {
  const Certificates c = Certificates::Make(*dir_);
  Start({}, HubTls{c.server_cert, c.server_key, c.ca});
  testing::NginxOptions no;
  no.keepalive_requests = 1000000000;
  testing::NginxFixture nginx(no);
  ASSERT_TRUE(nginx.Start().ok());
  auto agent = StartAgent("tls-agent", {"--tls-ca", c.ca, "--tls-cert", c.client_cert, "--tls-key", c.client_key});
  auto ids = hub_->WaitForAgents(1, 10s);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString() << "\n" << Stderr("tls-agent");
  auto rec = std::make_shared<Recorder>();
  ASSERT_TRUE(hub_->StartJob("tls-agent", Job("j1", nginx.port()), rec).ok());
  ASSERT_TRUE(rec->WaitEnd(15s));
  ASSERT_TRUE(rec->done) << rec->failure;
  EXPECT_TRUE(rec->summary.consistent);
  EXPECT_GT(rec->summary.totals.requests, 100u);
  EXPECT_EQ(rec->SnapshotRequests(), rec->summary.totals.requests);  // the snapshots add up to the totals
  EXPECT_GE(rec->snapshots.size(), 4u);

  // A connected agent listens on nothing. The detector itself is checked
  // on this process, which does listen (the hub).
  EXPECT_TRUE(ListeningSockets(agent.pid()).empty()) << ListeningSockets(agent.pid())[0];
  // (gRPC listens on a dual-stack socket: tcp6 ::ffff:127.0.0.1.)
  char port_hex[8];
  std::snprintf(port_hex, sizeof port_hex, ":%04X", server_.port);
  const auto own = ListeningSockets(getpid());
  EXPECT_TRUE(
      std::any_of(own.begin(), own.end(),
                  [&](const std::string& s) { return s.size() > 5 && s.compare(s.size() - 5, 5, port_hex) == 0; }))
      << "the detector misses the hub's own listener on port " << server_.port;
}

// TLS without client certificates, and a server name that differs from
// the host dialed (what agents in a cluster do when they dial an IP).
TEST_F(HubSecurityTest, ServerNameOverrideIsChecked) {
  const Certificates c = Certificates::Make(*dir_);
  Start({}, HubTls{c.server_cert, c.server_key, ""});
  auto creds = agent::AgentCredentials(agent::AgentTls{c.ca, "", "", ""});
  ASSERT_TRUE(creds.ok()) << creds.status().ToString();
  auto good = RawAgent::Dial(Address(), *creds, "hub.fairbench.test");
  ASSERT_TRUE(good->Hello("good"));
  EXPECT_TRUE(good->Welcomed());
  auto wrong = RawAgent::Dial(Address(), *creds, "elsewhere.fairbench.test");
  wrong->Hello("wrong");
  const grpc::Status s = wrong->End();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_EQ(hub_->stats().streams, 1u);
}

// mTLS: a client certificate of another CA, or none, ends in the
// handshake — the hub never sees a stream; the agent says why.
TEST_F(HubSecurityTest, AClientCertificateOfAnotherCaIsRefusedInTheHandshake) {
  const Certificates c = Certificates::Make(*dir_);
  Start({}, HubTls{c.server_cert, c.server_key, c.ca});
  auto stranger = StartAgent(
      "stranger", {"--tls-ca", c.ca, "--tls-cert", c.other_cert, "--tls-key", c.other_key, "--give-up-after", "1"});
  auto bare = agent::AgentCredentials(agent::AgentTls{c.ca, "", "", ""});
  ASSERT_TRUE(bare.ok());
  auto no_cert = RawAgent::Dial(Address(), *bare);
  no_cert->Hello("no-cert");
  EXPECT_EQ(no_cert->End().error_code(), grpc::StatusCode::UNAVAILABLE);
  auto exit = stranger.Wait(20s);
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->exit_code, 1);
  EXPECT_NE(Stderr("stranger").find("no controller at"), std::string::npos) << Stderr("stranger");
  EXPECT_EQ(hub_->stats().streams, 0u);
  EXPECT_TRUE(hub_->Agents().empty());
  // The hub still serves agents with the right certificate.
  auto good = agent::AgentCredentials(agent::AgentTls{c.ca, c.client_cert, c.client_key, ""});
  ASSERT_TRUE(good.ok());
  auto ok = RawAgent::Dial(Address(), *good);
  ASSERT_TRUE(ok->Hello("ok"));
  EXPECT_TRUE(ok->Welcomed());
}

// A plain-text agent against a TLS hub (and a TLS agent that does not
// trust the hub's CA) gets nowhere; the hub stays healthy.
TEST_F(HubSecurityTest, APlainTextAgentCannotTalkToATlsHub) {
  const Certificates c = Certificates::Make(*dir_);
  Start({}, HubTls{c.server_cert, c.server_key, ""});
  auto plain = StartAgent("plain", {"--give-up-after", "1"});
  auto distrust = agent::AgentCredentials(agent::AgentTls{c.other_ca, "", "", ""});
  ASSERT_TRUE(distrust.ok());
  auto wrong_ca = RawAgent::Dial(Address(), *distrust);
  wrong_ca->Hello("wrong-ca");
  EXPECT_EQ(wrong_ca->End().error_code(), grpc::StatusCode::UNAVAILABLE);
  auto exit = plain.Wait(20s);
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->exit_code, 1) << Stderr("plain");
  EXPECT_EQ(hub_->stats().streams, 0u);
  auto good = agent::AgentCredentials(agent::AgentTls{c.ca, "", "", ""});
  ASSERT_TRUE(good.ok());
  auto ok = RawAgent::Dial(Address(), *good);
  ASSERT_TRUE(ok->Hello("ok"));
  EXPECT_TRUE(ok->Welcomed());
}

// Bad TLS files are bad input naming the flag, before anything dials or listens.
TEST_F(HubSecurityTest, BadTlsFilesNameTheFlag) {
  const Certificates c = Certificates::Make(*dir_);
  auto missing = HubCredentials(HubTls{dir_->File("nope.crt"), c.server_key, ""});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--hub-tls-cert: cannot read"), std::string::npos);
  auto swapped = HubCredentials(HubTls{c.server_key, c.server_cert, ""});
  ASSERT_FALSE(swapped.ok());
  EXPECT_NE(swapped.status().message().find("--hub-tls-cert"), std::string::npos) << swapped.status().message();
  auto mismatched = HubCredentials(HubTls{c.server_cert, c.client_key, ""});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.status().message().find("does not belong"), std::string::npos);
  auto agent_bad = agent::AgentCredentials(agent::AgentTls{c.ca, c.client_cert, c.other_key, ""});
  ASSERT_FALSE(agent_bad.ok());
  EXPECT_NE(agent_bad.status().message().find("--tls-cert and --tls-key"), std::string::npos);

  testing::SubprocessOptions o;
  o.argv = {testing::BinaryPath("fairbench-agent"), "--controller", "127.0.0.1:1", "--tls-ca", dir_->File("nope.crt")};
  o.env["FAIRBENCH_AGENT_TOKEN"] = "t";
  o.stderr_to = testing::Redirect::Pipe();
  auto p = testing::Subprocess::Start(o);
  ASSERT_TRUE(p.ok());
  auto exit = p->Wait(10s);
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->exit_code, 2);
  auto err = p->ReadStderr(1s);
  ASSERT_TRUE(err.ok());
  EXPECT_NE(err->find("--tls-ca: cannot read"), std::string::npos) << *err;
}

// fairbench-controller checks its hub flags before it talks to any API
// server: TLS on the hub without the agents' Secret (agent pods that would
// dial in plain text and never connect), agents' TLS without a TLS hub,
// unreadable files, bounds out of range. Catches: a flag checked by
// `fairbench run` but not by the controller, or checked after it started
// leading.
TEST_F(HubSecurityTest, TheControllersHubFlagsAreBadInputNamingTheFlag) {
  const Certificates c = Certificates::Make(*dir_);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--hub-tls-cert", c.server_cert, "--hub-tls-key", c.server_key}, "--agent-tls-secret: required"},
      {{"--agent-tls-secret", "agent-tls"}, "need --hub-tls-cert"},
      {{"--hub-tls-cert", dir_->File("nope.crt"), "--hub-tls-key", c.server_key, "--agent-tls-secret", "s"},
       "--hub-tls-cert: cannot read"},
      {{"--hub-tls-cert", c.server_cert, "--hub-tls-key", c.server_key, "--hub-tls-client-ca", c.server_key,
        "--agent-tls-secret", "s"},
       "--hub-tls-client-ca"},
      {{"--hub-max-agents", "0"}, "--hub-max-agents: must be at least 1"},
      {{"--hub-max-message-size", "1Ki"}, "--hub-max-message-size: must be between"},
      {{"--hub-hello-timeout", "soon"}, "--hub-hello-timeout"},
  };
  for (const auto& [flags, expected] : cases) {
    testing::SubprocessOptions o;
    o.argv = {testing::BinaryPath("fairbench-controller")};
    o.argv.insert(o.argv.end(), flags.begin(), flags.end());
    o.stderr_to = testing::Redirect::Pipe();
    auto p = testing::Subprocess::Start(o);
    ASSERT_TRUE(p.ok());
    auto exit = p->Wait(10s);
    ASSERT_TRUE(exit.ok()) << expected;
    EXPECT_EQ(exit->exit_code, 2) << expected;
    auto err = p->ReadStderr(1s);
    ASSERT_TRUE(err.ok());
    EXPECT_NE(err->find(expected), std::string::npos) << *err;
  }
}

// --- tokens ------------------------------------------------------------

// A token given with --token works but warns, and is blanked in the
// process's command line once read.
TEST_F(HubSecurityTest, ATokenOnTheCommandLineWarnsAndIsBlanked) {
  Start();
  auto agent = StartAgent("argv-token", {"--token", "secret"}, "");
  ASSERT_TRUE(hub_->WaitForAgents(1, 10s).ok()) << Stderr("argv-token");
  std::string cmdline = ReadText("/proc/" + std::to_string(agent.pid()) + "/cmdline");
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  EXPECT_NE(cmdline.find("--token ******"), std::string::npos) << cmdline;
  EXPECT_EQ(cmdline.find("secret"), std::string::npos) << cmdline;
  EXPECT_NE(Stderr("argv-token").find("warning: --token puts the secret on the command line"), std::string::npos);
}

TEST_F(HubSecurityTest, ATokenFileIsReadWithoutItsNewline) {
  Start();
  WriteText(dir_->File("token"), "secret\r\n");
  auto agent = StartAgent("file-token", {"--token-file", dir_->File("token")}, "");
  ASSERT_TRUE(hub_->WaitForAgents(1, 10s).ok()) << Stderr("file-token");
  EXPECT_EQ(Stderr("file-token").find("warning"), std::string::npos);
}

// A flood of wrong tokens is refused and counted one by one, but the log
// gets one line a second, not one per stream. Catches: refusals not
// counted, or logged unthrottled (whoever reaches the port could fill the
// controller's log).
TEST_F(HubSecurityTest, WrongTokensAreCountedAndTheirLogLinesThrottled) {
  // spdlog's default logger is swapped without a lock on the threads that
  // log: the capture logger is in place before the hub's and gRPC's
  // threads start, and the old one is put back only after stats() has
  // taken the hub's lock, under which every refusal was logged.
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  Start();
  constexpr int kStreams = 20;
  for (int i = 0; i < kStreams; ++i) {
    auto a = RawAgent::Dial(Address());
    a->Hello("intruder-" + std::to_string(i), "guess");
    EXPECT_EQ(a->End().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  EXPECT_EQ(hub_->stats().refused, static_cast<uint64_t>(kStreams));
  spdlog::set_default_logger(previous);
  const std::string text = log.str();
  size_t lines = 0;
  for (size_t at = text.find("wrong token"); at != std::string::npos; at = text.find("wrong token", at + 1)) ++lines;
  EXPECT_GE(lines, 1u) << text;
  EXPECT_LE(lines, 3u) << text;  // the loop takes well under 2 s
  EXPECT_TRUE(hub_->Agents().empty());
}

// --- bounds ------------------------------------------------------------

TEST_F(HubSecurityTest, AgentsBeyondTheMaximumAreRefused) {
  AgentHubOptions o;
  o.max_agents = 2;
  Start(o);
  auto a = RawAgent::Dial(Address());
  auto b = RawAgent::Dial(Address());
  ASSERT_TRUE(a->Hello("a") && a->Welcomed());
  ASSERT_TRUE(b->Hello("b") && b->Welcomed());
  auto c = RawAgent::Dial(Address());
  c->Hello("c");
  const grpc::Status refused = c->End();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_NE(refused.error_message().find("at most 2 agents"), std::string::npos);
  EXPECT_EQ(hub_->stats().refused_full, 1u);
  // An agent reconnecting under its own id replaces its stream: not refused.
  auto a2 = RawAgent::Dial(Address());
  ASSERT_TRUE(a2->Hello("a"));
  EXPECT_TRUE(a2->Welcomed());
  EXPECT_EQ(a->End().error_code(), grpc::StatusCode::ABORTED);
  // One leaves: there is room again.
  b->context.TryCancel();
  b->End();
  ASSERT_TRUE(Eventually([&] { return hub_->Agents().size() == 1; }, 5s));
  auto d = RawAgent::Dial(Address());
  ASSERT_TRUE(d->Hello("d"));
  EXPECT_TRUE(d->Welcomed());
  EXPECT_EQ(hub_->stats().refused_full, 1u);
}

TEST_F(HubSecurityTest, StreamsWithoutHelloAreBoundedAndEndedAfterTheDeadline) {
  AgentHubOptions o;
  o.max_pending = 2;
  o.hello_timeout = 400ms;
  Start(o);
  const auto began = std::chrono::steady_clock::now();
  auto silent1 = RawAgent::Dial(Address());
  auto silent2 = RawAgent::Dial(Address());
  ASSERT_TRUE(Eventually([&] { return hub_->stats().streams == 2; }, 5s));
  auto third = RawAgent::Dial(Address());
  const grpc::Status refused = third->End();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_EQ(hub_->stats().refused_pending, 1u);
  // The silent ones are ended at their deadline, not before, not much after.
  const grpc::Status ended = silent1->End();
  const auto took = std::chrono::steady_clock::now() - began;
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << ended.error_message();
  EXPECT_GE(took, 400ms);
  EXPECT_LT(took, 3s);
  EXPECT_EQ(silent2->End().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(hub_->stats().hello_timeouts, 2u);
  // An agent that says Hello is welcomed and stays past the deadline.
  auto agent = RawAgent::Dial(Address());
  ASSERT_TRUE(agent->Hello("a") && agent->Welcomed());
  std::this_thread::sleep_for(800ms);
  EXPECT_EQ(hub_->Agents().size(), 1u);
  EXPECT_EQ(hub_->stats().hello_timeouts, 2u);
}

// An agent that sends a message over the limit loses its stream
// (RESOURCE_EXHAUSTED); the controller goes on serving the others.
TEST_F(HubSecurityTest, AnOversizedMessageEndsOnlyThatStream) {
  Start({}, {}, 64 * 1024);
  auto good = RawAgent::Dial(Address());
  auto bad = RawAgent::Dial(Address());
  ASSERT_TRUE(good->Hello("good") && good->Welcomed());
  ASSERT_TRUE(bad->Hello("bad") && bad->Welcomed());
  v1::AgentMessage big;
  big.mutable_snapshot()->set_job_id("j");
  for (int i = 0; i < 10000; ++i) big.mutable_snapshot()->add_rate_samples(i);  // 80 KB
  bad->stream->Write(big);
  const grpc::Status s = bad->End();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  ASSERT_TRUE(Eventually([&] { return hub_->Agents().size() == 1; }, 5s));
  EXPECT_EQ(hub_->Agents()[0].id, "good");
  // The other agent still gets its job.
  auto rec = std::make_shared<Recorder>();
  ASSERT_TRUE(hub_->StartJob("good", Job("j2", 1), rec).ok());
  v1::ControllerMessage m;
  ASSERT_TRUE(good->stream->Read(&m));
  EXPECT_EQ(m.load_job().job_id(), "j2");
}

// The limit against what agents send: a busy second is far below it, and
// so is the largest snapshot the histograms can make.
TEST(HubMessageSizeTest, SnapshotsFitWellUnderTheLimit) {
  v1::Snapshot realistic;
  wire::ToProto(bench::RealisticSnapshot(1), "job", &realistic);
  Snapshot full = bench::RealisticSnapshot(1);
  std::mt19937_64 rng(1);
  // Every bucket of both histograms counted, counts spread so that zlib
  // finds little to share.
  for (int i = 0; i < Histogram::kCountsLen; ++i) {
    const int64_t v = Histogram::ValueFromIndex(i);
    if (v > Histogram::kHighestTrackable) break;
    const int n = 1 + static_cast<int>(rng() % 200);
    for (int k = 0; k < n; ++k) {
      full.stats.latency.Record(v);
      full.stats.uncorrected.Record(v);
    }
  }
  full.stats.rate_samples.assign(1024 * 10, 12345.678);  // 1,024 threads × 10 samples
  v1::Snapshot largest;
  wire::ToProto(full, "job", &largest);
  std::printf("realistic snapshot: %zu bytes; every bucket counted: %zu bytes; limit %d\n", realistic.ByteSizeLong(),
              largest.ByteSizeLong(), kDefaultMaxAgentMessageBytes);
  EXPECT_LT(realistic.ByteSizeLong(), 64u * 1024);
  EXPECT_LT(largest.ByteSizeLong(), static_cast<size_t>(kDefaultMaxAgentMessageBytes) / 8);
}

}  // namespace
}  // namespace fairbench::controller
