#include "targets/nginx/access_log_tail.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fairbench::targets {

Result<int64_t> ParseMsec(std::string_view text) {
  // Always "<seconds>.<three digits>".
  auto dot = text.find('.');
  if (dot == std::string_view::npos || dot == 0 || text.size() - dot - 1 != 3) {
    return Status::InvalidArgument("not an nginx $msec: " + std::string(text));
  }
  int64_t ms = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i == dot) continue;
    char c = text[i];
    if (c < '0' || c > '9') return Status::InvalidArgument("not an nginx $msec: " + std::string(text));
    ms = ms * 10 + (c - '0');
  }
  return ms;
}

AccessLogTail::~AccessLogTail() {
  if (fd_ >= 0) close(fd_);
}

Status AccessLogTail::ReadNewLines() {
  if (fd_ < 0) {
    fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return errno == ENOENT ? Status::Ok() : Status::IoError(path_ + ": " + std::strerror(errno));
  }
  char buf[65536];
  while (true) {
    ssize_t n = read(fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IoError(path_ + ": " + std::strerror(errno));
    if (n == 0) return Status::Ok();
    partial_.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    while (true) {
      size_t eol = partial_.find('\n', start);
      if (eol == std::string::npos) break;
      auto ms = ParseMsec(std::string_view(partial_).substr(start, eol - start));
      start = eol + 1;
      if (!ms.ok()) continue;  // not ours; never expected
      ++pending_[*ms / kRequestLogIntervalMs * kRequestLogIntervalMs];
      ++total_;
    }
    partial_.erase(0, start);
  }
}

Status AccessLogTail::WriteIntervalsBefore(int64_t limit_ms) {
  while (!pending_.empty() && pending_.begin()->first + kRequestLogIntervalMs <= limit_ms) {
    if (Status s = log_->WriteInterval(pending_.begin()->first, pending_.begin()->second); !s.ok()) return s;
    pending_.erase(pending_.begin());
  }
  return Status::Ok();
}

Status AccessLogTail::Poll(int64_t now_ms) {
  if (Status s = ReadNewLines(); !s.ok()) return s;
  return WriteIntervalsBefore(now_ms - grace_ms_);
}

Status AccessLogTail::Finish() {
  if (Status s = ReadNewLines(); !s.ok()) return s;
  if (Status s = WriteIntervalsBefore(INT64_MAX); !s.ok()) return s;
  return log_->WriteTotal(total_);
}

}  // namespace fairbench::targets
