// The chart's RBAC against what fairbench-controller really asks of the API
// server. The operator's tests (tests/operator) run the controllers as the
// chart's ServiceAccount against Kubernetes' own kube-apiserver, whose audit log names
// every request; each test keeps the kinds of request the controllers made
// (verb, API group, resource, subresource, namespaced or not) in
// FAIRBENCH_API_USAGE_DIR, and fails on one that tests/chart/
// controller-api-usage.json does not list. Here the rules the chart renders
// — for every ci/ values file — must grant exactly that list plus the
// requests below, which the operator's tests do not reach: a rule too few
// and the controller is forbidden in a cluster; a rule too many and least
// privilege is broken.
#include <cstdlib>
#include <map>
#include <regex>
#include <set>

#include "tests/chart/chart_test_env.h"

namespace fairbench::chart_test {
namespace {

// Requests the controller makes on paths the operator's tests do not take,
// each with where it is made.
struct Unreached {
  json kind;
  const char* why;
};
const std::vector<Unreached>& UnreachedRequests() {
  static const std::vector<Unreached> kList = {
      // The run's pods and ConfigMaps carry owner references with
      // blockOwnerDeletion; the OwnerReferencesPermissionEnforcement
      // admission plugin (on in OpenShift, among others) lets only a user
      // who may update the owner's finalizers set it. kube-apiserver's
      // default admission plugins, which the tests' clusters run, leave it off.
      {{{"verb", "update"},
        {"apiGroup", "fairbench.dev"},
        {"resource", "benchmarkruns"},
        {"subresource", "finalizers"},
        {"namespaced", true}},
       "owner references blocking the run's deletion (admission)"},
      // ConfigMapRunStore::Save deletes the parts of an earlier record that
      // the new one no longer names: only records past 900 KiB have parts.
      {{{"verb", "delete"}, {"apiGroup", ""}, {"resource", "configmaps"}, {"namespaced", true}},
       "a record shrinking by a part (records over 900 KiB)"},
      // EventRecorder patches the count and lastTimestamp of an Event
      // repeated within its aggregation window instead of creating another.
      {{{"verb", "patch"}, {"apiGroup", ""}, {"resource", "events"}, {"namespaced", true}},
       "an Event repeated within the aggregation window"},
  };
  return kList;
}

// "verb group/resource[/subresource]": a kind of request, whatever its scope.
std::string Tuple(const json& kind) {
  if (kind.contains("nonResourceURL")) return Str(kind, "verb") + " " + Str(kind, "nonResourceURL");
  std::string s = Str(kind, "verb") + " " + Str(kind, "apiGroup") + "/" + Str(kind, "resource");
  if (kind.contains("subresource")) s += "/" + Str(kind, "subresource");
  return s;
}

json ListedUsage() {
  const json listed = json::parse(ReadFile(kRoot + "/tests/chart/controller-api-usage.json"), nullptr, false);
  EXPECT_FALSE(listed.is_discarded()) << "tests/chart/controller-api-usage.json does not parse";
  return listed.is_discarded() ? json::object() : listed;
}

// Where one grant comes from.
struct Grant {
  std::string tuple;
  bool cluster_wide = false;    // a ClusterRole bound by a ClusterRoleBinding
  std::string ns;               // else: the RoleBinding's namespace
  std::set<std::string> names;  // resourceNames; empty = any
  std::string role;
};

// What the bindings of a render grant the controller's ServiceAccount.
std::vector<Grant> Grants(const std::vector<json>& objects) {
  std::vector<Grant> out;
  const json* deployment = Find(objects, "Deployment");
  EXPECT_NE(deployment, nullptr);
  if (deployment == nullptr) return out;
  const std::string sa = Str((*deployment)["spec"]["template"]["spec"], "serviceAccountName");
  const std::string sa_ns = Str((*deployment)["metadata"], "namespace");
  for (const char* binding_kind : {"ClusterRoleBinding", "RoleBinding"}) {
    for (const json* b : FindAll(objects, binding_kind)) {
      bool ours = false;
      for (const json& s : (*b)["subjects"]) {
        ours |= Str(s, "kind") == "ServiceAccount" && Str(s, "name") == sa && Str(s, "namespace") == sa_ns;
      }
      EXPECT_TRUE(ours) << Key(*b) << " binds someone else than the controller's ServiceAccount";
      if (!ours) continue;
      const std::string role_kind = Str((*b)["roleRef"], "kind"), role_name = Str((*b)["roleRef"], "name");
      const std::string ns = Str((*b)["metadata"], "namespace");
      const json* role = nullptr;
      for (const json& o : objects) {
        if (Str(o, "kind") == role_kind && Str(o["metadata"], "name") == role_name &&
            (role_kind == "ClusterRole" || Str(o["metadata"], "namespace") == ns)) {
          role = &o;
        }
      }
      EXPECT_NE(role, nullptr) << Key(*b) << " binds " << role_kind << " " << role_name << ", which the chart lacks";
      if (role == nullptr) continue;
      for (const json& rule : (*role)["rules"]) {
        std::set<std::string> names;
        for (const json& n : rule.value("resourceNames", json::array())) names.insert(n.get<std::string>());
        for (const json& verb : rule.value("verbs", json::array())) {
          EXPECT_NE(verb, "*") << Key(*role) << ": a wildcard verb";
          for (const json& url : rule.value("nonResourceURLs", json::array())) {
            out.push_back({Tuple({{"verb", verb}, {"nonResourceURL", url}}),
                           std::string(binding_kind) == "ClusterRoleBinding", ns, names, Key(*role)});
          }
          for (const json& group : rule.value("apiGroups", json::array())) {
            EXPECT_NE(group, "*") << Key(*role) << ": a wildcard API group";
            for (const json& resource : rule.value("resources", json::array())) {
              const std::string r = resource.get<std::string>();
              EXPECT_EQ(r.find('*'), std::string::npos) << Key(*role) << ": a wildcard resource";
              json kind = {{"verb", verb}, {"apiGroup", group}, {"resource", r.substr(0, r.find('/'))}};
              if (r.find('/') != std::string::npos) kind["subresource"] = r.substr(r.find('/') + 1);
              out.push_back({Tuple(kind), std::string(binding_kind) == "ClusterRoleBinding", ns, names, Key(*role)});
            }
          }
        }
      }
    }
  }
  return out;
}

std::map<std::string, std::string> Flags(const std::vector<json>& objects) {
  std::map<std::string, std::string> out;
  const json* d = Find(objects, "Deployment");
  if (d == nullptr) return out;
  for (const json& a : (*d)["spec"]["template"]["spec"]["containers"][0]["args"]) {
    const std::string arg = a.get<std::string>();
    const size_t eq = arg.find('=');
    out[arg.substr(0, eq)] = eq == std::string::npos ? "" : arg.substr(eq + 1);
  }
  return out;
}

class ChartRbacTest : public ChartTestBase {};

// Catches: a rule the controller needs missing from the chart (it would be
// forbidden: a run stuck, a record not stored), or a rule it never uses
// (least privilege); a namespaced permission granted cluster-wide when the
// controller watches one namespace, or a cluster-wide request (nodes, runs
// in every namespace) granted by a Role only.
TEST_F(ChartRbacTest, RolesGrantExactlyWhatTheControllerUses) {
  const json listed = ListedUsage();
  ASSERT_TRUE(listed.contains("requests"));
  std::set<std::string> wanted;
  std::set<std::string> used_across_namespaces;  // made without a namespace
  std::set<std::string> namespaced_resources;    // ever used in a namespace
  std::vector<json> kinds(listed["requests"].begin(), listed["requests"].end());
  for (const Unreached& u : UnreachedRequests()) kinds.push_back(u.kind);
  for (const json& k : kinds) {
    // Discovery, health and version paths: every authenticated user may
    // read them (the system:discovery and system:public-info-viewer
    // ClusterRoles every cluster has); the chart grants no URL.
    static const std::regex kDefaultGranted(R"(/(api|apis|openapi|version|healthz|livez|readyz)(/.*)?)");
    if (k.contains("nonResourceURL") && Str(k, "verb") == "get" &&
        std::regex_match(Str(k, "nonResourceURL"), kDefaultGranted)) {
      continue;
    }
    wanted.insert(Tuple(k));
    if (k.value("namespaced", true)) {
      namespaced_resources.insert(Str(k, "apiGroup") + "/" + Str(k, "resource"));
    } else {
      used_across_namespaces.insert(Tuple(k));
    }
  }
  ASSERT_GT(wanted.size(), 10u);

  for (const fs::path& values : CiValuesFiles()) {
    SCOPED_TRACE(values.filename().string());
    const std::vector<json> objects = RenderWith(values);
    const bool all_namespaces = Flags(objects).count("--namespace") == 0;
    const std::vector<Grant> grants = Grants(objects);
    std::set<std::string> granted;
    for (const Grant& g : grants) granted.insert(g.tuple);
    for (const std::string& t : wanted) {
      EXPECT_TRUE(granted.count(t)) << "the chart does not grant " << t << ": the controller would be forbidden";
    }
    for (const std::string& t : granted) {
      EXPECT_TRUE(wanted.count(t)) << "the chart grants " << t
                                   << ", which the controller never uses (least privilege): remove it from "
                                      "charts/fairbench/templates/rbac.yaml";
    }
    for (const Grant& g : grants) {
      const std::string resource = g.tuple.substr(g.tuple.find(' ') + 1);
      const std::string group_resource = resource.substr(0, resource.find('/', resource.find('/') + 1));
      const bool namespaced = namespaced_resources.count(group_resource) != 0;
      // Namespaced permissions cluster-wide only for a controller watching every namespace.
      if (g.cluster_wide && namespaced) {
        EXPECT_TRUE(all_namespaces) << g.role << " grants " << g.tuple << " in every namespace";
      }
    }
    for (const std::string& t : used_across_namespaces) {
      const std::string resource = t.substr(t.find(' ') + 1);
      const bool namespaced =
          namespaced_resources.count(resource.substr(0, resource.find('/', resource.find('/') + 1))) != 0;
      // Cluster-scoped resources always, runs in every namespace when watching them all.
      if (namespaced && !all_namespaces) continue;
      bool cluster_wide = false;
      for (const Grant& g : grants) cluster_wide |= g.tuple == t && g.cluster_wide;
      EXPECT_TRUE(cluster_wide) << t << " is requested across namespaces: it needs a ClusterRoleBinding";
    }
  }
}

// Catches: a Lease or Secret renamed in the controller's flags but not in
// the rules' resourceNames (the controller is forbidden its own leader
// Lease), the load-slot Role in another namespace than the Lease, or
// resourceNames on a verb they cannot limit (create, list, watch: the rule
// would grant nothing).
TEST_F(ChartRbacTest, RolesNameWhatTheControllerIsTold) {
  for (const fs::path& values : CiValuesFiles()) {
    SCOPED_TRACE(values.filename().string());
    const std::vector<json> objects = RenderWith(values);
    const auto flags = Flags(objects);
    const std::vector<Grant> grants = Grants(objects);
    auto may = [&](const std::string& tuple, const std::string& ns, const std::string& name) {
      for (const Grant& g : grants) {
        if (g.tuple == tuple && (g.cluster_wide || g.ns == ns) && (g.names.empty() || g.names.count(name))) return true;
      }
      return false;
    };
    const std::string release_ns = kNamespace;
    const std::string slot_ns = flags.at("--load-slot-namespace");
    for (const char* verb : {"get", "update"}) {
      const std::string t = std::string(verb) + " coordination.k8s.io/leases";
      EXPECT_TRUE(may(t, release_ns, flags.at("--leader-election-id"))) << t << " of the leader Lease";
      EXPECT_TRUE(may(t, slot_ns, flags.at("--load-slot-name"))) << t << " of the load-slot Lease in " << slot_ns;
    }
    EXPECT_TRUE(may("create coordination.k8s.io/leases", slot_ns, ""));
    EXPECT_TRUE(may("get /secrets", release_ns, flags.at("--agent-token-secret")));
    for (const Grant& g : grants) {
      if (g.names.empty()) continue;
      const std::string verb = g.tuple.substr(0, g.tuple.find(' '));
      EXPECT_TRUE(verb != "create" && verb != "list" && verb != "watch" && verb != "deletecollection")
          << g.role << ": resourceNames cannot limit " << g.tuple;
    }
  }
}

// Catches: the list the chart is tested against going stale — a request
// the controller no longer makes still granted, or an operator test whose
// requests were never listed. Compares the list with what the operator's
// tests recorded in this build (run them first: ctest -L e2e); with
// FAIRBENCH_UPDATE_API_USAGE=1 it writes the list from those records.
TEST_F(ChartRbacTest, TheListIsWhatTheOperatorTestsSaw) {
  std::map<std::string, std::set<json>> seen;  // test → kinds of request
  if (fs::exists(FAIRBENCH_API_USAGE_DIR)) {
    for (const auto& e : fs::directory_iterator(FAIRBENCH_API_USAGE_DIR)) {
      const json record = json::parse(ReadFile(e.path()), nullptr, false);
      if (record.is_discarded() || !record.contains("requests")) continue;
      seen[Str(record, "test")] = std::set<json>(record["requests"].begin(), record["requests"].end());
    }
  }
  std::set<json> unreached;
  for (const Unreached& u : UnreachedRequests()) unreached.insert(u.kind);
  std::set<json> observed;
  for (const auto& [test, kinds] : seen) {
    for (const json& k : kinds) {
      if (!unreached.count(k)) observed.insert(k);
    }
  }

  const char* update = std::getenv("FAIRBENCH_UPDATE_API_USAGE");
  if (update != nullptr && std::string(update) == "1") {
    ASSERT_FALSE(seen.empty()) << "no records in " << FAIRBENCH_API_USAGE_DIR << ": run the operator tests first";
    json tests = json::array();
    for (const auto& [test, kinds] : seen) tests.push_back(test);
    // One request a line, for a reader (and a diff) of the list.
    std::ofstream out(kRoot + "/tests/chart/controller-api-usage.json");
    out << "{\n  \"description\": "
        << json(
               "What fairbench-controller asks of the Kubernetes API (kinds of request, whatever their object), as "
               "the operator's tests (tests/operator) saw it in kube-apiserver's audit log. The chart's RBAC "
               "rules must grant exactly these, plus the few requests tests/chart/chart_rbac_test.cc lists as not "
               "reached by those tests. Written by FAIRBENCH_UPDATE_API_USAGE=1 ctest -R ChartRbacTest after the "
               "operator tests ran.")
               .dump()
        << ",\n  \"user\": \"system:serviceaccount:default:fairbench-controller\",\n  \"observedIn\": [";
    for (size_t i = 0; i < tests.size(); ++i) out << (i ? ",\n    " : "\n    ") << tests[i].dump();
    out << "\n  ],\n  \"requests\": [";
    size_t i = 0;
    for (const json& k : observed) out << (i++ ? ",\n    " : "\n    ") << k.dump();
    out << "\n  ]\n}\n";
    GTEST_SKIP() << "wrote tests/chart/controller-api-usage.json from " << seen.size() << " operator tests";
  }

  const json listed = ListedUsage();
  std::set<std::string> missing_tests;
  for (const json& t : listed.value("observedIn", json::array())) {
    if (!seen.count(t.get<std::string>())) missing_tests.insert(t.get<std::string>());
  }
  for (const auto& [test, kinds] : seen) {
    bool known = false;
    for (const json& t : listed.value("observedIn", json::array())) known |= t == test;
    EXPECT_TRUE(known) << "the operator test " << test << " is not among the list's observedIn: run "
                       << "FAIRBENCH_UPDATE_API_USAGE=1 ctest -R ChartRbacTest (or delete its stale record in "
                       << FAIRBENCH_API_USAGE_DIR << ")";
  }
  if (!missing_tests.empty()) {
    std::string names;
    for (const auto& t : missing_tests) names += " " + t;
    GTEST_SKIP() << "no record of what the controllers used in" << names
                 << " in this build: run the operator tests first (ctest -L e2e)";
  }
  const std::set<json> listed_kinds(listed["requests"].begin(), listed["requests"].end());
  for (const json& k : listed_kinds) {
    EXPECT_TRUE(observed.count(k)) << "listed, but no operator test saw the controller make it: " << k.dump()
                                   << " (remove it, with its rule in charts/fairbench/templates/rbac.yaml, or move "
                                      "it to UnreachedRequests() with the path that makes it)";
  }
  for (const json& k : observed) {
    EXPECT_TRUE(listed_kinds.count(k)) << "the controller made it, but it is not listed: " << k.dump();
  }
}

}  // namespace
}  // namespace fairbench::chart_test
