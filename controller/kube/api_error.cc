#include "controller/kube/api_error.h"

#include <cstdlib>

#include "controller/kube/api_fields.h"
#include "common/json_read.h"

namespace fairbench::kube {
namespace {

Reason FromReasonString(const std::string& s) {
  if (s == "NotFound") return Reason::kNotFound;
  if (s == "AlreadyExists") return Reason::kAlreadyExists;
  if (s == "Conflict") return Reason::kConflict;
  if (s == "Invalid") return Reason::kInvalid;
  if (s == "Gone" || s == "Expired") return Reason::kGone;
  if (s == "Unauthorized") return Reason::kUnauthorized;
  if (s == "Forbidden") return Reason::kForbidden;
  if (s == "TooManyRequests") return Reason::kTooManyRequests;
  if (s == "BadRequest") return Reason::kBadRequest;
  if (s == "MethodNotAllowed") return Reason::kMethodNotAllowed;
  if (s == "NotAcceptable") return Reason::kNotAcceptable;
  if (s == "UnsupportedMediaType") return Reason::kUnsupportedMediaType;
  if (s == "InternalError") return Reason::kInternalError;
  if (s == "ServiceUnavailable") return Reason::kServiceUnavailable;
  if (s == "Timeout" || s == "ServerTimeout") return Reason::kServerTimeout;
  return Reason::kUnknown;
}

Reason FromCode(int code) {
  switch (code) {
    case 400: return Reason::kBadRequest;
    case 401: return Reason::kUnauthorized;
    case 403: return Reason::kForbidden;
    case 404: return Reason::kNotFound;
    case 405: return Reason::kMethodNotAllowed;
    case 406: return Reason::kNotAcceptable;
    case 409: return Reason::kConflict;
    case 410: return Reason::kGone;
    case 415: return Reason::kUnsupportedMediaType;
    case 422: return Reason::kInvalid;
    case 429: return Reason::kTooManyRequests;
    case 503: return Reason::kServiceUnavailable;
    case 504: return Reason::kServerTimeout;
    default: return code >= 500 ? Reason::kInternalError : Reason::kUnknown;
  }
}

}  // namespace

const char* ReasonName(Reason r) {
  switch (r) {
    case Reason::kUnknown: return "Unknown";
    case Reason::kBadRequest: return "BadRequest";
    case Reason::kUnauthorized: return "Unauthorized";
    case Reason::kForbidden: return "Forbidden";
    case Reason::kNotFound: return "NotFound";
    case Reason::kMethodNotAllowed: return "MethodNotAllowed";
    case Reason::kNotAcceptable: return "NotAcceptable";
    case Reason::kAlreadyExists: return "AlreadyExists";
    case Reason::kConflict: return "Conflict";
    case Reason::kGone: return "Gone";
    case Reason::kUnsupportedMediaType: return "UnsupportedMediaType";
    case Reason::kInvalid: return "Invalid";
    case Reason::kTooManyRequests: return "TooManyRequests";
    case Reason::kInternalError: return "InternalError";
    case Reason::kServiceUnavailable: return "ServiceUnavailable";
    case Reason::kServerTimeout: return "ServerTimeout";
    case Reason::kTimeout: return "Timeout";
    case Reason::kTransport: return "Transport";
    case Reason::kTls: return "Tls";
    case Reason::kDecode: return "Decode";
  }
  return "Unknown";
}

ApiError ApiError::FromStatus(const nlohmann::json& status) {
  ApiError e;
  if (!status.is_object()) {
    e.reason = Reason::kDecode;
    e.message = "not a Status object";
    return e;
  }
  e.http_code = static_cast<int>(json_read::Int(status, fields::kCode, 0, 0, 999));
  e.status_reason = json_read::String(status, fields::kReason);
  e.message = json_read::String(status, fields::kMessage);
  e.reason = FromReasonString(e.status_reason);
  if (e.reason == Reason::kUnknown) e.reason = FromCode(e.http_code);
  const nlohmann::json& details = json_read::Object(status, fields::kDetails);
  if (details.contains(fields::kCauses) && details[fields::kCauses].is_array()) {
    for (const auto& c : details[fields::kCauses]) {
      if (!c.is_object()) continue;
      e.causes.push_back({json_read::String(c, fields::kReason), json_read::String(c, fields::kMessage),
                          json_read::String(c, fields::kField)});
    }
  }
  // Bounded: a wait of years would overflow when turned into milliseconds.
  if (const int64_t after = json_read::Int(details, fields::kRetryAfterSeconds, -1, 0, 86400); after >= 0) {
    e.retry_after = std::chrono::seconds(after);
  }
  return e;
}

ApiError ApiError::FromResponse(int http_code, std::string_view body,
                                const std::map<std::string, std::string>& headers) {
  auto j = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  ApiError e;
  if (!j.is_discarded() && json_read::String(j, fields::kKind) == fields::kStatusKind) {
    e = FromStatus(j);
  } else {
    e.message = std::string(body.substr(0, 512));
  }
  e.http_code = http_code;
  // A Status whose reason is unknown is classified by the real HTTP code.
  if (e.reason == Reason::kUnknown || e.reason == Reason::kDecode) e.reason = FromCode(http_code);
  if (e.message.empty()) e.message = "HTTP " + std::to_string(http_code);
  auto ra = headers.find("retry-after");
  if (ra != headers.end()) {
    char* end = nullptr;
    long v = std::strtol(ra->second.c_str(), &end, 10);
    if (end != ra->second.c_str() && v >= 0) e.retry_after = std::chrono::seconds(v);
  }
  return e;
}

ApiError ApiError::FromTransport(const Status& status) {
  ApiError e;
  e.message = status.message();
  switch (status.code()) {
    case Status::Code::kDeadlineExceeded: e.reason = Reason::kTimeout; break;
    case Status::Code::kFailedPrecondition: e.reason = Reason::kTls; break;
    case Status::Code::kCancelled: e.reason = Reason::kTransport; break;
    default: e.reason = Reason::kTransport; break;
  }
  return e;
}

bool ApiError::Retriable() const {
  switch (reason) {
    case Reason::kTooManyRequests:
    case Reason::kInternalError:
    case Reason::kServiceUnavailable:
    case Reason::kServerTimeout:
    case Reason::kTimeout:
    case Reason::kTransport: return true;
    default: return false;
  }
}

std::string ApiError::ToString() const {
  std::string s = ReasonName(reason);
  if (http_code) s += " (" + std::to_string(http_code) + ")";
  s += ": " + message;
  return s;
}

Status ApiError::ToStatus() const {
  std::string msg = ToString();
  switch (reason) {
    case Reason::kNotFound: return Status::NotFound(msg);
    case Reason::kAlreadyExists: return Status::AlreadyExists(msg);
    case Reason::kInvalid:
    case Reason::kBadRequest:
    case Reason::kMethodNotAllowed:
    case Reason::kNotAcceptable:
    case Reason::kUnsupportedMediaType: return Status::InvalidArgument(msg);
    case Reason::kConflict:
    case Reason::kGone:
    case Reason::kUnauthorized:
    case Reason::kForbidden:
    case Reason::kTls: return Status::FailedPrecondition(msg);
    case Reason::kTimeout:
    case Reason::kServerTimeout: return Status::DeadlineExceeded(msg);
    case Reason::kDecode:
    case Reason::kUnknown: return Status::Internal(msg);
    default: return Status::Unavailable(msg);
  }
}

}  // namespace fairbench::kube
