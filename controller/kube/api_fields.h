// The Kubernetes API's field names, query parameters, content types and
// reasons that the client reads or writes — in one place, so that a typo
// cannot hide in one of many call sites (STYLE.md principle 5).
#pragma once

namespace fairbench::kube::fields {

// Object envelope and metadata.
inline constexpr char kApiVersion[] = "apiVersion";
inline constexpr char kKind[] = "kind";
inline constexpr char kMetadata[] = "metadata";
inline constexpr char kSpec[] = "spec";
inline constexpr char kStatus[] = "status";
inline constexpr char kItems[] = "items";
inline constexpr char kData[] = "data";
inline constexpr char kBinaryData[] = "binaryData";
inline constexpr char kName[] = "name";
inline constexpr char kGenerateName[] = "generateName";
inline constexpr char kNamespace[] = "namespace";
inline constexpr char kUid[] = "uid";
inline constexpr char kResourceVersion[] = "resourceVersion";
inline constexpr char kGeneration[] = "generation";
inline constexpr char kCreationTimestamp[] = "creationTimestamp";
inline constexpr char kDeletionTimestamp[] = "deletionTimestamp";
inline constexpr char kDeletionGracePeriodSeconds[] = "deletionGracePeriodSeconds";
inline constexpr char kLabels[] = "labels";
inline constexpr char kAnnotations[] = "annotations";
inline constexpr char kFinalizers[] = "finalizers";
inline constexpr char kOwnerReferences[] = "ownerReferences";
inline constexpr char kController[] = "controller";
inline constexpr char kBlockOwnerDeletion[] = "blockOwnerDeletion";
inline constexpr char kContinue[] = "continue";
inline constexpr char kRemainingItemCount[] = "remainingItemCount";

// Status (metav1.Status) bodies.
inline constexpr char kStatusKind[] = "Status";
inline constexpr char kMessage[] = "message";
inline constexpr char kReason[] = "reason";
inline constexpr char kCode[] = "code";
inline constexpr char kDetails[] = "details";
inline constexpr char kCauses[] = "causes";
inline constexpr char kField[] = "field";
inline constexpr char kRetryAfterSeconds[] = "retryAfterSeconds";

// Watch events.
inline constexpr char kType[] = "type";
inline constexpr char kObject[] = "object";

// Conditions.
inline constexpr char kConditions[] = "conditions";
inline constexpr char kObservedGeneration[] = "observedGeneration";
inline constexpr char kLastTransitionTime[] = "lastTransitionTime";

// coordination.k8s.io/v1 LeaseSpec.
inline constexpr char kHolderIdentity[] = "holderIdentity";
inline constexpr char kLeaseDurationSeconds[] = "leaseDurationSeconds";
inline constexpr char kAcquireTime[] = "acquireTime";
inline constexpr char kRenewTime[] = "renewTime";
inline constexpr char kLeaseTransitions[] = "leaseTransitions";

// core/v1 Event.
inline constexpr char kInvolvedObject[] = "involvedObject";
inline constexpr char kSource[] = "source";
inline constexpr char kComponent[] = "component";
inline constexpr char kHost[] = "host";
inline constexpr char kFirstTimestamp[] = "firstTimestamp";
inline constexpr char kLastTimestamp[] = "lastTimestamp";
inline constexpr char kCount[] = "count";
inline constexpr char kReportingComponent[] = "reportingComponent";
inline constexpr char kReportingInstance[] = "reportingInstance";

// Pods, nodes, services.
inline constexpr char kPhase[] = "phase";
inline constexpr char kNodeName[] = "nodeName";
inline constexpr char kPodIP[] = "podIP";
inline constexpr char kHostIP[] = "hostIP";
inline constexpr char kQosClass[] = "qosClass";
inline constexpr char kContainerStatuses[] = "containerStatuses";
inline constexpr char kInitContainerStatuses[] = "initContainerStatuses";
inline constexpr char kReady[] = "ready";
inline constexpr char kStarted[] = "started";
inline constexpr char kRestartCount[] = "restartCount";
inline constexpr char kState[] = "state";
inline constexpr char kLastState[] = "lastState";
inline constexpr char kWaiting[] = "waiting";
inline constexpr char kRunning[] = "running";
inline constexpr char kTerminated[] = "terminated";
inline constexpr char kExitCode[] = "exitCode";
inline constexpr char kSignal[] = "signal";
inline constexpr char kCapacity[] = "capacity";
inline constexpr char kAllocatable[] = "allocatable";
inline constexpr char kAddresses[] = "addresses";
inline constexpr char kAddress[] = "address";
inline constexpr char kUnschedulable[] = "unschedulable";
inline constexpr char kTaints[] = "taints";
inline constexpr char kKey[] = "key";
inline constexpr char kValue[] = "value";
inline constexpr char kEffect[] = "effect";
inline constexpr char kNodeInfo[] = "nodeInfo";
inline constexpr char kOsImage[] = "osImage";
inline constexpr char kKernelVersion[] = "kernelVersion";
inline constexpr char kContainerRuntimeVersion[] = "containerRuntimeVersion";
inline constexpr char kKubeletVersion[] = "kubeletVersion";
inline constexpr char kClusterIP[] = "clusterIP";
inline constexpr char kPorts[] = "ports";

// Kubernetes' own words in those fields.
inline constexpr char kConditionReady[] = "Ready";  // a pod's and a node's condition type
inline constexpr char kConditionTrue[] = "True";
inline constexpr char kPodSucceeded[] = "Succeeded";  // pod phases
inline constexpr char kPodFailed[] = "Failed";
inline constexpr char kReasonOomKilled[] = "OOMKilled";  // a terminated container's reason
inline constexpr char kNoSchedule[] = "NoSchedule";      // taint effects
inline constexpr char kNoExecute[] = "NoExecute";
inline constexpr char kTolerationExists[] = "Exists";  // toleration operators
inline constexpr char kTolerationEqual[] = "Equal";

// Query parameters.
inline constexpr char kQueryLabelSelector[] = "labelSelector";
inline constexpr char kQueryFieldSelector[] = "fieldSelector";
inline constexpr char kQueryLimit[] = "limit";
inline constexpr char kQueryContinue[] = "continue";
inline constexpr char kQueryResourceVersion[] = "resourceVersion";
inline constexpr char kQueryResourceVersionMatch[] = "resourceVersionMatch";
inline constexpr char kQueryWatch[] = "watch";
inline constexpr char kQueryAllowWatchBookmarks[] = "allowWatchBookmarks";
inline constexpr char kQueryTimeoutSeconds[] = "timeoutSeconds";
inline constexpr char kQueryFieldManager[] = "fieldManager";
inline constexpr char kQueryForce[] = "force";
inline constexpr char kQueryPropagationPolicy[] = "propagationPolicy";
inline constexpr char kQueryGracePeriodSeconds[] = "gracePeriodSeconds";
inline constexpr char kQueryDryRun[] = "dryRun";
inline constexpr char kQueryFieldValidation[] = "fieldValidation";

// DeleteOptions body.
inline constexpr char kPropagationPolicy[] = "propagationPolicy";
inline constexpr char kGracePeriodSeconds[] = "gracePeriodSeconds";
inline constexpr char kPreconditions[] = "preconditions";

// Content types.
inline constexpr char kJson[] = "application/json";
inline constexpr char kMergePatch[] = "application/merge-patch+json";
inline constexpr char kJsonPatch[] = "application/json-patch+json";
inline constexpr char kStrategicMergePatch[] = "application/strategic-merge-patch+json";
inline constexpr char kApplyPatch[] = "application/apply-patch+yaml";

// Watch event types.
inline constexpr char kAdded[] = "ADDED";
inline constexpr char kModified[] = "MODIFIED";
inline constexpr char kDeleted[] = "DELETED";
inline constexpr char kBookmark[] = "BOOKMARK";
inline constexpr char kError[] = "ERROR";

}  // namespace fairbench::kube::fields
