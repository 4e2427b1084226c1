// MisbehavingMode: the ways fairbench-test-misbehaving-server can answer,
// shared by the program and the fixture that launches it so that a mode's
// name is spelt in one place.
//
// What each mode does on the wire is documented at the server
// (misbehaving_server.h). Plain values; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace fairbench::testing {

enum class MisbehavingMode {
  kOk,
  kResetMidResponse,
  kCloseEarly,
  kCloseAfterHeaders,
  kDelay,
  kStatus500,
  kStatusMix,
  kChunked,
  kConnectionClose,
  kCloseDelimited,
  kGarbage,
  kSlowAccept,
  kEcho,
  kEchoCached,
  kEchoWrongLength,
  kEchoNoDate,
  kEchoFrozenDate,
};

// "reset-mid-response" etc.; the names the --mode flag takes.
std::string_view ModeName(MisbehavingMode mode);
Result<MisbehavingMode> ParseMode(std::string_view name);
const std::vector<MisbehavingMode>& AllModes();

}  // namespace fairbench::testing
