#include "testing/support/misbehaving_mode.h"

namespace fairbench::testing {

std::string_view ModeName(MisbehavingMode mode) {
  switch (mode) {
    case MisbehavingMode::kOk: return "ok";
    case MisbehavingMode::kResetMidResponse: return "reset-mid-response";
    case MisbehavingMode::kCloseEarly: return "close-early";
    case MisbehavingMode::kCloseAfterHeaders: return "close-after-headers";
    case MisbehavingMode::kDelay: return "delay";
    case MisbehavingMode::kStatus500: return "status-500";
    case MisbehavingMode::kStatusMix: return "status-mix";
    case MisbehavingMode::kChunked: return "chunked";
    case MisbehavingMode::kConnectionClose: return "connection-close";
    case MisbehavingMode::kCloseDelimited: return "close-delimited";
    case MisbehavingMode::kGarbage: return "garbage";
    case MisbehavingMode::kSlowAccept: return "slow-accept";
    case MisbehavingMode::kEcho: return "echo";
    case MisbehavingMode::kEchoCached: return "echo-cached";
    case MisbehavingMode::kEchoWrongLength: return "echo-wrong-length";
    case MisbehavingMode::kEchoNoDate: return "echo-no-date";
    case MisbehavingMode::kEchoFrozenDate: return "echo-frozen-date";
  }
  return "unknown";
}

const std::vector<MisbehavingMode>& AllModes() {
  static const std::vector<MisbehavingMode> kAll = {
      MisbehavingMode::kOk,
      MisbehavingMode::kResetMidResponse,
      MisbehavingMode::kCloseEarly,
      MisbehavingMode::kCloseAfterHeaders,
      MisbehavingMode::kDelay,
      MisbehavingMode::kStatus500,
      MisbehavingMode::kStatusMix,
      MisbehavingMode::kChunked,
      MisbehavingMode::kConnectionClose,
      MisbehavingMode::kCloseDelimited,
      MisbehavingMode::kGarbage,
      MisbehavingMode::kSlowAccept,
      MisbehavingMode::kEcho,
      MisbehavingMode::kEchoCached,
      MisbehavingMode::kEchoWrongLength,
      MisbehavingMode::kEchoNoDate,
      MisbehavingMode::kEchoFrozenDate,
  };
  return kAll;
}

Result<MisbehavingMode> ParseMode(std::string_view name) {
  std::string known;
  for (MisbehavingMode m : AllModes()) {
    if (ModeName(m) == name) return m;
    known += (known.empty() ? "" : ", ") + std::string(ModeName(m));
  }
  return Status::InvalidArgument("unknown mode '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace fairbench::testing
