#include "controller/platform/kubernetes/kubernetes_platform.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/api/cells.h"
#include "common/api/quantity.h"
#include "controller/kube/backoff.h"
#include "common/clock.h"
#include "controller/kube/resource.h"
#include "controller/platform/kubernetes/pod_templates.h"
#include "controller/platform/kubernetes/stats_summary.h"

namespace fairbench::controller {
namespace {

using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// The container command of a target on Kubernetes: spec.targets[].command
// and args with "{port}" replaced; none when no command is given (the
// image's entrypoint then runs unwrapped).
std::vector<std::string> ContainerCommand(const api::Target& target) {
  if (target.command.empty()) return {};
  std::vector<std::string> out;
  for (const std::string& a : target.command) out.push_back(api::SubstitutePort(a, target.port));
  for (const std::string& a : target.args) out.push_back(api::SubstitutePort(a, target.port));
  return out;
}

std::string Str(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

const Json& Obj(const Json& j, const char* key) {
  static const Json kEmpty = Json::object();
  if (!j.is_object() || !j.contains(key) || !j[key].is_object()) return kEmpty;
  return j[key];
}

const Json& Arr(const Json& j, const char* key) {
  static const Json kEmpty = Json::array();
  if (!j.is_object() || !j.contains(key) || !j[key].is_array()) return kEmpty;
  return j[key];
}

// The status of container `name` in status.<list>, or an empty object.
const Json& ContainerStatus(const Json& pod, const char* list, const std::string& name) {
  static const Json kEmpty = Json::object();
  for (const Json& c : Arr(Obj(pod, "status"), list)) {
    if (Str(c, "name") == name) return c;
  }
  return kEmpty;
}

bool PodReady(const Json& pod) {
  for (const Json& c : Arr(Obj(pod, "status"), "conditions")) {
    if (Str(c, "type") == "Ready") return Str(c, "status") == "True";
  }
  return false;
}

// Why the pod's container `container` no longer runs, or nullopt.
std::optional<std::string> PodGone(const Json& pod, const std::string& container) {
  const Json& terminated = Obj(Obj(ContainerStatus(pod, "containerStatuses", container), "state"), "terminated");
  if (!terminated.empty()) {
    const int64_t code = terminated.value("exitCode", int64_t{0});
    if (Str(terminated, "reason") == "OOMKilled") return "was OOMKilled (exit code " + std::to_string(code) + ")";
    return "exited with code " + std::to_string(code);
  }
  for (const Json& init : Arr(Obj(pod, "status"), "initContainerStatuses")) {
    const Json& t = Obj(Obj(init, "state"), "terminated");
    if (!t.empty() && t.value("exitCode", int64_t{0}) != 0) {
      return "could not start: init container " + Str(init, "name") + " exited with code " +
             std::to_string(t.value("exitCode", int64_t{0}));
    }
  }
  const std::string phase = Str(Obj(pod, "status"), "phase");
  if (phase == "Failed" || phase == "Succeeded") {
    const std::string reason = Str(Obj(pod, "status"), "reason");
    const std::string message = Str(Obj(pod, "status"), "message");
    return "ended (pod " + phase + (reason.empty() ? "" : ": " + reason) + (message.empty() ? "" : ": " + message) + ")";
  }
  return std::nullopt;
}

// "Pending, container waiting: ErrImagePull (the kubelet's message)" — for
// timeouts.
std::string PodStateText(const Json& pod, const std::string& container) {
  std::string out = Str(Obj(pod, "status"), "phase");
  if (out.empty()) out = "no status yet";
  const Json& waiting = Obj(Obj(ContainerStatus(pod, "containerStatuses", container), "state"), "waiting");
  if (!waiting.empty()) {
    out += ", container waiting: " + Str(waiting, "reason");
    // The kubelet's message names the cause (the image, the missing Secret key).
    if (const std::string message = Str(waiting, "message"); !message.empty()) out += " (" + message + ")";
  }
  if (Obj(ContainerStatus(pod, "containerStatuses", container), "state").contains("running")) {
    out += ", running but not Ready";
  }
  return out;
}

bool IsTerminating(const Json& pod) {
  const Json& md = Obj(pod, "metadata");
  return md.contains("deletionTimestamp") && !md["deletionTimestamp"].is_null();
}

kube::GetOptions Timeout(std::chrono::milliseconds t) {
  kube::GetOptions o;
  o.timeout = t;
  return o;
}

// Waits before another try of a call that failed in a way that may pass
// (5xx, 429, a timeout, a cut connection), logging one line; false when
// the failure is not one of those, `attempt` was the last, or on stop.
bool RetryAfter(const kube::ApiError& e, const char* verb, const std::string& path, int attempt, int attempts,
                kube::Backoff& backoff, std::stop_token stop) {
  if (!e.Retriable() || attempt >= attempts || stop.stop_requested()) return false;
  std::chrono::nanoseconds wait = backoff.Next();
  const bool told = e.retry_after && e.retry_after->count() > 0;
  if (told) wait = std::min<std::chrono::nanoseconds>(*e.retry_after, std::chrono::seconds(10));
  spdlog::warn("{} {}: {} (attempt {} of {}); retrying in {} ms{}", verb, path, kube::RetryCause(e), attempt, attempts,
               std::chrono::duration_cast<std::chrono::milliseconds>(wait).count(), told ? " (Retry-After)" : "");
  return SystemClock::Instance().SleepFor(wait, stop);
}

constexpr int kWriteAttempts = 6;
const kube::BackoffPolicy kWriteBackoff{std::chrono::milliseconds(200), std::chrono::milliseconds(3000), 2.0, 0.2};

// Marks each create, so that a create whose answer was lost can be told
// from a pod that was there before.
constexpr char kCreateTokenAnnotation[] = "fairbench.dev/create-token";

std::string NewCreateToken() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(rng()));
  return text;
}

// Creates a pod, trying again after a failure that may pass. The client
// does not resend a create that may have happened (a 500, a 504, a cut
// connection), so this does; when such a create did happen, the retry
// meets AlreadyExists: the pod there carries this call's create token, so
// it is the one created here and is returned as created. AlreadyExists
// for a pod without the token (one left over) goes to the caller (the
// target's is replaced, an agent's kept).
kube::ApiResult<Json> CreatePod(kube::Client& client, const std::string& ns, Json pod, const kube::WriteOptions& w,
                                std::stop_token stop) {
  const std::string token = NewCreateToken();
  pod["metadata"]["annotations"][kCreateTokenAnnotation] = token;
  const std::string name = pod["metadata"].value("name", std::string());
  kube::Backoff backoff(kWriteBackoff);
  bool maybe_created = false;  // an earlier attempt may have taken effect
  for (int attempt = 1;; ++attempt) {
    auto created = client.Create(kube::resources::Pods(), ns, pod, w);
    if (!created.ok() && created.reason() == kube::Reason::kAlreadyExists && maybe_created) {
      auto there = client.Get(kube::resources::Pods(), ns, name, Timeout(w.timeout));
      if (there.ok() && (*there)["metadata"].value("annotations", Json::object()).value(kCreateTokenAnnotation, std::string()) ==
                            token) {
        spdlog::info("pod {}/{} was created by an attempt whose answer was lost", ns, name);
        return there;
      }
    }
    if (!created.ok() && created.error().reason != kube::Reason::kTooManyRequests &&
        created.error().reason != kube::Reason::kServiceUnavailable) {
      maybe_created = true;  // only 429 and 503 say that nothing was done
    }
    if (created.ok() ||
        !RetryAfter(created.error(), "POST", kube::resources::Pods().Path(ns, ""), attempt, kWriteAttempts, backoff, stop)) {
      return created;
    }
  }
}

// Deletes pod `name` and waits (polling) until it is gone. Bounded by
// `timeout`; Cancelled on stop. A delete that fails in a way that may pass
// is sent again until the timeout: a pod left behind holds its node's CPUs.
Status DeletePodAndWait(kube::Client& client, const std::string& ns, const std::string& name, int64_t grace,
                        std::chrono::milliseconds timeout, std::chrono::milliseconds poll,
                        std::chrono::milliseconds call_timeout, std::stop_token stop) {
  kube::DeleteOptions d;
  d.grace_period_seconds = grace;
  d.propagation = kube::PropagationPolicy::kBackground;
  d.timeout = call_timeout;
  const auto deadline = SteadyClock::now() + timeout;
  kube::Backoff backoff(kWriteBackoff);
  for (int attempt = 1;; ++attempt) {
    auto deleted = client.Delete(kube::resources::Pods(), ns, name, d);
    if (deleted.ok()) break;
    if (deleted.reason() == kube::Reason::kNotFound) return Status::Ok();
    const bool time_left = SteadyClock::now() < deadline;
    if (!time_left || !RetryAfter(deleted.error(), "DELETE", kube::resources::Pods().Path(ns, name), attempt,
                                  time_left ? attempt + 1 : attempt, backoff, stop)) {
      return Status::Unavailable("cannot delete pod " + ns + "/" + name + ": " + deleted.error().ToString());
    }
  }
  for (;;) {
    auto got = client.Get(kube::resources::Pods(), ns, name, Timeout(call_timeout));
    if (!got.ok() && got.reason() == kube::Reason::kNotFound) return Status::Ok();
    if (stop.stop_requested()) return Status::Cancelled("stopped while waiting for pod " + ns + "/" + name + " to go");
    if (SteadyClock::now() >= deadline) {
      return Status::DeadlineExceeded("pod " + ns + "/" + name + " was still there " +
                                      std::to_string(timeout.count() / 1000) + " s after it was deleted");
    }
    if (!SystemClock::Instance().SleepFor(poll, stop)) {
      return Status::Cancelled("stopped while waiting for pod " + ns + "/" + name + " to go");
    }
  }
}

class KubeTarget final : public TargetInstance {
 public:
  KubeTarget(kube::Client& client, const KubernetesPlatformOptions& options, std::string ns, std::string pod,
             std::string target, std::string node, uint16_t port, std::string description, bool wrapped,
             int64_t nofile)
      : wrapped_(wrapped),
        nofile_(nofile),
        client_(client),
        options_(options),
        ns_(std::move(ns)),
        pod_(std::move(pod)),
        target_(std::move(target)),
        node_(std::move(node)),
        port_(port),
        description_(std::move(description)) {}

  TargetPlacement placement() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return TargetPlacement{node_, ip_, port_};
  }
  std::string LogLocation() const override { return "kubectl logs -n " + ns_ + " " + pod_ + " -c " + k8s::kTargetContainer; }
  std::string Description() const override { return description_; }

  // The helper wrote the limit it left in force as the container's first
  // log line before it exec'd the target, and a target of targets/ prints
  // its fairness facts when it starts: both read through pods/log.
  std::vector<std::string> ReadBack() override {
    const std::string asked = " (asked for " + std::to_string(nofile_) + ")";
    auto log = client_.GetText(kube::resources::Pods(), ns_, pod_, "log",
                               {{"container", std::string(k8s::kTargetContainer)}, {"limitBytes", "65536"}},
                               options_.api_call_timeout);
    std::vector<std::string> facts;
    if (!wrapped_) {
      facts.push_back("nofile in force: not read back, left to the container runtime (no command to wrap)" + asked);
    } else if (!log.ok()) {
      facts.push_back("nofile in force: unknown, the target's log could not be read (" + log.error().ToString() + ")");
    } else if (auto in_force = k8s::NofileInForce(*log)) {
      facts.push_back("nofile in force: " + *in_force + ", read back in the pod by fairbench-nofile" + asked);
      if (auto short_of = k8s::NofileShortfall(*log)) facts.push_back("nofile not reached: " + *short_of);
    } else {
      facts.push_back("nofile in force: unknown, fairbench-nofile's line is missing from the target's log" + asked);
    }
    if (log.ok()) {
      if (auto f = TargetFactsFromLog(*log)) facts.push_back(*f);
    }
    return facts;
  }

  Status WaitReady(SteadyClock::time_point deadline, std::stop_token stop) override {
    std::string last = "no answer from the API server yet";
    for (;;) {
      if (stop.stop_requested()) return Status::Cancelled(target_ + ": stopped while waiting for it to be ready");
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
      auto got = client_.Get(kube::resources::Pods(), ns_, pod_,
                             Timeout(std::clamp(left, std::chrono::milliseconds(100), options_.api_call_timeout)));
      if (got.ok()) {
        Remember(*got);
        if (auto gone = PodGone(*got, k8s::kTargetContainer)) {
          return Status::Unavailable("target " + target_ + " " + *gone + " before it was ready (see " + LogLocation() +
                                     ")");
        }
        if (IsTerminating(*got)) return Status::Unavailable("target " + target_ + ": pod " + pod_ + " is being deleted");
        if (PodReady(*got) && !placement().host.empty()) return Status::Ok();
        last = "pod " + PodStateText(*got, k8s::kTargetContainer);
      } else if (got.reason() == kube::Reason::kNotFound) {
        return Status::Unavailable("target " + target_ + ": pod " + ns_ + "/" + pod_ + " was deleted");
      } else {
        last = got.error().ToString();
      }
      if (SteadyClock::now() >= deadline) {
        return Status::DeadlineExceeded("target " + target_ + " was not Ready in time on node " + node_ + " (" + last +
                                        "; see " + LogLocation() + ")");
      }
      const auto wait = std::min<SteadyClock::duration>(options_.poll_interval, deadline - SteadyClock::now());
      if (!SystemClock::Instance().SleepFor(std::max<SteadyClock::duration>(wait, SteadyClock::duration::zero()),
                                                  stop)) {
        return Status::Cancelled(target_ + ": stopped while waiting for it to be ready");
      }
    }
  }

  std::optional<std::string> Gone() override {
    std::lock_guard<std::mutex> lock(gone_mu_);
    if (gone_) return gone_;
    const auto now = SteadyClock::now();
    if (checked_ && now - last_check_ < options_.poll_interval) return std::nullopt;
    checked_ = true;
    last_check_ = now;
    auto got = client_.Get(kube::resources::Pods(), ns_, pod_, Timeout(options_.api_call_timeout));
    if (got.ok()) {
      Remember(*got);
      gone_ = PodGone(*got, k8s::kTargetContainer);
    } else if (got.reason() == kube::Reason::kNotFound) {
      gone_ = "was deleted (pod " + ns_ + "/" + pod_ + ")";
    }
    return gone_;
  }

  Result<TargetUsage> Usage() override {
    // The node proxy path travels as the node "name": the client has no call
    // for a raw path (the query string rides along unescaped).
    const std::string path = k8s::SummaryPath(node_);
    const std::string prefix = "/api/v1/nodes/";
    auto got = client_.Get(kube::resources::Nodes(), "", path.substr(prefix.size()), Timeout(options_.api_call_timeout));
    if (!got.ok()) return Status::Unavailable("stats/summary of node " + node_ + ": " + got.error().ToString());
    return k8s::UsageFromSummary(*got, ns_, pod_, k8s::kTargetContainer);
  }

  Status Teardown() override {
    return DeletePodAndWait(client_, ns_, pod_, options_.grace_period_seconds, options_.teardown_timeout,
                            options_.poll_interval, options_.api_call_timeout, {});
  }

 private:
  void Remember(const Json& pod) {
    const std::string ip = Str(Obj(pod, "status"), "podIP");
    std::lock_guard<std::mutex> lock(mu_);
    if (!ip.empty()) ip_ = ip;
  }

  const bool wrapped_;    // started through fairbench-nofile
  const int64_t nofile_;  // asked for
  kube::Client& client_;
  const KubernetesPlatformOptions options_;
  const std::string ns_, pod_, target_, node_;
  const uint16_t port_;
  const std::string description_;
  mutable std::mutex mu_;
  std::string ip_;  // guarded by mu_
  std::mutex gone_mu_;
  std::optional<std::string> gone_;  // sticky once set; guarded by gone_mu_
  bool checked_ = false;
  SteadyClock::time_point last_check_{};
};

class KubeSlot final : public LoadSlot {
 public:
  explicit KubeSlot(std::unique_ptr<kube::LoadSlot> slot) : slot_(std::move(slot)) {}
  ~KubeSlot() override { slot_->Release(); }
  bool held() const override { return slot_->Held(); }

 private:
  std::unique_ptr<kube::LoadSlot> slot_;
};

std::string NodeSummary(const Json& node) {
  const Json& info = Obj(Obj(node, "status"), "nodeInfo");
  return Str(info, "osImage") + ", kernel " + Str(info, "kernelVersion") + ", " + Str(info, "containerRuntimeVersion") +
         ", kubelet " + Str(info, "kubeletVersion");
}

}  // namespace

KubernetesPlatform::KubernetesPlatform(kube::Client& client, KubernetesPlatformOptions options)
    : client_(client), options_(std::move(options)), ns_(options_.ns.empty() ? client.default_namespace() : options_.ns) {}

KubernetesPlatform::~KubernetesPlatform() = default;

Result<Json> KubernetesPlatform::ListNodes() {
  kube::ListOptions o;
  o.timeout = options_.api_call_timeout * 5;
  auto list = client_.ListAll(kube::resources::Nodes(), "", o);
  if (!list.ok()) return Status::Unavailable("cannot list nodes: " + list.error().ToString());
  Json items = Json::array();
  for (auto& item : list->items) items.push_back(std::move(item));
  std::lock_guard<std::mutex> lock(mu_);
  nodes_ = items;
  return items;
}

Result<k8s::NodeChoice> KubernetesPlatform::ChooseNodes(const RunIdentity& run, const api::Placement& placement,
                                                        int agents, int threads) {
  auto nodes = ListNodes();
  if (!nodes.ok()) return nodes.status();
  auto choice = k8s::PickNodes(*nodes, placement, agents, threads);
  if (!choice.ok()) return choice.status();
  SetNodeChoice(run.name, *choice);
  return choice;
}

void KubernetesPlatform::SetNodeChoice(const std::string& run, k8s::NodeChoice choice) {
  std::lock_guard<std::mutex> lock(mu_);
  choices_[run] = std::move(choice);
}

std::optional<k8s::NodeChoice> KubernetesPlatform::node_choice(const std::string& run) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = choices_.find(run);
  if (it == choices_.end()) return std::nullopt;
  return it->second;
}

Status KubernetesPlatform::DeleteAndWait(const std::string& name, int64_t grace, std::stop_token stop) {
  if (grace <= 0) {
    return DeletePodAndWait(client_, ns_, name, 0, options_.teardown_timeout, options_.poll_interval,
                            options_.api_call_timeout, std::move(stop));
  }
  // Gracefully first, so that the kubelet stops the containers and frees
  // their CPUs before the pod goes; a kubelet that does not finish it (its
  // node is gone) gets a few seconds past the grace period, then the pod is
  // deleted at once.
  const auto graceful = std::min<std::chrono::milliseconds>(
      options_.teardown_timeout, std::chrono::seconds(grace) + std::chrono::seconds(5));
  Status s = DeletePodAndWait(client_, ns_, name, grace, graceful, options_.poll_interval, options_.api_call_timeout,
                              stop);
  if (s.code() != Status::Code::kDeadlineExceeded) return s;
  spdlog::warn("pod {}/{} was not removed by its kubelet: deleting it at once", ns_, name);
  return DeletePodAndWait(client_, ns_, name, 0, options_.teardown_timeout, options_.poll_interval,
                          options_.api_call_timeout, std::move(stop));
}

Status KubernetesPlatform::ReleaseRun(const std::string& run) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    choices_.erase(run);
  }
  kube::ListOptions selector;
  selector.label_selector = k8s::RunPodsSelector(run);
  kube::Backoff backoff(kWriteBackoff);
  auto pods = client_.List(kube::resources::Pods(), ns_, selector);
  for (int attempt = 1; !pods.ok() && RetryAfter(pods.error(), "GET", kube::resources::Pods().Path(ns_, ""), attempt,
                                                 kWriteAttempts, backoff, {});
       ++attempt) {
    pods = client_.List(kube::resources::Pods(), ns_, selector);
  }
  if (!pods.ok()) return Status::Unavailable("pods of run " + run + ": " + pods.error().message);
  for (const Json& pod : pods->items) {
    const std::string name = Str(Obj(pod, "metadata"), "name");
    if (Status s = DeleteAndWait(name, options_.grace_period_seconds, {}); !s.ok()) return s;
  }
  return Status::Ok();
}

Result<std::unique_ptr<TargetInstance>> KubernetesPlatform::Deploy(const DeployRequest& request, std::stop_token stop) {
  const api::Target& target = request.target;
  if (stop.stop_requested()) return Status::Cancelled("stopped before deploying " + target.name);
  if (target.image.empty()) {
    return Status::InvalidArgument("spec.targets[" + std::to_string(request.target_index) + "].image: required on Kubernetes");
  }
  std::string node;
  if (auto choice = node_choice(request.run.name); choice && !choice->target_node.empty()) {
    node = choice->target_node;
  } else {
    auto nodes = ListNodes();
    if (!nodes.ok()) return nodes.status();
    auto picked = k8s::PickTargetNode(*nodes, request.placement);
    if (!picked.ok()) return picked.status();
    node = *picked;
    SetNodeChoice(request.run.name, k8s::NodeChoice{node, {}});
  }
  k8s::TargetPodParams params;
  params.run = request.run;
  params.run.namespace_ = ns_;
  if (!request.run.namespace_.empty() && request.run.namespace_ != ns_) {
    params.run.uid.clear();  // no owner reference across namespaces
    params.run_namespace = request.run.namespace_;
  }
  params.target = target;
  params.node = node;
  params.placement = request.placement;
  params.command = ContainerCommand(target);
  params.helper_image = options_.agent_image;
  params.helper_path = options_.nofile_helper_path;
  params.grace_period_seconds = options_.grace_period_seconds;
  k8s::PodTemplate tmpl = k8s::TargetPod(params);
  const std::string pod_name = tmpl.pod["metadata"]["name"].get<std::string>();

  kube::WriteOptions w;
  w.timeout = options_.api_call_timeout * 5;
  auto created = CreatePod(client_, ns_, tmpl.pod, w, stop);
  if (!created.ok() && created.reason() == kube::Reason::kAlreadyExists) {
    // A pod left by an interrupted run (or an earlier leader): it may be in
    // any state, so it goes and a fresh one is made — after its kubelet has
    // stopped it (a graceful delete ends when the kubelet removes the pod),
    // so that its CPUs and memory are free again for the new one.
    spdlog::info("deleting stale target pod {}/{}", ns_, pod_name);
    if (Status s = DeleteAndWait(pod_name, options_.grace_period_seconds, stop); !s.ok()) return s;
    created = CreatePod(client_, ns_, tmpl.pod, w, stop);
  }
  if (!created.ok()) {
    return Status::Unavailable("cannot create pod " + ns_ + "/" + pod_name + " for target " + target.name + ": " +
                               created.error().ToString());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_target_node_ = node;
    for (const std::string& n : tmpl.notes) {
      if (std::find(notes_.begin(), notes_.end(), n) == notes_.end()) notes_.push_back(n);
    }
  }
  spdlog::info("created target pod {}/{} on node {}", ns_, pod_name, node);
  const std::string description = "pod " + ns_ + "/" + pod_name + " (image " + target.image + ") on node " + node;
  return std::unique_ptr<TargetInstance>(new KubeTarget(client_, options_, ns_, pod_name, target.name, node,
                                                        static_cast<uint16_t>(target.port), description,
                                                        !params.command.empty(), target.nofile));
}

Result<std::vector<std::string>> KubernetesPlatform::EnsureAgents(const AgentRequest& request, std::stop_token stop) {
  if (stop.stop_requested()) return Status::Cancelled("stopped before starting agents");
  const int count = std::max(1, request.count);
  std::optional<k8s::NodeChoice> choice = node_choice(request.run.name);
  if (!choice) choice = k8s::NodeChoice{request.target.node, {}};
  if (choice->target_node.empty()) choice->target_node = request.target.node;
  if (choice->agent_nodes.size() < static_cast<size_t>(count)) {
    auto nodes = ListNodes();
    if (!nodes.ok()) return nodes.status();
    auto picked = k8s::PickAgentNodes(*nodes, request.placement, choice->target_node, count, request.threads);
    if (!picked.ok()) return picked.status();
    choice->agent_nodes = *picked;
    SetNodeChoice(request.run.name, *choice);
  }
  kube::WriteOptions w;
  w.timeout = options_.api_call_timeout * 5;
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    if (stop.stop_requested()) return Status::Cancelled("stopped while starting agents");
    const std::string name = k8s::AgentPodName(request.run.name, i);
    kube::Backoff backoff(kWriteBackoff);
    auto got = client_.Get(kube::resources::Pods(), ns_, name, Timeout(options_.api_call_timeout));
    for (int attempt = 1; !got.ok() && got.reason() != kube::Reason::kNotFound &&
                          RetryAfter(got.error(), "GET", kube::resources::Pods().Path(ns_, name), attempt,
                                     kWriteAttempts, backoff, stop);
         ++attempt) {
      got = client_.Get(kube::resources::Pods(), ns_, name, Timeout(options_.api_call_timeout));
    }
    bool create = false;
    if (got.ok()) {
      auto gone = PodGone(*got, k8s::kAgentContainer);
      if (gone || IsTerminating(*got)) {
        spdlog::warn("agent pod {}/{} {}; replacing it", ns_, name, gone ? *gone : "is being deleted");
        if (Status s = DeleteAndWait(name, options_.grace_period_seconds, stop); !s.ok()) return s;
        create = true;
      }
    } else if (got.reason() == kube::Reason::kNotFound) {
      create = true;
    } else {
      return Status::Unavailable("cannot read agent pod " + ns_ + "/" + name + ": " + got.error().ToString());
    }
    if (create) {
      k8s::AgentPodParams p;
      p.run = request.run;
      p.run.namespace_ = ns_;
      if (!request.run.namespace_.empty() && request.run.namespace_ != ns_) {
        p.run.uid.clear();  // no owner reference across namespaces
        p.run_namespace = request.run.namespace_;
      }
      p.index = i;
      p.node = choice->agent_nodes[static_cast<size_t>(i)];
      p.placement = request.placement;
      p.threads = request.threads;
      p.image = options_.agent_image;
      p.controller_address = options_.controller_address;
      p.token_secret = options_.agent_token_secret;
      p.token_key = options_.agent_token_key;
      p.tls_secret = options_.agent_tls_secret;
      p.tls_client_certificate = options_.agent_tls_client_certificate;
      p.tls_server_name = options_.agent_tls_server_name;
      p.memory = options_.agent_memory;
      p.give_up_after_seconds = options_.agent_give_up_after_seconds;
      p.grace_period_seconds = options_.grace_period_seconds;
      auto created = CreatePod(client_, ns_, k8s::AgentPod(p), w, stop);
      if (!created.ok() && created.reason() != kube::Reason::kAlreadyExists) {
        return Status::Unavailable("cannot create agent pod " + ns_ + "/" + name + ": " + created.error().ToString());
      }
      spdlog::info("created agent pod {}/{} on node {}", ns_, name, p.node);
    }
    ids.push_back(name);
  }
  return ids;
}

Result<std::unique_ptr<LoadSlot>> KubernetesPlatform::AcquireSlot(const std::string& holder,
                                                                  std::chrono::milliseconds timeout,
                                                                  std::stop_token stop) {
  if (stop.stop_requested()) return Status::Cancelled("stopped before waiting for the load slot");
  kube::LoadSlotConfig config = options_.slot;
  if (config.ns.empty()) config.ns = ns_;
  if (config.identity.empty()) config.identity = options_.identity + (options_.identity.empty() ? "" : "/") + holder;
  Clock& clock = options_.clock != nullptr ? *options_.clock : SystemClock::Instance();
  auto slot = std::make_unique<kube::LoadSlot>(client_, clock, config);
  // Acquire honours one stop token: it fires on the caller's stop or when
  // the timeout passes, whichever comes first.
  std::stop_source inner;
  std::stop_callback forward(stop, [&inner] { inner.request_stop(); });
  std::jthread timer([&inner, timeout](std::stop_token done) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock<std::mutex> lock(m);
    if (!cv.wait_for(lock, done, timeout, [] { return false; }) && !done.stop_requested()) inner.request_stop();
  });
  const Status s = slot->Acquire(inner.get_token());
  timer.request_stop();
  timer.join();
  if (s.ok()) return std::unique_ptr<LoadSlot>(new KubeSlot(std::move(slot)));
  if (stop.stop_requested()) return Status::Cancelled("stopped while waiting for the load slot");
  if (s.code() == Status::Code::kCancelled) {
    return Status::DeadlineExceeded("the load slot " + config.ns + "/" + config.name + " is held by " + slot->holder() +
                                    " (waited " + std::to_string(timeout.count() / 1000) + " s)");
  }
  return s;
}

report::Environment KubernetesPlatform::Describe() const {
  report::Environment e;
  e.platform = "kubernetes";
  e.fairbench_version = options_.fairbench_version;
  std::lock_guard<std::mutex> lock(mu_);
  const Json* node = nullptr;
  for (const Json& n : nodes_) {
    if (Str(Obj(n, "metadata"), "name") == last_target_node_) node = &n;
  }
  if (node != nullptr) {
    const Json& status = Obj(*node, "status");
    const Json& info = Obj(status, "nodeInfo");
    const Json& capacity = Obj(status, "capacity");
    e.hostname = last_target_node_;
    e.kernel = Str(info, "kernelVersion");
    if (auto cpu = api::ParseCpu(Str(capacity, "cpu")); cpu.ok()) e.cpus = static_cast<int>(cpu->millicores / 1000);
    if (auto mem = api::ParseMemory(Str(capacity, "memory")); mem.ok()) e.memory_bytes = static_cast<uint64_t>(mem->bytes);
    e.notes.push_back("target node " + last_target_node_ + ": " + NodeSummary(*node));
  }
  for (const auto& [run, choice] : choices_) {
    if (choice.agent_nodes.empty()) continue;
    std::vector<std::string> unique = choice.agent_nodes;
    std::sort(unique.begin(), unique.end());
    unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
    std::string list;
    for (const std::string& n : unique) list += (list.empty() ? "" : ", ") + n;
    e.notes.push_back("run " + run + ": target on node " + choice.target_node + ", " +
                      std::to_string(choice.agent_nodes.size()) + " agent(s) on node(s) " + list +
                      " (never the target's node)");
  }
  e.notes.push_back("pods pinned with spec.nodeName (plus the placement's nodeSelector and tolerations); requests == "
                    "limits for Guaranteed QoS, whole CPUs for exclusive cores under the kubelet's static CPU manager");
  e.notes.push_back("target memory is the container's working set and CPU its cumulative usage, from the kubelet's "
                    "stats/summary (sampled every ~10-15 s, timed by the kubelet's own timestamps)");
  e.notes.insert(e.notes.end(), notes_.begin(), notes_.end());
  return e;
}

}  // namespace fairbench::controller
