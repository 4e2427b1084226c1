#include "testing/apiserver/request_info.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "testing/apiserver/request_util.h"

namespace fairbench::apiserver {
namespace {

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < path.size()) {
    size_t end = path.find('/', at);
    if (end == std::string::npos) end = path.size();
    if (end > at) out.push_back(path.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// The name a field selector pins with metadata.name=X (or ==X), if it is
// the selector's only requirement on metadata.name and a valid path segment.
std::string NameFromFieldSelector(const std::string& selector) {
  std::string name;
  size_t at = 0;
  while (at <= selector.size()) {
    size_t end = selector.find(',', at);
    if (end == std::string::npos) end = selector.size();
    const std::string term = selector.substr(at, end - at);
    for (const std::string op : {"==", "="}) {
      const std::string prefix = "metadata.name" + op;
      if (term.rfind(prefix, 0) == 0 && term.find("!=") == std::string::npos) {
        name = term.substr(prefix.size());
        break;
      }
    }
    at = end + 1;
  }
  if (name == "." || name == ".." || name.find('/') != std::string::npos || name.find('%') != std::string::npos) {
    return "";
  }
  return name;
}

}  // namespace

RequestInfo ResolveRequestInfo(const std::string& method, const std::string& path,
                               const std::multimap<std::string, std::string>& query) {
  RequestInfo info;
  info.path = path;
  info.verb = method;
  std::transform(info.verb.begin(), info.verb.end(), info.verb.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::vector<std::string> parts = SplitPath(path);
  if (parts.size() < 3 || (parts[0] != "api" && parts[0] != "apis")) return info;
  info.api_prefix = parts[0];
  parts.erase(parts.begin());
  if (info.api_prefix == "apis") {
    if (parts.size() < 3) return info;
    info.api_group = parts[0];
    parts.erase(parts.begin());
  }
  info.resource_request = true;
  info.api_version = parts[0];
  parts.erase(parts.begin());

  // The deprecated /proxy/… and /watch/… forms name their verb in the path.
  if (parts[0] == "proxy" || parts[0] == "watch") {
    if (parts.size() < 2) {
      info.resource_request = false;
      return info;
    }
    info.verb = parts[0];
    parts.erase(parts.begin());
  } else if (method == "POST") {
    info.verb = "create";
  } else if (method == "GET" || method == "HEAD") {
    info.verb = "get";
  } else if (method == "PUT") {
    info.verb = "update";
  } else if (method == "PATCH") {
    info.verb = "patch";
  } else if (method == "DELETE") {
    info.verb = "delete";
  } else {
    info.verb = "";
  }

  if (parts[0] == "namespaces") {
    if (parts.size() > 1) {
      info.ns = parts[1];
      // namespaces/{ns}/{resource}/…, unless it is the namespace's own
      // status or finalize subresource.
      if (parts.size() > 2 && parts[2] != "status" && parts[2] != "finalize") parts.erase(parts.begin(), parts.begin() + 2);
    }
  }
  if (parts.size() >= 3 && info.verb != "proxy") info.subresource = parts[2];
  if (parts.size() >= 2) info.name = parts[1];
  if (!parts.empty()) info.resource = parts[0];

  if (info.name.empty() && info.verb == "get") {
    info.verb = QueryBool(query, "watch") ? "watch" : "list";
    info.name = NameFromFieldSelector(QueryValue(query, "fieldSelector"));
  }
  if (info.name.empty() && info.verb == "delete") info.verb = "deletecollection";
  return info;
}

}  // namespace fairbench::apiserver
