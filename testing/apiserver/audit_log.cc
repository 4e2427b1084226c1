#include "testing/apiserver/audit_log.h"

#include <cerrno>
#include <cstring>

#include "common/api/time_text.h"
#include "common/mutex.h"
#include "testing/apiserver/request_util.h"

namespace fairbench::apiserver {

nlohmann::json AuditEvent(const AuditRecord& r) {
  using nlohmann::json;
  json user;
  if (r.user.empty()) {
    user = {{"username", "system:anonymous"}, {"groups", {"system:unauthenticated"}}};
  } else {
    json groups = json::array();
    for (const auto& g : r.groups) groups.push_back(g);
    groups.push_back("system:authenticated");
    user = {{"username", r.user}, {"groups", groups}};
  }
  const auto now = std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
  const auto received = std::chrono::time_point_cast<std::chrono::nanoseconds>(r.received);
  json event = {{"kind", "Event"},
                {"apiVersion", "audit.k8s.io/v1"},
                {"level", "Metadata"},
                {"auditID", NewUid()},
                {"stage", r.watch_started ? "ResponseStarted" : "ResponseComplete"},
                {"requestURI", r.request_uri},
                {"verb", r.info.verb},
                {"user", user},
                {"sourceIPs", json::array({r.source_ip})},
                {"userAgent", r.user_agent},
                {"responseStatus", {{"metadata", json::object()}, {"code", r.code}}},
                {"requestReceivedTimestamp", api::FormatMicroTime(received)},
                {"stageTimestamp", api::FormatMicroTime(now)}};
  if (r.info.resource_request) {
    json ref = {{"resource", r.info.resource}, {"apiVersion", r.info.api_version}};
    if (!r.info.ns.empty()) ref["namespace"] = r.info.ns;
    if (!r.info.name.empty()) ref["name"] = r.info.name;
    if (!r.info.api_group.empty()) ref["apiGroup"] = r.info.api_group;
    if (!r.info.subresource.empty()) ref["subresource"] = r.info.subresource;
    event["objectRef"] = ref;
  }
  return event;
}

Result<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) return Status::Unavailable("audit log " + path + ": " + std::strerror(errno));
  return std::unique_ptr<AuditLog>(new AuditLog(f));
}

AuditLog::~AuditLog() {
  MutexLock lock(mu_);
  std::fclose(file_);
}

void AuditLog::Write(const AuditRecord& r) {
  const std::string line = AuditEvent(r).dump() + "\n";
  MutexLock lock(mu_);
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

}  // namespace fairbench::apiserver
