#include "controller/report/limiter.h"

#include <algorithm>
#include <map>
#include <set>

#include "api/cpu_list.h"
#include "api/quantity.h"
#include "controller/report/format.h"

namespace fairbench::report {
namespace {

std::string CpuCount(size_t n) { return std::to_string(n) + (n == 1 ? " CPU" : " CPUs"); }
std::string Cores(double cores) { return FormatDecimal(cores, 2) + " cores"; }

// The CPUs a view lists; empty when it lists none or cannot be parsed.
std::vector<int> CpusOf(const CpuView& v) {
  auto list = api::ParseCpuList(v.cpus);
  return list.ok() ? list->cpus : std::vector<int>{};
}

bool QuotaRead(const CpuView& v) {
  return std::none_of(v.unread.begin(), v.unread.end(),
                      [](const std::string& u) { return u.rfind("cpu quota", 0) == 0; });
}

Ceiling TargetCeiling(const std::optional<CpuView>& view) {
  if (!view) return {};
  const size_t n = CpusOf(*view).size();
  if (view->cpu_quota && (n == 0 || *view->cpu_quota < static_cast<double>(n))) {
    const auto millicores = static_cast<int64_t>(std::llround(*view->cpu_quota * 1000));
    return {*view->cpu_quota, n > 0, "its CPU quota of " + api::FormatCpu(api::CpuQuantity{millicores})};
  }
  if (n == 0) return {};
  return {static_cast<double>(n), QuotaRead(*view), "its " + CpuCount(n) + " (" + view->cpus + ")"};
}

Ceiling GeneratorCeiling(const api::ScenarioSettings& settings, int64_t connections,
                         const std::vector<std::optional<CpuView>>& agents) {
  const int32_t count = std::max(settings.agents, 1);
  const std::vector<int64_t> split = api::SplitEvenly(connections, count);
  std::vector<double> threads;
  double threads_total = 0;
  for (int32_t i = 0; i < count; ++i) {
    const int64_t per = i < static_cast<int32_t>(split.size()) ? split[static_cast<size_t>(i)] : 0;
    threads.push_back(static_cast<double>(std::max<int64_t>(std::min<int64_t>(settings.threads, per), 1)));
    threads_total += threads.back();
  }
  const Ceiling by_threads{threads_total, false,
                           "their " + FormatCount(threads_total) + (threads_total == 1 ? " thread" : " threads")};
  if (agents.size() < static_cast<size_t>(count)) return by_threads;
  struct Machine {
    std::set<int> cpus;
    double allowed = 0;  // Σ min(threads, CPUs, quota)
    bool quotas_read = true;
  };
  std::map<std::string, Machine> machines;
  for (int32_t i = 0; i < count; ++i) {
    const std::optional<CpuView>& v = agents[static_cast<size_t>(i)];
    if (!v || v->boot_id.empty()) return by_threads;
    const std::vector<int> cpus = CpusOf(*v);
    if (cpus.empty()) return by_threads;
    Machine& m = machines[v->boot_id];
    m.cpus.insert(cpus.begin(), cpus.end());
    double allowed = std::min(threads[static_cast<size_t>(i)], static_cast<double>(cpus.size()));
    if (v->cpu_quota) allowed = std::min(allowed, *v->cpu_quota);
    m.allowed += allowed;
    m.quotas_read = m.quotas_read && QuotaRead(*v);
  }
  double total = 0;
  bool exact = true, cpu_bound = true;
  std::string cpu_text;
  for (const auto& [boot_id, m] : machines) {
    const auto cpus = static_cast<double>(m.cpus.size());
    total += std::min(m.allowed, cpus);
    exact = exact && m.quotas_read;
    cpu_bound = cpu_bound && m.allowed >= cpus;
    cpu_text += (cpu_text.empty() ? "" : ", ") +
                api::FormatCpuList(api::CpuList{std::vector<int>(m.cpus.begin(), m.cpus.end())});
  }
  if (total == threads_total) return {total, exact, by_threads.text};
  if (cpu_bound && machines.size() == 1) {
    return {total, exact, "their " + CpuCount(static_cast<size_t>(total)) + " (" + cpu_text + ")"};
  }
  return {total, exact, "the " + Cores(total) + " their threads, CPUs and quotas allow"};
}

struct Saturation {
  api::LimiterKind kind;
  std::string text;
};

std::string ErrorsText(const api::ErrorCounts& e) {
  std::string out;
  auto add = [&](uint64_t n, const char* one, const char* many) {
    if (n > 0) out += (out.empty() ? "" : ", ") + FormatCount(static_cast<double>(n)) + " " + (n == 1 ? one : many);
  };
  add(e.timeout, "timeout", "timeouts");
  add(e.connect, "connect error", "connect errors");
  add(e.read, "read error", "read errors");
  add(e.write, "write error", "write errors");
  add(e.status, "unexpected status", "unexpected statuses");
  add(e.port_exhaustion, "port exhaustion", "port exhaustions");
  add(e.handshake, "failed TLS handshake", "failed TLS handshakes");
  add(e.goaway + e.rst_stream + e.h2_protocol, "HTTP/2 stream error", "HTTP/2 stream errors");
  add(e.script, "script error", "script errors");
  add(e.grpc_protocol, "gRPC protocol error", "gRPC protocol errors");
  return out;
}

std::string Use(double used, const Ceiling& c) {
  return Cores(used) + " of " + (c.value > 0 ? c.text : "an unknown ceiling");
}

}  // namespace

LimiterContext LimiterContextFor(const api::ScenarioSettings& settings, int64_t connections,
                                 const std::optional<CpuView>& target,
                                 const std::vector<std::optional<CpuView>>& agents) {
  LimiterContext c;
  c.rate = settings.rate;
  c.target_cpu = TargetCeiling(target);
  c.generator_cpu = GeneratorCeiling(settings, connections, agents);
  if (target && target->memory_limit) c.memory_limit = target->memory_limit;
  return c;
}

namespace {

// The ceilings the cell reached (errors count as one), the first one named
// as the limiter; nullopt when nothing reached its ceiling.
std::optional<api::Limiter> SaturatedLimiter(const api::CellResult& r, const LimiterContext& ctx,
                                             const LimiterThresholds& th, bool has_target_cpu, double target_used) {
  std::vector<Saturation> saturated;
  const uint64_t errors = r.errors.Total();
  const uint64_t attempted = r.requests + errors - std::min(errors, r.errors.status);
  if (errors > 0 && attempted > 0 && static_cast<double>(errors) >= th.error_share * static_cast<double>(attempted)) {
    saturated.push_back(
        {api::LimiterKind::kErrors, FormatCount(static_cast<double>(errors)) + " of " +
                                        FormatCount(static_cast<double>(attempted)) + " requests attempted failed (" +
                                        FormatShare(static_cast<double>(errors) / static_cast<double>(attempted)) +
                                        "): " + ErrorsText(r.errors)});
  }
  const Ceiling& gen = ctx.generator_cpu;
  if (r.agent_cpu && gen.value > 0 && *r.agent_cpu >= th.saturated * gen.value) {
    saturated.push_back({api::LimiterKind::kGeneratorCpu, "agents' CPU " + Use(*r.agent_cpu, gen)});
  }
  const Ceiling& tgt = ctx.target_cpu;
  if (has_target_cpu && tgt.value > 0 && target_used >= th.saturated * tgt.value) {
    saturated.push_back({api::LimiterKind::kTargetCpu, "target CPU " + Use(target_used, tgt)});
  }
  if (r.memory_loaded && ctx.memory_limit && *ctx.memory_limit > 0 &&
      static_cast<double>(*r.memory_loaded) >= th.saturated * static_cast<double>(*ctx.memory_limit)) {
    saturated.push_back({api::LimiterKind::kMemoryLimit,
                         "target memory " + FormatBytes(static_cast<double>(*r.memory_loaded)) + " of its " +
                             FormatBytes(static_cast<double>(*ctx.memory_limit)) + " limit"});
  }
  if (saturated.empty()) return std::nullopt;
  std::string text = saturated.front().text;
  for (size_t i = 1; i < saturated.size(); ++i) text += (i == 1 ? "; also " : ", ") + saturated[i].text;
  return api::Limiter{saturated.front().kind, text + "."};
}

// What the target and the agents used of their CPU ceilings, for the evidence.
std::string HeadroomText(const api::CellResult& r, const LimiterContext& ctx, bool sparse, bool has_target_cpu,
                         double target_used) {
  std::string headroom;
  auto add_headroom = [&](const std::string& part) { headroom += (headroom.empty() ? "" : ", ") + part; };
  add_headroom(has_target_cpu ? "the target used " + Use(target_used, ctx.target_cpu)
                              : std::string(sparse ? "the target's CPU rests on too few samples"
                                                   : "the target's CPU was not measured"));
  add_headroom(r.agent_cpu ? "the agents " + Use(*r.agent_cpu, ctx.generator_cpu) : "the agents' CPU was not measured");
  return headroom;
}

// Little's law applied to the cell: whether every connection was busy, and
// the sum that says so.
struct BusyConnections {
  bool all_busy = false;
  std::string text;
};

BusyConnections LittlesLaw(const CellRecord& cell, const LimiterThresholds& th) {
  const api::CellResult& r = cell.result;
  const double in_flight = cell.littles_law_in_flight;
  const double littles = cell.littles_law_connections;
  const bool known = in_flight > 0 && littles > 0;
  const double busy = known ? littles / in_flight : 0;
  const bool all_busy = known && busy >= th.busy && busy <= th.busy_high;
  const std::string carried =
      FormatCount(in_flight) +
      (in_flight == static_cast<double>(r.connections)
           ? (r.connections == 1 ? " connection" : " connections")
           : " in flight on " + FormatCount(static_cast<double>(r.connections)) + " connections");
  return {all_busy, known ? FormatRate(r.requests_per_second) + " requests/s × " + FormatLatency(r.latency.mean) +
                                " mean latency = " + FormatDecimal(littles, 1) + " requests in flight for " + carried
                          : "Little's law could not be applied (no rate or no latency)"};
}

// Why every connection busy does not prove the connections set the rate, or
// nullopt when the headroom proves it. Connections needs room to double on
// both sides: each CPU measured against an exact ceiling, below half of it,
// on CPUs not shared.
std::optional<std::string> ConnectionsUnproven(const CellRecord& cell, const LimiterContext& ctx,
                                               const LimiterThresholds& th, bool has_target_cpu, double target_used,
                                               const std::string& headroom) {
  const api::CellResult& r = cell.result;
  const Ceiling& gen = ctx.generator_cpu;
  const Ceiling& tgt = ctx.target_cpu;
  const bool shared = std::find(cell.flags.begin(), cell.flags.end(), CellFlag::kSharedCpus) != cell.flags.end();
  std::vector<std::string> unproven, no_room;
  if (!has_target_cpu || tgt.value <= 0 || !tgt.exact || shared) {
    unproven.push_back("the target's");
  } else if (target_used >= th.headroom * tgt.value) {
    no_room.push_back("the target");
  }
  if (!r.agent_cpu || gen.value <= 0 || !gen.exact) {
    unproven.push_back("the agents'");
  } else if (*r.agent_cpu >= th.headroom * gen.value) {
    no_room.push_back("the agents");
  }
  auto both = [](const std::vector<std::string>& v) { return v.size() == 2 ? v[0] + " and " + v[1] : v[0]; };
  if (!unproven.empty()) {
    return both(unproven) + " CPU headroom is not known" + (shared ? " (its CPUs were shared)" : "") + ": " + headroom;
  }
  if (!no_room.empty()) {
    const bool one_target = no_room.size() == 1 && no_room[0] == "the target";
    return both(no_room) + " used more than " + FormatShare(th.headroom, 0) + " of " +
           (one_target ? "its CPU ceiling" : "their CPU ceilings") + ", below yet without room to double: " + headroom;
  }
  return std::nullopt;
}

// A fixed-rate cell with nothing at its ceiling: it got the rate offered, or
// the connections (or something unknown) held it below.
api::Limiter FixedRateLimiter(const api::CellResult& r, const LimiterContext& ctx, const LimiterThresholds& th,
                              const BusyConnections& busy, const std::string& headroom,
                              const std::optional<std::string>& unproven) {
  const double achieved = r.requests_per_second / static_cast<double>(ctx.rate);
  const std::string rate_text = FormatRate(r.requests_per_second) + " of the " +
                                FormatRate(static_cast<double>(ctx.rate)) + " requests/s offered (" +
                                FormatShare(achieved) + ")";
  if (achieved >= th.offered_share) {
    return api::Limiter{api::LimiterKind::kOfferedRate,
                        "achieved " + rate_text + " with nothing at its ceiling: " + headroom + "."};
  }
  if (!busy.all_busy) {
    return api::Limiter{api::LimiterKind::kUnknown, "only " + rate_text +
                                                        " achieved, yet nothing measured was at its ceiling and "
                                                        "not every connection was busy (" +
                                                        busy.text + "); " + headroom + "."};
  }
  if (unproven) {
    return api::Limiter{api::LimiterKind::kUnknown, "only " + rate_text + " achieved with every connection busy (" +
                                                        busy.text + "), but " + *unproven + "."};
  }
  return api::Limiter{api::LimiterKind::kConnections, "every connection busy (" + busy.text + ") and only " +
                                                          rate_text + " achieved while " + headroom + "."};
}

}  // namespace

std::optional<api::Limiter> JudgeLimiter(const CellRecord& cell, const LimiterContext& ctx,
                                         const LimiterThresholds& th) {
  const api::CellResult& r = cell.result;
  if (r.state != api::CellState::kSucceeded) return std::nullopt;
  const bool sparse = std::find(cell.flags.begin(), cell.flags.end(), CellFlag::kSparseUsage) != cell.flags.end();
  // A plain pair rather than an optional: GCC's -Wmaybe-uninitialized
  // misreads the optional's copy below.
  const bool has_target_cpu = !sparse && r.target_cpu.has_value();
  const double target_used = has_target_cpu ? *r.target_cpu : 0.0;
  if (auto limiter = SaturatedLimiter(r, ctx, th, has_target_cpu, target_used)) return limiter;

  // Nothing at its ceiling. What the rest of the machine had, for the evidence.
  const std::string headroom = HeadroomText(r, ctx, sparse, has_target_cpu, target_used);
  const BusyConnections busy = LittlesLaw(cell, th);
  const std::optional<std::string> unproven = ConnectionsUnproven(cell, ctx, th, has_target_cpu, target_used, headroom);
  if (ctx.rate > 0) return FixedRateLimiter(r, ctx, th, busy, headroom, unproven);

  if (!busy.all_busy) {
    return api::Limiter{api::LimiterKind::kUnknown,
                        "nothing measured was at its ceiling, and Little's law does not show every connection "
                        "busy (" +
                            busy.text + "); " + headroom + "."};
  }
  if (unproven) {
    return api::Limiter{api::LimiterKind::kUnknown,
                        "every connection busy (" + busy.text + "), but " + *unproven + "."};
  }
  // What the target spent of each request's time on its CPU: the rest it
  // waited (on a fixed delay, a lock, its own workers), which decides
  // whether more connections would carry more — the evidence says so
  // rather than guess.
  const double cpu_per_request_us = target_used / r.requests_per_second * 1e6;
  return api::Limiter{api::LimiterKind::kConnections,
                      "every connection busy (" + busy.text + ") while " + headroom +
                          ", under half of each ceiling: the rate is what the connections carried, and of each "
                          "request's " +
                          FormatLatency(r.latency.mean) + " the target spent " + FormatLatency(cpu_per_request_us) +
                          " on its CPU; the rest it waited (on a delay, a lock or its own workers)."};
}

}  // namespace fairbench::report
