#include "controller/kube/objects.h"

#include "common/json_read.h"

#include "api/time_text.h"
#include "controller/kube/api_fields.h"

namespace fairbench::kube {
namespace {

namespace f = fields;

// Readers that tolerate absent fields and report wrong types.
struct Reader {
  const Json& j;
  std::string where;
  Status status;

  std::string Str(const char* key) {
    if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "";
    if (!j[key].is_string()) {
      Fail(key, "a string");
      return "";
    }
    return j[key].get<std::string>();
  }
  int64_t Int(const char* key) {
    if (!j.is_object() || !j.contains(key) || j[key].is_null()) return 0;
    if (!j[key].is_number_integer()) {
      Fail(key, "an integer");
      return 0;
    }
    return j[key].get<int64_t>();
  }
  bool Bool(const char* key) {
    if (!j.is_object() || !j.contains(key) || j[key].is_null()) return false;
    if (!j[key].is_boolean()) {
      Fail(key, "a boolean");
      return false;
    }
    return j[key].get<bool>();
  }
  std::optional<WallTime> Time(const char* key) {
    std::string s = Str(key);
    if (s.empty()) return std::nullopt;
    auto t = api::ParseTime(s);
    if (!t.ok()) {
      Fail(key, "an RFC 3339 time");
      return std::nullopt;
    }
    return *t;
  }
  std::map<std::string, std::string> StrMap(const char* key) {
    std::map<std::string, std::string> out;
    if (!j.is_object() || !j.contains(key) || j[key].is_null()) return out;
    if (!j[key].is_object()) {
      Fail(key, "a map of strings");
      return out;
    }
    for (const auto& [k, v] : j[key].items()) {
      if (v.is_string()) {
        out[k] = v.get<std::string>();
      } else {
        Fail(key, "a map of strings");
      }
    }
    return out;
  }
  const Json& Obj(const char* key) {
    static const Json kEmpty = Json::object();
    if (!j.is_object() || !j.contains(key) || j[key].is_null()) return kEmpty;
    if (!j[key].is_object()) {
      Fail(key, "an object");
      return kEmpty;
    }
    return j[key];
  }
  const Json& Arr(const char* key) {
    static const Json kEmpty = Json::array();
    if (!j.is_object() || !j.contains(key) || j[key].is_null()) return kEmpty;
    if (!j[key].is_array()) {
      Fail(key, "a list");
      return kEmpty;
    }
    return j[key];
  }
  void Fail(const char* key, const char* want) {
    if (status.ok()) status = Status::InvalidArgument(where + (where.empty() ? "" : ".") + key + ": must be " + want);
  }
  void Take(const Status& s) {
    if (status.ok() && !s.ok()) status = s;
  }
};

void PutMap(Json& j, const char* key, const std::map<std::string, std::string>& m) {
  if (m.empty()) return;
  Json o = Json::object();
  for (const auto& [k, v] : m) o[k] = v;
  j[key] = std::move(o);
}

void PutStr(Json& j, const char* key, const std::string& v) {
  if (!v.empty()) j[key] = v;
}

std::vector<Condition> Conditions(Reader& r) {
  std::vector<Condition> out;
  for (const auto& c : r.Arr(f::kConditions)) {
    auto cond = Condition::FromJson(c);
    if (!cond.ok()) {
      r.Take(cond.status());
      continue;
    }
    out.push_back(*cond);
  }
  return out;
}

struct State {
  std::string name;
  std::string reason;
  std::string message;
  int32_t exit_code = 0;
  int32_t signal = 0;
};

State StateOf(const Json& state) {
  State out;
  for (const char* s : {f::kWaiting, f::kRunning, f::kTerminated}) {
    if (state.is_object() && state.contains(s) && state[s].is_object()) {
      out.name = s;
      out.reason = json_read::String(state[s], f::kReason);
      out.message = json_read::String(state[s], f::kMessage);
      out.exit_code = json_read::Int32(state[s], f::kExitCode);
      out.signal = json_read::Int32(state[s], f::kSignal);
      return out;
    }
  }
  return out;
}

std::vector<ContainerStatus> ContainerStatuses(Reader& s, const char* list) {
  std::vector<ContainerStatus> out;
  for (const auto& cs : s.Arr(list)) {
    Reader c{cs, std::string("status.") + list + "[]", {}};
    ContainerStatus st;
    st.name = c.Str(f::kName);
    st.ready = c.Bool(f::kReady);
    st.started = c.Bool(f::kStarted);
    st.restart_count = static_cast<int32_t>(c.Int(f::kRestartCount));
    const State now = StateOf(c.Obj(f::kState));
    st.state = now.name;
    st.state_reason = now.reason;
    st.state_message = now.message;
    st.exit_code = now.exit_code;
    st.signal = now.signal;
    const State last = StateOf(c.Obj(f::kLastState));
    st.last_state = last.name;
    st.last_state_reason = last.reason;
    st.last_exit_code = last.exit_code;
    s.Take(c.status);
    out.push_back(std::move(st));
  }
  return out;
}

// A map of quantities: strings, or numbers kept as their text.
std::map<std::string, std::string> Quantities(Reader& r, const char* key) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : r.Obj(key).items()) {
    if (v.is_string()) {
      out[k] = v.get<std::string>();
    } else if (v.is_number()) {
      out[k] = v.dump();
    } else {
      r.Fail(key, "a map of quantities");
    }
  }
  return out;
}

}  // namespace

Result<ObjectMeta> ObjectMeta::FromJson(const Json& j) {
  Reader r{j, "metadata", {}};
  ObjectMeta m;
  if (!j.is_object()) return Status::InvalidArgument("metadata: must be an object");
  m.name = r.Str(f::kName);
  m.generate_name = r.Str(f::kGenerateName);
  m.namespace_ = r.Str(f::kNamespace);
  m.uid = r.Str(f::kUid);
  m.resource_version = r.Str(f::kResourceVersion);
  m.generation = r.Int(f::kGeneration);
  m.creation_timestamp = r.Time(f::kCreationTimestamp);
  m.deletion_timestamp = r.Time(f::kDeletionTimestamp);
  m.labels = r.StrMap(f::kLabels);
  m.annotations = r.StrMap(f::kAnnotations);
  for (const auto& fin : r.Arr(f::kFinalizers)) {
    if (fin.is_string()) m.finalizers.push_back(fin.get<std::string>());
  }
  for (const auto& o : r.Arr(f::kOwnerReferences)) {
    Reader ro{o, "metadata.ownerReferences", {}};
    OwnerReference ref{ro.Str(f::kApiVersion), ro.Str(f::kKind),        ro.Str(f::kName),
                       ro.Str(f::kUid),        ro.Bool(f::kController), ro.Bool(f::kBlockOwnerDeletion)};
    r.Take(ro.status);
    m.owner_references.push_back(std::move(ref));
  }
  if (!r.status.ok()) return r.status;
  return m;
}

Json ObjectMeta::ToJson() const {
  Json j = Json::object();
  PutStr(j, f::kName, name);
  PutStr(j, f::kGenerateName, generate_name);
  PutStr(j, f::kNamespace, namespace_);
  PutStr(j, f::kUid, uid);
  PutStr(j, f::kResourceVersion, resource_version);
  if (generation) j[f::kGeneration] = generation;
  if (creation_timestamp) j[f::kCreationTimestamp] = api::FormatTimeSeconds(*creation_timestamp);
  if (deletion_timestamp) j[f::kDeletionTimestamp] = api::FormatTimeSeconds(*deletion_timestamp);
  PutMap(j, f::kLabels, labels);
  PutMap(j, f::kAnnotations, annotations);
  if (!finalizers.empty()) j[f::kFinalizers] = finalizers;
  if (!owner_references.empty()) {
    Json refs = Json::array();
    for (const auto& o : owner_references) {
      Json ref = {{f::kApiVersion, o.api_version}, {f::kKind, o.kind}, {f::kName, o.name}, {f::kUid, o.uid}};
      if (o.controller) ref[f::kController] = true;
      if (o.block_owner_deletion) ref[f::kBlockOwnerDeletion] = true;
      refs.push_back(std::move(ref));
    }
    j[f::kOwnerReferences] = std::move(refs);
  }
  return j;
}

Result<Condition> Condition::FromJson(const Json& j) {
  Reader r{j, "conditions[]", {}};
  Condition c{r.Str(f::kType),
              r.Str(f::kStatus),
              r.Str(f::kReason),
              r.Str(f::kMessage),
              r.Int(f::kObservedGeneration),
              r.Time(f::kLastTransitionTime)};
  if (!r.status.ok()) return r.status;
  return c;
}

Json Condition::ToJson() const {
  Json j = {{f::kType, type}, {f::kStatus, status}};
  PutStr(j, f::kReason, reason);
  PutStr(j, f::kMessage, message);
  if (observed_generation) j[f::kObservedGeneration] = observed_generation;
  if (last_transition_time) j[f::kLastTransitionTime] = api::FormatTimeSeconds(*last_transition_time);
  return j;
}

OwnerReference ControllerReference(const Json& owner) {
  const Json& md = json_read::Object(owner, f::kMetadata);
  return {json_read::String(owner, f::kApiVersion),
          json_read::String(owner, f::kKind),
          json_read::String(md, f::kName),
          json_read::String(md, f::kUid),
          true,
          true};
}

std::string ObjectKey(const Json& object) {
  if (!object.is_object() || !object.contains(f::kMetadata)) return "";
  const Json& md = object[f::kMetadata];
  std::string ns = json_read::String(md, f::kNamespace);
  std::string name = json_read::String(md, f::kName);
  return ns.empty() ? name : ns + "/" + name;
}

Result<Lease> Lease::FromJson(const Json& j) {
  Reader r{j, "", {}};
  Lease l;
  auto md = ObjectMeta::FromJson(r.Obj(f::kMetadata));
  if (!md.ok()) return md.status();
  l.metadata = *md;
  Reader s{r.Obj(f::kSpec), "spec", {}};
  l.spec.holder_identity = s.Str(f::kHolderIdentity);
  if (s.j.contains(f::kLeaseDurationSeconds)) {
    l.spec.lease_duration_seconds = static_cast<int32_t>(s.Int(f::kLeaseDurationSeconds));
  }
  l.spec.acquire_time = s.Time(f::kAcquireTime);
  l.spec.renew_time = s.Time(f::kRenewTime);
  l.spec.lease_transitions = static_cast<int32_t>(s.Int(f::kLeaseTransitions));
  r.Take(s.status);
  if (!r.status.ok()) return r.status;
  return l;
}

Json Lease::ToJson() const {
  Json spec_json = Json::object();
  spec_json[f::kHolderIdentity] = spec.holder_identity;
  if (spec.lease_duration_seconds) spec_json[f::kLeaseDurationSeconds] = *spec.lease_duration_seconds;
  if (spec.acquire_time) spec_json[f::kAcquireTime] = api::FormatMicroTime(*spec.acquire_time);
  if (spec.renew_time) spec_json[f::kRenewTime] = api::FormatMicroTime(*spec.renew_time);
  spec_json[f::kLeaseTransitions] = spec.lease_transitions;
  return {{f::kApiVersion, "coordination.k8s.io/v1"},
          {f::kKind, "Lease"},
          {f::kMetadata, metadata.ToJson()},
          {f::kSpec, std::move(spec_json)}};
}

ObjectReference ObjectReference::Of(const Json& object) {
  const Json& md = json_read::Object(object, f::kMetadata);
  return {json_read::String(object, f::kApiVersion),
          json_read::String(object, f::kKind),
          json_read::String(md, f::kName),
          json_read::String(md, f::kNamespace),
          json_read::String(md, f::kUid),
          json_read::String(md, f::kResourceVersion)};
}

Json ObjectReference::ToJson() const {
  Json j = Json::object();
  PutStr(j, f::kApiVersion, api_version);
  PutStr(j, f::kKind, kind);
  PutStr(j, f::kName, name);
  PutStr(j, f::kNamespace, namespace_);
  PutStr(j, f::kUid, uid);
  PutStr(j, f::kResourceVersion, resource_version);
  return j;
}

Result<Event> Event::FromJson(const Json& j) {
  Reader r{j, "", {}};
  Event e;
  auto md = ObjectMeta::FromJson(r.Obj(f::kMetadata));
  if (!md.ok()) return md.status();
  e.metadata = *md;
  Reader io{r.Obj(f::kInvolvedObject), "involvedObject", {}};
  e.involved_object = {io.Str(f::kApiVersion), io.Str(f::kKind), io.Str(f::kName),
                       io.Str(f::kNamespace),  io.Str(f::kUid),  io.Str(f::kResourceVersion)};
  r.Take(io.status);
  e.reason = r.Str(f::kReason);
  e.message = r.Str(f::kMessage);
  e.type = r.Str(f::kType);
  Reader src{r.Obj(f::kSource), "source", {}};
  e.source_component = src.Str(f::kComponent);
  e.source_host = src.Str(f::kHost);
  r.Take(src.status);
  e.first_timestamp = r.Time(f::kFirstTimestamp);
  e.last_timestamp = r.Time(f::kLastTimestamp);
  e.count = static_cast<int32_t>(r.Int(f::kCount));
  e.reporting_component = r.Str(f::kReportingComponent);
  e.reporting_instance = r.Str(f::kReportingInstance);
  if (!r.status.ok()) return r.status;
  return e;
}

Json Event::ToJson() const {
  Json j = {{f::kApiVersion, "v1"},
            {f::kKind, "Event"},
            {f::kMetadata, metadata.ToJson()},
            {f::kInvolvedObject, involved_object.ToJson()}};
  PutStr(j, f::kReason, reason);
  PutStr(j, f::kMessage, message);
  PutStr(j, f::kType, type);
  Json src = Json::object();
  PutStr(src, f::kComponent, source_component);
  PutStr(src, f::kHost, source_host);
  if (!src.empty()) j[f::kSource] = src;
  if (first_timestamp) j[f::kFirstTimestamp] = api::FormatTimeSeconds(*first_timestamp);
  if (last_timestamp) j[f::kLastTimestamp] = api::FormatTimeSeconds(*last_timestamp);
  if (count) j[f::kCount] = count;
  PutStr(j, f::kReportingComponent, reporting_component);
  PutStr(j, f::kReportingInstance, reporting_instance);
  return j;
}

Result<ConfigMap> ConfigMap::FromJson(const Json& j) {
  Reader r{j, "", {}};
  ConfigMap c;
  auto md = ObjectMeta::FromJson(r.Obj(f::kMetadata));
  if (!md.ok()) return md.status();
  c.metadata = *md;
  c.data = r.StrMap(f::kData);
  c.binary_data = r.StrMap("binaryData");
  if (!r.status.ok()) return r.status;
  return c;
}

Json ConfigMap::ToJson() const {
  Json j = {{f::kApiVersion, "v1"}, {f::kKind, "ConfigMap"}, {f::kMetadata, metadata.ToJson()}};
  PutMap(j, f::kData, data);
  PutMap(j, "binaryData", binary_data);
  return j;
}

const Condition* PodStatus::FindCondition(const std::string& type) const {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

const ContainerStatus* PodStatus::FindContainer(const std::string& name) const {
  for (const auto& c : container_statuses) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

bool PodStatus::Ready() const {
  const Condition* c = FindCondition(f::kConditionReady);
  return c != nullptr && c->status == f::kConditionTrue;
}

std::string Pod::NodeName() const { return json_read::String(spec, f::kNodeName); }

Result<Pod> Pod::FromJson(const Json& j) {
  Reader r{j, "", {}};
  Pod p;
  auto md = ObjectMeta::FromJson(r.Obj(f::kMetadata));
  if (!md.ok()) return md.status();
  p.metadata = *md;
  p.spec = r.Obj(f::kSpec);
  Reader s{r.Obj(f::kStatus), "status", {}};
  p.status.phase = s.Str(f::kPhase);
  p.status.reason = s.Str(f::kReason);
  p.status.message = s.Str(f::kMessage);
  p.status.pod_ip = s.Str(f::kPodIP);
  p.status.host_ip = s.Str(f::kHostIP);
  p.status.qos_class = s.Str(f::kQosClass);
  p.status.conditions = Conditions(s);
  p.status.init_container_statuses = ContainerStatuses(s, f::kInitContainerStatuses);
  p.status.container_statuses = ContainerStatuses(s, f::kContainerStatuses);
  r.Take(s.status);
  if (!r.status.ok()) return r.status;
  return p;
}

Json Pod::ToJson() const {
  return {{f::kApiVersion, "v1"}, {f::kKind, "Pod"}, {f::kMetadata, metadata.ToJson()}, {f::kSpec, spec}};
}

bool Node::Ready() const {
  for (const auto& c : conditions) {
    if (c.type == f::kConditionReady) return c.status == f::kConditionTrue;
  }
  return false;
}

bool Node::Unschedulable() const { return json_read::Bool(spec, f::kUnschedulable); }

Result<Node> Node::FromJson(const Json& j) {
  Reader r{j, "", {}};
  Node n;
  auto md = ObjectMeta::FromJson(r.Obj(f::kMetadata));
  if (!md.ok()) return md.status();
  n.metadata = *md;
  n.spec = r.Obj(f::kSpec);
  Reader spec{n.spec, "spec", {}};
  for (const auto& t : spec.Arr(f::kTaints)) {
    Reader tr{t, "spec.taints[]", {}};
    n.taints.push_back({tr.Str(f::kKey), tr.Str(f::kValue), tr.Str(f::kEffect)});
    spec.Take(tr.status);
  }
  r.Take(spec.status);
  Reader s{r.Obj(f::kStatus), "status", {}};
  n.capacity = Quantities(s, f::kCapacity);
  n.allocatable = Quantities(s, f::kAllocatable);
  n.conditions = Conditions(s);
  Reader info{s.Obj(f::kNodeInfo), "status.nodeInfo", {}};
  n.node_info = {info.Str(f::kOsImage), info.Str(f::kKernelVersion), info.Str(f::kContainerRuntimeVersion),
                 info.Str(f::kKubeletVersion)};
  s.Take(info.status);
  for (const auto& a : s.Arr(f::kAddresses)) {
    Reader ar{a, "status.addresses[]", {}};
    n.addresses.push_back({ar.Str(f::kType), ar.Str(f::kAddress)});
    s.Take(ar.status);
  }
  r.Take(s.status);
  if (!r.status.ok()) return r.status;
  return n;
}

Json Node::ToJson() const {
  return {{f::kApiVersion, "v1"}, {f::kKind, "Node"}, {f::kMetadata, metadata.ToJson()}, {f::kSpec, spec}};
}

std::string Service::ClusterIP() const { return json_read::String(spec, f::kClusterIP); }

Result<Service> Service::FromJson(const Json& j) {
  Reader r{j, "", {}};
  Service s;
  auto md = ObjectMeta::FromJson(r.Obj(f::kMetadata));
  if (!md.ok()) return md.status();
  s.metadata = *md;
  s.spec = r.Obj(f::kSpec);
  if (!r.status.ok()) return r.status;
  return s;
}

Json Service::ToJson() const {
  return {{f::kApiVersion, "v1"}, {f::kKind, "Service"}, {f::kMetadata, metadata.ToJson()}, {f::kSpec, spec}};
}

}  // namespace fairbench::kube
