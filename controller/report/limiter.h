// Limiter: "why not double?" — what limited a cell's throughput, judged
// from what the cell measured and the ceilings the kernel reported, with
// the numbers as evidence. Never a guess: a verdict names a resource only
// when a measurement shows it at its ceiling (or, for Connections and
// OfferedRate, shows every other resource below its own); otherwise the
// verdict is Unknown and the evidence says what was missing.
//
// Ceilings (LimiterContextFor):
//   target CPU     the fewer of its CFS quota and the CPUs it may run on
//                  (its CpuView). Exact only when both were read; a view
//                  that could not read the quota gives the CPUs as an upper
//                  bound, against which saturation — not headroom — can be
//                  shown.
//   generator CPU  per machine (agents with one boot id), the fewer of the
//                  CPUs their lists cover together and the sum over them of
//                  min(threads, CPUs, quota); threads are capped at an
//                  agent's connections, as BuildCellJobs does. Summed over
//                  machines. An agent that did not say leaves the threads'
//                  count as an upper bound.
//   memory         the target's memory limit (bytes), when it has one.
//
// Rules (LimiterThresholds, defaults in brackets), in the order that picks
// the verdict when several hold — the others are named in the evidence
// ("…; also …"):
//   Errors        errors ≥ [1 %] of the requests attempted (the rate counts
//                 failures, or connections waited out timeouts).
//   GeneratorCpu  the agents' CPU ≥ [90 %] of their ceiling: the load
//                 generator, not the target, set the pace. Before the
//                 target's own resources, because such a number does not
//                 measure the target at all.
//   TargetCpu     the target's CPU ≥ [90 %] of its ceiling. Not judged
//                 when its CPU rests on too few samples (SparseUsage).
//   MemoryLimit   the target's memory at the end of the window ≥ [90 %] of
//                 its limit.
//   then, when none of these holds:
//   OfferedRate   open model (a constant rate): achieved ≥ [98 %] of the
//                 rate offered — the offer, not the server, set the number.
//   Connections   every connection busy — requests/s × mean latency (the
//                 requests in flight, by Little's law) ≥ [90 %] of
//                 connections × streams or × pipeline, and at most
//                 [125 %] of it (more is the LittlesLawMismatch the
//                 numbers cannot both be right for) — and room to double:
//                 the target's and the agents' CPU measured below [50 %]
//                 of exact ceilings, the target's CPUs not shared
//                 (SharedCpus). In a closed loop every connection is
//                 always busy, so Little's law alone proves nothing: a
//                 target at 60 % of a CPU it shares with others queues
//                 requests, and more connections would not carry more.
//                 With a constant rate, also: the rate was not achieved.
//                 The verdict says the connections' concurrency set the
//                 rate, not that more connections would carry more: that
//                 depends on what the target waited on for the rest of
//                 each request (a fixed delay scales, a pool of workers
//                 blocked on their connections does not), so the evidence
//                 gives its CPU time per request beside the latency, and a
//                 higher connection level of the same scenario shows it.
//   Unknown       anything else.
//
// Not judged: the server's own request count against the agents' (no
// target reports one). Failed and skipped cells get no verdict: their
// reason says it all.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/benchmark_run.h"
#include "api/cells.h"
#include "common/cpu_view.h"
#include "controller/report/run_record.h"

namespace fairbench::report {

struct LimiterThresholds {
  double saturated = 0.90;      // a resource at ≥ this share of its ceiling
  double busy = 0.90;           // Little's law's in flight ≥ this share of what the connections carry
  double busy_high = 1.25;      // … and ≤ this share (cell_checks.h's 25 % tolerance)
  double error_share = 0.01;    // errors ÷ requests attempted
  double offered_share = 0.98;  // achieved ÷ offered
  double headroom = 0.50;       // Connections: each CPU below this share of its ceiling (room to double)
};

// A resource's ceiling. value 0: not known.
struct Ceiling {
  double value = 0;
  // False: an upper bound only (saturation can be shown against it,
  // headroom cannot).
  bool exact = false;
  std::string text;  // "its CPU quota of 200m", "its 2 CPUs (2-3)", "1 CPU (1)"
};

struct LimiterContext {
  int64_t rate = 0;                      // requests/s offered over all agents; 0: closed loop
  Ceiling target_cpu;                    // cores
  Ceiling generator_cpu;                 // cores
  std::optional<uint64_t> memory_limit;  // bytes; unset: none, or not read
};

// The ceilings from the kernel's views: the target's (nullopt: not read)
// and each agent's (in agent order; nullopt: it did not say). `connections`
// is the cell's, `settings` the scenario's effective settings (threads per
// agent, agents, rate).
LimiterContext LimiterContextFor(const api::ScenarioSettings& settings, int64_t connections,
                                 const std::optional<CpuView>& target,
                                 const std::vector<std::optional<CpuView>>& agents);

// The verdict of a cell; nullopt for a cell that did not succeed. Reads
// cell.result, cell.littles_law_connections and cell.littles_law_in_flight
// (CheckCell computes them) and the SparseUsage flag.
std::optional<api::Limiter> JudgeLimiter(const CellRecord& cell, const LimiterContext& context,
                                         const LimiterThresholds& thresholds = {});

}  // namespace fairbench::report
