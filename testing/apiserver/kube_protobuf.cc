#include "testing/apiserver/kube_protobuf.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "common/base64.h"
#include "testing/apiserver/kube_protobuf_catalog.h"

namespace fairbench::apiserver {

using nlohmann::json;

namespace {

// ---- the catalog ----------------------------------------------------------

enum class FieldKind {
  kString,
  kBytes,
  kBool,
  kInt32,
  kInt64,
  kTime,
  kMicroTime,
  kIntOrString,
  kFieldsV1,
  kStringMap,
  kBytesMap,
  kMessage,
};

struct MessageDef;

struct FieldDef {
  int32_t number = 0;
  std::string name;  // the JSON name
  FieldKind kind = FieldKind::kString;
  bool repeated = false;
  bool pointer = false;  // "?": written when set
  bool always = false;   // "!": no omitempty
  std::string type;      // for kMessage: "core/ObjectMeta"
  const MessageDef* message = nullptr;
};

struct MessageDef {
  std::string name;  // the Go type's name, as gogo's errors print it
  std::vector<FieldDef> fields;
  const FieldDef* Field(int32_t number) const {
    for (const auto& f : fields) {
      if (f.number == number) return &f;
    }
    return nullptr;
  }
};

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    out.push_back(Trim(s.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

// The catalog is this program's own text: a line it cannot read is a bug.
[[noreturn]] void CatalogBroken(const std::string& what) {
  std::fprintf(stderr, "kube_protobuf_catalog.cc: %s\n", what.c_str());
  std::abort();
}

class Catalog {
 public:
  static const Catalog& Get() {
    static const Catalog* catalog = new Catalog();
    return *catalog;
  }
  const MessageDef* Find(std::string_view qualified) const {
    auto it = messages_.find(qualified);
    return it == messages_.end() ? nullptr : it->second.get();
  }

 private:
  Catalog() {
    for (const std::string& line : Split(ProtobufCatalogText(), '\n')) {
      if (line.empty()) continue;
      const size_t colon = line.find(": ");
      if (colon == std::string::npos) CatalogBroken("no ': ' in " + line);
      const std::string qualified = line.substr(0, colon);
      auto def = std::make_unique<MessageDef>();
      def->name = qualified.substr(qualified.find('/') + 1);
      for (const std::string& spec : Split(std::string_view(line).substr(colon + 2), ';')) {
        def->fields.push_back(ParseField(spec, line));
      }
      messages_[qualified] = std::move(def);
    }
    for (auto& [name, def] : messages_) {
      for (auto& f : def->fields) {
        if (f.kind != FieldKind::kMessage) continue;
        f.message = Find(f.type);
        if (f.message == nullptr) CatalogBroken(name + "." + f.name + ": no message " + f.type);
      }
    }
  }

  static FieldDef ParseField(const std::string& spec, const std::string& line) {
    auto words = Split(spec, ' ');
    if (words.size() != 3) CatalogBroken("field '" + spec + "' in " + line);
    FieldDef f;
    f.number = std::atoi(words[0].c_str());
    if (f.number <= 0) CatalogBroken("field number in '" + spec + "'");
    f.name = words[1];
    std::string type = words[2];
    while (!type.empty() && (type.back() == '?' || type.back() == '!')) {
      (type.back() == '?' ? f.pointer : f.always) = true;
      type.pop_back();
    }
    if (type.rfind("[]", 0) == 0) {
      f.repeated = true;
      type = type.substr(2);
    }
    static const std::map<std::string, FieldKind> kScalars = {
        {"string", FieldKind::kString},       {"bytes", FieldKind::kBytes},
        {"bool", FieldKind::kBool},           {"int32", FieldKind::kInt32},
        {"int64", FieldKind::kInt64},         {"time", FieldKind::kTime},
        {"microtime", FieldKind::kMicroTime}, {"intstr", FieldKind::kIntOrString},
        {"fieldsv1", FieldKind::kFieldsV1},   {"map<string>", FieldKind::kStringMap},
        {"map<bytes>", FieldKind::kBytesMap}};
    if (auto it = kScalars.find(type); it != kScalars.end()) {
      f.kind = it->second;
    } else if (type.find('/') != std::string::npos) {
      f.kind = FieldKind::kMessage;
      f.type = type;
    } else {
      CatalogBroken("type '" + type + "' in " + line);
    }
    const bool varint = f.kind == FieldKind::kBool || f.kind == FieldKind::kInt32 || f.kind == FieldKind::kInt64;
    const bool map = f.kind == FieldKind::kStringMap || f.kind == FieldKind::kBytesMap;
    if ((f.repeated && (varint || map)) || (map && f.pointer)) CatalogBroken("unsupported field '" + spec + "'");
    return f;
  }

  std::map<std::string, std::unique_ptr<MessageDef>, std::less<>> messages_;
};

// ---- the wire, as gogo-generated Unmarshal reads it -----------------------

const char kIntOverflow[] = "proto: integer overflow";
const char kNegativeLength[] = "proto: negative length found during unmarshaling";
const char kUnexpectedEof[] = "unexpected EOF";

Status WireError(std::string text) { return Status::InvalidArgument(std::move(text)); }

class Wire {
 public:
  explicit Wire(std::string_view bytes) : b_(bytes) {}
  bool done() const { return at_ >= b_.size(); }
  size_t at() const { return at_; }

  Status Varint(uint64_t* out) {
    *out = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (shift >= 64) return WireError(kIntOverflow);
      if (at_ >= b_.size()) return WireError(kUnexpectedEof);
      const auto c = static_cast<unsigned char>(b_[at_++]);
      *out |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (c < 0x80) return Status::Ok();
    }
  }

  // A length-delimited value: Go's int(length) may be negative.
  Status Delimited(std::string_view* out) {
    uint64_t n = 0;
    if (Status s = Varint(&n); !s.ok()) return s;
    if (n > static_cast<uint64_t>(INT64_MAX)) return WireError(kNegativeLength);
    if (n > b_.size() - at_) return WireError(kUnexpectedEof);
    *out = b_.substr(at_, n);
    at_ += n;
    return Status::Ok();
  }

  // skipGenerated from `start` (the field's key): groups nest, wire types 6
  // and 7 are refused.
  Status SkipFrom(size_t start) {
    Wire w(b_);
    w.at_ = start;
    int depth = 0;
    while (w.at_ < b_.size()) {
      uint64_t key = 0, v = 0;
      if (Status s = w.Varint(&key); !s.ok()) return s;
      const int wire = static_cast<int>(key & 7);
      switch (wire) {
        case 0:
          if (Status s = w.Varint(&v); !s.ok()) return s;
          break;
        case 1:
          w.at_ += 8;
          break;
        case 2:
          if (Status s = w.Varint(&v); !s.ok()) return s;
          if (v > static_cast<uint64_t>(INT64_MAX) - w.at_) return WireError(kNegativeLength);
          w.at_ += v;
          break;
        case 3:
          ++depth;
          break;
        case 4:
          if (depth == 0) return WireError("proto: unexpected end of group");
          --depth;
          break;
        case 5:
          w.at_ += 4;
          break;
        default:
          return WireError("proto: illegal wireType " + std::to_string(wire));
      }
      if (depth == 0) {
        if (w.at_ > b_.size()) return WireError(kUnexpectedEof);
        at_ = w.at_;
        return Status::Ok();
      }
    }
    return WireError(kUnexpectedEof);
  }

 private:
  std::string_view b_;
  size_t at_ = 0;
};

// The Go field name gogo's "wrong wireType" error prints.
std::string GoName(const std::string& json_name) {
  static const std::map<std::string, std::string> kNames = {
      {"metadata", "ObjectMeta"},    {"uid", "UID"},
      {"apiVersion", "APIVersion"},  {"apiGroup", "APIGroup"},
      {"apiGroups", "APIGroups"},    {"ip", "IP"},
      {"ipFamilies", "IPFamilies"},  {"ipFamilyPolicy", "IPFamilyPolicy"},
      {"ipMode", "IPMode"},          {"reportingComponent", "ReportingController"},
  };
  if (auto it = kNames.find(json_name); it != kNames.end()) return it->second;
  std::string g = json_name;
  if (!g.empty() && g[0] >= 'a' && g[0] <= 'z') g[0] = static_cast<char>(g[0] - 'a' + 'A');
  return g;
}

// What one message's fields carried, before they become JSON.
struct Slot {
  bool present = false;
  uint64_t number = 0;                // varint fields: the last value
  std::string bytes;                  // strings: the last; messages: every occurrence, concatenated (a merge)
  std::vector<std::string> items;     // repeated fields
  std::vector<std::pair<std::string, std::string>> entries;  // maps, in order
};

Status ReadMapEntry(std::string_view entry, std::pair<std::string, std::string>* out) {
  Wire w(entry);
  while (!w.done()) {
    const size_t start = w.at();
    uint64_t key = 0;
    if (Status s = w.Varint(&key); !s.ok()) return s;
    const auto number = static_cast<int32_t>(key >> 3);
    if (number == 1 || number == 2) {
      std::string_view v;
      if (Status s = w.Delimited(&v); !s.ok()) return s;
      (number == 1 ? out->first : out->second) = std::string(v);
    } else if (Status s = w.SkipFrom(start); !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

Status ReadSlots(const MessageDef& def, std::string_view bytes, std::vector<Slot>* slots) {
  slots->assign(def.fields.size(), Slot{});
  Wire w(bytes);
  while (!w.done()) {
    const size_t start = w.at();
    uint64_t key = 0;
    if (Status s = w.Varint(&key); !s.ok()) return s;
    const auto number = static_cast<int32_t>(key >> 3);
    const int wire = static_cast<int>(key & 7);
    if (wire == 4) return WireError("proto: " + def.name + ": wiretype end group for non-group");
    if (number <= 0) {
      return WireError("proto: " + def.name + ": illegal tag " + std::to_string(number) + " (wire type " +
                       std::to_string(key) + ")");
    }
    const FieldDef* f = def.Field(number);
    if (f == nullptr) {
      if (Status s = w.SkipFrom(start); !s.ok()) return s;
      continue;
    }
    Slot& slot = (*slots)[static_cast<size_t>(f - def.fields.data())];
    const bool varint = f->kind == FieldKind::kBool || f->kind == FieldKind::kInt32 || f->kind == FieldKind::kInt64;
    if (wire != (varint ? 0 : 2)) {
      return WireError("proto: wrong wireType = " + std::to_string(wire) + " for field " + GoName(f->name));
    }
    slot.present = true;
    if (varint) {
      if (Status s = w.Varint(&slot.number); !s.ok()) return s;
      continue;
    }
    std::string_view value;
    if (Status s = w.Delimited(&value); !s.ok()) return s;
    if (f->kind == FieldKind::kStringMap || f->kind == FieldKind::kBytesMap) {
      std::pair<std::string, std::string> entry;
      if (Status s = ReadMapEntry(value, &entry); !s.ok()) return s;
      slot.entries.push_back(std::move(entry));
    } else if (f->repeated) {
      slot.items.emplace_back(value);
    } else if (f->kind == FieldKind::kString || f->kind == FieldKind::kBytes) {
      slot.bytes.assign(value);
    } else {
      slot.bytes.append(value);
    }
  }
  return Status::Ok();
}

// ---- JSON, as encoding/json writes the decoded Go struct -------------------

// Go's json encoder: each byte that does not start a valid UTF-8 sequence
// becomes U+FFFD.
std::string Utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      n = 2;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 3;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 4;
      cp = c & 0x07;
    }
    bool ok = n != 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (ok && ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))) {
      ok = false;
    }
    if (ok) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.append("\xef\xbf\xbd");
      ++i;
    }
  }
  return out;
}

// metav1.Time / MicroTime: seconds since the epoch, UTC, RFC 3339.
std::string Rfc3339(int64_t seconds, int64_t micros, bool with_micros) {
  int64_t days = seconds / 86400;
  int64_t rem = seconds % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  char buf[96];
  if (with_micros) {
    std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%06lldZ", static_cast<long long>(year),
                  static_cast<long long>(month), static_cast<long long>(day), static_cast<long long>(rem / 3600),
                  static_cast<long long>(rem / 60 % 60), static_cast<long long>(rem % 60),
                  static_cast<long long>(micros));
  } else {
    std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ", static_cast<long long>(year),
                  static_cast<long long>(month), static_cast<long long>(day), static_cast<long long>(rem / 3600),
                  static_cast<long long>(rem / 60 % 60), static_cast<long long>(rem % 60));
  }
  return buf;
}

Result<json> ToJson(const MessageDef& def, std::string_view bytes);

Result<json> TimeJson(std::string_view bytes, bool micro) {
  // Time.Unmarshal: no bytes is the zero time (null); the seconds alone
  // otherwise (MicroTime keeps microseconds).
  if (bytes.empty()) return json(nullptr);
  std::vector<Slot> slots;
  const MessageDef& ts = *Catalog::Get().Find("meta/Timestamp");
  if (Status s = ReadSlots(ts, bytes, &slots); !s.ok()) return s;
  const auto seconds = static_cast<int64_t>(slots[0].number);
  const int64_t nanos = static_cast<int32_t>(static_cast<uint32_t>(slots[1].number));
  const int64_t micros = micro ? nanos / 1000 : 0;
  // time.Unix normalises nanoseconds outside [0, 1e9) into the seconds.
  int64_t s = seconds, us = micros % 1000000;
  if (__builtin_add_overflow(seconds, micros / 1000000, &s)) s = seconds;
  if (us < 0) {
    us += 1000000;
    --s;
  }
  // Go's zero time, 0001-01-01T00:00:00Z, is written as null too.
  constexpr int64_t kGoZeroSeconds = -62135596800;
  if (s == kGoZeroSeconds && us == 0) return json(nullptr);
  return json(Rfc3339(s, us, micro));
}

Result<json> IntOrStringJson(std::string_view bytes) {
  std::vector<Slot> slots;
  if (Status s = ReadSlots(*Catalog::Get().Find("intstr/IntOrString"), bytes, &slots); !s.ok()) return s;
  if (static_cast<int64_t>(slots[0].number) == 1) return json(Utf8(slots[2].bytes));
  return json(static_cast<int32_t>(static_cast<uint32_t>(slots[1].number)));
}

Result<json> FieldsV1Json(std::string_view bytes) {
  std::vector<Slot> slots;
  if (Status s = ReadSlots(*Catalog::Get().Find("meta/FieldsV1"), bytes, &slots); !s.ok()) return s;
  if (slots[0].bytes.empty()) return json(nullptr);
  json raw = json::parse(slots[0].bytes, nullptr, false);
  return raw.is_discarded() ? json(nullptr) : raw;
}

Result<json> ElementJson(const FieldDef& f, std::string_view bytes) {
  switch (f.kind) {
    case FieldKind::kString:
      return json(Utf8(bytes));
    case FieldKind::kBytes:
      return json(Base64Encode(bytes));
    case FieldKind::kTime:
      return TimeJson(bytes, false);
    case FieldKind::kMicroTime:
      return TimeJson(bytes, true);
    case FieldKind::kIntOrString:
      return IntOrStringJson(bytes);
    case FieldKind::kFieldsV1:
      return FieldsV1Json(bytes);
    case FieldKind::kMessage:
      return ToJson(*f.message, bytes);
    default:
      return Status::Internal("not a length-delimited kind");
  }
}

json ScalarJson(const FieldDef& f, const Slot& s) {
  switch (f.kind) {
    case FieldKind::kBool:
      return s.number != 0;
    case FieldKind::kInt32:
      return static_cast<int32_t>(static_cast<uint32_t>(s.number));
    case FieldKind::kInt64:
      return static_cast<int64_t>(s.number);
    case FieldKind::kBytes:
      return Base64Encode(s.bytes);
    default:
      return Utf8(s.bytes);
  }
}

bool IsZero(const json& v) {
  return (v.is_string() && v.get_ref<const std::string&>().empty()) || (v.is_boolean() && !v.get<bool>()) ||
         (v.is_number_integer() && v.get<int64_t>() == 0);
}

Result<json> ToJson(const MessageDef& def, std::string_view bytes) {
  std::vector<Slot> slots;
  if (Status s = ReadSlots(def, bytes, &slots); !s.ok()) return s;
  json out = json::object();
  for (size_t i = 0; i < def.fields.size(); ++i) {
    const FieldDef& f = def.fields[i];
    const Slot& s = slots[i];
    if (f.repeated) {
      if (s.items.empty()) {
        if (f.always) out[f.name] = nullptr;  // a nil slice
        continue;
      }
      json list = json::array();
      for (const auto& item : s.items) {
        auto v = ElementJson(f, item);
        if (!v.ok()) return v.status();
        list.push_back(std::move(*v));
      }
      out[f.name] = std::move(list);
      continue;
    }
    switch (f.kind) {
      case FieldKind::kStringMap:
      case FieldKind::kBytesMap: {
        if (s.entries.empty()) continue;
        json m = json::object();
        for (const auto& [k, v] : s.entries) {
          m[Utf8(k)] = f.kind == FieldKind::kBytesMap ? json(Base64Encode(v)) : json(Utf8(v));
        }
        out[f.name] = std::move(m);
        break;
      }
      case FieldKind::kString:
      case FieldKind::kBytes:
      case FieldKind::kBool:
      case FieldKind::kInt32:
      case FieldKind::kInt64: {
        if (!s.present && f.pointer) {
          if (f.always) out[f.name] = nullptr;
          continue;
        }
        json v = ScalarJson(f, s);
        if (f.pointer || f.always || !IsZero(v)) out[f.name] = std::move(v);
        break;
      }
      default: {
        // A struct is written whole even when absent; a pointer only when set.
        if (!s.present && f.pointer) {
          if (f.always) out[f.name] = nullptr;
          continue;
        }
        auto v = ElementJson(f, s.bytes);
        if (!v.ok()) return v.status();
        out[f.name] = std::move(*v);
        break;
      }
    }
  }
  return out;
}

// ---- the envelope and the handlers' words ---------------------------------

constexpr std::string_view kPrefix("k8s\0", 4);
const char kPrefixError[] = "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]";

// handlers.summarizeData(body, 30).
std::string Summary(std::string_view data) {
  constexpr size_t kMax = 30;
  if (data.empty()) return "<empty>";
  if (data[0] == '{') return data.size() > kMax ? std::string(data.substr(0, kMax)) + " ..." : std::string(data);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (size_t i = 0; i < std::min(data.size(), kMax); ++i) {
    const auto c = static_cast<unsigned char>(data[i]);
    hex.push_back(kHex[c >> 4]);
    hex.push_back(kHex[c & 15]);
  }
  return data.size() > kMax ? hex + " ..." : hex;
}

struct Envelope {
  std::string api_version;
  std::string kind;
  std::string raw;
};

// The prefix and runtime.Unknown; the error is the serializer's text.
Result<Envelope> ReadEnvelope(std::string_view body) {
  if (body.empty()) return WireError("empty data");
  if (body.size() < kPrefix.size() || body.substr(0, kPrefix.size()) != kPrefix) return WireError(kPrefixError);
  if (body.size() == kPrefix.size()) return WireError("empty body");
  const Catalog& c = Catalog::Get();
  std::vector<Slot> unknown, type_meta;
  if (Status s = ReadSlots(*c.Find("runtime/Unknown"), body.substr(kPrefix.size()), &unknown); !s.ok()) return s;
  if (Status s = ReadSlots(*c.Find("runtime/TypeMeta"), unknown[0].bytes, &type_meta); !s.ok()) return s;
  return Envelope{type_meta[0].bytes, type_meta[1].bytes, unknown[1].bytes};
}

const ProtobufKind* FindKind(const std::string& api_version, const std::string& kind) {
  for (const auto& k : ProtobufKinds()) {
    if (k.api_version == api_version && k.kind == kind) return &k;
  }
  return nullptr;
}

std::string GroupVersion(const std::string& group, const std::string& version) {
  return group.empty() ? version : group + "/" + version;
}

// The Go package of a group's internal types, as conversion errors name it.
std::string InternalPackage(const std::string& group) {
  if (group.empty() || group == "events.k8s.io") return "core";
  if (group == "rbac.authorization.k8s.io") return "rbac";
  return group.substr(0, group.find('.'));
}

}  // namespace

bool ProtobufKindDescribed(const std::string& api_version, const std::string& kind) {
  return FindKind(api_version, kind) != nullptr;
}

Result<json> DecodeProtobufMessage(std::string_view type, std::string_view bytes) {
  const MessageDef* def = Catalog::Get().Find(type);
  if (def == nullptr) return Status::NotFound("no message " + std::string(type) + " in the catalog");
  return ToJson(*def, bytes);
}

Outcome<json> DecodeProtobufObject(std::string_view body, const ExpectedKind& expected) {
  const std::string route_gv = GroupVersion(expected.group, expected.version);
  if (!expected.custom && !ProtobufKindDescribed(route_gv, expected.kind)) {
    return MakeStatus(415, "UnsupportedMediaType",
                      "the test API server does not decode " + std::string(kProtobufMediaType) + " bodies of " +
                          expected.kind + " (" + route_gv + "): send application/json or application/yaml");
  }
  auto envelope = ReadEnvelope(body);
  if (!envelope.ok()) {
    return BadRequest("the object provided is unrecognized (must be of type " + expected.kind +
                      "): " + envelope.status().message() + " (" + Summary(body) + ")");
  }
  // The envelope's kind, defaulted from the route's (copyKindDefaults).
  std::string kind = envelope->kind.empty() ? expected.kind : envelope->kind;
  std::string group, version;
  const std::string& av = envelope->api_version;
  if (const size_t slash = av.find('/'); slash == std::string::npos) {
    version = av;
  } else if (av.find('/', slash + 1) == std::string::npos) {
    group = av.substr(0, slash);
    version = av.substr(slash + 1);
  }
  if (version.empty()) {
    group = expected.group;
    version = expected.version;
  }
  const std::string gv = GroupVersion(group, version);
  auto cannot = [&](const std::string& why) {
    return BadRequest(kind + " in version \"" + version + "\" cannot be handled as a " + expected.kind + ": " + why);
  };
  // The unstructured typer knows no kind for the empty object protobuf
  // would decode into.
  if (expected.custom) return cannot("Object 'Kind' is missing in 'object has no kind field '");
  const ProtobufKind* described = FindKind(gv, kind);
  if (described == nullptr) {
    return cannot("no kind \"" + kind + "\" is registered for version \"" + gv +
                  "\" in scheme \"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:29\"");
  }
  auto object = DecodeProtobufMessage(described->message, envelope->raw);
  if (!object.ok()) return cannot(object.status().message());
  if (kind != expected.kind) {
    return cannot("converting (" + version + "." + kind + ") to (" + InternalPackage(expected.group) + "." +
                  expected.kind + "): unknown conversion");
  }
  if (gv != route_gv) {
    return BadRequest("the API version in the data (" + gv + ") does not match the expected API version (" +
                      route_gv + ")");
  }
  json out = std::move(*object);
  out["apiVersion"] = gv;
  out["kind"] = kind;
  return out;
}

Outcome<json> DecodeProtobufDeleteOptions(std::string_view body) {
  auto envelope = ReadEnvelope(body);
  if (!envelope.ok()) return BadRequest(envelope.status().message());
  if (!envelope->kind.empty() && envelope->kind != "DeleteOptions") {
    return BadRequest("decoded object cannot be converted to DeleteOptions");
  }
  auto options = DecodeProtobufMessage("meta/DeleteOptions", envelope->raw);
  if (!options.ok()) return BadRequest(options.status().message());
  return std::move(*options);
}

}  // namespace fairbench::apiserver
