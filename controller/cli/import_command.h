// `fairbench import FILE... --store PATH`: existing results.json files into
// a result store (controller/results/result_store.h), each file in one
// transaction of its own.
//
// Each file is read and checked whole before anything of it is stored: a
// damaged record or a file that is no record at all is refused with its
// first problem, naming the field, and nothing of it is stored; the files
// after it are still imported. One line per file on stdout:
//
//   out/a/results.json: run quickstart (2026-12-05T20:10:04Z, 6 cells): stored as run 3
//   out/b/results.json: run quickstart (…): already stored as run 3
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace fairbench::controller {

struct ImportFlags {
  std::vector<std::string> files;
  std::string store;
};

CLI::App* AddImportCommand(CLI::App& app, ImportFlags& flags);
// Exit codes: 0 every file stored (or already there); 2 bad input: a file
// refused (the others were still stored), no --store; 1 the store cannot
// be opened or written — one line on stderr, and the files after it are
// not tried.
int RunImportCommand(const ImportFlags& flags);

}  // namespace fairbench::controller
