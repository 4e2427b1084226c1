#include "controller/platform/kubernetes/stats_summary.h"

#include <string>

#include "api/time_text.h"

namespace fairbench::controller::k8s {

using Json = nlohmann::json;

std::string SummaryPath(std::string_view node) {
  return "/api/v1/nodes/" + std::string(node) + "/proxy/stats/summary?only_cpu_and_memory=true";
}

Result<TargetUsage> UsageFromSummary(const Json& summary, std::string_view ns, std::string_view pod,
                                     std::string_view container) {
  const std::string where =
      "stats/summary: container " + std::string(container) + " of pod " + std::string(ns) + "/" + std::string(pod);
  if (!summary.is_object() || !summary.contains("pods") || !summary["pods"].is_array()) {
    return Status::NotFound(where + ": the summary lists no pods");
  }
  for (const Json& p : summary["pods"]) {
    if (!p.is_object() || !p.contains("podRef") || !p["podRef"].is_object()) continue;
    const Json& ref = p["podRef"];
    if (ref.value("name", "") != pod || ref.value("namespace", "") != ns) continue;
    if (!p.contains("containers") || !p["containers"].is_array()) break;
    for (const Json& c : p["containers"]) {
      if (!c.is_object() || c.value("name", "") != container) continue;
      const Json cpu = c.value("cpu", Json::object());
      const Json memory = c.value("memory", Json::object());
      if (!cpu.contains("usageCoreNanoSeconds") || !cpu["usageCoreNanoSeconds"].is_number_unsigned()) {
        return Status::Unavailable(where + ": no cpu.usageCoreNanoSeconds");
      }
      if (!memory.contains("workingSetBytes") || !memory["workingSetBytes"].is_number_unsigned()) {
        return Status::Unavailable(where + ": no memory.workingSetBytes");
      }
      std::string time_text = cpu.value("time", "");
      if (time_text.empty()) time_text = memory.value("time", "");
      auto t = api::ParseTime(time_text);
      if (!t.ok()) return Status::Unavailable(where + ": sample time: " + t.status().message());
      TargetUsage u;
      u.memory_bytes = memory["workingSetBytes"].get<uint64_t>();
      u.cpu_seconds = static_cast<double>(cpu["usageCoreNanoSeconds"].get<uint64_t>()) / 1e9;
      u.sampled_at = *t;
      return u;
    }
    break;
  }
  return Status::NotFound(where + ": not in the summary");
}

std::string CpuManagerPolicy(const Json& configz, std::string* why) {
  if (!configz.is_object() || !configz.contains("kubeletconfig") || !configz["kubeletconfig"].is_object()) {
    *why = "/configz has no kubeletconfig object";
    return "";
  }
  const Json& config = configz["kubeletconfig"];
  if (!config.contains("cpuManagerPolicy") || !config["cpuManagerPolicy"].is_string() ||
      config["cpuManagerPolicy"].get<std::string>().empty()) {
    *why = "/configz's kubeletconfig has no cpuManagerPolicy";
    return "";
  }
  return config["cpuManagerPolicy"].get<std::string>();
}

}  // namespace fairbench::controller::k8s
