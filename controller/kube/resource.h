// ResourceType: which API resource an operation addresses (group, version,
// kind, plural, scope) and the URL paths of KUBE-API.md §1. The well-known
// resources the controller uses are listed once here; a custom resource's
// scope can also be read from discovery (Client::Discover), "as the CRD says".
//
// Plain values; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace fairbench::kube {

enum class Scope { kNamespaced, kCluster };

struct ResourceType {
  std::string group;  // "" = core
  std::string version;
  std::string kind;
  std::string plural;
  Scope scope = Scope::kNamespaced;

  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
  // "/api/v1" or "/apis/G/V".
  std::string GroupVersionPath() const;
  // A collection (name empty) or an object path, with an optional
  // subresource. For a namespaced resource an empty `ns` means all
  // namespaces (collections only); cluster-scoped resources ignore `ns`.
  std::string Path(std::string_view ns, std::string_view name = {}, std::string_view subresource = {}) const;
  bool namespaced() const { return scope == Scope::kNamespaced; }
};

namespace resources {
ResourceType Pods();
ResourceType Services();
ResourceType ConfigMaps();
ResourceType Secrets();
ResourceType Events();
ResourceType Nodes();
ResourceType Namespaces();
ResourceType Leases();
ResourceType CustomResourceDefinitions();
// fairbench.dev/v1alpha1 BenchmarkRun; the CRD decides the scope.
ResourceType BenchmarkRuns(Scope scope = Scope::kNamespaced);
}  // namespace resources

// Percent-encodes a query value (RFC 3986 unreserved characters kept).
std::string QueryEscape(std::string_view s);

}  // namespace fairbench::kube
