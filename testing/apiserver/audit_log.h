// AuditLog: one line of JSON per request, as kube-apiserver writes with
// --audit-log-path and a policy at level Metadata: an audit.k8s.io/v1 Event
// with the user, the verb, the object reference (resource, subresource,
// namespace, name, API group and version), the response code and times.
// Tests read it to learn which requests a client made (tests/operator
// collects what fairbench-controller used; tests/chart compares that with
// the chart's RBAC rules).
//
// Simplification: one event per request — stage ResponseComplete, or
// ResponseStarted for a watch (the real server writes both for a watch).
//
// Thread-safe: lines are written whole, under a mutex, and flushed.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/mutex.h"
#include "common/status.h"
#include "testing/apiserver/request_info.h"

namespace fairbench::apiserver {

struct AuditRecord {
  RequestInfo info;
  std::string request_uri;  // path and query as sent
  std::string user;         // "" = anonymous
  std::vector<std::string> groups;
  std::string user_agent;
  std::string source_ip;
  int code = 0;
  bool watch_started = false;  // a watch whose stream has begun
  std::chrono::system_clock::time_point received;
};

// The audit.k8s.io/v1 Event for `r`.
nlohmann::json AuditEvent(const AuditRecord& r);

class AuditLog {
 public:
  // Appends to `path` (created when missing).
  static Result<std::unique_ptr<AuditLog>> Open(const std::string& path);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  void Write(const AuditRecord& r);

 private:
  explicit AuditLog(std::FILE* f) : file_(f) {}
  Mutex mu_;
  std::FILE* file_ GUARDED_BY(mu_);
};

}  // namespace fairbench::apiserver
