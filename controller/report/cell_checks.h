// Cell checks: the flags that tell a reader to look at a cell twice, and
// the Little's-law figure behind one of them, computed from the cell's own
// numbers.
//
// Thresholds (CheckThresholds, defaults in brackets):
//   GeneratorSaturated  agent CPU (cores, summed over agents) ≥ [90 %] of the
//                       agents' threads (threads per agent × agents): the
//                       load generator, not the target, may have set the pace.
//   LittlesLawMismatch  closed loop only: requests/s × mean latency (the
//                       requests in flight, by Little's law) differs from
//                       connections × streams (HTTP/2 and gRPC targets) or
//                       × pipeline by more than [25 %]. In a
//                       closed loop every connection always has its requests
//                       in flight, so the two must agree; when they do not,
//                       the latency or the rate is not what it seems (the
//                       study found 660 and 2,354 for 100 connections).
//                       Skipped with a constant rate (connections then wait
//                       idle by design) and when either number is unknown.
//   FewerConnections    the most connections open at once < the connections
//                       asked for. Skipped when agents == 0 (not recorded).
//   Errors              any socket error (connect, read, write, timeout, port
//                       exhaustion) or any response whose status differed
//                       from the scenario's expected status.
//   RateNotAchieved     a constant rate (settings.rate, or the cell's own
//                       offered rate): requests/s answered < [98 %] of the
//                       rate offered. The cell measured a server that could
//                       not take the load, not its efficiency at that load:
//                       invalid, and never ranked.
//   ContentLengthMismatch, DateMissing, DateFrozen, AnswersUnsampled
//                       scenarios with vary, from result.answers: the
//                       answer read before the load had a Content-Length
//                       other than its body's bytes; an answer (that one,
//                       or one sampled under load) had no Date; sampled
//                       answers carried the same Date more than 2 s apart;
//                       no answer was sampled at all.
//   SnapshotGap         not computed here: the orchestrator sees gaps in the
//                       sequence numbers; CheckCell keeps the flag as found.
//   SparseUsage         not computed here: the orchestrator counts the fresh
//                       usage samples of the target; kept as found.
//   SharedCpus          not computed here: the orchestrator judges the CPUs
//                       the target got (run.status.cpus); kept as found.
//
// Failed and skipped cells carry no flags: their reason says it all.
// Pure functions; thread-safe.
#pragma once

#include "api/cells.h"
#include "controller/report/run_record.h"

namespace fairbench::report {

struct CheckThresholds {
  double generator_saturated_share = 0.90;  // of the agents' threads
  double littles_law_tolerance = 0.25;      // relative to connections × streams or pipeline
  double offered_rate_share = 0.98;         // achieved ÷ offered, below which a constant-rate cell is invalid
};

// Recomputes cell.littles_law_connections, cell.littles_law_in_flight and
// cell.flags (SnapshotGap, SparseUsage and SharedCpus kept).
// `settings` are the scenario's effective settings (api::EffectiveSettings):
// threads per agent, agents, pipeline, streams and rate; `protocol` is the
// cell's target's (api::EffectiveProtocol): streams count for HTTP/2 and
// gRPC targets, pipeline for HTTP/1.1.
void CheckCell(const api::ScenarioSettings& settings, Protocol protocol, CellRecord& cell,
               const CheckThresholds& thresholds = {});

// The same for every cell of a record, each with its scenario's settings
// (cells whose scenario is not in the spec are left alone).
void CheckCells(RunRecord& record, const CheckThresholds& thresholds = {});

}  // namespace fairbench::report
