#include "controller/cli/store_flag.h"

#include <cstdio>

#include "controller/results/result_store.h"

namespace fairbench::controller {

CLI::Option* AddStoreOption(CLI::App& cmd, std::string& store, const std::string& what, bool creates) {
  return cmd
      .add_option("--store", store,
                  what +
                      (creates ? " (an SQLite file, made if missing, or a postgresql:// URL"
                               : " (an SQLite file or a postgresql:// URL") +
                      "; default: $FAIRBENCH_STORE)")
      ->envname("FAIRBENCH_STORE");
}

bool StoreFinishedRun(const std::string& location, const report::RunRecord& record, const std::string& files,
                      bool quiet) {
  if (location.empty()) return true;
  auto store = results::OpenResultStore(location);
  Result<results::StoreReceipt> receipt =
      store.ok() ? (*store)->Store(record) : Result<results::StoreReceipt>(store.status());
  if (!receipt.ok()) {
    std::fprintf(stderr,
                 "fairbench: the run was not stored: %s (its files are in %s: `fairbench import %s/results.json "
                 "--store %s` stores them later)\n",
                 receipt.status().message().c_str(), files.c_str(), files.c_str(), location.c_str());
    return false;
  }
  if (!quiet) {
    std::fprintf(stderr, "fairbench: run %s: %s in %s\n", record.run.metadata.name.c_str(),
                 results::ReceiptText(*receipt).c_str(), location.c_str());
  }
  return true;
}

}  // namespace fairbench::controller
