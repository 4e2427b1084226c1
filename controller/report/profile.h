// CellProfile: where a target spent its CPU during one cell's measured
// window, as folded stacks — one line per distinct call stack, root first,
// frames joined by ';', with the number of samples that ended in it:
//
//   nginx;__libc_start_main;main;ngx_worker_process_cycle;epoll_wait 42
//
// The first frame is the process (or thread) name. Kernel frames end in
// "_[k]". This is the format flame graph tools read, so
// `jq -r '.cells[0].profile.folded[]' results.json` feeds them directly.
//
// FoldPerfScript turns `perf script -F comm,tid,ip,sym,dso` output into
// folded stacks. The report draws them as a flame graph (flamegraph.h);
// results.json keeps them under cells[i].profile.
//
// Plain values and pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/diagnostics.h"

namespace fairbench::report {

enum class ProfileState {
  kRecorded,     // samples were taken and folded
  kUnavailable,  // profiling could not start: no perf, not permitted, not on this platform
  kFailed,       // perf started but its samples could not be read
};
const char* ProfileStateName(ProfileState state);

struct FoldedStack {
  std::string frames;  // "comm;root;…;leaf"
  uint64_t samples = 0;
  friend bool operator==(const FoldedStack&, const FoldedStack&) = default;
};

struct CellProfile {
  ProfileState state = ProfileState::kRecorded;
  std::string message;  // why it is not recorded, or a caveat ("3 stacks left out")
  std::string command;  // what sampled ("perf record -F 99 -g -p 4711,4712")
  int32_t frequency_hz = 0;
  double seconds = 0;               // how long sampling ran
  uint64_t samples = 0;             // all samples, those of omitted stacks included
  uint64_t omitted_samples = 0;     // in stacks left out beyond the cap
  std::vector<FoldedStack> stacks;  // sorted by frames
  friend bool operator==(const CellProfile&, const CellProfile&) = default;
};

// The most distinct stacks a profile keeps (the most sampled ones); the
// rest are counted in omitted_samples. Bounds results.json and the page.
inline constexpr size_t kMaxProfileStacks = 4000;

struct Folded {
  std::vector<FoldedStack> stacks;  // sorted by frames
  uint64_t samples = 0;
  uint64_t omitted_samples = 0;
};

// Folds `perf script -F comm,tid,ip,sym,dso` output (a header line
// "COMM TID" per sample, then one indented line per frame, leaf first:
// "ADDR SYMBOL (DSO)"). An unknown symbol becomes the DSO's file name in
// brackets ("[libc.so.6]"), or "[unknown]".
Folded FoldPerfScript(std::string_view text, size_t max_stacks = kMaxProfileStacks);

// results.json's "profile" object, and back. Reading is strict, like the
// rest of results.json: problems are added to `diagnostics` under `path`.
nlohmann::ordered_json ToJson(const CellProfile& profile);
void ReadProfile(const nlohmann::json& json, const std::string& path, api::Diagnostics& diagnostics, CellProfile& out);

}  // namespace fairbench::report
