#include "api/codec.h"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "api/cpu_list.h"
#include "api/encoder.h"
#include "api/field_path.h"
#include "api/json_text.h"
#include "api/quantity.h"
#include "api/schema.h"
#include "api/time_text.h"
#include "api/yaml_text.h"
#include "common/units.h"

namespace fairbench::api {
namespace {

// Unknown fields sort after the known fields of their object.
constexpr int kUnknownFieldOrder = 1'000'000;

// ---------------------------------------------------------------- scalars

// An integer literal as YAML 1.2 core or JSON writes it: 42, -7, +3, 0x1f, 0o17.
struct IntLiteral {
  bool negative = false;
  unsigned long long magnitude = 0;
};

std::optional<IntLiteral> ParseIntLiteral(std::string_view s) {
  IntLiteral lit;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    lit.negative = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    base = s[1] == 'x' ? 16 : 8;
    s.remove_prefix(2);
  }
  if (s.empty()) return std::nullopt;
  const auto res = std::from_chars(s.data(), s.data() + s.size(), lit.magnitude, base);
  if (res.ptr != s.data() + s.size()) return std::nullopt;
  if (res.ec == std::errc::result_out_of_range) lit.magnitude = std::numeric_limits<unsigned long long>::max();
  else if (res.ec != std::errc()) return std::nullopt;
  return lit;
}

bool IsDurationUnit(std::string_view u) {
  return u == "ns" || u == "us" || u == "\xC2\xB5s" || u == "ms" || u == "s" || u == "m" || u == "h";
}

// "30s", "1.5m", and Go's compound form "1m30s" (how Kubernetes writes
// durations). A bare number is refused: is "30" seconds or milliseconds?
Result<Duration> ParseDurationText(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(Quote(text) + " is not a duration" + why);
  };
  const std::string kExamples = " (use e.g. \"30s\", \"500ms\", \"2m\")";
  const Node::Kind plain = ResolvePlainScalar(text);
  if (plain == Node::Kind::kInt || plain == Node::Kind::kFloat) {
    return bad(": add a unit, e.g. \"" + std::string(text) + "s\"");
  }
  if (!text.empty() && text[0] == '-') return bad(": it must not be negative");
  if (text.find(' ') != std::string_view::npos) {
    std::string joined;
    for (const char c : text) {
      if (c != ' ') joined += c;
    }
    return bad(": write it without spaces, " + Quote(joined));
  }
  Duration total{0};
  size_t i = 0;
  if (text.empty()) return bad(kExamples);
  while (i < text.size()) {
    const size_t start = i;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    if (i == start) return bad(kExamples);
    const size_t unit_start = i;
    while (i < text.size() && !(text[i] >= '0' && text[i] <= '9') && text[i] != '.') ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    if (unit.empty()) return bad(": add a unit, e.g. \"" + std::string(text) + "s\"");
    if (!IsDurationUnit(unit)) {
      return bad(" (unknown unit " + Quote(unit) + "; use ns, us, ms, s, m, h)");
    }
    Result<std::chrono::nanoseconds> part = ParseDuration(text.substr(start, i - start));
    if (!part.ok()) return bad(kExamples);
    total += *part;
  }
  return total;
}

// ---------------------------------------------------------------- decoder

class Decoder {
 public:
  Decoder(const DecodeOptions& options, Decoded* out) : options_(options), out_(out) {}

  void Root(const Node& root, BenchmarkRun& run) {
    paths_.push_back("");
    Value(root, run, 0);
  }

  // The visitor interface of schema.h.
  template <typename T>
  void Field(std::string_view name, T& member, unsigned flags = 0) {
    Frame& frame = frames_.back();
    const int ordinal = static_cast<int>(frame.known.size());
    frame.known.push_back(name);
    const std::vector<Node::Entry>& entries = frame.node->entries();
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].key != name) continue;
      frame.used[i] = true;
      const Node& value = entries[i].value;
      if (value.is_null()) return;  // null means unset: the default stays
      // A problem with a whole list or object (empty, missing a field) is
      // best shown at its key; one with a scalar at the value.
      const bool at_key = !value.is_scalar() || !value.mark().known();
      Enter(JoinField(paths_.back(), name), ordinal, at_key ? entries[i].key_mark : value.mark());
      Value(value, member, flags);
      Leave();
      return;
    }
    if ((flags & schema::kRequired) != 0) {
      std::vector<int> order = order_;
      order.push_back(ordinal);
      const std::string path = JoinField(paths_.back(), name);
      ErrorAt(path, out_->source_map.Find(paths_.back()), "required", std::move(order));
    }
  }

 private:
  struct Frame {
    const Node* node;
    std::vector<std::string_view> known;
    std::vector<bool> used;
  };

  void Enter(std::string path, int ordinal, Mark mark) {
    out_->source_map.Set(path, mark);
    paths_.push_back(std::move(path));
    order_.push_back(ordinal);
  }
  void Leave() {
    paths_.pop_back();
    order_.pop_back();
  }

  void Error(const Node& at, std::string message) { ErrorAt(paths_.back(), at.mark(), std::move(message), order_); }
  void ErrorAt(std::string path, Mark mark, std::string message, std::vector<int> order) {
    out_->diagnostics.Add(Diagnostic{std::move(path), std::move(message), mark, std::move(order)});
  }

  template <typename T>
  void Value(const Node& n, T& out, unsigned flags) {
    if constexpr (schema::Described<T>) {
      Struct(n, out);
    } else if constexpr (schema::kIsOptional<T>) {
      typename T::value_type v{};
      Value(n, v, flags);
      out = std::move(v);
    } else if constexpr (schema::kIsVector<T>) {
      if (!n.is_sequence()) return Error(n, "must be a list, got " + n.Describe());
      out.clear();
      out.resize(n.items().size());
      for (size_t i = 0; i < n.items().size(); ++i) {
        Enter(JoinIndex(paths_.back(), i), static_cast<int>(i), n.items()[i].mark());
        Value(n.items()[i], out[i], flags);
        Leave();
      }
    } else if constexpr (std::is_same_v<T, StringMap>) {
      StringMapValue(n, out);
    } else if constexpr (std::is_same_v<T, std::string>) {
      StringValue(n, out);
    } else if constexpr (std::is_same_v<T, bool>) {
      if (n.kind() != Node::Kind::kBool) return Error(n, "must be true or false, got " + n.Describe());
      out = n.text() == "true" || n.text() == "True" || n.text() == "TRUE";
    } else if constexpr (std::is_integral_v<T>) {
      IntegerValue(n, out, flags);
    } else if constexpr (std::is_floating_point_v<T>) {
      if (n.kind() != Node::Kind::kInt && n.kind() != Node::Kind::kFloat) {
        return Error(n, "must be a number, got " + n.Describe());
      }
      if (const std::optional<IntLiteral> lit = ParseIntLiteral(n.text())) {
        out = static_cast<T>(lit->magnitude) * (lit->negative ? -1 : 1);
      } else if (n.text() == ".nan" || n.text() == ".NaN" || n.text() == ".NAN") {
        out = std::numeric_limits<T>::quiet_NaN();
      } else if (n.text().find("inf") != std::string::npos || n.text().find("Inf") != std::string::npos ||
                 n.text().find("INF") != std::string::npos) {
        out = n.text()[0] == '-' ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
      } else {
        out = static_cast<T>(std::strtod(n.text().c_str(), nullptr));
      }
    } else if constexpr (schema::NamedEnum<T>) {
      EnumValue(n, out);
    } else {
      ScalarValue(n, out);
    }
  }

  template <typename T>
  void Struct(const Node& n, T& out) {
    if (!n.is_map()) return Error(n, "must be an object, got " + n.Describe());
    frames_.push_back(Frame{&n, {}, std::vector<bool>(n.entries().size())});
    schema::Describe(*this, out);
    const Frame frame = std::move(frames_.back());
    frames_.pop_back();
    const std::vector<Node::Entry>& entries = n.entries();
    for (size_t i = 0; i < entries.size(); ++i) {
      const Node::Entry& e = entries[i];
      std::vector<int> order = order_;
      order.push_back(kUnknownFieldOrder + static_cast<int>(i));
      const Node::Entry* first = nullptr;
      for (size_t j = 0; j < i && first == nullptr; ++j) {
        if (entries[j].key == e.key) first = &entries[j];
      }
      if (first != nullptr) {
        std::string msg = "duplicate key";
        if (first->key_mark.known()) msg += " (first at line " + std::to_string(first->key_mark.line) + ")";
        ErrorAt(JoinKey(paths_.back(), e.key), e.key_mark, msg, std::move(order));
        continue;
      }
      if (frame.used[i] || options_.unknown_fields == UnknownFields::kIgnore) continue;
      std::string msg = "unknown field";
      const std::string_view near = ClosestMatch(e.key, frame.known);
      if (!near.empty()) {
        msg += " (did you mean " + Quote(near) + "?)";
      } else {
        msg += " (known fields: ";
        for (size_t k = 0; k < frame.known.size(); ++k) {
          if (k > 0) msg += ", ";
          msg += frame.known[k];
        }
        msg += ")";
      }
      ErrorAt(JoinKey(paths_.back(), e.key), e.key_mark, msg, std::move(order));
    }
  }

  void StringValue(const Node& n, std::string& out) {
    switch (n.kind()) {
      case Node::Kind::kString: out = n.text(); return;
      case Node::Kind::kBool:
      case Node::Kind::kInt:
      case Node::Kind::kFloat:
        // YAML reads `4` and `true` as a number and a boolean; Kubernetes
        // would refuse them for a string field, so the file must say so.
        return Error(n, "must be a string, got " + n.Describe() + " (quote it: " + Quote(n.text()) + ")");
      default: return Error(n, "must be a string, got " + n.Describe());
    }
  }

  void StringMapValue(const Node& n, StringMap& out) {
    if (!n.is_map()) return Error(n, "must be an object of strings, got " + n.Describe());
    out.clear();
    for (size_t i = 0; i < n.entries().size(); ++i) {
      const Node::Entry& e = n.entries()[i];
      Enter(JoinKey(paths_.back(), e.key), static_cast<int>(i), e.value.mark().known() ? e.value.mark() : e.key_mark);
      if (out.count(e.key) != 0) {
        ErrorAt(paths_.back(), e.key_mark, "duplicate key", order_);
      } else {
        std::string value;
        StringValue(e.value, value);
        out.emplace(e.key, std::move(value));
      }
      Leave();
    }
  }

  template <typename T>
  void IntegerValue(const Node& n, T& out, unsigned flags) {
    const bool count = (flags & schema::kCount) != 0;
    const std::string expected = count ? "must be an integer such as 100 or 10k, got " : "must be an integer, got ";
    std::optional<IntLiteral> lit;
    if (n.kind() == Node::Kind::kInt) {
      lit = ParseIntLiteral(n.text());
    } else if (count && n.kind() == Node::Kind::kString) {
      if (Result<uint64_t> c = ParseCount(n.text()); c.ok()) lit = IntLiteral{false, *c};
    }
    if (!lit) return Error(n, expected + n.Describe());
    using Limits = std::numeric_limits<T>;
    if (lit->negative) {
      if constexpr (std::is_unsigned_v<T>) {
        if (lit->magnitude != 0) return Error(n, "must not be negative, got " + n.text());
        out = 0;
      } else {
        const auto min_magnitude = static_cast<unsigned long long>(-(Limits::min() + 1)) + 1;
        if (lit->magnitude > min_magnitude) {
          return Error(n, "must be at least " + std::to_string(Limits::min()) + ", got " + n.text());
        }
        out = static_cast<T>(-static_cast<long long>(lit->magnitude - 1) - 1);
      }
    } else {
      if (lit->magnitude > static_cast<unsigned long long>(Limits::max())) {
        return Error(n, "must be at most " + std::to_string(Limits::max()) + ", got " + n.text());
      }
      out = static_cast<T>(lit->magnitude);
    }
  }

  template <typename E>
  void EnumValue(const Node& n, E& out) {
    if constexpr (schema::kOpenInCrd<E>) return OpenEnumValue(n, out);
    std::string names;
    std::vector<std::string_view> candidates;
    for (const auto& [value, name] : schema::EnumNames<E>::kNames) {
      // Any scalar: YAML reads a plain `True` (a condition status) as a boolean.
      if (n.is_scalar() && !n.is_null() && n.text() == name) {
        out = value;
        return;
      }
      names += names.empty() ? "" : ", ";
      names += name;
      candidates.push_back(name);
    }
    std::string msg = "must be one of " + names + "; got " + n.Describe();
    if (n.is_scalar()) {
      const std::string_view near = ClosestMatch(n.text(), candidates);
      if (!near.empty()) msg += " (did you mean " + Quote(near) + "?)";
    }
    Error(n, msg);
  }

  // An enum the CRD leaves a plain string: a string, and one of the names.
  template <typename E>
  void OpenEnumValue(const Node& n, E& out) {
    std::string text;
    if (n.kind() != Node::Kind::kString) return StringValue(n, text);
    const auto& names = schema::EnumNames<E>::kNames;
    std::string choices;
    for (size_t i = 0; i < names.size(); ++i) {
      if (n.text() == names[i].second) {
        out = names[i].first;
        return;
      }
      choices += i == 0 ? "" : i + 1 == names.size() ? " or " : ", ";
      choices += names[i].second;
    }
    Error(n, "must be " + choices + ", got " + n.Describe());
  }

  // Values written as text. A number is accepted where Kubernetes accepts
  // int-or-string (quantities, CPU lists), refused for durations and times.
  void ScalarValue(const Node& n, Duration& out) {
    if (n.kind() == Node::Kind::kInt || n.kind() == Node::Kind::kFloat) {
      return Error(n, n.text() + " is not a duration: add a unit, e.g. \"" + n.text() + "s\"");
    }
    if (n.kind() != Node::Kind::kString) return Error(n, "must be a duration such as \"30s\", got " + n.Describe());
    Result<Duration> d = ParseDurationText(n.text());
    if (!d.ok()) return Error(n, d.status().message());
    out = *d;
  }

  void ScalarValue(const Node& n, Time& out) {
    if (n.kind() != Node::Kind::kString) {
      return Error(n, "must be an RFC 3339 time such as \"2026-09-28T12:00:00Z\", got " + n.Describe());
    }
    Result<Time> t = ParseTime(n.text());
    if (!t.ok()) return Error(n, t.status().message());
    out = *t;
  }

  template <typename T>
  void TextValue(const Node& n, T& out, Result<T> (*parse)(std::string_view), const char* what) {
    if (!n.is_scalar() || n.kind() == Node::Kind::kBool) {
      return Error(n, std::string("must be ") + what + ", got " + n.Describe());
    }
    Result<T> v = parse(n.text());
    if (!v.ok()) return Error(n, v.status().message());
    out = *v;
  }

  void ScalarValue(const Node& n, CpuQuantity& out) {
    TextValue(n, out, &ParseCpu, "a CPU quantity such as \"4\" or \"500m\"");
  }
  void ScalarValue(const Node& n, MemoryQuantity& out) {
    TextValue(n, out, &ParseMemory, "a memory quantity such as \"1Gi\"");
  }
  void ScalarValue(const Node& n, CpuList& out) { TextValue(n, out, &ParseCpuList, "a CPU list such as \"0-3,8\""); }
  void ScalarValue(const Node& n, RateLevel& out) {
    TextValue(n, out, &ParseRateLevel, "requests/s such as 2000, or a share of capacity such as \"50%\"");
  }

  void ScalarValue(const Node& n, Progress& out) {
    const auto bad = [&] { Error(n, "must be completed/total such as \"7/12\", got " + n.Describe()); };
    if (n.kind() != Node::Kind::kString) return bad();
    const std::string& t = n.text();
    const size_t slash = t.find('/');
    if (slash == std::string::npos) return bad();
    Progress p;
    const auto a = std::from_chars(t.data(), t.data() + slash, p.completed);
    const auto b = std::from_chars(t.data() + slash + 1, t.data() + t.size(), p.total);
    if (a.ec != std::errc() || a.ptr != t.data() + slash || b.ec != std::errc() || b.ptr != t.data() + t.size()) {
      return bad();
    }
    out = p;
  }

  void ScalarValue(const Node& n, nlohmann::json& out) { out = NodeToSortedJson(n); }

  const DecodeOptions& options_;
  Decoded* out_;
  std::vector<Frame> frames_;
  std::vector<std::string> paths_;
  std::vector<int> order_;
};

}  // namespace

void SourceMap::Set(std::string path, Mark mark) {
  if (mark.known()) marks_[std::move(path)] = mark;
}

Mark SourceMap::Find(std::string_view path) const {
  std::string p(path);
  while (true) {
    const auto it = marks_.find(p);
    if (it != marks_.end()) return it->second;
    if (p.empty()) return {};
    p = ParentPath(p);
  }
}

Decoded DecodeRun(const Node& root, const DecodeOptions& options) {
  Decoded out;
  // Left empty when the document omits them, so validation can say so.
  out.run.api_version.clear();
  out.run.kind.clear();
  if (root.is_null()) {
    out.diagnostics.Add(Diagnostic{"", "the document is empty; expected a BenchmarkRun", root.mark(), {}});
    return out;
  }
  if (!root.is_map()) {
    out.diagnostics.Add(
        Diagnostic{"",
                   "expected a BenchmarkRun object (apiVersion, kind, metadata, spec), got " + root.Describe(),
                   root.mark(),
                   {}});
    return out;
  }
  Decoder decoder(options, &out);
  decoder.Root(root, out.run);
  return out;
}

Node EncodeRun(const BenchmarkRun& run) { return Encoder().Value(run); }

std::string ToYaml(const BenchmarkRun& run) { return EmitYaml(EncodeRun(run)); }

nlohmann::ordered_json ToJson(const BenchmarkRun& run) { return NodeToJson(EncodeRun(run)); }
nlohmann::ordered_json ToJson(const BenchmarkRunStatus& status) { return NodeToJson(Encoder().Value(status)); }
nlohmann::ordered_json ToJson(const CellResult& result) { return NodeToJson(Encoder().Value(result)); }

}  // namespace fairbench::api
