// Small helpers shared by the API server's handlers: query parameters,
// content negotiation, identifiers. Stateless
// except for the per-thread random generator behind NewUid/RandomSuffix.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace fairbench::apiserver {

std::string QueryValue(const std::multimap<std::string, std::string>& query, const std::string& key);
bool QueryBool(const std::multimap<std::string, std::string>& query, const std::string& key);
bool IsWatchRequest(const std::string& method, const std::multimap<std::string, std::string>& query);
bool WantsTable(const std::string& accept);
// "application/json; charset=utf-8" → "application/json".
std::string MediaType(const std::string& content_type);
std::string NowText();
std::string NewUid();
// generateName suffixes use the same alphabet as the real server.
std::string RandomSuffix();
bool ParseUint(const std::string& text, uint64_t* out);

}  // namespace fairbench::apiserver
