// `fairbench selftest [--stall 500ms] [--rate 1000] [--duration 4s]
// [--json] [--output DIR]`: tests the tester on this machine. Runs the
// project's delay server (1 ms per request) as a local target through the
// real orchestrator, twice — an open-model cell at --rate and a closed-loop
// cell of a few connections — and stops the server (SIGSTOP) for exactly
// --stall in the middle of each measurement, then resumes it (SIGCONT).
// The cells' histograms are judged against what a stall of that length
// must show (selftest_judge.h): the verdict per check with its measured
// error, as text or JSON.
//
// Exit codes: 0 every check passed; 1 a check failed or the cells could
// not be run (the reason on stderr); 2 bad input; 128 + the signal when
// interrupted.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace fairbench::controller {

struct SelftestFlags {
  std::string stall = "500ms";
  int64_t rate = 1000;
  std::string duration = "4s";
  bool json = false;
  std::string output;  // the two runs' folders; empty: a temporary folder, removed
  std::string lock_file = "/tmp/fairbench-load.lock";
};

CLI::App* AddSelftestCommand(CLI::App& app, SelftestFlags& flags);
int RunSelftestCommand(const SelftestFlags& flags);

}  // namespace fairbench::controller
