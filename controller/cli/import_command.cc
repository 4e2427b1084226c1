#include "controller/cli/import_command.h"

#include <cstdio>

#include "api/time_text.h"
#include "controller/cli/compare_command.h"
#include "controller/cli/store_flag.h"
#include "controller/results/result_store.h"

namespace fairbench::controller {

CLI::App* AddImportCommand(CLI::App& app, ImportFlags& f) {
  CLI::App* cmd = app.add_subcommand("import", "Store existing results.json files in a result store");
  cmd->add_option("files", f.files, "results.json files, as fairbench run and fetch write them")->required();
  AddStoreOption(*cmd, f.store, "The result store");
  return cmd;
}

int RunImportCommand(const ImportFlags& f) {
  if (f.store.empty()) {
    std::fprintf(stderr, "fairbench import: --store: required (or set FAIRBENCH_STORE)\n");
    return 2;
  }
  auto store = results::OpenResultStore(f.store);
  if (!store.ok()) {
    std::fprintf(stderr, "fairbench import: %s\n", store.status().message().c_str());
    return store.status().code() == Status::Code::kInvalidArgument ? 2 : 1;
  }
  int refused = 0;
  for (const std::string& file : f.files) {
    auto record = LoadResultsFile(file);
    if (!record.ok()) {
      std::fprintf(stderr, "fairbench import: refused %s\n", record.status().message().c_str());
      ++refused;
      continue;
    }
    auto receipt = (*store)->Store(*record);
    if (!receipt.ok()) {
      std::fprintf(stderr, "fairbench import: %s: %s\n", file.c_str(), receipt.status().message().c_str());
      return 1;
    }
    const auto& status = record->run.status;
    const std::string started = status.start_time ? api::FormatTimeSeconds(*status.start_time) : "never started";
    std::printf("%s: run %s (%s, %zu cell%s): %s\n", file.c_str(), record->run.metadata.name.c_str(), started.c_str(),
                record->cells.size(), record->cells.size() == 1 ? "" : "s", results::ReceiptText(*receipt).c_str());
  }
  std::fflush(stdout);
  if (refused > 0) {
    std::fprintf(stderr, "fairbench import: %d of %zu files refused; nothing of them was stored\n", refused,
                 f.files.size());
    return 2;
  }
  return 0;
}

}  // namespace fairbench::controller
