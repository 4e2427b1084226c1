// Typed views of the Kubernetes objects the controller reads and writes:
// ObjectMeta, conditions, Lease, core/v1 Event, ConfigMap, and the parts of
// Pod, Node and Service that a controller inspects (their specs stay JSON:
// the platform code owns pod templates). Parsing happens once at the edge
// (FromJson); ToJson writes only the fields that are set.
//
// Plain values; thread-safe. FromJson never throws: a wrong shape is an
// InvalidArgument naming the field.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace fairbench::kube {

using Json = nlohmann::json;
using WallTime = std::chrono::system_clock::time_point;

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
  bool block_owner_deletion = false;
};

struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::optional<WallTime> creation_timestamp;
  std::optional<WallTime> deletion_timestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> finalizers;
  std::vector<OwnerReference> owner_references;

  static Result<ObjectMeta> FromJson(const Json& j);
  Json ToJson() const;
  // "ns/name", or "name" for cluster-scoped objects: the informer's key.
  std::string Key() const { return namespace_.empty() ? name : namespace_ + "/" + name; }
};

// metav1.Condition.
struct Condition {
  std::string type;
  std::string status;  // True | False | Unknown
  std::string reason;
  std::string message;
  int64_t observed_generation = 0;
  std::optional<WallTime> last_transition_time;

  static Result<Condition> FromJson(const Json& j);
  Json ToJson() const;
};

// A controller reference to `owner` (controller and blockOwnerDeletion true).
OwnerReference ControllerReference(const Json& owner);
// The cache key of any object JSON ("ns/name" or "name").
std::string ObjectKey(const Json& object);

struct LeaseSpec {
  std::string holder_identity;
  std::optional<int32_t> lease_duration_seconds;
  std::optional<WallTime> acquire_time;  // MicroTime
  std::optional<WallTime> renew_time;    // MicroTime
  int32_t lease_transitions = 0;
};

struct Lease {
  ObjectMeta metadata;
  LeaseSpec spec;
  static Result<Lease> FromJson(const Json& j);
  Json ToJson() const;
};

// core/v1 ObjectReference (an Event's involvedObject).
struct ObjectReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  // From any object JSON (apiVersion, kind, metadata).
  static ObjectReference Of(const Json& object);
  Json ToJson() const;
};

struct Event {
  ObjectMeta metadata;
  ObjectReference involved_object;
  std::string reason;
  std::string message;
  std::string type;  // Normal | Warning
  std::string source_component;
  std::string source_host;
  std::optional<WallTime> first_timestamp;
  std::optional<WallTime> last_timestamp;
  int32_t count = 0;
  std::string reporting_component;
  std::string reporting_instance;
  static Result<Event> FromJson(const Json& j);
  Json ToJson() const;
};

struct ConfigMap {
  ObjectMeta metadata;
  std::map<std::string, std::string> data;
  std::map<std::string, std::string> binary_data;  // base64 text, as on the wire
  static Result<ConfigMap> FromJson(const Json& j);
  Json ToJson() const;
};

struct ContainerStatus {
  std::string name;
  bool ready = false;
  bool started = false;
  int32_t restart_count = 0;
  std::string state;          // waiting | running | terminated | ""
  std::string state_reason;   // e.g. ContainerCreating, OOMKilled
  std::string state_message;  // the kubelet's words (the image, the missing Secret key)
  int32_t exit_code = 0;      // terminated only
  int32_t signal = 0;         // terminated by this signal; 0: not said
  std::string last_state;
  std::string last_state_reason;
  int32_t last_exit_code = 0;
};

struct PodStatus {
  std::string phase;  // Pending | Running | Succeeded | Failed | Unknown
  std::string reason;
  std::string message;
  std::string pod_ip;
  std::string host_ip;
  std::string qos_class;
  std::vector<Condition> conditions;
  std::vector<ContainerStatus> init_container_statuses;
  std::vector<ContainerStatus> container_statuses;
  // The condition of this type, if present.
  const Condition* FindCondition(const std::string& type) const;
  // The status of container `name`, if present.
  const ContainerStatus* FindContainer(const std::string& name) const;
  // The Ready condition is True.
  bool Ready() const;
};

struct Pod {
  ObjectMeta metadata;
  Json spec = Json::object();
  PodStatus status;
  std::string NodeName() const;
  // metadata.deletionTimestamp is set: the pod is going.
  bool Terminating() const { return metadata.deletion_timestamp.has_value(); }
  static Result<Pod> FromJson(const Json& j);
  Json ToJson() const;  // status is not written: it belongs to the kubelet
};

struct NodeAddress {
  std::string type;
  std::string address;
};

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule | PreferNoSchedule | NoExecute
};

// status.nodeInfo, as far as a report describes a node.
struct NodeSystemInfo {
  std::string os_image;
  std::string kernel_version;
  std::string container_runtime_version;
  std::string kubelet_version;
};

struct Node {
  ObjectMeta metadata;
  Json spec = Json::object();
  std::vector<Taint> taints;  // spec.taints
  // Quantities as text ("8", "15Gi"); a number the server sent is kept as its text.
  std::map<std::string, std::string> capacity;
  std::map<std::string, std::string> allocatable;
  std::vector<Condition> conditions;
  std::vector<NodeAddress> addresses;
  NodeSystemInfo node_info;
  bool Ready() const;
  bool Unschedulable() const;
  static Result<Node> FromJson(const Json& j);
  Json ToJson() const;
};

struct Service {
  ObjectMeta metadata;
  Json spec = Json::object();
  std::string ClusterIP() const;
  static Result<Service> FromJson(const Json& j);
  Json ToJson() const;
};

}  // namespace fairbench::kube
