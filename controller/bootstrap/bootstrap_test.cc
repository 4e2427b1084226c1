// The parts both controllers start with, for real: a gRPC listener on
// loopback that agents (played by the test, one stream each) dial, the
// Prometheus endpoint scraped over HTTP, and SIGINT/SIGTERM sent to a
// process of its own.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <thread>

#include "controller/bootstrap/agent_endpoint.h"
#include "controller/bootstrap/controller_metrics.h"
#include "controller/bootstrap/shutdown_signals.h"
#include "controller/hub/raw_agent.h"
#include "testing/support/http_client.h"
#include "testing/support/subprocess.h"

namespace fairbench::controller {
namespace {

using namespace std::chrono_literals;

std::string Scrape(const ControllerMetrics& m, const std::string& path = "/metrics", int* status = nullptr) {
  const std::string url = m.url();
  const std::string rest = url.substr(std::string("http://127.0.0.1:").size());
  const uint16_t port = static_cast<uint16_t>(std::stoi(rest.substr(0, rest.find('/'))));
  auto c = testing::HttpConnection::Connect("127.0.0.1", port);
  EXPECT_TRUE(c.ok());
  if (!c.ok()) return "";
  auto r = c->RoundTrip(testing::BuildRequest("GET", path, "127.0.0.1"));
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return "";
  if (status != nullptr) *status = r->status;
  return r->body;
}

HubSettings Settings() { return HubSettings{}; }

// The endpoint listens on a free port and says the address agents dial; an
// agent with the token is welcomed, one without it refused, and both show
// in the metrics the scrape reads from the hub. Catches: the address
// built from the asked-for port 0 instead of the bound one, the hub's
// figures not collected at each scrape (or from another hub), the token
// not the hub's, Shutdown that leaves the agents' streams to the listener's
// cancel (they would learn the controller went only at its deadline) or
// leaves the listener open.
TEST(Bootstrap, AgentsDialTheEndpointAndTheScrapeCountsThem) {
  AgentEndpoint endpoint("secret", "test-controller", Settings());
  ASSERT_TRUE(endpoint.Listen("127.0.0.1:0").ok());
  ASSERT_TRUE(endpoint.listening());
  const std::string address = endpoint.address();
  ASSERT_EQ(address.rfind("127.0.0.1:", 0), 0u) << address;
  EXPECT_NE(address, "127.0.0.1:0");

  bool ready = false;
  ControllerMetricsOptions mo;
  mo.address = "127.0.0.1:0";
  mo.version = "9.9.9";
  mo.ready = [&ready] { return ready; };
  auto metrics = ControllerMetrics::Start(mo, endpoint.hub());
  ASSERT_TRUE(metrics.ok()) << metrics.status().message();
  EXPECT_TRUE((*metrics)->enabled());
  EXPECT_EQ((*metrics)->url().rfind("http://127.0.0.1:", 0), 0u) << (*metrics)->url();

  auto intruder = RawAgent::Dial(address);
  intruder->Hello("intruder", "guess");
  EXPECT_EQ(intruder->End().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  auto agent = RawAgent::Dial(address);
  ASSERT_TRUE(agent->Hello("agent-1", "secret") && agent->Welcomed());

  const std::string text = Scrape(**metrics);
  EXPECT_NE(text.find("fairbench_agents_connected 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("fairbench_agent_streams_refused_total{reason=\"token\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("fairbench_build_info{version=\"9.9.9\"} 1\n"), std::string::npos) << text;
  // /readyz is the caller's (the operator: while it leads).
  int status = 0;
  Scrape(**metrics, "/readyz", &status);
  EXPECT_EQ(status, 503);
  ready = true;
  Scrape(**metrics, "/readyz", &status);
  EXPECT_EQ(status, 200);

  // Shutdown ends the agents' streams first, with the hub's word (the agents
  // stop their load at once), then the listener: a second dial is refused.
  endpoint.Shutdown();
  const grpc::Status ended = agent->End();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ended.error_message(), "controller shutting down");
  EXPECT_FALSE(endpoint.listening());
  auto late = RawAgent::Dial(address);
  late->Hello("agent-2", "secret");
  const grpc::Status refused = late->End();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(refused.error_message(), "controller shutting down") << "the listener still takes connections";
  EXPECT_FALSE((*metrics)->Stop(0ms).has_value()) << "nothing was pushed";
}

// Catches: a bad address or URL accepted (the run would start without the
// metrics asked for) or reported without the flag's name; a metrics object
// that counts as enabled with neither.
TEST(Bootstrap, BadMetricsFlagsNameTheFlag) {
  AgentEndpoint endpoint("secret", "test-controller", Settings());
  ControllerMetricsOptions bad_address;
  bad_address.address = "127.0.0.1:notaport";
  auto a = ControllerMetrics::Start(bad_address, endpoint.hub());
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message().rfind("--metrics-address: ", 0), 0u) << a.status().message();
  ControllerMetricsOptions bad_url;
  bad_url.remote_write_url = "ftp://example.org/write";
  auto b = ControllerMetrics::Start(bad_url, endpoint.hub());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message().rfind("--remote-write-url: ", 0), 0u) << b.status().message();
  auto none = ControllerMetrics::Start(ControllerMetricsOptions{}, endpoint.hub());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE((*none)->enabled());
  EXPECT_EQ((*none)->url(), "");
}

// A new leader's listener waits for the old one's port: Listen retries
// until it is free. Catches: the attempts ignored (the second endpoint
// would fail at once), the port taken twice (SO_REUSEPORT: the kernel would
// split the agents between two controllers).
TEST(Bootstrap, ListenRetriesUntilThePortIsFree) {
  AgentEndpoint old_leader("secret", "old", Settings());
  ASSERT_TRUE(old_leader.Listen("127.0.0.1:0").ok());
  const std::string address = old_leader.address();
  AgentEndpoint busy("secret", "busy", Settings());
  EXPECT_FALSE(busy.Listen(address).ok()) << "the port was taken twice";
  EXPECT_FALSE(busy.listening());

  AgentEndpoint new_leader("secret", "new", Settings());
  std::thread freeing([&] {
    std::this_thread::sleep_for(300ms);
    old_leader.Shutdown();
  });
  const Status s = new_leader.Listen(address, 100, 50ms);
  freeing.join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(new_leader.address(), address);
}

// Run by the next test in a process of its own (this binary again, this
// test only): signals go to the whole process, and a thread another test
// started would take them. It says what it saw on stdout.
TEST(ShutdownSignalsChild, DISABLED_FirstStopsSecondExits) {
  std::atomic<int> first{0};
  ShutdownSignals signals(
      [&first](int signal) {
        std::printf("first %s\n", SignalName(signal).c_str());
        std::fflush(stdout);
        first = signal;
      },
      [](int was, int again) {
        std::printf("again %s after %s\n", SignalName(again).c_str(), SignalName(was).c_str());
        std::fflush(stdout);
        return 77;
      });
  // SIGPIPE ignored: writing to a pipe nobody reads fails, the process lives.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);
  if (write(fds[1], "x", 1) != -1 || errno != EPIPE) std::printf("write to a closed pipe did not fail with EPIPE\n");
  close(fds[1]);
  kill(getpid(), SIGTERM);
  for (int i = 0; i < 500 && first == 0; ++i) std::this_thread::sleep_for(10ms);
  std::printf("first() %s\n", SignalName(signals.first()).c_str());
  std::fflush(stdout);
  kill(getpid(), SIGINT);
  std::this_thread::sleep_for(10s);
  std::printf("still running after the second signal\n");
}

// Catches: the first signal ending the process (or not reaching on_first),
// a second signal that does not end it at once or with another code than
// on_again's, SIGPIPE left fatal.
TEST(ShutdownSignals, TheFirstSignalStopsGracefullyASecondExitsAtOnce) {
  testing::SubprocessOptions o;
  o.argv = {"/proc/self/exe", "--gtest_filter=ShutdownSignalsChild.DISABLED_FirstStopsSecondExits",
            "--gtest_also_run_disabled_tests"};
  o.stdout_to = testing::Redirect::Pipe();
  auto child = testing::Subprocess::Start(o);
  ASSERT_TRUE(child.ok()) << child.status().message();
  const auto out = child->ReadStdout(30s);
  auto exit = child->Wait(30s);
  ASSERT_TRUE(exit.ok());
  EXPECT_TRUE(exit->exited && exit->exit_code == 77) << exit->ToString();
  ASSERT_TRUE(out.ok());
  EXPECT_NE(out->find("first SIGTERM\nfirst() SIGTERM\nagain SIGINT after SIGTERM\n"), std::string::npos) << *out;
  EXPECT_EQ(out->find("EPIPE"), std::string::npos) << *out;
  EXPECT_EQ(out->find("still running"), std::string::npos) << *out;
}

}  // namespace
}  // namespace fairbench::controller
