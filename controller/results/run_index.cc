#include "controller/results/run_index.h"

#include "api/quantity.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "api/cpu_list.h"
#include "controller/store/configmap_run_store.h"

namespace fairbench::results {
namespace {

int64_t Nanos(const api::Time& t) { return t.time_since_epoch().count(); }

std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// The facts of the fingerprint, in a fixed order (the JSON object's order
// is the hash's input order).
nlohmann::ordered_json FingerprintFacts(const report::Environment& e) {
  nlohmann::ordered_json facts;
  facts["platform"] = e.platform;
  facts["cpuModel"] = e.cpu_model;
  facts["cpus"] = e.cpus;
  facts["kernel"] = e.kernel;
  facts["targetCpus"] = api::FormatCpuList(api::CpuList{e.target_cpus});
  facts["agentCpus"] = api::FormatCpuList(api::CpuList{e.agent_cpus});
  return facts;
}

}  // namespace

std::string EnvironmentFingerprint(const report::Environment& environment) {
  return controller::Sha256Hex(FingerprintFacts(environment).dump());
}

RunIndex IndexRun(const report::RunRecord& record, const std::string& canonical_text) {
  const api::BenchmarkRun& run = record.run;
  RunIndex x;
  x.content_sha256 = controller::Sha256Hex(canonical_text);
  x.name = run.metadata.name;
  x.uid = run.metadata.uid;
  x.ns = run.metadata.namespace_;
  if (run.status.phase) x.phase = std::string(api::ToString(*run.status.phase));
  if (run.status.start_time) x.start_ns = Nanos(*run.status.start_time);
  if (run.status.completion_time) x.end_ns = Nanos(*run.status.completion_time);
  if (!x.start_ns) {
    x.key = "sha256:" + x.content_sha256;
  } else if (!x.uid.empty()) {
    x.key = "uid:" + x.uid + "@" + std::to_string(*x.start_ns);
  } else {
    x.key = "name:" + x.ns + "/" + x.name + "@" + std::to_string(*x.start_ns);
  }
  x.platform = record.environment.platform;
  x.fingerprint = EnvironmentFingerprint(record.environment);
  x.environment_json = FingerprintFacts(record.environment).dump();
  x.labels_json = nlohmann::json(run.metadata.labels).dump();  // std::map: keys sorted
  x.fairbench_version = record.environment.fairbench_version;
  x.cells_total = run.status.progress.total;

  for (const api::Target& t : run.spec.targets) {
    TargetRow row;
    row.name = t.name;
    row.image = t.image;
    if (t.local) row.command = Join(t.local->command, " ");
    const std::string prefix = "target " + t.name + " ";
    const std::string prefix_colon = "target " + t.name + ":";
    for (const std::string& note : record.environment.notes) {
      if (note.starts_with(prefix) || note.starts_with(prefix_colon)) row.facts.push_back(note);
      const std::string identity = prefix_colon + " identity: ";
      if (note.starts_with(identity) && !note.starts_with(identity + "unknown"))
        row.identity = note.substr(identity.size());
    }
    x.targets.push_back(std::move(row));
  }

  int32_t position = 0;
  for (const report::CellRecord& c : record.cells) {
    const api::CellResult& r = c.result;
    CellRow row;
    row.position = position++;
    row.target = r.target;
    row.scenario = r.scenario;
    row.connections = r.connections;
    row.rate = SeriesRate(run.spec, r);
    row.repetition = r.repetition;
    row.state = std::string(api::ToString(r.state));
    row.requests_per_second = r.requests_per_second;
    row.p50_us = r.latency.p50;
    row.p90_us = r.latency.p90;
    row.p99_us = r.latency.p99;
    row.p999_us = r.latency.p999;
    row.errors_total = r.errors.Total();
    if (r.target_cpu && r.requests_per_second > 0) row.cpu_us_per_request = *r.target_cpu / r.requests_per_second * 1e6;
    row.memory_loaded_bytes = r.memory_loaded;
    std::vector<std::string> flags;
    for (report::CellFlag f : c.flags) flags.emplace_back(report::FlagName(f));
    row.flags = Join(flags, ",");
    x.cells.push_back(std::move(row));
  }
  return x;
}

int64_t SeriesRate(const api::BenchmarkRunSpec& spec, const api::CellResult& cell) {
  if (!cell.rate_level) return spec.load.rate;
  return cell.rate_level->is_share() ? -int64_t{cell.rate_level->percent} : cell.rate_level->per_second;
}

std::string SeriesRateText(int64_t rate) {
  if (rate > 0) return std::to_string(rate) + " requests/s";
  if (rate < 0) return std::to_string(-rate) + " % of capacity";
  return "";
}

Result<int64_t> ParseSeriesRate(std::string_view text) {
  if (text.empty() || text == "0") return int64_t{0};
  Result<api::RateLevel> level = api::ParseRateLevel(text);
  if (!level.ok()) return level.status();
  return level->is_share() ? -int64_t{level->percent} : level->per_second;
}

}  // namespace fairbench::results
