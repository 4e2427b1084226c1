#include "controller/report/cell_checks.h"

#include <algorithm>
#include <cmath>

namespace fairbench::report {

void CheckCell(const api::ScenarioSettings& settings, Protocol protocol, CellRecord& cell,
               const CheckThresholds& thresholds) {
  const api::CellResult& r = cell.result;
  auto had = [&](CellFlag f) { return std::find(cell.flags.begin(), cell.flags.end(), f) != cell.flags.end(); };
  const bool had_gap = had(CellFlag::kSnapshotGap);
  const bool had_sparse_usage = had(CellFlag::kSparseUsage);
  const bool had_shared_cpus = had(CellFlag::kSharedCpus);
  cell.flags.clear();
  cell.littles_law_connections = 0;
  cell.littles_law_in_flight = 0;
  if (r.state != api::CellState::kSucceeded) return;

  const double mean_seconds = r.latency.mean / 1e6;
  if (r.requests_per_second > 0 && mean_seconds > 0) {
    cell.littles_law_connections = r.requests_per_second * mean_seconds;
  }

  const uint32_t agents = cell.agents > 0 ? cell.agents : static_cast<uint32_t>(std::max(settings.agents, 1));
  const double threads = static_cast<double>(settings.threads) * agents;
  if (r.agent_cpu && threads > 0 && *r.agent_cpu >= thresholds.generator_saturated_share * threads) {
    cell.flags.push_back(CellFlag::kGeneratorSaturated);
  }

  const int32_t per_connection = IsHttp2(protocol) ? settings.streams : settings.pipeline;
  const double in_flight = static_cast<double>(r.connections) * std::max(per_connection, 1);
  cell.littles_law_in_flight = in_flight;
  if (settings.rate == 0 && cell.littles_law_connections > 0 && in_flight > 0 &&
      std::abs(cell.littles_law_connections / in_flight - 1) > thresholds.littles_law_tolerance) {
    cell.flags.push_back(CellFlag::kLittlesLawMismatch);
  }

  if (cell.agents > 0 && static_cast<int64_t>(cell.connections_peak) < r.connections) {
    cell.flags.push_back(CellFlag::kFewerConnections);
  }
  if (had_gap) cell.flags.push_back(CellFlag::kSnapshotGap);
  if (had_sparse_usage) cell.flags.push_back(CellFlag::kSparseUsage);
  if (had_shared_cpus) cell.flags.push_back(CellFlag::kSharedCpus);

  const api::ErrorCounts& e = r.errors;
  if (e.Total() > 0) cell.flags.push_back(CellFlag::kErrors);
  const double offered = r.offered_rate.value_or(static_cast<double>(settings.rate));
  if (offered > 0 && r.requests_per_second < thresholds.offered_rate_share * offered) {
    cell.flags.push_back(CellFlag::kRateNotAchieved);
  }
  if (r.answers) {
    const api::AnswerChecks& a = *r.answers;
    if (a.content_length && a.body_bytes && *a.content_length != *a.body_bytes) {
      cell.flags.push_back(CellFlag::kContentLengthMismatch);
    }
    if (a.date_missing || a.without_date > 0) cell.flags.push_back(CellFlag::kDateMissing);
    if (a.date_frozen) cell.flags.push_back(CellFlag::kDateFrozen);
    if (a.verified == 0 && r.requests > 0) cell.flags.push_back(CellFlag::kAnswersUnsampled);
  }
}

void CheckCells(RunRecord& record, const CheckThresholds& thresholds) {
  for (CellRecord& cell : record.cells) {
    Protocol protocol = Protocol::kHttp1;
    for (const api::Target& t : record.run.spec.targets) {
      if (t.name == cell.result.target) protocol = api::EffectiveProtocol(t);
    }
    for (const api::Scenario& s : record.run.spec.scenarios) {
      if (s.name != cell.result.scenario) continue;
      CheckCell(api::EffectiveSettings(record.run.spec, s), protocol, cell, thresholds);
      break;
    }
  }
}

}  // namespace fairbench::report
