// KUBE-API.md §1: URLs, selectors, paging, list items, against Kubernetes'
// own API server (the shared cluster; ConfigMaps are served from etcd there,
// so a compaction expires a continue token).
#include "controller/kube/api_fields.h"
#include "controller/kube/curl_transport.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using testenv::BenchmarkRun;
using testenv::ConfigMapJson;
using testenv::Eventually;

// kube-controller-manager puts this ConfigMap into every namespace.
constexpr const char* kRootCa = "kube-root-ca.crt";

class Urls : public testenv::KubeTest {
 protected:
  // Waits for the namespace's kube-root-ca.crt, so that the test's lists
  // do not change under it when it arrives.
  void WaitForRootCa() {
    ASSERT_TRUE(Eventually([&] { return client_->Get(resources::ConfigMaps(), ns(), kRootCa).ok(); },
                           std::chrono::seconds(30)));
  }
  void CreateConfigMaps(int n) {
    for (int i = 0; i < n; ++i) {
      auto created =
          client_->Create(resources::ConfigMaps(), ns(), ConfigMapJson("cm-" + std::to_string(i), {{"i", "x"}}));
      ASSERT_TRUE(created.ok()) << created.error().ToString();
    }
  }
};

// Catches: a wrong path for the core group, cluster-scoped resources or a
// subresource, or a selector escaped the wrong way.
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

// Catches: a label selector escaped so that the server reads another
// selector (or cannot parse it).
TEST_F(Urls, LabelSelectorForms) {
  auto cms = resources::ConfigMaps();
  struct {
    const char* name;
    Json labels;
  } objects[] = {{"a", {{"app", "web"}, {"tier", "front"}}},
                 {"b", {{"app", "web"}, {"tier", "back"}}},
                 {"c", {{"app", "db"}}},
                 {"d", Json::object()}};
  for (auto& o : objects) ASSERT_TRUE(client_->Create(cms, ns(), ConfigMapJson(o.name, {{"k", "v"}}, o.labels)).ok());
  auto names = [&](const std::string& selector) {
    ListOptions lo;
    lo.label_selector = selector;
    auto list = client_->List(cms, ns(), lo);
    EXPECT_TRUE(list.ok()) << selector << ": " << list.error().ToString();
    std::string out;
    if (!list.ok()) return out;
    for (const auto& i : list->items) {
      // The namespace's unlabelled kube-root-ca.crt (there or not yet).
      if (i["metadata"]["name"] != kRootCa) out += i["metadata"]["name"].get<std::string>();
    }
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
  auto r = client_->List(cms, ns(), bad);
  EXPECT_EQ(r.reason(), Reason::kBadRequest) << r.error().ToString();
}

// Catches: a field selector not sent (or escaped wrongly), or custom
// resource list items left without kind.
TEST_F(Urls, FieldSelectorsOnCustomResourcesAndPods) {
  InstallCrd();
  auto runs = testenv::TestRuns();
  ASSERT_TRUE(client_->Create(runs, ns(), BenchmarkRun("one", 4, ns())).ok());
  ASSERT_TRUE(client_->Create(runs, ns(), BenchmarkRun("two", 4, ns())).ok());
  ListOptions lo;
  lo.field_selector = "metadata.name=two";
  auto got = client_->List(runs, ns(), lo);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  ASSERT_EQ(got->items.size(), 1u);
  // Custom resource list items carry kind and apiVersion.
  EXPECT_EQ(got->items[0]["kind"], "BenchmarkRun");
  // Across all namespaces (other tests have runs of their own).
  lo.field_selector = "metadata.namespace=" + ns() + ",metadata.name!=two";
  auto others = client_->List(runs, "", lo);
  ASSERT_TRUE(others.ok()) << others.error().ToString();
  ASSERT_EQ(others->items.size(), 1u);
  EXPECT_EQ(others->items[0]["metadata"]["name"], "one");
  lo.field_selector = "spec.load.threads=4";
  auto unsupported = client_->List(runs, "", lo);
  ASSERT_EQ(unsupported.reason(), Reason::kBadRequest) << unsupported.error().ToString();
  EXPECT_EQ(unsupported.error().message, "field label not supported: spec.load.threads");

  auto pods = resources::Pods();
  struct ForceDelete {  // no kubelet ends these pods: gone at once, after the test
    Client* client;
    std::string ns;
    ~ForceDelete() {
      DeleteOptions now;
      now.grace_period_seconds = 0;
      for (const char* name : {"p-n1", "p-n2"}) (void)client->Delete(resources::Pods(), ns, name, now);
    }
  } cleanup{client_.get(), ns()};
  for (const char* node : {"n1", "n2"}) {
    Json pod = {{"metadata", {{"name", std::string("p-") + node}}},
                {"spec", {{"nodeName", node}, {"containers", {{{"name", "c"}, {"image", "i"}}}}}}};
    auto created = client_->Create(pods, ns(), pod);
    ASSERT_TRUE(created.ok()) << created.error().ToString();
  }
  lo.field_selector = "spec.nodeName=n2,status.phase=Pending";
  auto on_n2 = client_->List(pods, ns(), lo);
  ASSERT_TRUE(on_n2.ok()) << on_n2.error().ToString();
  ASSERT_EQ(on_n2->items.size(), 1u);
  EXPECT_EQ(on_n2->items[0]["metadata"]["name"], "p-n2");
}

// Catches: limit/continue not sent, a continue token sent escaped wrongly,
// remainingItemCount not read, or ListAll stopping after one page.
TEST_F(Urls, PagingSharesOneResourceVersionAndEndsWithEmptyContinue) {
  auto cms = resources::ConfigMaps();
  WaitForRootCa();
  CreateConfigMaps(7);  // cm-0 … cm-6, then kube-root-ca.crt: 8 in name order
  // The cluster is shared: another test may compact etcd between two pages
  // (their continue token then gets 410). Then the pages are read again.
  for (int attempt = 1;; ++attempt) {
    ListOptions lo;
    lo.limit = 3;
    auto first = client_->List(cms, ns(), lo);
    ASSERT_TRUE(first.ok()) << first.error().ToString();
    EXPECT_EQ(first->items.size(), 3u);
    ASSERT_FALSE(first->continue_token.empty());
    ASSERT_TRUE(first->remaining_item_count.has_value());
    EXPECT_EQ(*first->remaining_item_count, 5);
    // A write between pages does not show up: all pages are one snapshot.
    ASSERT_TRUE(client_->Create(cms, ns(), ConfigMapJson("cm-9", {{"i", "x"}})).ok());
    lo.continue_token = first->continue_token;
    auto second = client_->List(cms, ns(), lo);
    ApiResult<ObjectList> third = ApiError{};
    if (second.ok()) {
      EXPECT_EQ(second->resource_version, first->resource_version);
      lo.continue_token = second->continue_token;
      third = client_->List(cms, ns(), lo);
    }
    if (attempt < 3 && (second.reason() == Reason::kGone || third.reason() == Reason::kGone)) {
      ASSERT_TRUE(client_->Delete(cms, ns(), "cm-9").ok());
      continue;
    }
    ASSERT_TRUE(second.ok()) << second.error().ToString();
    ASSERT_TRUE(third.ok()) << third.error().ToString();
    ASSERT_EQ(third->items.size(), 2u);
    EXPECT_EQ(third->items[0]["metadata"]["name"], "cm-6");
    EXPECT_TRUE(third->continue_token.empty());
    // Built-in items arrive without kind; the client fills it in.
    EXPECT_EQ(third->items[0]["kind"], "ConfigMap");
    break;
  }

  auto all = client_->ListAll(cms, ns(), {});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->items.size(), 9u);
}

// Catches: a 410 on a continued list reported as anything but Gone.
TEST_F(Urls, ExpiredContinueTokenIsGone) {
  auto cms = resources::ConfigMaps();
  CreateConfigMaps(4);
  ListOptions lo;
  lo.limit = 2;
  auto first = client_->List(cms, ns(), lo);
  ASSERT_TRUE(first.ok());
  // A write after the page: a compaction at the current revision drops the
  // page's revision.
  ASSERT_TRUE(client_->Create(cms, ns(), ConfigMapJson("late", {{"i", "x"}})).ok());
  ASSERT_TRUE(cluster_->Compact().ok());
  lo.continue_token = first->continue_token;
  auto expired = client_->List(cms, ns(), lo);
  ASSERT_EQ(expired.reason(), Reason::kGone) << expired.error().ToString();
  EXPECT_EQ(expired.error().http_code, 410);
  EXPECT_EQ(expired.error().status_reason, "Expired");
  EXPECT_EQ(expired.error().message.rfind("The provided continue parameter is too old to display a consistent list "
                                          "result.",
                                          0),
            0u)
      << expired.error().message;
}

// Runs a hook after the first page of a paginated list has been answered.
class AfterFirstPage final : public HttpTransport {
 public:
  AfterFirstPage(const std::string& url, std::function<void()> hook)
      : inner_(url, {}, "fairbench-test"), hook_(std::move(hook)) {}
  Result<HttpResponse> Do(const HttpRequest& r) override {
    auto resp = inner_.Do(r);
    bool first_page =
        r.path_and_query.find("limit=") != std::string::npos && r.path_and_query.find("continue=") == std::string::npos;
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

// Catches: ListAll that fails (or returns a partial list) when its continue
// token expires mid-way instead of starting over.
TEST_F(Urls, ListAllStartsOverWhenItsContinueTokenExpires) {
  auto cms = resources::ConfigMaps();
  WaitForRootCa();
  CreateConfigMaps(5);  // and kube-root-ca.crt: 6
  RestConfig cfg;
  cfg.server = url();
  Client paged(cfg, std::make_unique<AfterFirstPage>(url(), [&] {
                 ASSERT_TRUE(client_->Create(cms, ns(), ConfigMapJson("late", {{"i", "x"}})).ok());
                 ASSERT_TRUE(cluster_->Compact().ok());
               }));
  ListOptions lo;
  lo.limit = 2;
  auto all = paged.ListAll(cms, ns(), lo);
  ASSERT_TRUE(all.ok()) << all.error().ToString();
  EXPECT_EQ(all->items.size(), 7u);  // the second, complete pass sees "late" too
}

// Catches: a 404 for an unknown group or kind reported as anything but
// NotFound, or discovery that misreads a resource's plural or scope.
TEST_F(Urls, UnknownPathsAndMethodsAreErrors) {
  ResourceType nothing{"example.com", "v1", "Thing", "things", Scope::kNamespaced};
  auto r = client_->Get(nothing, ns(), "x");
  EXPECT_EQ(r.reason(), Reason::kNotFound) << r.error().ToString();
  auto discovered = client_->Discover("coordination.k8s.io/v1", "Lease");
  ASSERT_TRUE(discovered.ok()) << discovered.error().ToString();
  EXPECT_EQ(discovered->plural, "leases");
  EXPECT_TRUE(discovered->namespaced());
  EXPECT_EQ(client_->Discover("v1", "Nope").reason(), Reason::kNotFound);
}

}  // namespace
}  // namespace fairbench::kube
