// Shared set-up of the chart's tests: helm and kubectl found as the other
// Kubernetes tests find kubectl (PATH, else .tools/bin), run with a home,
// cache and config of their own in a temporary folder, and rendered
// manifests parsed into objects.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller/kube/exec_credential.h"
#include "testing/kubetest/yaml_json.h"
#include "testing/support/bin_dir.h"
#include "testing/support/kube_cluster.h"
#include "testing/support/temp_dir.h"

namespace fairbench::chart_test {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

inline const std::string kRoot = FAIRBENCH_SOURCE_DIR;
inline const std::string kChart = kRoot + "/charts/fairbench";
// The release the chart's default render (and manifests/) is made as.
inline constexpr char kRelease[] = "fairbench";
inline constexpr char kNamespace[] = "fairbench";

inline std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// charts/fairbench/ci/*-values.yaml, in name order.
inline std::vector<fs::path> CiValuesFiles() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kChart + "/ci")) {
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The objects of a multi-document YAML stream (empty documents dropped).
inline std::vector<json> Documents(const std::string& text) {
  std::vector<json> out;
  std::vector<std::string> docs(1);
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line == "---" || line.rfind("--- ", 0) == 0) {
      docs.emplace_back();
    } else {
      docs.back() += line + "\n";
    }
  }
  for (const auto& d : docs) {
    auto j = kubetest::YamlToJson(d);
    EXPECT_TRUE(j.ok()) << j.status().ToString() << "\n" << d.substr(0, 400);
    if (j.ok() && j->is_object()) out.push_back(std::move(*j));
  }
  return out;
}

inline std::string Str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// "Kind namespace/name", or "Kind name" for cluster-scoped objects.
inline std::string Key(const json& o) {
  const json& md = o.value("metadata", json::object());
  const std::string ns = Str(md, "namespace");
  return Str(o, "kind") + " " + (ns.empty() ? "" : ns + "/") + Str(md, "name");
}

inline const json* Find(const std::vector<json>& objects, const std::string& kind, const std::string& name = "") {
  for (const json& o : objects) {
    if (Str(o, "kind") == kind && (name.empty() || Str(o["metadata"], "name") == name)) return &o;
  }
  return nullptr;
}

inline std::vector<const json*> FindAll(const std::vector<json>& objects, const std::string& kind) {
  std::vector<const json*> out;
  for (const json& o : objects) {
    if (Str(o, "kind") == kind) out.push_back(&o);
  }
  return out;
}

class ChartTestBase : public ::testing::Test {
 protected:
  // helm and kubectl: the ones built with Kubernetes' control plane
  // (scripts/kube build), within its version skew.
  void SetUp() override {
    auto bin = testing::KubeBinDir();
    ASSERT_TRUE(bin.ok()) << bin.status().ToString();
    helm_ = *bin + "/helm";
    kubectl_ = *bin + "/kubectl";
    auto dir = testing::TempDir::Create("fairbench-chart");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
  }

  fs::path root() const { return dir_->path(); }

  kube::CommandResult Run(const std::string& tool, const std::vector<std::string>& args) {
    const std::string home = root().string();
    auto r = kube::RunCommand(tool, args,
                              {{"HOME", home},
                               {"HELM_CACHE_HOME", home + "/helm-cache"},
                               {"HELM_CONFIG_HOME", home + "/helm-config"},
                               {"HELM_DATA_HOME", home + "/helm-data"},
                               {"KUBECONFIG", kubeconfig_}},
                              60s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : kube::CommandResult{};
  }
  kube::CommandResult Helm(const std::vector<std::string>& args) { return Run(helm_, args); }
  kube::CommandResult Kubectl(std::vector<std::string> args) {
    args.insert(args.begin(), {"--cache-dir", (root() / "kube-cache").string()});
    return Run(kubectl_, args);
  }

  // `helm template` of the chart as release fairbench in namespace
  // fairbench, with `args` (values files, --set, --include-crds …).
  std::string RenderText(std::vector<std::string> args = {}) {
    args.insert(args.begin(), {"template", kRelease, kChart, "--namespace", kNamespace});
    const auto r = Helm(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  std::vector<json> Render(std::vector<std::string> args = {}) { return Documents(RenderText(std::move(args))); }
  std::vector<json> RenderWith(const fs::path& values_file) { return Render({"--values", values_file.string()}); }

  std::string helm_;
  std::string kubectl_;
  std::string kubeconfig_ = "/nonexistent";  // helm template needs no cluster
  std::optional<testing::TempDir> dir_;
};

}  // namespace fairbench::chart_test
