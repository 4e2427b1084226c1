#include "testing/kubetest/api_status.h"

#include <cmath>

namespace fairbench::kubetest {

StatusReply MakeStatus(int code, const std::string& reason, const std::string& message, json details) {
  StatusReply r;
  r.code = code;
  r.body = {{"kind", "Status"},        {"apiVersion", "v1"}, {"metadata", json::object()},
            {"status", "Failure"},     {"message", message}, {"reason", reason},
            {"code", code}};
  if (!details.is_null()) r.body["details"] = std::move(details);
  return r;
}

namespace {
json Details(const ObjectName& n, const std::string& kind) {
  json d = {{"name", n.name}, {"kind", kind}};
  if (!n.group.empty()) d["group"] = n.group;
  return d;
}
}  // namespace

StatusReply NotFound(const ObjectName& n) {
  return MakeStatus(404, "NotFound", n.Qualified() + " \"" + n.name + "\" not found", Details(n, n.resource));
}

StatusReply AlreadyExists(const ObjectName& n) {
  return MakeStatus(409, "AlreadyExists", n.Qualified() + " \"" + n.name + "\" already exists",
                    Details(n, n.resource));
}

StatusReply Conflict(const ObjectName& n, const std::string& why) {
  return MakeStatus(409, "Conflict",
                    "Operation cannot be fulfilled on " + n.Qualified() + " \"" + n.name + "\": " + why,
                    Details(n, n.resource));
}

StatusReply ConflictModified(const ObjectName& n) {
  return Conflict(n, "the object has been modified; please apply your changes to the latest version and try again");
}

StatusReply Invalid(const ObjectName& n, const std::vector<Cause>& causes) {
  std::string list;
  json jc = json::array();
  for (const auto& c : causes) {
    if (!list.empty()) list += ", ";
    list += c.field.empty() ? c.message : c.field + ": " + c.message;
    json e = {{"reason", c.reason}, {"message", c.message}};
    if (!c.field.empty()) e["field"] = c.field;
    jc.push_back(std::move(e));
  }
  if (causes.size() > 1) list = "[" + list + "]";
  json d = Details(n, n.kind);
  d["causes"] = std::move(jc);
  return MakeStatus(422, "Invalid", n.QualifiedKind() + " \"" + n.name + "\" is invalid: " + list, std::move(d));
}

StatusReply BadRequest(const std::string& message) { return MakeStatus(400, "BadRequest", message); }
StatusReply Expired(const std::string& message) { return MakeStatus(410, "Expired", message); }
StatusReply Unauthorized() { return MakeStatus(401, "Unauthorized", "Unauthorized"); }
StatusReply Forbidden(const std::string& message) { return MakeStatus(403, "Forbidden", message); }

StatusReply TooManyRequests(int retry_after_seconds) {
  StatusReply r = MakeStatus(429, "TooManyRequests", "Too many requests, please try again later.",
                             {{"retryAfterSeconds", retry_after_seconds}});
  r.headers.emplace_back("Retry-After", std::to_string(retry_after_seconds));
  return r;
}

StatusReply InternalError(const std::string& message) {
  return MakeStatus(500, "InternalError", "Internal error occurred: " + message,
                    {{"causes", json::array({{{"message", message}}})}});
}

StatusReply ServiceUnavailable(const std::string& message) {
  return MakeStatus(503, "ServiceUnavailable", message);
}

StatusReply GatewayTimeout(const std::string& message) { return MakeStatus(504, "Timeout", message); }

StatusReply MethodNotAllowed(const std::string& message) {
  return MakeStatus(405, "MethodNotAllowed", message);
}

StatusReply UnsupportedMediaType(const std::string& content_type) {
  return MakeStatus(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: "
                    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml" +
                        (content_type.empty() ? std::string() : " (got " + content_type + ")"));
}

StatusReply NotAcceptable(const std::string& message) { return MakeStatus(406, "NotAcceptable", message); }

StatusReply PageNotFound(const std::string& path) {
  return MakeStatus(404, "NotFound", "the server could not find the requested resource (" + path + ")",
                    {{"causes", json::array({{{"reason", "UnexpectedServerResponse"}, {"message", "404 page not found"}}})}});
}

std::string FieldValueText(const json& value) {
  if (value.is_null()) return "\"null\"";
  if (value.is_string()) return value.dump();
  if (value.is_boolean() || value.is_number_integer() || value.is_number_unsigned()) return value.dump();
  if (value.is_number_float()) {
    double d = value.get<double>();
    if (std::floor(d) == d && std::fabs(d) < 1e15) return std::to_string(static_cast<int64_t>(d));
    return value.dump();
  }
  return value.dump();
}

Cause FieldRequired(const std::string& field, const std::string& detail) {
  return {"FieldValueRequired", detail.empty() ? "Required value" : "Required value: " + detail, field};
}

Cause FieldInvalid(const std::string& field, const json& value, const std::string& detail) {
  return {"FieldValueInvalid", "Invalid value: " + FieldValueText(value) + (detail.empty() ? "" : ": " + detail),
          field};
}

Cause FieldTypeInvalid(const std::string& field, const json& value, const std::string& detail) {
  return {"FieldValueTypeInvalid",
          "Invalid value: " + FieldValueText(value) + (detail.empty() ? "" : ": " + detail), field};
}

Cause FieldNotSupported(const std::string& field, const json& value, const std::vector<json>& allowed) {
  std::string list;
  for (const auto& a : allowed) {
    if (!list.empty()) list += ", ";
    list += a.is_string() ? a.dump() : FieldValueText(a);
  }
  return {"FieldValueNotSupported",
          "Unsupported value: " + FieldValueText(value) + ": supported values: " + list, field};
}

Cause FieldForbidden(const std::string& field, const std::string& detail) {
  return {"FieldValueForbidden", "Forbidden: " + detail, field};
}

Cause FieldTooLong(const std::string& field, int64_t max) {
  return {"FieldValueTooLong", "Too long: may not be more than " + std::to_string(max) + " bytes", field};
}

Cause FieldTooMany(const std::string& field, int64_t actual, int64_t max) {
  return {"FieldValueTooMany",
          "Too many: " + std::to_string(actual) + ": must have at most " + std::to_string(max) + " items", field};
}

Cause FieldDuplicate(const std::string& field, const json& value) {
  return {"FieldValueDuplicate", "Duplicate value: " + FieldValueText(value), field};
}

}  // namespace fairbench::kubetest
