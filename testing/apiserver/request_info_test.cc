#include "testing/apiserver/request_info.h"

#include <gtest/gtest.h>

namespace fairbench::apiserver {
namespace {

std::string Describe(const std::string& method, const std::string& path,
                     const std::multimap<std::string, std::string>& query = {}) {
  const RequestInfo i = ResolveRequestInfo(method, path, query);
  if (!i.resource_request) return "nonresource " + i.verb + " " + i.path;
  std::string out = i.verb + " " + (i.api_group.empty() ? "core" : i.api_group) + "/" + i.api_version + " " + i.resource;
  if (!i.subresource.empty()) out += "/" + i.subresource;
  if (!i.ns.empty()) out += " ns=" + i.ns;
  if (!i.name.empty()) out += " name=" + i.name;
  return out;
}

// Catches: a request audited (and so authorised) under another verb or
// resource than the real server's RequestInfoFactory gives it.
TEST(RequestInfo, VerbsAndResourcesAsTheRealServerResolvesThem) {
  EXPECT_EQ(Describe("GET", "/api/v1/namespaces/ns/pods"), "list core/v1 pods ns=ns");
  EXPECT_EQ(Describe("GET", "/api/v1/pods", {{"watch", "true"}}), "watch core/v1 pods");
  EXPECT_EQ(Describe("GET", "/api/v1/namespaces/ns/pods/p"), "get core/v1 pods ns=ns name=p");
  EXPECT_EQ(Describe("GET", "/api/v1/namespaces/ns/pods/p/log"), "get core/v1 pods/log ns=ns name=p");
  EXPECT_EQ(Describe("POST", "/api/v1/namespaces/ns/pods"), "create core/v1 pods ns=ns");
  EXPECT_EQ(Describe("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l"),
            "update coordination.k8s.io/v1 leases ns=ns name=l");
  EXPECT_EQ(Describe("PATCH", "/apis/fairbench.dev/v1alpha1/namespaces/ns/benchmarkruns/r/status"),
            "patch fairbench.dev/v1alpha1 benchmarkruns/status ns=ns name=r");
  EXPECT_EQ(Describe("DELETE", "/api/v1/namespaces/ns/configmaps"), "deletecollection core/v1 configmaps ns=ns");
  EXPECT_EQ(Describe("DELETE", "/api/v1/namespaces/ns/configmaps/c"), "delete core/v1 configmaps ns=ns name=c");
  // The node proxy: the rest of the path is the kubelet's, not a subresource of proxy.
  EXPECT_EQ(Describe("GET", "/api/v1/nodes/n1/proxy/stats/summary", {{"only_cpu_and_memory", "true"}}),
            "get core/v1 nodes/proxy name=n1");
  // Namespaces themselves, and their status.
  EXPECT_EQ(Describe("GET", "/api/v1/namespaces/ns"), "get core/v1 namespaces ns=ns name=ns");
  EXPECT_EQ(Describe("PUT", "/api/v1/namespaces/ns/status"), "update core/v1 namespaces/status ns=ns name=ns");
  // A list pinned to one name by its field selector names it.
  EXPECT_EQ(Describe("GET", "/api/v1/namespaces/ns/secrets", {{"fieldSelector", "metadata.name=s"}}),
            "list core/v1 secrets ns=ns name=s");
  EXPECT_EQ(Describe("GET", "/api/v1/namespaces/ns/secrets", {{"fieldSelector", "metadata.name!=s"}}),
            "list core/v1 secrets ns=ns");
}

TEST(RequestInfo, DiscoveryAndHealthAreNonResourceRequests) {
  EXPECT_EQ(Describe("GET", "/healthz"), "nonresource get /healthz");
  EXPECT_EQ(Describe("GET", "/api"), "nonresource get /api");
  EXPECT_EQ(Describe("GET", "/api/v1"), "nonresource get /api/v1");
  EXPECT_EQ(Describe("GET", "/apis/apps/v1"), "nonresource get /apis/apps/v1");
  EXPECT_EQ(Describe("GET", "/openapi/v3/apis/apps/v1"), "nonresource get /openapi/v3/apis/apps/v1");
}

}  // namespace
}  // namespace fairbench::apiserver
