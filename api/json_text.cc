#include "api/json_text.h"

#include <charconv>
#include <cstdlib>
#include <exception>

namespace fairbench::api {
namespace {

template <typename Json>
Node FromJson(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
    case Json::value_t::discarded: return Node::Null();
    case Json::value_t::boolean: return Node::Bool(j.template get<bool>());
    case Json::value_t::number_integer: return Node::Int(j.template get<long long>());
    case Json::value_t::number_unsigned: return Node::Uint(j.template get<unsigned long long>());
    case Json::value_t::number_float: return Node::Float(j.template get<double>());
    case Json::value_t::string: return Node::String(j.template get<std::string>());
    case Json::value_t::binary: return Node::Null();
    case Json::value_t::array: {
      Node out = Node::Sequence();
      for (const auto& item : j) out.Append(FromJson(item));
      return out;
    }
    case Json::value_t::object: {
      Node out = Node::Map();
      for (auto it = j.begin(); it != j.end(); ++it) out.Add(it.key(), FromJson(it.value()));
      return out;
    }
  }
  return Node::Null();
}

// nlohmann: "[json.exception.parse_error.101] parse error at line 2, column
// 14: syntax error while parsing value - unexpected ']'; ...".
std::string Reformat(std::string_view source, const std::string& what) {
  int line = 0;
  int column = 0;
  std::string reason = what;
  const size_t at = what.find("at line ");
  if (at != std::string::npos) {
    const char* p = what.c_str() + at + 8;
    line = std::atoi(p);
    const size_t col = what.find("column ", at);
    if (col != std::string::npos) column = std::atoi(what.c_str() + col + 7);
    const size_t colon = what.find(": ", at);
    if (colon != std::string::npos) reason = what.substr(colon + 2);
  } else {
    const size_t bracket = what.find("] ");
    if (bracket != std::string::npos) reason = what.substr(bracket + 2);
  }
  std::string out(source);
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
  return out + ": invalid JSON: " + reason;
}

template <typename Json>
Json ToJsonT(const Node& n) {
  switch (n.kind()) {
    case Node::Kind::kNull: return nullptr;
    case Node::Kind::kBool: return n.text() == "true" || n.text() == "True" || n.text() == "TRUE";
    case Node::Kind::kInt: {
      long long v = 0;
      const char* end = n.text().data() + n.text().size();
      if (std::from_chars(n.text().data(), end, v).ptr == end) return v;
      unsigned long long u = 0;
      if (std::from_chars(n.text().data(), end, u).ptr == end) return u;
      return std::strtod(n.text().c_str(), nullptr);
    }
    case Node::Kind::kFloat: {
      const std::string& t = n.text();
      if (t == ".nan" || t == ".NaN" || t == ".NAN" || t.find("inf") != std::string::npos ||
          t.find("Inf") != std::string::npos || t.find("INF") != std::string::npos) {
        return nullptr;  // JSON has no NaN or infinity
      }
      return std::strtod(t.c_str(), nullptr);
    }
    case Node::Kind::kString: return n.text();
    case Node::Kind::kSequence: {
      Json out = Json::array();
      for (const Node& item : n.items()) out.push_back(ToJsonT<Json>(item));
      return out;
    }
    case Node::Kind::kMap: {
      Json out = Json::object();
      for (const Node::Entry& e : n.entries()) out[e.key] = ToJsonT<Json>(e.value);
      return out;
    }
  }
  return nullptr;
}

}  // namespace

Node NodeFromJson(const nlohmann::ordered_json& j) { return FromJson(j); }
Node NodeFromJson(const nlohmann::json& j) { return FromJson(j); }

Result<Node> ParseJson(std::string_view text, std::string_view source) {
  try {
    // nlohmann parses without recursion, but FromJson recurses: a document
    // nested deeper than any BenchmarkRun is refused before it is walked,
    // as yaml-cpp refuses one in YAML.
    bool too_deep = false;
    auto parsed = nlohmann::ordered_json::parse(
        text, [&](int depth, nlohmann::ordered_json::parse_event_t, nlohmann::ordered_json&) {
          if (depth > kMaxJsonDepth) too_deep = true;
          return !too_deep;
        });
    if (too_deep) {
      return Status::InvalidArgument(std::string(source) + ": invalid JSON: nested deeper than " +
                                     std::to_string(kMaxJsonDepth) + " levels");
    }
    return FromJson(parsed);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(Reformat(source, e.what()));
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string(source) + ": invalid JSON: " + e.what());
  }
}

nlohmann::ordered_json NodeToJson(const Node& n) { return ToJsonT<nlohmann::ordered_json>(n); }
nlohmann::json NodeToSortedJson(const Node& n) { return ToJsonT<nlohmann::json>(n); }

std::string EmitJson(const Node& node, int indent) {
  // Replace invalid UTF-8 rather than throw: a body may hold anything.
  return NodeToJson(node).dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) +
         (indent >= 0 ? "\n" : "");
}

}  // namespace fairbench::api
