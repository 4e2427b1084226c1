// The operator's per-run parts and the agents' token against Kubernetes' own
// API server (the shared cluster, a namespace per test) with the generated
// CRD: the token Secret created, read and
// refused; a run refused while the token is missing (condition and Event),
// taken once the Secret is fixed; a run that cannot be carried out marked
// Failed by its finish.
#include "controller/operator/operator_runs.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "api/loader.h"
#include "common/base64.h"
#include "controller/store/test_records.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::controller {
namespace {

using kube::Json;
using namespace std::chrono_literals;
namespace tr = testrecords;

class OperatorRunsTest : public kube::testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    client_ = tr::FastClient(url());
    tr::InstallGeneratedCrd(*cluster_, *client_, ns());
    recorder_ = std::make_unique<kube::EventRecorder>(*client_, SystemClock::Instance());
  }
  void TearDown() override {
    recorder_.reset();
    KubeTest::TearDown();
  }

  void PutSecret(const Json& data) {
    const Json secret = {
        {"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", {{"name", "agent-token"}}}, {"data", data}};
    auto got = client_->Get(kube::resources::Secrets(), ns(), "agent-token");
    if (got.ok()) {
      Json updated = *got;
      updated["data"] = data;
      ASSERT_TRUE(client_->Update(kube::resources::Secrets(), updated).ok());
    } else {
      ASSERT_TRUE(client_->Create(kube::resources::Secrets(), ns(), secret).ok());
    }
  }

  api::BenchmarkRun Run(const std::string& name) {
    auto run = api::FromKubernetesObject(tr::CreateRun(*client_, name, ns()));
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    return run.ok() ? *run : api::BenchmarkRun{};
  }

  Json Status(const std::string& name) {
    auto got = client_->Get(kube::resources::BenchmarkRuns(), ns(), name);
    EXPECT_TRUE(got.ok());
    return got.ok() ? got->value("status", Json::object()) : Json::object();
  }

  std::vector<std::string> EventReasons() {
    std::vector<std::string> out;
    auto listed = client_->List(kube::resources::Events(), ns());
    if (!listed.ok()) return out;
    for (const Json& e : listed->items) out.push_back(e.value("reason", ""));
    return out;
  }

  std::shared_ptr<KubernetesPlatform> Platform() {
    KubernetesPlatformOptions o;
    o.ns = ns();
    o.agent_image = "example.org/fairbench/agent:test";
    o.agent_token_secret = "agent-token";
    o.controller_address = "127.0.0.1:7070";
    o.identity = "test-controller";
    return std::make_shared<KubernetesPlatform>(*client_, o);
  }

  std::unique_ptr<kube::EventRecorder> recorder_;
};

// Catches: a missing Secret not created (a bare install never gets a
// token), created without data.token or without the managed-by label, or a
// new token made on every read (agents started earlier could no longer
// authenticate).
TEST_F(OperatorRunsTest, AMissingTokenSecretIsCreatedOnceAndReadBack) {
  auto first = ReadAgentToken(*client_, ns(), "agent-token");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_GE(first->size(), 32u);
  auto secret = client_->Get(kube::resources::Secrets(), ns(), "agent-token");
  ASSERT_TRUE(secret.ok());
  EXPECT_EQ((*secret)["metadata"]["labels"]["app.kubernetes.io/managed-by"], "fairbench");
  auto stored = Base64Decode((*secret)["data"].value("token", ""));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(*stored, *first);
  auto again = ReadAgentToken(*client_, ns(), "agent-token");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
}

// Catches: a Secret without a token taken as an empty token (agents would
// authenticate with nothing), or an API server that does not answer taken
// as a bad Secret (the controller would not wait for it), or a wait that
// ignores its stop.
TEST_F(OperatorRunsTest, ASecretWithoutATokenIsTheOperatorsToFix) {
  PutSecret(Json::object());
  auto token = ReadAgentToken(*client_, ns(), "agent-token");
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(token.status().message(), "Secret " + ns() + "/agent-token has no data.token");

  auto nowhere = kube::testenv::ClientFor("http://127.0.0.1:1");
  auto unreachable = ReadAgentToken(*nowhere, ns(), "agent-token");
  ASSERT_FALSE(unreachable.ok());
  EXPECT_EQ(unreachable.status().code(), Status::Code::kUnavailable);
  std::stop_source stop;
  stop.request_stop();
  const auto start = std::chrono::steady_clock::now();
  auto waited = WaitForAgentToken(*nowhere, ns(), "agent-token", "http://127.0.0.1:1",
                                  BackoffPolicy{10s, 10s, 2.0, 0.0}, stop.get_token());
  EXPECT_FALSE(waited.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

// Catches: a run started while agents cannot authenticate (its cells would
// fail one by one on agent timeouts), the run not marked Failed with reason
// AgentTokenMissing and its Event, the Secret not read again before the
// next run (a fixed Secret would need a restart), the hub not given the
// new token, and a run whose record cannot be read left Running (finish
// must mark it Failed with RunError).
TEST_F(OperatorRunsTest, ARunWaitsForTheTokenAndAFailedRecordFailsTheRun) {
  PutSecret(Json::object());
  std::string hub_token;
  AgentTokenGate gate(*client_, ns(), "agent-token", ReadAgentToken(*client_, ns(), "agent-token"),
                      [&](const std::string& t) { hub_token = t; });
  EXPECT_NE(gate.problem().find("Secret " + ns() + "/agent-token has no data.token: agents cannot authenticate"),
            std::string::npos);
  RunStatusClient run_status(*client_, recorder_.get());
  metrics::MetricRegistry registry;
  metrics::RunMetrics run_metrics(registry, metrics::RunMetricsOptions{});
  OperatorRuns runs(*client_, recorder_.get(), run_status, gate, Platform(), run_metrics, [] { return true; });

  const api::BenchmarkRun early = Run("early");
  auto refused = runs(early);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kFailedPrecondition);
  Json status = Status("early");
  EXPECT_EQ(status.value("phase", ""), "Failed");
  ASSERT_EQ(status["conditions"].size(), 1u);
  EXPECT_EQ(status["conditions"][0]["type"], "Failed");
  EXPECT_EQ(status["conditions"][0]["reason"], "AgentTokenMissing");
  EXPECT_TRUE(kube::testenv::Eventually([&] {
    const auto reasons = EventReasons();
    return std::find(reasons.begin(), reasons.end(), "AgentTokenMissing") != reasons.end();
  }));
  EXPECT_TRUE(hub_token.empty());

  PutSecret({{"token", Base64Encode("s3cret-token")}});
  const api::BenchmarkRun later = Run("later");
  auto parts = runs(later);
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  EXPECT_EQ(hub_token, "s3cret-token");
  EXPECT_TRUE(gate.problem().empty());
  ASSERT_TRUE(parts->platform && parts->store && parts->observer && parts->finish);
  parts->finish(Status::FailedPrecondition("the stored record is of another spec"));
  status = Status("later");
  EXPECT_EQ(status.value("phase", ""), "Failed");
  ASSERT_EQ(status["conditions"].size(), 1u);
  EXPECT_EQ(status["conditions"][0]["reason"], "RunError");
  EXPECT_EQ(status["conditions"][0]["message"], "the stored record is of another spec");
}

}  // namespace
}  // namespace fairbench::controller
