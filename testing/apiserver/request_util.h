// Small helpers shared by the API server's handlers: query parameters,
// content negotiation, request bodies, identifiers. Stateless
// except for the per-thread random generator behind NewUid/RandomSuffix.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "testing/apiserver/api_status.h"
#include "testing/apiserver/kube_protobuf.h"

namespace fairbench::apiserver {

std::string QueryValue(const std::multimap<std::string, std::string>& query, const std::string& key);
bool QueryBool(const std::multimap<std::string, std::string>& query, const std::string& key);
bool IsWatchRequest(const std::string& method, const std::multimap<std::string, std::string>& query);
bool WantsTable(const std::string& accept);
// "application/json; charset=utf-8" → "application/json".
std::string MediaType(const std::string& content_type);
// The body of a create or update, as NegotiateInputSerializer and the
// decoder read it: JSON or YAML, or Kubernetes protobuf (kube_protobuf.h),
// for custom resources too; any other media type is 415. Errors name `kind`
// as the real handlers do.
Outcome<nlohmann::json> ParseObjectBody(const std::string& content_type, const std::string& body,
                                        const ExpectedKind& kind);
// A DELETE's DeleteOptions body ({} when there is none), the same ways.
Outcome<nlohmann::json> ParseDeleteOptions(const std::string& content_type, const std::string& body);
std::string NowText();
std::string NewUid();
// generateName suffixes use the same alphabet as the real server.
std::string RandomSuffix();
bool ParseUint(const std::string& text, uint64_t* out);

}  // namespace fairbench::apiserver
