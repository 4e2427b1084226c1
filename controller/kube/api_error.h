// Errors of the Kubernetes API as values (KUBE-API.md §3): every failed
// call yields an ApiError mapped from the Status body (reason first, HTTP
// code second), from a client-side timeout, or from the transport. Callers
// branch on `reason` — AlreadyExists and Conflict are both 409 and differ
// only there — and convert to fairbench::Status at the boundary with the
// rest of the controller.
//
// ApiError and ApiResult<T> are plain values, safe to pass between threads.
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/status.h"

namespace fairbench::kube {

enum class Reason {
  kUnknown,
  kBadRequest,            // 400
  kUnauthorized,          // 401
  kForbidden,             // 403
  kNotFound,              // 404
  kMethodNotAllowed,      // 405
  kNotAcceptable,         // 406
  kAlreadyExists,         // 409, reason AlreadyExists
  kConflict,              // 409, reason Conflict
  kGone,                  // 410, reason Expired (or Gone on old servers)
  kUnsupportedMediaType,  // 415
  kInvalid,               // 422, with causes
  kTooManyRequests,       // 429, with Retry-After
  kInternalError,         // 500 and unknown 5xx
  kServiceUnavailable,    // 503
  kServerTimeout,         // 504 Timeout, or 500 ServerTimeout
  kTimeout,               // the client's own deadline passed
  kTransport,             // connection refused, reset, cut mid-stream
  kTls,                   // TLS verification or handshake failed: not retried
  kDecode,                // a 2xx response that is not the expected JSON
};

const char* ReasonName(Reason r);

struct StatusCause {
  std::string reason;  // FieldValueInvalid, FieldManagerConflict, ...
  std::string message;
  std::string field;
};

struct ApiError {
  Reason reason = Reason::kUnknown;
  int http_code = 0;          // 0 when no HTTP response arrived
  std::string message;        // the Status message, or the transport's
  std::string status_reason;  // the raw `reason` string of the Status
  std::vector<StatusCause> causes;
  std::optional<std::chrono::seconds> retry_after;

  // From a non-2xx response: its code, body and headers (lower-case names).
  static ApiError FromResponse(int http_code, std::string_view body, const std::map<std::string, std::string>& headers);
  // From a Status object (the object of a watch ERROR event).
  static ApiError FromStatus(const nlohmann::json& status);
  // From a transport failure reported as a fairbench::Status.
  static ApiError FromTransport(const Status& status);

  // 429, 500, 503, 504, client timeouts and transport failures.
  bool Retriable() const;
  std::string ToString() const;  // "NotFound (404): pods \"x\" not found"
  Status ToStatus() const;
};

// A value or an ApiError.
template <typename T>
class ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  ApiResult(ApiError error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const ApiError& error() const { return std::get<ApiError>(v_); }
  // Reason::kUnknown when ok.
  Reason reason() const { return ok() ? Reason::kUnknown : error().reason; }
  Status status() const { return ok() ? Status::Ok() : error().ToStatus(); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, ApiError> v_;
};

using ApiStatus = ApiResult<std::monostate>;
inline ApiStatus ApiOk() { return std::monostate{}; }

}  // namespace fairbench::kube
