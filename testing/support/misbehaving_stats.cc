#include "testing/support/misbehaving_stats.h"

#include <nlohmann/json.hpp>

namespace fairbench::testing {

std::string MisbehavingStats::ToJson() const {
  nlohmann::ordered_json j;
  j["mode"] = mode;
  j["snapshot"] = snapshot;
  j["settled"] = settled;
  j["connections_accepted"] = connections_accepted;
  j["requests_read"] = requests_read;
  j["responses_written"] = responses_written;
  j["partial_responses"] = partial_responses;
  j["abandoned_responses"] = abandoned_responses;
  return j.dump();
}

Result<MisbehavingStats> MisbehavingStats::FromJson(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("stats file is not a JSON object: " + text);
  MisbehavingStats s;
  try {
    s.mode = j.at("mode").get<std::string>();
    s.snapshot = j.at("snapshot").get<uint64_t>();
    s.settled = j.at("settled").get<bool>();
    s.connections_accepted = j.at("connections_accepted").get<uint64_t>();
    s.requests_read = j.at("requests_read").get<uint64_t>();
    s.responses_written = j.at("responses_written").get<uint64_t>();
    s.partial_responses = j.at("partial_responses").get<uint64_t>();
    s.abandoned_responses = j.at("abandoned_responses").get<uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("stats file: ") + e.what());
  }
  return s;
}

}  // namespace fairbench::testing
