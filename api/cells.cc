#include "api/cells.h"

#include <random>

namespace fairbench::api {
namespace {

const std::vector<int64_t>& Levels(const BenchmarkRunSpec& spec, const Scenario& scenario) {
  return scenario.connections.empty() ? spec.load.connections : scenario.connections;
}

// What each connection level of `scenario` is measured at, in run order:
// a closed loop alone; or its rates, after a closed loop when one of them
// is a share of the capacity that loop measures.
std::vector<std::optional<RateLevel>> RateSteps(const Scenario& scenario) {
  if (scenario.rates.empty()) return {std::nullopt};
  std::vector<std::optional<RateLevel>> steps;
  for (const RateLevel& r : scenario.rates) {
    if (r.is_share()) {
      steps.push_back(std::nullopt);
      break;
    }
  }
  for (const RateLevel& r : scenario.rates) steps.push_back(r);
  return steps;
}

}  // namespace

std::string Cell::Key() const {
  std::string key = target + "/" + scenario + "/c" + std::to_string(connections);
  if (rate)
    key += rate->is_share() ? "/q" + std::to_string(rate->percent) + "pct" : "/q" + std::to_string(rate->per_second);
  return key + "/r" + std::to_string(repetition);
}

bool Cell::Matches(const CellResult& r) const {
  return r.target == target && r.scenario == scenario && r.connections == connections && r.rate_level == rate &&
         r.repetition == repetition;
}

Cell CellOf(const CellResult& result) {
  Cell c;
  c.target = result.target;
  c.scenario = result.scenario;
  c.connections = result.connections;
  c.rate = result.rate_level;
  c.repetition = result.repetition;
  return c;
}

Cell CellOf(const CurrentCell& current) {
  Cell c;
  c.target = current.target;
  c.scenario = current.scenario;
  c.connections = current.connections;
  c.rate = current.rate_level;
  c.repetition = current.repetition;
  return c;
}

std::vector<Cell> ExpandCells(const BenchmarkRunSpec& spec) {
  std::vector<Cell> cells;
  cells.reserve(CountCells(spec));
  for (size_t t = 0; t < spec.targets.size(); ++t) {
    for (size_t s = 0; s < spec.scenarios.size(); ++s) {
      const Scenario& scenario = spec.scenarios[s];
      for (const int64_t connections : Levels(spec, scenario)) {
        for (const std::optional<RateLevel>& rate : RateSteps(scenario)) {
          for (int32_t r = 1; r <= spec.repetitions; ++r) {
            Cell c;
            c.index = cells.size();
            c.target_index = t;
            c.scenario_index = s;
            c.target = spec.targets[t].name;
            c.scenario = scenario.name;
            c.connections = connections;
            c.rate = rate;
            c.repetition = r;
            cells.push_back(std::move(c));
          }
        }
      }
    }
  }
  return cells;
}

std::vector<std::vector<size_t>> TargetRounds(const BenchmarkRunSpec& spec, RepetitionOrder order, int64_t seed) {
  std::vector<size_t> in_spec_order(spec.targets.size());
  for (size_t t = 0; t < in_spec_order.size(); ++t) in_spec_order[t] = t;
  if (order == RepetitionOrder::kSequential) return {in_spec_order};
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  std::vector<std::vector<size_t>> rounds;
  for (int32_t r = 0; r < spec.repetitions; ++r) {
    std::vector<size_t> round = in_spec_order;
    for (size_t i = round.size(); i > 1; --i) std::swap(round[i - 1], round[rng() % i]);
    rounds.push_back(std::move(round));
  }
  return rounds;
}

size_t CountCells(const BenchmarkRunSpec& spec) {
  size_t per_target = 0;
  for (const Scenario& s : spec.scenarios) per_target += Levels(spec, s).size() * RateSteps(s).size();
  const size_t repetitions = spec.repetitions > 0 ? static_cast<size_t>(spec.repetitions) : 0;
  return spec.targets.size() * per_target * repetitions;
}

Readiness EffectiveReadiness(const Target& target) {
  if (target.readiness) return *target.readiness;
  Readiness r;
  if (target.local) {
    r.path = target.local->ready_path;
    r.timeout = target.local->ready_timeout;
  }
  return r;
}

ScenarioSettings EffectiveSettings(const BenchmarkRunSpec& spec, const Scenario& scenario) {
  ScenarioSettings s;
  if (scenario.request) {
    s.requests.push_back(WeightedRequest{*scenario.request, 1});
  } else {
    s.requests = scenario.requests;
  }
  if (scenario.script) {
    s.script = ScenarioScript{scenario.script->Name(scenario.name), scenario.script->Text(), scenario.script->args};
  }
  s.grpc = scenario.grpc;
  s.expect = scenario.expect;
  if (scenario.vary) {
    s.vary = scenario.vary;
    if (!s.vary->seed) s.vary->seed = spec.seed.value_or(kDefaultVarySeed);
  }
  s.connections = Levels(spec, scenario);
  s.duration = scenario.duration.value_or(spec.load.duration);
  s.warmup = spec.load.warmup;
  s.timeout = spec.load.timeout;
  s.cooldown = spec.cooldown;
  s.threads = spec.load.threads;
  s.pipeline = spec.load.pipeline;
  s.streams = spec.load.streams.value_or(1);
  s.agents = spec.load.agents;
  s.keep_alive = spec.load.keep_alive;
  s.rate = spec.load.rate;
  s.idle_wait = spec.load.idle_wait.value_or(IdleWaitMode::kAuto);
  return s;
}

Protocol EffectiveProtocol(const Target& target) { return target.protocol.value_or(Protocol::kHttp1); }

std::vector<int64_t> SplitEvenly(int64_t total, int32_t parts) {
  if (parts <= 0) return {};
  std::vector<int64_t> out(static_cast<size_t>(parts), total / parts);
  const int64_t rest = total % parts;
  for (int64_t i = 0; i < rest; ++i) ++out[static_cast<size_t>(i)];
  return out;
}

std::string SubstitutePort(std::string_view text, int32_t port) {
  static constexpr std::string_view kPlaceholder = "{port}";
  std::string out;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(kPlaceholder, start);
    if (at == std::string_view::npos) break;
    out.append(text.substr(start, at - start));
    out += std::to_string(port);
    start = at + kPlaceholder.size();
  }
  out.append(text.substr(start));
  return out;
}

const CellResult* CapacityResult(const BenchmarkRunStatus& status, const Cell& cell) {
  Cell closed = cell;
  closed.rate.reset();
  return FindResult(status, closed);
}

const CellResult* FindResult(const BenchmarkRunStatus& status, const Cell& cell) {
  for (const CellResult& r : status.results) {
    if (cell.Matches(r)) return &r;
  }
  return nullptr;
}

bool IsProfiled(const BenchmarkRunSpec& spec, const Cell& cell) {
  if (!spec.profile.has_value()) return false;
  if (spec.profile->all) return true;
  for (const ProfileCell& c : spec.profile->cells) {
    if ((c.target.empty() || c.target == cell.target) && (c.scenario.empty() || c.scenario == cell.scenario) &&
        (c.connections == 0 || c.connections == cell.connections)) {
      return true;
    }
  }
  return false;
}

}  // namespace fairbench::api
