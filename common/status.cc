#include "common/status.h"

namespace fairbench {

const char* CodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk: return "OK";
    case Status::Code::kInvalidArgument: return "InvalidArgument";
    case Status::Code::kNotFound: return "NotFound";
    case Status::Code::kAlreadyExists: return "AlreadyExists";
    case Status::Code::kUnavailable: return "Unavailable";
    case Status::Code::kDeadlineExceeded: return "DeadlineExceeded";
    case Status::Code::kFailedPrecondition: return "FailedPrecondition";
    case Status::Code::kIoError: return "IoError";
    case Status::Code::kInternal: return "Internal";
    case Status::Code::kCancelled: return "Cancelled";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

}  // namespace fairbench
