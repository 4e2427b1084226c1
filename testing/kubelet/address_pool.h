// AddressPool: the loopback addresses of one test kubelet's /24
// (--pod-ip-base 127.X.Y: 127.X.Y.1 … .254), handed out by key — a pod's
// uid for its pod IP, a Service's namespace/name for the address its
// forwarder listens on — so that no two holders share one. A released
// address is handed out again only after the others (round robin).
//
// Thread-safe.
#pragma once

#include <map>
#include <set>
#include <string>

#include "common/mutex.h"

namespace fairbench::kubelet {

class AddressPool {
 public:
  explicit AddressPool(std::string base) : base_(std::move(base)) {}

  // The key's address (the same one while it holds it), or "" when all
  // 254 are taken.
  std::string Allocate(const std::string& key) {
    MutexLock lock(mu_);
    if (auto it = held_.find(key); it != held_.end()) return Address(it->second);
    std::set<int> used;
    for (const auto& [k, n] : held_) used.insert(n);
    for (int i = 0; i < 254; ++i) {
      const int n = (next_ - 1 + i) % 254 + 1;
      if (!used.count(n)) {
        next_ = n % 254 + 1;
        held_[key] = n;
        return Address(n);
      }
    }
    return "";
  }
  void Release(const std::string& key) {
    MutexLock lock(mu_);
    held_.erase(key);
  }

 private:
  std::string Address(int n) const { return base_ + "." + std::to_string(n); }

  const std::string base_;
  Mutex mu_;
  std::map<std::string, int> held_ GUARDED_BY(mu_);  // key → host number
  int next_ GUARDED_BY(mu_) = 1;
};

}  // namespace fairbench::kubelet
