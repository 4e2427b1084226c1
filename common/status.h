// Status and Result<T>: errors as values at boundaries.
//
// A Status is either OK or carries a code and a one-line message meant for a
// person ("spec.targets[0].port: must be between 1 and 65535"). Result<T>
// holds a T or a failed Status. Neither throws. Both are cheap to move and
// safe to pass between threads (they are plain values).
//
// Status is [[nodiscard]]: a call whose failure may be ignored says so
// with a (void) cast and a comment on why.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace fairbench {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,  // the caller's input is wrong (bad flag, bad spec field)
    kNotFound,
    kAlreadyExists,
    kUnavailable,  // a peer or resource is not reachable now; retrying may help
    kDeadlineExceeded,
    kFailedPrecondition,
    kIoError,
    kInternal,  // a bug: something that cannot happen happened
    kCancelled,
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) { return Status(Code::kInvalidArgument, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status AlreadyExists(std::string msg) { return Status(Code::kAlreadyExists, std::move(msg)); }
  static Status Unavailable(std::string msg) { return Status(Code::kUnavailable, std::move(msg)); }
  static Status DeadlineExceeded(std::string msg) { return Status(Code::kDeadlineExceeded, std::move(msg)); }
  static Status FailedPrecondition(std::string msg) { return Status(Code::kFailedPrecondition, std::move(msg)); }
  static Status IoError(std::string msg) { return Status(Code::kIoError, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(Code::kInternal, std::move(msg)); }
  static Status Cancelled(std::string msg) { return Status(Code::kCancelled, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: message", or "OK".
  std::string ToString() const;

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

const char* CodeName(Status::Code code);

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must not be OK

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace fairbench
