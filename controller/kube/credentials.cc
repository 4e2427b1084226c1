#include "controller/kube/credentials.h"
#include "common/mutex.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fairbench::kube {

Result<std::string> ReadSmallFile(const std::string& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("cannot read " + path + ": " + std::strerror(errno));
  std::string data;
  char buf[4096];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    data.append(buf, static_cast<size_t>(in.gcount()));
    if (data.size() > limit) return Status::IoError(path + " is larger than " + std::to_string(limit) + " bytes");
  }
  if (in.bad()) return Status::IoError("cannot read " + path);
  return data;
}

TokenFile::TokenFile(std::string path, Clock& clock, std::chrono::seconds refresh)
    : path_(std::move(path)), clock_(clock), refresh_(refresh) {}

Result<Credentials> TokenFile::Get() {
  MutexLock lock(mu_);
  auto now = clock_.Now();
  if (!valid_ || now - read_at_ >= refresh_) {
    auto data = ReadSmallFile(path_);
    if (!data.ok()) {
      // Keep using the last good token if the file is briefly unavailable.
      if (valid_) return Credentials{token_, "", ""};
      return data.status();
    }
    std::string t = *data;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    if (t.empty()) return Status::InvalidArgument("token file " + path_ + " is empty");
    token_ = t;
    read_at_ = now;
    valid_ = true;
    ++reads_;
  }
  return Credentials{token_, "", ""};
}

void TokenFile::Invalidate() {
  MutexLock lock(mu_);
  valid_ = false;
}

int TokenFile::reads() const {
  MutexLock lock(mu_);
  return reads_;
}

}  // namespace fairbench::kube
