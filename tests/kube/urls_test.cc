// KUBE-API.md §1: URLs, selectors, paging, list items.
#include "controller/kube/api_fields.h"
#include "controller/kube/curl_transport.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using testenv::BenchmarkRun;
using testenv::ConfigMapJson;

class Urls : public testenv::KubeTest {};

TEST(ResourcePaths, CoreGroupNamespacedClusterScopedAndStatus) {
  EXPECT_EQ(resources::Pods().Path("ns", "p"), "/api/v1/namespaces/ns/pods/p");
  EXPECT_EQ(resources::Pods().Path("", ""), "/api/v1/pods");
  EXPECT_EQ(resources::Pods().Path("ns", "p", "status"), "/api/v1/namespaces/ns/pods/p/status");
  EXPECT_EQ(resources::Nodes().Path("ignored", "n1"), "/api/v1/nodes/n1");
  EXPECT_EQ(resources::Leases().Path("ns", "l"), "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l");
  EXPECT_EQ(resources::BenchmarkRuns(Scope::kCluster).Path("", "r", "status"),
            "/apis/fairbench.dev/v1alpha1/benchmarkruns/r/status");
  EXPECT_EQ(QueryEscape("a in (x,y),!b"), "a%20in%20%28x%2Cy%29%2C%21b");
}

TEST_F(Urls, LabelSelectorForms) {
  auto cms = resources::ConfigMaps();
  struct {
    const char* name;
    Json labels;
  } objects[] = {{"a", {{"app", "web"}, {"tier", "front"}}},
                 {"b", {{"app", "web"}, {"tier", "back"}}},
                 {"c", {{"app", "db"}}},
                 {"d", Json::object()}};
  for (auto& o : objects) ASSERT_TRUE(client_->Create(cms, "default", ConfigMapJson(o.name, {{"k", "v"}}, o.labels)).ok());
  auto names = [&](const std::string& selector) {
    ListOptions lo;
    lo.label_selector = selector;
    auto list = client_->List(cms, "default", lo);
    EXPECT_TRUE(list.ok()) << selector << ": " << list.error().ToString();
    std::string out;
    for (const auto& i : list->items) out += i["metadata"]["name"].get<std::string>();
    return out;
  };
  EXPECT_EQ(names("app=web"), "ab");
  EXPECT_EQ(names("app==web,tier!=back"), "a");
  EXPECT_EQ(names("tier in (front,back)"), "ab");
  EXPECT_EQ(names("app notin (web)"), "cd");
  EXPECT_EQ(names("tier"), "ab");
  EXPECT_EQ(names("!tier"), "cd");
  EXPECT_EQ(names("app=web,!missing,tier in (back)"), "b");
  ListOptions bad;
  bad.label_selector = "app in (web";
  EXPECT_EQ(client_->List(cms, "default", bad).reason(), Reason::kBadRequest);
}

TEST_F(Urls, FieldSelectorsOnCustomResourcesAndPods) {
  InstallCrd();
  auto runs = resources::BenchmarkRuns();
  ASSERT_TRUE(client_->Create(runs, "default", BenchmarkRun("one")).ok());
  ASSERT_TRUE(client_->Create(runs, "default", BenchmarkRun("two")).ok());
  ListOptions lo;
  lo.field_selector = "metadata.name=two";
  auto got = client_->List(runs, "", lo);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->items.size(), 1u);
  // Custom resource list items carry kind and apiVersion.
  EXPECT_EQ(got->items[0]["kind"], "BenchmarkRun");
  lo.field_selector = "metadata.namespace=default,metadata.name!=two";
  EXPECT_EQ(client_->List(runs, "", lo)->items.size(), 1u);
  lo.field_selector = "spec.load.threads=4";
  auto unsupported = client_->List(runs, "", lo);
  ASSERT_EQ(unsupported.reason(), Reason::kBadRequest);
  EXPECT_NE(unsupported.error().message.find("spec.load.threads"), std::string::npos);

  auto pods = resources::Pods();
  for (const char* node : {"n1", "n2"}) {
    Json pod = {{"metadata", {{"name", std::string("p-") + node}}},
                {"spec", {{"nodeName", node}, {"containers", {{{"name", "c"}, {"image", "i"}}}}}}};
    ASSERT_TRUE(client_->Create(pods, "default", pod).ok());
  }
  lo.field_selector = "spec.nodeName=n2,status.phase=Pending";
  auto on_n2 = client_->List(pods, "default", lo);
  ASSERT_TRUE(on_n2.ok()) << on_n2.error().ToString();
  ASSERT_EQ(on_n2->items.size(), 1u);
  EXPECT_EQ(on_n2->items[0]["metadata"]["name"], "p-n2");
}

TEST_F(Urls, PagingSharesOneResourceVersionAndEndsWithEmptyContinue) {
  auto cms = resources::ConfigMaps();
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(client_->Create(cms, "default", ConfigMapJson("cm-" + std::to_string(i), {{"i", "x"}})).ok());
  }
  ListOptions lo;
  lo.limit = 3;
  auto first = client_->List(cms, "default", lo);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->items.size(), 3u);
  ASSERT_FALSE(first->continue_token.empty());
  EXPECT_EQ(*first->remaining_item_count, 4);
  // A write between pages does not show up: all pages are one snapshot.
  ASSERT_TRUE(client_->Create(cms, "default", ConfigMapJson("cm-9", {{"i", "x"}})).ok());
  lo.continue_token = first->continue_token;
  auto second = client_->List(cms, "default", lo);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->resource_version, first->resource_version);
  lo.continue_token = second->continue_token;
  auto third = client_->List(cms, "default", lo);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->items.size(), 1u);
  EXPECT_TRUE(third->continue_token.empty());
  // Built-in items arrive without kind; the client fills it in.
  EXPECT_EQ(third->items[0]["kind"], "ConfigMap");

  auto all = client_->ListAll(cms, "default", {});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->items.size(), 8u);
}

TEST_F(Urls, ExpiredContinueTokenIsGone) {
  auto cms = resources::ConfigMaps();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(client_->Create(cms, "default", ConfigMapJson("cm-" + std::to_string(i), {{"i", "x"}})).ok());
  }
  ListOptions lo;
  lo.limit = 2;
  auto first = client_->List(cms, "default", lo);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(client_->Create(cms, "default", ConfigMapJson("late", {{"i", "x"}})).ok());
  api().CompactHistory();
  lo.continue_token = first->continue_token;
  auto expired = client_->List(cms, "default", lo);
  ASSERT_EQ(expired.reason(), Reason::kGone);
  EXPECT_EQ(expired.error().http_code, 410);
  EXPECT_EQ(expired.error().status_reason, "Expired");
}

// Runs a hook after the first page of a paginated list has been answered.
class AfterFirstPage final : public HttpTransport {
 public:
  AfterFirstPage(const std::string& url, std::function<void()> hook)
      : inner_(url, {}, "fairbench-test"), hook_(std::move(hook)) {}
  Result<HttpResponse> Do(const HttpRequest& r) override {
    auto resp = inner_.Do(r);
    bool first_page = r.path_and_query.find("limit=") != std::string::npos &&
                      r.path_and_query.find("continue=") == std::string::npos;
    if (first_page && !fired_) {
      fired_ = true;
      hook_();
    }
    return resp;
  }
  Result<HttpResponse> Stream(const HttpRequest& r, const std::function<bool(std::string_view)>& f,
                              std::stop_token s) override {
    return inner_.Stream(r, f, s);
  }

 private:
  CurlTransport inner_;
  std::function<void()> hook_;
  bool fired_ = false;
};

TEST_F(Urls, ListAllStartsOverWhenItsContinueTokenExpires) {
  auto cms = resources::ConfigMaps();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(client_->Create(cms, "default", ConfigMapJson("cm-" + std::to_string(i), {{"i", "x"}})).ok());
  }
  RestConfig cfg;
  cfg.server = server_->url();
  Client paged(cfg, std::make_unique<AfterFirstPage>(server_->url(), [&] {
    ASSERT_TRUE(client_->Create(cms, "default", ConfigMapJson("late", {{"i", "x"}})).ok());
    api().CompactHistory();
  }));
  ListOptions lo;
  lo.limit = 2;
  auto all = paged.ListAll(cms, "default", lo);
  ASSERT_TRUE(all.ok()) << all.error().ToString();
  EXPECT_EQ(all->items.size(), 6u);  // the second, complete pass sees "late" too
}

TEST_F(Urls, UnknownPathsAndMethodsAreErrors) {
  ResourceType nothing{"example.com", "v1", "Thing", "things", Scope::kNamespaced};
  auto r = client_->Get(nothing, "default", "x");
  EXPECT_EQ(r.reason(), Reason::kNotFound);
  auto discovered = client_->Discover("coordination.k8s.io/v1", "Lease");
  ASSERT_TRUE(discovered.ok());
  EXPECT_EQ(discovered->plural, "leases");
  EXPECT_TRUE(discovered->namespaced());
  EXPECT_EQ(client_->Discover("v1", "Nope").reason(), Reason::kNotFound);
}

}  // namespace
}  // namespace fairbench::kube
