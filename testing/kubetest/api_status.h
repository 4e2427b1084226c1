// Status replies of the test API server: the error bodies a real
// kube-apiserver sends (KUBE-API.md §3), built in one place so that every
// handler answers with the same reason, code, message and details.
//
// Plain values; thread-safe to build anywhere. Outcome<T> carries either a
// handler's value or the reply that ends the request.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace fairbench::kubetest {

using nlohmann::json;

// A finished HTTP answer with a metav1.Status body.
struct StatusReply {
  int code = 500;
  json body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// One entry of details.causes.
struct Cause {
  std::string reason;  // FieldValueInvalid, FieldValueRequired, ...
  std::string message;
  std::string field;   // "spec.replicas"
};

// What a NotFound/AlreadyExists/Conflict message names: `pods "x"` or
// `widgets.example.com "w1"` (resource plural, qualified by group).
struct ObjectName {
  std::string group;
  std::string resource;  // plural
  std::string kind;      // for Invalid
  std::string name;
  std::string Qualified() const { return group.empty() ? resource : resource + "." + group; }
  std::string QualifiedKind() const { return group.empty() ? kind : kind + "." + group; }
};

StatusReply MakeStatus(int code, const std::string& reason, const std::string& message,
                       json details = nullptr);
StatusReply NotFound(const ObjectName& n);
StatusReply AlreadyExists(const ObjectName& n);
StatusReply Conflict(const ObjectName& n, const std::string& why);
StatusReply ConflictModified(const ObjectName& n);
StatusReply Invalid(const ObjectName& n, const std::vector<Cause>& causes);
StatusReply BadRequest(const std::string& message);
StatusReply Expired(const std::string& message);
StatusReply Unauthorized();
StatusReply Forbidden(const std::string& message);
StatusReply TooManyRequests(int retry_after_seconds);
StatusReply InternalError(const std::string& message);
StatusReply ServiceUnavailable(const std::string& message);
StatusReply GatewayTimeout(const std::string& message);
StatusReply MethodNotAllowed(const std::string& message);
StatusReply UnsupportedMediaType(const std::string& content_type);
StatusReply NotAcceptable(const std::string& message);
StatusReply PageNotFound(const std::string& path);

// Field error constructors in the wording of apimachinery's field.Error.
Cause FieldRequired(const std::string& field, const std::string& detail = "");
Cause FieldInvalid(const std::string& field, const json& value, const std::string& detail);
Cause FieldTypeInvalid(const std::string& field, const json& value, const std::string& detail);
Cause FieldNotSupported(const std::string& field, const json& value, const std::vector<json>& allowed);
Cause FieldForbidden(const std::string& field, const std::string& detail);
Cause FieldTooLong(const std::string& field, int64_t max);
Cause FieldTooMany(const std::string& field, int64_t actual, int64_t max);
Cause FieldDuplicate(const std::string& field, const json& value);
// How apimachinery prints a value inside "Invalid value: ...".
std::string FieldValueText(const json& value);

template <typename T>
class Outcome {
 public:
  Outcome(T value) : v_(std::move(value)) {}             // NOLINT: implicit by design
  Outcome(StatusReply reply) : v_(std::move(reply)) {}   // NOLINT: implicit by design
  bool ok() const { return std::holds_alternative<T>(v_); }
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  StatusReply& reply() { return std::get<StatusReply>(v_); }

 private:
  std::variant<T, StatusReply> v_;
};

}  // namespace fairbench::kubetest
