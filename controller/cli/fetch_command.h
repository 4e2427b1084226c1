// `fairbench fetch RUN --output DIR [--kubeconfig F] [--namespace NS]`:
// reads a BenchmarkRun's record from its ConfigMaps (ConfigMapRunStore) and
// writes the folder a local `fairbench run` writes:
//
//   DIR/results.json   exactly as FileRunStore writes the same record
//   DIR/cells/KEY.txt  each cell with wrk text, named as FileRunStore names it
//   DIR/report.md      RenderMarkdown of the record
//   DIR/report.html    RenderHtml of the record
//
// A run still in progress is fetched as far as it has got (and, with
// --store, stored so; fetched again when finished, the store keeps the
// finished record). Existing files
// in DIR are replaced.
#pragma once

#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

#include "controller/report/run_record.h"
#include "common/status.h"

namespace fairbench::controller {

struct FetchFlags {
  std::string run;
  std::string output;
  std::string kubeconfig;    // empty: $KUBECONFIG, else ~/.kube/config
  std::string context;       // empty: the kubeconfig's current context
  std::string ns;            // empty: the context's namespace
  int timeout_seconds = 30;  // per API call
  std::string store;         // --store: the record is stored there too (store_flag.h)
};

CLI::App* AddFetchCommand(CLI::App& app, FetchFlags& flags);
// Exit codes: 0 written; 1 the API server cannot be reached (or the folder
// cannot be written, or, with --store, the record could not be stored: the
// folder is written all the same); 2 bad input: no such run, no record yet, a damaged
// record, an unusable kubeconfig. Each failure is one line on stderr.
int RunFetchCommand(const FetchFlags& flags);

// Writes `record` as the folder above.
[[nodiscard]] Status WriteRunFolder(const report::RunRecord& record, const std::filesystem::path& dir);

}  // namespace fairbench::controller
