// Where the client's credentials come from. A source hands out the current
// credentials and is told when the server rejected them (401), so it can
// re-read a rotated token file or re-run an exec plugin.
//
// Implementations are thread-safe: one source serves every request thread.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "common/mutex.h"
#include "common/status.h"
#include "controller/kube/clock.h"

namespace fairbench::kube {

struct Credentials {
  std::string token;            // bearer token; "" = none
  std::string client_cert_pem;  // from exec plugins that return certificates
  std::string client_key_pem;
};

class CredentialSource {
 public:
  virtual ~CredentialSource() = default;
  // May block (reads a file, runs a plugin): never call on an event loop.
  virtual Result<Credentials> Get() = 0;
  // The server answered 401: forget what is cached.
  virtual void Invalidate() = 0;
};

class StaticToken final : public CredentialSource {
 public:
  explicit StaticToken(std::string token) : token_(std::move(token)) {}
  Result<Credentials> Get() override { return Credentials{token_, "", ""}; }
  void Invalidate() override {}

 private:
  const std::string token_;
};

// A token file that is rotated underneath us (service-account tokens, the
// kubeconfig tokenFile): re-read when older than `refresh` and after a 401.
class TokenFile final : public CredentialSource {
 public:
  TokenFile(std::string path, Clock& clock, std::chrono::seconds refresh = std::chrono::minutes(1));
  Result<Credentials> Get() override;
  void Invalidate() override;
  int reads() const;

 private:
  const std::string path_;
  Clock& clock_;
  const std::chrono::seconds refresh_;
  mutable Mutex mu_;
  std::string token_ GUARDED_BY(mu_);
  Clock::Steady read_at_ GUARDED_BY(mu_){};
  bool valid_ GUARDED_BY(mu_) = false;
  int reads_ GUARDED_BY(mu_) = 0;
};

// Reads a whole (small) file; a clear error names the path and the reason.
Result<std::string> ReadSmallFile(const std::string& path, size_t limit = 1 << 20);

}  // namespace fairbench::kube
