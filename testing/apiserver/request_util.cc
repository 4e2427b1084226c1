#include "testing/apiserver/request_util.h"

#include <chrono>
#include <cstdio>
#include <random>

#include "testing/apiserver/time_text.h"
#include "testing/apiserver/yaml_json.h"

namespace fairbench::apiserver {
namespace {
std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng;
}
}  // namespace

std::string QueryValue(const std::multimap<std::string, std::string>& query, const std::string& key) {
  auto it = query.find(key);
  return it == query.end() ? "" : it->second;
}

bool QueryBool(const std::multimap<std::string, std::string>& query, const std::string& key) {
  std::string v = QueryValue(query, key);
  return v == "true" || v == "1" || v == "True";
}

bool IsWatchRequest(const std::string& method, const std::multimap<std::string, std::string>& query) {
  return method == "GET" && QueryBool(query, "watch");
}

bool WantsTable(const std::string& accept) { return accept.find("as=Table") != std::string::npos; }

std::string MediaType(const std::string& content_type) {
  std::string m = content_type.substr(0, content_type.find(';'));
  while (!m.empty() && m.back() == ' ') m.pop_back();
  return m;
}

namespace {

bool JsonOrYaml(const std::string& media) {
  return media.empty() || media == "application/json" || media == "application/yaml" || media == "*/*";
}

StatusReply UnsupportedBody() {
  return MakeStatus(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: "
                    "application/json, application/yaml, application/vnd.kubernetes.protobuf");
}

}  // namespace

Outcome<nlohmann::json> ParseObjectBody(const std::string& content_type, const std::string& body,
                                        const ExpectedKind& kind) {
  const std::string media = MediaType(content_type);
  if (media == kProtobufMediaType) return DecodeProtobufObject(body, kind);
  if (!JsonOrYaml(media)) return UnsupportedBody();
  const std::string cannot = kind.kind + " in version \"" + kind.version + "\" cannot be handled as a " + kind.kind + ": ";
  auto parsed = YamlToJson(body);
  if (!parsed.ok()) return BadRequest(cannot + parsed.status().message());
  if (!parsed->is_object()) return BadRequest(cannot + "the body must be a JSON object");
  return std::move(*parsed);
}

Outcome<nlohmann::json> ParseDeleteOptions(const std::string& content_type, const std::string& body) {
  if (body.empty()) return nlohmann::json::object();
  const std::string media = MediaType(content_type);
  if (media == kProtobufMediaType) return DecodeProtobufDeleteOptions(body);
  if (!JsonOrYaml(media)) return UnsupportedBody();
  auto parsed = YamlToJson(body);
  if (!parsed.ok() || !parsed->is_object()) return BadRequest("invalid DeleteOptions body");
  return std::move(*parsed);
}

std::string NowText() { return FormatTime(std::chrono::system_clock::now()); }

std::string NewUid() {
  std::uniform_int_distribution<uint32_t> d(0, 0xffffffff);
  uint32_t a = d(Rng()), b = d(Rng()), c = d(Rng()), e = d(Rng());
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-%04x-%04x%08x", a, b >> 16, b & 0xfff, (c & 0x3fff) | 0x8000,
                c >> 16, e);
  return buf;
}

std::string RandomSuffix() {
  static const char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::uniform_int_distribution<size_t> d(0, sizeof(kAlphabet) - 2);
  std::string s;
  for (int i = 0; i < 5; ++i) s += kAlphabet[d(Rng())];
  return s;
}

bool ParseUint(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace fairbench::apiserver
