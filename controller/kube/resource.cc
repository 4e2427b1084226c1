#include "controller/kube/resource.h"

#include <cctype>
#include <cstdio>

namespace fairbench::kube {

std::string ResourceType::GroupVersionPath() const {
  return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
}

std::string ResourceType::Path(std::string_view ns, std::string_view name, std::string_view subresource) const {
  std::string p = GroupVersionPath();
  if (namespaced() && !ns.empty()) {
    p += "/namespaces/";
    p += ns;
  }
  p += "/" + plural;
  if (!name.empty()) {
    p += "/";
    p += name;
    if (!subresource.empty()) {
      p += "/";
      p += subresource;
    }
  }
  return p;
}

namespace resources {
ResourceType Pods() { return {"", "v1", "Pod", "pods", Scope::kNamespaced}; }
ResourceType Services() { return {"", "v1", "Service", "services", Scope::kNamespaced}; }
ResourceType ConfigMaps() { return {"", "v1", "ConfigMap", "configmaps", Scope::kNamespaced}; }
ResourceType Secrets() { return {"", "v1", "Secret", "secrets", Scope::kNamespaced}; }
ResourceType Events() { return {"", "v1", "Event", "events", Scope::kNamespaced}; }
ResourceType Nodes() { return {"", "v1", "Node", "nodes", Scope::kCluster}; }
ResourceType Namespaces() { return {"", "v1", "Namespace", "namespaces", Scope::kCluster}; }
ResourceType Leases() { return {"coordination.k8s.io", "v1", "Lease", "leases", Scope::kNamespaced}; }
ResourceType CustomResourceDefinitions() {
  return {"apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", Scope::kCluster};
}
ResourceType BenchmarkRuns(Scope scope) {
  return {"fairbench.dev", "v1alpha1", "BenchmarkRun", "benchmarkruns", scope};
}
}  // namespace resources

std::string QueryEscape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace fairbench::kube
