#include "testing/apiserver/audit_log.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace fairbench::apiserver {
namespace {

// Catches: audit events that tools reading kube-apiserver's audit log could
// not read (another shape, the subresource or user missing).
TEST(AuditLog, WritesKubeApiserverEventsOnePerLine) {
  const std::string path = ::testing::TempDir() + "/audit-" + std::to_string(::getpid()) + ".log";
  std::remove(path.c_str());
  {
    auto log = AuditLog::Open(path);
    ASSERT_TRUE(log.ok());
    AuditRecord r;
    r.info = ResolveRequestInfo("GET", "/api/v1/namespaces/ns/pods/p/log", {});
    r.request_uri = "/api/v1/namespaces/ns/pods/p/log?container=target";
    r.user = "system:serviceaccount:ns:ctl";
    r.groups = {"system:serviceaccounts"};
    r.user_agent = "fairbench-controller/0.1.0";
    r.source_ip = "127.0.0.1";
    r.code = 200;
    r.received = std::chrono::system_clock::now();
    (*log)->Write(r);
    r.info = ResolveRequestInfo("GET", "/apis/fairbench.dev/v1alpha1/benchmarkruns", {{"watch", "1"}});
    r.user.clear();
    r.watch_started = true;
    (*log)->Write(r);
  }
  std::ifstream in(path);
  std::string line;
  std::vector<nlohmann::json> events;
  while (std::getline(in, line)) events.push_back(nlohmann::json::parse(line));
  std::remove(path.c_str());
  ASSERT_EQ(events.size(), 2u);
  const nlohmann::json& e = events[0];
  EXPECT_EQ(e["kind"], "Event");
  EXPECT_EQ(e["apiVersion"], "audit.k8s.io/v1");
  EXPECT_EQ(e["stage"], "ResponseComplete");
  EXPECT_EQ(e["verb"], "get");
  EXPECT_EQ(e["user"]["username"], "system:serviceaccount:ns:ctl");
  EXPECT_EQ(e["user"]["groups"], (nlohmann::json{"system:serviceaccounts", "system:authenticated"}));
  EXPECT_EQ(e["objectRef"], (nlohmann::json{{"resource", "pods"}, {"subresource", "log"}, {"namespace", "ns"},
                                             {"name", "p"}, {"apiVersion", "v1"}}));
  EXPECT_EQ(e["responseStatus"]["code"], 200);
  EXPECT_EQ(e["requestURI"], "/api/v1/namespaces/ns/pods/p/log?container=target");
  EXPECT_EQ(events[1]["stage"], "ResponseStarted");
  EXPECT_EQ(events[1]["verb"], "watch");
  EXPECT_EQ(events[1]["user"]["username"], "system:anonymous");
  EXPECT_EQ(events[1]["objectRef"]["apiGroup"], "fairbench.dev");
  EXPECT_FALSE(events[1]["objectRef"].contains("namespace"));
}

}  // namespace
}  // namespace fairbench::apiserver
