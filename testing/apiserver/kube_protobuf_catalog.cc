// The messages kube_protobuf.h decodes, one line each, in this file's own
// notation: "pkg/Message: NUMBER jsonName TYPE; ...". Field numbers are
// those of k8s.io/api (core/v1, rbac/v1, coordination/v1, authentication/v1,
// authorization/v1, events/v1) and apimachinery (pkg/apis/meta/v1,
// pkg/runtime, pkg/util/intstr) generated.proto; presence follows the Go
// structs' types and json tags.
//
// TYPE: string, bytes, bool, int32, int64; time and microtime (meta/v1
// Time and MicroTime: a Timestamp on the wire, RFC 3339 in JSON); intstr
// (IntOrString); fieldsv1 (FieldsV1: raw JSON); map<string>, map<bytes>;
// pkg/Message; []TYPE for a repeated field. Suffixes: "?" a Go pointer
// (written when set, even if zero), "!" no omitempty (written even when
// zero: "" / 0 / false, a nil list or pointer as null). Without a suffix a
// scalar, list or map is omitempty and a message, time or intstr is a Go
// struct, written always.
#include "testing/apiserver/kube_protobuf_catalog.h"

namespace fairbench::apiserver {

const char* ProtobufCatalogText() {
  return R"(
runtime/TypeMeta: 1 apiVersion string; 2 kind string
runtime/Unknown: 1 typeMeta runtime/TypeMeta; 2 raw bytes; 3 contentEncoding string; 4 contentType string
meta/Timestamp: 1 seconds int64; 2 nanos int32
intstr/IntOrString: 1 type int64; 2 intVal int32; 3 strVal string
meta/FieldsV1: 1 Raw bytes
meta/ObjectMeta: 1 name string; 2 generateName string; 3 namespace string; 4 selfLink string; 5 uid string; 6 resourceVersion string; 7 generation int64; 8 creationTimestamp time; 9 deletionTimestamp time?; 10 deletionGracePeriodSeconds int64?; 11 labels map<string>; 12 annotations map<string>; 13 ownerReferences []meta/OwnerReference; 14 finalizers []string; 17 managedFields []meta/ManagedFieldsEntry
meta/OwnerReference: 5 apiVersion string!; 1 kind string!; 3 name string!; 4 uid string!; 6 controller bool?; 7 blockOwnerDeletion bool?
meta/ManagedFieldsEntry: 1 manager string; 2 operation string; 3 apiVersion string; 4 time time?; 6 fieldsType string; 7 fieldsV1 fieldsv1?; 8 subresource string
meta/LabelSelector: 1 matchLabels map<string>; 2 matchExpressions []meta/LabelSelectorRequirement
meta/LabelSelectorRequirement: 1 key string!; 2 operator string!; 3 values []string
meta/FieldSelectorRequirement: 1 key string!; 2 operator string!; 3 values []string
meta/Condition: 1 type string!; 2 status string!; 3 observedGeneration int64; 4 lastTransitionTime time; 5 reason string!; 6 message string!
meta/DeleteOptions: 1 gracePeriodSeconds int64?; 2 preconditions meta/Preconditions?; 3 orphanDependents bool?; 4 propagationPolicy string?; 5 dryRun []string; 6 ignoreStoreReadErrorWithClusterBreakingPotential bool?
meta/Preconditions: 1 uid string?; 2 resourceVersion string?
core/Namespace: 1 metadata meta/ObjectMeta; 2 spec core/NamespaceSpec; 3 status core/NamespaceStatus
core/NamespaceSpec: 1 finalizers []string
core/NamespaceStatus: 1 phase string; 2 conditions []core/NamespaceCondition
core/NamespaceCondition: 1 type string!; 2 status string!; 4 lastTransitionTime time; 5 reason string; 6 message string
core/Secret: 1 metadata meta/ObjectMeta; 5 immutable bool?; 2 data map<bytes>; 4 stringData map<string>; 3 type string
core/ConfigMap: 1 metadata meta/ObjectMeta; 4 immutable bool?; 2 data map<string>; 3 binaryData map<bytes>
core/ServiceAccount: 1 metadata meta/ObjectMeta; 2 secrets []core/ObjectReference; 3 imagePullSecrets []core/LocalObjectReference; 4 automountServiceAccountToken bool?
core/ObjectReference: 1 kind string; 2 namespace string; 3 name string; 4 uid string; 5 apiVersion string; 6 resourceVersion string; 7 fieldPath string
core/LocalObjectReference: 1 name string
core/Service: 1 metadata meta/ObjectMeta; 2 spec core/ServiceSpec; 3 status core/ServiceStatus
core/ServiceSpec: 1 ports []core/ServicePort; 2 selector map<string>; 3 clusterIP string; 18 clusterIPs []string; 4 type string; 5 externalIPs []string; 7 sessionAffinity string; 8 loadBalancerIP string; 9 loadBalancerSourceRanges []string; 10 externalName string; 11 externalTrafficPolicy string; 12 healthCheckNodePort int32; 13 publishNotReadyAddresses bool; 14 sessionAffinityConfig core/SessionAffinityConfig?; 19 ipFamilies []string; 17 ipFamilyPolicy string?; 20 allocateLoadBalancerNodePorts bool?; 21 loadBalancerClass string?; 22 internalTrafficPolicy string?; 23 trafficDistribution string?
core/ServicePort: 1 name string; 2 protocol string; 6 appProtocol string?; 3 port int32!; 4 targetPort intstr; 5 nodePort int32
core/SessionAffinityConfig: 1 clientIP core/ClientIPConfig?
core/ClientIPConfig: 1 timeoutSeconds int32?
core/ServiceStatus: 1 loadBalancer core/LoadBalancerStatus; 2 conditions []meta/Condition
core/LoadBalancerStatus: 1 ingress []core/LoadBalancerIngress
core/LoadBalancerIngress: 1 ip string; 2 hostname string; 3 ipMode string?; 4 ports []core/PortStatus
core/PortStatus: 1 port int32!; 2 protocol string!; 3 error string?
core/Event: 1 metadata meta/ObjectMeta; 2 involvedObject core/ObjectReference; 3 reason string; 4 message string; 5 source core/EventSource; 6 firstTimestamp time; 7 lastTimestamp time; 8 count int32; 9 type string; 10 eventTime microtime; 11 series core/EventSeries?; 12 action string; 13 related core/ObjectReference?; 14 reportingComponent string!; 15 reportingInstance string!
core/EventSource: 1 component string; 2 host string
core/EventSeries: 1 count int32; 2 lastObservedTime microtime
rbac/Role: 1 metadata meta/ObjectMeta; 2 rules []rbac/PolicyRule!
rbac/ClusterRole: 1 metadata meta/ObjectMeta; 2 rules []rbac/PolicyRule!; 3 aggregationRule rbac/AggregationRule?
rbac/AggregationRule: 1 clusterRoleSelectors []meta/LabelSelector
rbac/PolicyRule: 1 verbs []string!; 2 apiGroups []string; 3 resources []string; 4 resourceNames []string; 5 nonResourceURLs []string
rbac/RoleBinding: 1 metadata meta/ObjectMeta; 2 subjects []rbac/Subject; 3 roleRef rbac/RoleRef
rbac/ClusterRoleBinding: 1 metadata meta/ObjectMeta; 2 subjects []rbac/Subject; 3 roleRef rbac/RoleRef
rbac/Subject: 1 kind string!; 2 apiGroup string; 3 name string!; 4 namespace string
rbac/RoleRef: 1 apiGroup string!; 2 kind string!; 3 name string!
coordination/Lease: 1 metadata meta/ObjectMeta; 2 spec coordination/LeaseSpec
coordination/LeaseSpec: 1 holderIdentity string?; 2 leaseDurationSeconds int32?; 3 acquireTime microtime?; 4 renewTime microtime?; 5 leaseTransitions int32?; 6 strategy string?; 7 preferredHolder string?
authentication/TokenRequest: 1 metadata meta/ObjectMeta; 2 spec authentication/TokenRequestSpec; 3 status authentication/TokenRequestStatus
authentication/TokenRequestSpec: 1 audiences []string!; 4 expirationSeconds int64?!; 3 boundObjectRef authentication/BoundObjectReference?!
authentication/BoundObjectReference: 1 kind string; 2 apiVersion string; 3 name string; 4 uid string
authentication/TokenRequestStatus: 1 token string!; 2 expirationTimestamp time
authorization/SelfSubjectAccessReview: 1 metadata meta/ObjectMeta; 2 spec authorization/SelfSubjectAccessReviewSpec; 3 status authorization/SubjectAccessReviewStatus
authorization/SelfSubjectAccessReviewSpec: 1 resourceAttributes authorization/ResourceAttributes?; 2 nonResourceAttributes authorization/NonResourceAttributes?
authorization/ResourceAttributes: 1 namespace string; 2 verb string; 3 group string; 4 version string; 5 resource string; 6 subresource string; 7 name string; 8 fieldSelector authorization/FieldSelectorAttributes?; 9 labelSelector authorization/LabelSelectorAttributes?
authorization/NonResourceAttributes: 1 path string; 2 verb string
authorization/SubjectAccessReviewStatus: 1 allowed bool!; 4 denied bool; 2 reason string; 3 evaluationError string
authorization/FieldSelectorAttributes: 1 rawSelector string; 2 requirements []meta/FieldSelectorRequirement
authorization/LabelSelectorAttributes: 1 rawSelector string; 2 requirements []meta/LabelSelectorRequirement
events/Event: 1 metadata meta/ObjectMeta; 2 eventTime microtime; 3 series events/EventSeries?; 4 reportingController string; 5 reportingInstance string; 6 action string; 7 reason string; 8 regarding core/ObjectReference; 9 related core/ObjectReference?; 10 note string; 11 type string; 12 deprecatedSource core/EventSource; 13 deprecatedFirstTimestamp time; 14 deprecatedLastTimestamp time; 15 deprecatedCount int32
events/EventSeries: 1 count int32!; 2 lastObservedTime microtime
)";
}

const std::vector<ProtobufKind>& ProtobufKinds() {
  static const std::vector<ProtobufKind> kinds = {
      {"v1", "Namespace", "core/Namespace"},
      {"v1", "Secret", "core/Secret"},
      {"v1", "ConfigMap", "core/ConfigMap"},
      {"v1", "ServiceAccount", "core/ServiceAccount"},
      {"v1", "Service", "core/Service"},
      {"v1", "Event", "core/Event"},
      {"rbac.authorization.k8s.io/v1", "Role", "rbac/Role"},
      {"rbac.authorization.k8s.io/v1", "ClusterRole", "rbac/ClusterRole"},
      {"rbac.authorization.k8s.io/v1", "RoleBinding", "rbac/RoleBinding"},
      {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "rbac/ClusterRoleBinding"},
      {"coordination.k8s.io/v1", "Lease", "coordination/Lease"},
      {"authentication.k8s.io/v1", "TokenRequest", "authentication/TokenRequest"},
      {"authorization.k8s.io/v1", "SelfSubjectAccessReview", "authorization/SelfSubjectAccessReview"},
      {"events.k8s.io/v1", "Event", "events/Event"},
  };
  return kinds;
}

}  // namespace fairbench::apiserver
