// TypedClient<T>: the Client's operations on one resource, with typed
// objects in and out. T provides `static Result<T> FromJson(const Json&)`,
// `Json ToJson() const` and `ObjectMeta metadata` (see objects.h; the API
// model's BenchmarkRun can plug in the same way). Typed clients for the
// core objects, Leases and Events are declared at the bottom.
//
// Thread-safe as Client is; holds a reference to it.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

#include "controller/kube/client.h"

namespace fairbench::kube {

template <typename T>
class TypedClient {
 public:
  TypedClient(Client& client, ResourceType resource) : client_(client), resource_(std::move(resource)) {}

  const ResourceType& resource() const { return resource_; }

  ApiResult<T> Get(std::string_view ns, std::string_view name, const GetOptions& options = {}) {
    return Decode(client_.Get(resource_, ns, name, options));
  }
  // Every page.
  ApiResult<std::vector<T>> List(std::string_view ns, const ListOptions& options = {}) {
    auto list = client_.ListAll(resource_, ns, options);
    if (!list.ok()) return list.error();
    std::vector<T> out;
    for (const auto& item : list->items) {
      auto t = T::FromJson(item);
      if (!t.ok()) return DecodeError(t.status());
      out.push_back(std::move(*t));
    }
    return out;
  }
  ApiResult<T> Create(const T& object, const WriteOptions& options = {}) {
    return Decode(client_.Create(resource_, object.metadata.namespace_, object.ToJson(), options));
  }
  ApiResult<T> Update(const T& object, const WriteOptions& options = {}) {
    return Decode(client_.Update(resource_, object.ToJson(), options));
  }
  ApiResult<T> Apply(const T& object, const PatchOptions& options) {
    return Decode(client_.Apply(resource_, object.ToJson(), options));
  }
  ApiResult<T> Patch(std::string_view ns, std::string_view name, PatchType type, std::string_view body,
                     const PatchOptions& options = {}) {
    return Decode(client_.Patch(resource_, ns, name, type, body, options));
  }
  ApiStatus Delete(std::string_view ns, std::string_view name, const DeleteOptions& options = {}) {
    auto r = client_.Delete(resource_, ns, name, options);
    if (!r.ok()) return r.error();
    return ApiOk();
  }

 private:
  static ApiError DecodeError(const Status& s) {
    ApiError e;
    e.reason = Reason::kDecode;
    e.message = s.message();
    return e;
  }
  static ApiResult<T> Decode(ApiResult<Json> j) {
    if (!j.ok()) return j.error();
    auto t = T::FromJson(*j);
    if (!t.ok()) return DecodeError(t.status());
    return std::move(*t);
  }

  Client& client_;
  ResourceType resource_;
};

inline TypedClient<Pod> PodClient(Client& c) { return {c, resources::Pods()}; }
inline TypedClient<Service> ServiceClient(Client& c) { return {c, resources::Services()}; }
inline TypedClient<ConfigMap> ConfigMapClient(Client& c) { return {c, resources::ConfigMaps()}; }
inline TypedClient<Event> EventClient(Client& c) { return {c, resources::Events()}; }
inline TypedClient<Node> NodeClient(Client& c) { return {c, resources::Nodes()}; }
inline TypedClient<Lease> LeaseClient(Client& c) { return {c, resources::Leases()}; }

}  // namespace fairbench::kube
