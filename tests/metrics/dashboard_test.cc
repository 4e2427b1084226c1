// The Grafana dashboard (charts/fairbench/dashboards/fairbench.json): it
// parses, has the variables and panels people look for, and every series
// and label its queries name is one the controller declares. (The
// end-to-end test runs the same queries against a real Prometheus.)
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "controller/metrics/registry.h"
#include "controller/metrics/run_metrics.h"
#include "controller/metrics/self_metrics.h"

namespace fairbench::metrics {
namespace {

using nlohmann::json;

json Dashboard() {
  std::ifstream in(FAIRBENCH_DASHBOARD);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str(), nullptr, false);
}

// Every series name the controller exports, with the labels it carries.
std::map<std::string, std::set<std::string>> Exported() {
  MetricRegistry registry;
  RunMetrics run(registry, RunMetricsOptions{});
  RegisterSelfMetrics(registry, "test", nullptr);
  std::map<std::string, std::set<std::string>> out;
  for (const MetricFamily& f : registry.Collect()) {
    std::set<std::string> labels(f.label_names.begin(), f.label_names.end());
    labels.insert({"job", "instance"});  // added by the scrape
    if (f.type == MetricType::kHistogram) {
      out[f.name + "_sum"] = labels;
      out[f.name + "_count"] = labels;
      labels.insert("le");
      out[f.name + "_bucket"] = labels;
    } else {
      out[f.name] = labels;
    }
  }
  return out;
}

std::vector<std::string> Queries(const json& d) {
  std::vector<std::string> out;
  for (const json& p : d["panels"]) {
    if (!p.contains("targets")) continue;
    for (const json& t : p["targets"]) out.push_back(t["expr"].get<std::string>());
  }
  for (const json& v : d["templating"]["list"]) {
    if (v["type"] == "query") out.push_back(v["query"]["query"].get<std::string>());
  }
  return out;
}

TEST(DashboardTest, ParsesWithRunAndTargetVariables) {
  const json d = Dashboard();
  ASSERT_FALSE(d.is_discarded()) << FAIRBENCH_DASHBOARD << " is not JSON";
  EXPECT_EQ(d["uid"], "fairbench");
  std::set<std::string> vars;
  for (const json& v : d["templating"]["list"]) vars.insert(v["name"].get<std::string>());
  EXPECT_TRUE(vars.count("run"));
  EXPECT_TRUE(vars.count("target"));
  EXPECT_TRUE(vars.count("datasource"));
  std::set<int> ids;
  for (const json& p : d["panels"]) EXPECT_TRUE(ids.insert(p["id"].get<int>()).second) << "panel ids are unique";
}

TEST(DashboardTest, ShowsThroughputLatencyErrorsAndTargetMemory) {
  std::string all;
  for (const std::string& q : Queries(Dashboard())) all += q + "\n";
  for (const char* name :
       {"fairbench_requests_per_second", "fairbench_request_duration_percentile_seconds",
        "fairbench_request_duration_seconds_bucket", "fairbench_errors_total", "fairbench_target_memory_bytes"}) {
    EXPECT_NE(all.find(name), std::string::npos) << name;
  }
}

TEST(DashboardTest, EveryQueryNamesExportedSeriesAndLabels) {
  const auto exported = Exported();
  static const std::regex selector(R"(\b((?:fairbench|process)_[a-zA-Z0-9_]+)(\{([^}]*)\})?)");
  static const std::regex matcher(R"(([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=))");
  size_t names = 0;
  for (const std::string& q : Queries(Dashboard())) {
    bool any = false;
    for (auto it = std::sregex_iterator(q.begin(), q.end(), selector); it != std::sregex_iterator(); ++it) {
      any = true;
      ++names;
      const std::string name = (*it)[1];
      const auto e = exported.find(name);
      ASSERT_NE(e, exported.end()) << name << " in '" << q << "' is not exported";
      const std::string matchers = (*it)[3];
      for (auto m = std::sregex_iterator(matchers.begin(), matchers.end(), matcher); m != std::sregex_iterator(); ++m) {
        EXPECT_TRUE(e->second.count((*m)[1])) << name << " has no label " << (*m)[1] << " ('" << q << "')";
      }
    }
    EXPECT_TRUE(any) << "'" << q << "' names no fairbench series";
  }
  EXPECT_GT(names, 20u);
}

}  // namespace
}  // namespace fairbench::metrics
