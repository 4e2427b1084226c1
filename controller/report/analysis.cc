#include "controller/report/analysis.h"

#include <algorithm>
#include <cmath>

#include "api/cells.h"

namespace fairbench::report {
namespace {

void AddUnique(std::vector<std::string>& list, const std::string& name) {
  if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

}  // namespace

RunIndex::RunIndex(const RunRecord& record) : record_(record) {
  const api::BenchmarkRunSpec& spec = record.run.spec;
  for (const api::Target& t : spec.targets) AddUnique(targets_, t.name);
  for (const api::Scenario& s : spec.scenarios) {
    AddUnique(scenarios_, s.name);
    std::vector<int64_t>& levels = levels_[s.name];
    for (int64_t c : api::EffectiveSettings(spec, s).connections) levels.push_back(c);
  }
  for (const CellRecord& cell : record.cells) {
    const api::CellResult& r = cell.result;
    AddUnique(targets_, r.target);
    AddUnique(scenarios_, r.scenario);
    if (r.rate_level) {
      rate_cells_.push_back(&cell);
      continue;
    }
    levels_[r.scenario].push_back(r.connections);
    groups_[Key{r.target, r.scenario, r.connections}].push_back(&cell);
  }
  for (auto& [name, levels] : levels_) {
    std::sort(levels.begin(), levels.end());
    levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  }
  if (std::find(scenarios_.begin(), scenarios_.end(), kBaselineName) != scenarios_.end()) {
    baseline_ = std::string(kBaselineName);
  } else if (!scenarios_.empty()) {
    baseline_ = scenarios_.front();
  }
}

const std::vector<int64_t>& RunIndex::Levels(std::string_view scenario) const {
  static const std::vector<int64_t> kNone;
  const auto it = levels_.find(scenario);
  return it == levels_.end() ? kNone : it->second;
}

const api::Scenario* RunIndex::FindScenario(std::string_view scenario) const {
  for (const api::Scenario& s : record_.run.spec.scenarios) {
    if (s.name == scenario) return &s;
  }
  return nullptr;
}

const api::Target* RunIndex::FindTarget(std::string_view target) const {
  for (const api::Target& t : record_.run.spec.targets) {
    if (t.name == target) return &t;
  }
  return nullptr;
}

const std::vector<const CellRecord*>& RunIndex::Cells(std::string_view target, std::string_view scenario,
                                                      int64_t connections) const {
  static const std::vector<const CellRecord*> kNone;
  const auto it = groups_.find(Key{std::string(target), std::string(scenario), connections});
  return it == groups_.end() ? kNone : it->second;
}

const CellRecord* RunIndex::Representative(std::string_view target, std::string_view scenario,
                                           int64_t connections) const {
  std::vector<const CellRecord*> ok;
  for (const CellRecord* c : Cells(target, scenario, connections)) {
    if (c->result.state == api::CellState::kSucceeded) ok.push_back(c);
  }
  if (ok.empty()) return nullptr;
  std::stable_sort(ok.begin(), ok.end(), [](const CellRecord* a, const CellRecord* b) {
    return a->result.requests_per_second < b->result.requests_per_second;
  });
  return ok[(ok.size() - 1) / 2];
}

const CellRecord* RunIndex::Failure(std::string_view target, std::string_view scenario, int64_t connections) const {
  if (Representative(target, scenario, connections) != nullptr) return nullptr;
  const std::vector<const CellRecord*>& cells = Cells(target, scenario, connections);
  return cells.empty() ? nullptr : cells.front();
}

std::vector<std::string> RunIndex::TargetsByBaselineRank() const {
  if (baseline_.empty() || Levels(baseline_).empty()) return targets_;
  std::vector<std::string> out;
  for (const RankEntry& e : Rank(*this, baseline_, Levels(baseline_).front())) out.push_back(e.target);
  return out;
}

size_t RunIndex::MaxRepetitions() const {
  size_t most = 0;
  for (const auto& [key, cells] : groups_) most = std::max(most, cells.size());
  for (const CellRecord* c : rate_cells_) most = std::max(most, static_cast<size_t>(std::max(c->result.repetition, 1)));
  return most;
}

std::vector<RankEntry> Rank(const RunIndex& index, std::string_view scenario, int64_t connections) {
  std::vector<RankEntry> ranked, failed, missing;
  for (const std::string& t : index.targets()) {
    RankEntry e;
    e.target = t;
    e.cell = index.Representative(t, scenario, connections);
    e.failure = index.Failure(t, scenario, connections);
    (e.cell ? ranked : e.failure ? failed : missing).push_back(e);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const RankEntry& a, const RankEntry& b) {
    return a.cell->result.requests_per_second > b.cell->result.requests_per_second;
  });
  if (!ranked.empty() && ranked.front().cell->result.requests_per_second > 0) {
    const double best = ranked.front().cell->result.requests_per_second;
    for (RankEntry& e : ranked) e.share_of_best = e.cell->result.requests_per_second / best;
  }
  ranked.insert(ranked.end(), failed.begin(), failed.end());
  ranked.insert(ranked.end(), missing.begin(), missing.end());
  return ranked;
}

std::optional<double> Change(double from, double to) {
  if (!(from > 0) || !(to > 0)) return std::nullopt;
  return to / from - 1;
}

Spread ComputeSpread(std::vector<double> values) {
  Spread s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.min = values.front();
  s.max = values.back();
  const size_t mid = values.size() / 2;
  s.median = values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  if (values.size() >= 2 && s.mean != 0) {
    double squares = 0;
    for (double v : values) squares += (v - s.mean) * (v - s.mean);
    s.cv = std::sqrt(squares / static_cast<double>(values.size() - 1)) / std::fabs(s.mean);
  }
  return s;
}

std::optional<double> CpuMicrosPerRequest(const api::CellResult& r) {
  if (!r.target_cpu || r.requests_per_second <= 0) return std::nullopt;
  return *r.target_cpu / r.requests_per_second * 1e6;
}

bool ValidAtRate(const CellRecord& cell) {
  return cell.result.state == api::CellState::kSucceeded &&
         std::find(cell.flags.begin(), cell.flags.end(), CellFlag::kRateNotAchieved) == cell.flags.end();
}

std::vector<EfficiencyGroup> EfficiencyGroups(const RunIndex& index) {
  std::vector<EfficiencyGroup> groups;
  std::vector<std::vector<std::vector<const CellRecord*>>> by_target;  // group → target (index order) → cells
  for (const CellRecord* c : index.RateCells()) {
    const api::CellResult& r = c->result;
    size_t g = 0;
    while (g < groups.size() && !(groups[g].scenario == r.scenario && groups[g].connections == r.connections &&
                                  groups[g].level == *r.rate_level)) {
      ++g;
    }
    if (g == groups.size()) {
      groups.push_back(EfficiencyGroup{r.scenario, r.connections, *r.rate_level, {}});
      by_target.emplace_back(index.targets().size());
    }
    const auto t = std::find(index.targets().begin(), index.targets().end(), r.target);
    by_target[g][static_cast<size_t>(t - index.targets().begin())].push_back(c);
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<EfficiencyEntry> ranked, unranked;
    for (size_t t = 0; t < index.targets().size(); ++t) {
      const std::vector<const CellRecord*>& cells = by_target[g][t];
      if (cells.empty()) continue;
      EfficiencyEntry e;
      e.target = index.targets()[t];
      std::vector<const CellRecord*> valid;
      for (const CellRecord* c : cells) {
        if (ValidAtRate(*c)) valid.push_back(c);
      }
      e.valid = valid.size();
      if (valid.empty()) {
        double nearest = -1;
        for (const CellRecord* c : cells) {
          const api::CellResult& r = c->result;
          const double share = r.state == api::CellState::kSucceeded && r.offered_rate && *r.offered_rate > 0
                                   ? r.requests_per_second / *r.offered_rate
                                   : 0;
          if (e.invalid == nullptr || share > nearest) {
            e.invalid = c;
            nearest = share;
          }
        }
        unranked.push_back(std::move(e));
        continue;
      }
      // Cells without a CPU figure sort last; among the rest, the median.
      std::stable_sort(valid.begin(), valid.end(), [](const CellRecord* a, const CellRecord* b) {
        const auto x = CpuMicrosPerRequest(a->result), y = CpuMicrosPerRequest(b->result);
        if (x.has_value() != y.has_value()) return x.has_value();
        return x && *x < *y;
      });
      size_t with_cpu = 0;
      while (with_cpu < valid.size() && CpuMicrosPerRequest(valid[with_cpu]->result)) ++with_cpu;
      e.cell = with_cpu > 0 ? valid[(with_cpu - 1) / 2] : valid.front();
      e.cpu_us_per_request = CpuMicrosPerRequest(e.cell->result);
      ranked.push_back(std::move(e));
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const EfficiencyEntry& a, const EfficiencyEntry& b) {
      if (a.cpu_us_per_request.has_value() != b.cpu_us_per_request.has_value()) return a.cpu_us_per_request.has_value();
      return a.cpu_us_per_request && *a.cpu_us_per_request < *b.cpu_us_per_request;
    });
    groups[g].entries = std::move(ranked);
    for (EfficiencyEntry& e : unranked) groups[g].entries.push_back(std::move(e));
  }
  return groups;
}

}  // namespace fairbench::report
