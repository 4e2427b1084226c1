// Orchestrator::RunState: what one Run() knows while it runs (the record
// being written, the cells, which of them are finished), shared by the run's
// steps, its target visits and its cells. The run's thread only.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "controller/orchestrator/cpu_verdict.h"
#include "controller/orchestrator/orchestrator.h"

namespace fairbench::controller {

struct Orchestrator::RunState {
  const api::BenchmarkRun& run;
  RunStore& store;
  report::RunRecord record;
  std::vector<api::Cell> cells;
  // The finished cells are kept once, in record.cells (in cell order, with
  // their results mirrored in record.run.status.results); `finished` holds
  // their cell indexes, in the same order.
  std::vector<size_t> finished;
  std::vector<std::string> earlier_notes;
  std::set<std::string> profile_messages = {};      // why profiles were not taken, each told once
  std::map<size_t, TargetCpuFacts> cpu_facts = {};  // target index → what its current deployment got
  // Scenario index → what the check before the load found in one answer
  // of the current target read to its end (scenarios with vary).
  std::map<size_t, api::AnswerChecks> answer_headers = {};

  // status.cpus gets `cpus` in place of the target's earlier entry, in spec order.
  void PutCpus(api::TargetCpus cpus) {
    std::vector<api::TargetCpus>& all = record.run.status.cpus;
    std::erase_if(all, [&](const api::TargetCpus& c) { return c.target == cpus.target; });
    all.push_back(std::move(cpus));
    std::vector<api::TargetCpus> ordered;
    for (const api::Target& t : run.spec.targets) {
      for (api::TargetCpus& c : all) {
        if (c.target == t.name) ordered.push_back(std::move(c));
      }
    }
    all = std::move(ordered);
  }

  // The unfinished cells of target `target`: of every repetition
  // (repetition 0) or of that one.
  std::vector<const api::Cell*> Unfinished(size_t target, int32_t repetition) const {
    std::vector<const api::Cell*> todo;
    for (const api::Cell& c : cells) {
      if (c.target_index == target && (repetition == 0 || c.repetition == repetition) && !Has(c.index)) {
        todo.push_back(&c);
      }
    }
    return todo;
  }

  bool Has(size_t index) const { return std::binary_search(finished.begin(), finished.end(), index); }

  // Records cell `index` (or replaces it), in place: a run's cells are
  // never copied as a whole.
  const report::CellRecord& Put(size_t index, report::CellRecord c) {
    const auto at = std::lower_bound(finished.begin(), finished.end(), index);
    const auto i = at - finished.begin();
    if (at != finished.end() && *at == index) {
      record.run.status.results[static_cast<size_t>(i)] = c.result;
      record.cells[static_cast<size_t>(i)] = std::move(c);
    } else {
      finished.insert(at, index);
      record.run.status.results.insert(record.run.status.results.begin() + i, c.result);
      record.cells.insert(record.cells.begin() + i, std::move(c));
    }
    UpdateProgress();
    return record.cells[static_cast<size_t>(i)];
  }

  void UpdateProgress() {
    record.run.status.progress.completed = static_cast<int64_t>(finished.size());
    record.run.status.progress.total = static_cast<int64_t>(cells.size());
  }
};

}  // namespace fairbench::controller
