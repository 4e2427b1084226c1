// --store for the commands that produce a run (`fairbench run`, `fairbench
// fetch`): the option itself, and storing the finished record in the
// result store it names (controller/results/result_store.h).
//
// Storing comes after the run's files are written: a store that cannot be
// opened or written costs the run nothing but the store, and says so in
// one line naming the store, the reason and where the files are.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "controller/report/run_record.h"

namespace fairbench::controller {

// --store PATH (default: $FAIRBENCH_STORE). `creates`: the command makes
// the store when it is missing (history only reads one).
CLI::Option* AddStoreOption(CLI::App& cmd, std::string& store, const std::string& what, bool creates = true);

// Stores `record` in the store at `location` (nothing when it is empty).
// Returns false, after one line on stderr, when it could not be stored;
// `files` says where the run's files are, for that line. Unless quiet,
// says on stderr where the run went ("stored as run 12 in …").
bool StoreFinishedRun(const std::string& location, const report::RunRecord& record, const std::string& files,
                      bool quiet);

}  // namespace fairbench::controller
