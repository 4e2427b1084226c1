#include "controller/platform/kubernetes/kubernetes_platform.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include <spdlog/spdlog.h>

#include "api/cells.h"
#include "api/quantity.h"
#include "common/backoff.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "controller/kube/api_fields.h"
#include "common/json_read.h"
#include "controller/kube/resource.h"
#include "controller/kube/typed_client.h"
#include "controller/platform/kubernetes/pod_templates.h"
#include "controller/platform/kubernetes/stats_summary.h"

namespace fairbench::controller {
namespace {

using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;
namespace f = kube::fields;
namespace jr = json_read;

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

// How the pod's container `container` ended, or nullopt while it may run.
std::optional<report::TargetExit> PodGone(const kube::Pod& pod, const std::string& container) {
  report::TargetExit exit;
  if (const kube::ContainerStatus* c = pod.status.FindContainer(container);
      c != nullptr && c->state == f::kTerminated) {
    exit.exit_code = c->exit_code;
    if (c->signal != 0) exit.signal = c->signal;
    exit.oom_killed = c->state_reason == f::kReasonOomKilled;
    exit.text = exit.oom_killed ? "was OOMKilled (exit code " + std::to_string(c->exit_code) + ")"
                                : "exited with code " + std::to_string(c->exit_code);
    return exit;
  }
  for (const kube::ContainerStatus& init : pod.status.init_container_statuses) {
    if (init.state == f::kTerminated && init.exit_code != 0) {
      exit.exit_code = init.exit_code;
      exit.text =
          "could not start: init container " + init.name + " exited with code " + std::to_string(init.exit_code);
      return exit;
    }
  }
  const kube::PodStatus& s = pod.status;
  if (s.phase == f::kPodFailed || s.phase == f::kPodSucceeded) {
    exit.text = "ended (pod " + s.phase + (s.reason.empty() ? "" : ": " + s.reason) +
                (s.message.empty() ? "" : ": " + s.message) + ")";
    return exit;
  }
  return std::nullopt;
}

// "Pending, container waiting: ErrImagePull (the kubelet's message)" — for
// timeouts.
std::string PodStateText(const kube::Pod& pod, const std::string& container) {
  std::string out = pod.status.phase;
  if (out.empty()) out = "no status yet";
  const kube::ContainerStatus* c = pod.status.FindContainer(container);
  if (c != nullptr && c->state == f::kWaiting) {
    out += ", container waiting: " + c->state_reason;
    // The kubelet's message names the cause (the image, the missing Secret key).
    if (!c->state_message.empty()) out += " (" + c->state_message + ")";
  }
  if (c != nullptr && c->state == f::kRunning) out += ", running but not Ready";
  return out;
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
                Backoff& backoff, std::stop_token stop) {
  if (!e.Retriable() || attempt >= attempts || stop.stop_requested()) return false;
  std::chrono::nanoseconds wait = backoff.Next();
  const bool told = e.retry_after && e.retry_after->count() > 0;
  if (told) wait = std::min<std::chrono::nanoseconds>(*e.retry_after, std::chrono::seconds(10));
  spdlog::warn("{} {}: {} (attempt {} of {}); retrying in {} ms{}", verb, path, kube::RetryCause(e), attempt, attempts,
               std::chrono::duration_cast<std::chrono::milliseconds>(wait).count(), told ? " (Retry-After)" : "");
  return SystemClock::Instance().SleepFor(wait, stop);
}

constexpr int kWriteAttempts = 6;
const BackoffPolicy kWriteBackoff{std::chrono::milliseconds(200), std::chrono::milliseconds(3000), 2.0, 0.2};

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
  pod["metadata"]["annotations"][api::annotation::kCreateToken] = token;
  const std::string name = pod["metadata"].value("name", std::string());
  Backoff backoff(kWriteBackoff);
  bool maybe_created = false;  // an earlier attempt may have taken effect
  for (int attempt = 1;; ++attempt) {
    auto created = client.Create(kube::resources::Pods(), ns, pod, w);
    if (!created.ok() && created.reason() == kube::Reason::kAlreadyExists && maybe_created) {
      auto there = kube::PodClient(client).Get(ns, name, Timeout(w.timeout));
      if (there.ok()) {
        const auto it = there->metadata.annotations.find(api::annotation::kCreateToken);
        if (it != there->metadata.annotations.end() && it->second == token) {
          spdlog::info("pod {}/{} was created by an attempt whose answer was lost", ns, name);
          return there->ToJson();
        }
      }
    }
    if (!created.ok() && created.error().reason != kube::Reason::kTooManyRequests &&
        created.error().reason != kube::Reason::kServiceUnavailable) {
      maybe_created = true;  // only 429 and 503 say that nothing was done
    }
    if (created.ok() || !RetryAfter(created.error(), "POST", kube::resources::Pods().Path(ns, ""), attempt,
                                    kWriteAttempts, backoff, stop)) {
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
  Backoff backoff(kWriteBackoff);
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
             std::string target, std::string node, uint16_t port, std::string description, bool wrapped, int64_t nofile,
             std::optional<api::CpuQuantity> asked)
      : wrapped_(wrapped),
        nofile_(nofile),
        asked_(asked),
        client_(client),
        options_(options),
        pods_(kube::PodClient(client)),
        ns_(std::move(ns)),
        pod_(std::move(pod)),
        target_(std::move(target)),
        node_(std::move(node)),
        port_(port),
        description_(std::move(description)) {}

  TargetPlacement placement() const override {
    MutexLock lock(mu_);
    return TargetPlacement{node_, ip_, port_};
  }
  std::string LogLocation() const override {
    return "kubectl logs -n " + ns_ + " " + pod_ + " -c " + k8s::kTargetContainer;
  }
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
    facts.push_back(Identity());
    return facts;
  }

  // Which image ran: the kubelet's imageID of the target container (the
  // runtime's digest of what it pulled).
  std::string Identity() {
    auto pod = client_.Get(kube::resources::Pods(), ns_, pod_);
    if (!pod.ok()) return "identity: unknown, the pod could not be read (" + pod.error().ToString() + ")";
    for (const kube::Json& c : jr::Array(jr::Object(*pod, "status"), "containerStatuses")) {
      if (jr::String(c, "name") != k8s::kTargetContainer) continue;
      const std::string id = jr::String(c, "imageID");
      if (!id.empty()) return "identity: image " + id;
    }
    return "identity: unknown, the kubelet gave no imageID for the target container";
  }

  Status WaitReady(SteadyClock::time_point deadline, std::stop_token stop) override {
    // What the pod was last seen doing, and what the last failed read said:
    // a last read that timed out must not hide the pod's state.
    std::string seen;
    std::string failed = "no answer from the API server yet";
    for (;;) {
      if (stop.stop_requested()) return Status::Cancelled(target_ + ": stopped while waiting for it to be ready");
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
      auto got =
          pods_.Get(ns_, pod_, Timeout(std::clamp(left, std::chrono::milliseconds(100), options_.api_call_timeout)));
      if (got.ok()) {
        Remember(*got);
        if (auto gone = PodGone(*got, k8s::kTargetContainer)) {
          return Status::Unavailable("target " + target_ + " " + gone->text + " before it was ready (see " +
                                     LogLocation() + ")");
        }
        if (got->Terminating()) return Status::Unavailable("target " + target_ + ": pod " + pod_ + " is being deleted");
        if (got->status.Ready() && !placement().host.empty()) return Status::Ok();
        seen = "pod " + PodStateText(*got, k8s::kTargetContainer);
        failed.clear();
      } else if (got.reason() == kube::Reason::kNotFound) {
        return Status::Unavailable("target " + target_ + ": pod " + ns_ + "/" + pod_ + " was deleted");
      } else {
        failed = got.error().ToString();
      }
      if (SteadyClock::now() >= deadline) {
        std::string why = seen;
        if (!failed.empty()) why += (why.empty() ? "" : "; then ") + failed;
        return Status::DeadlineExceeded("target " + target_ + " was not Ready in time on node " + node_ + " (" + why +
                                        "; see " + LogLocation() + ")");
      }
      const auto wait = std::min<SteadyClock::duration>(options_.poll_interval, deadline - SteadyClock::now());
      if (!SystemClock::Instance().SleepFor(std::max<SteadyClock::duration>(wait, SteadyClock::duration::zero()),
                                            stop)) {
        return Status::Cancelled(target_ + ": stopped while waiting for it to be ready");
      }
    }
  }

  std::optional<report::TargetExit> Gone() override {
    MutexLock lock(gone_mu_);
    if (gone_) return gone_;
    const auto now = SteadyClock::now();
    if (checked_ && now - last_check_ < options_.poll_interval) return std::nullopt;
    checked_ = true;
    last_check_ = now;
    auto got = pods_.Get(ns_, pod_, Timeout(options_.api_call_timeout));
    if (got.ok()) {
      Remember(*got);
      gone_ = PodGone(*got, k8s::kTargetContainer);
    } else if (got.reason() == kube::Reason::kNotFound) {
      gone_ = report::TargetExit{std::nullopt, std::nullopt, false, "was deleted (pod " + ns_ + "/" + pod_ + ")"};
    }
    return gone_;
  }

  // fairbench-nofile read them inside the container before it ran the
  // target ("fairbench-cpus: {JSON}" on the target's log); the node's CPU
  // manager policy comes from its kubelet's /configz, through the API
  // server's node proxy.
  TargetCpuFacts Cpus() override {
    TargetCpuFacts f;
    f.asked = asked_;
    f.kubelet = true;
    f.node = node_;
    if (!wrapped_) {
      f.not_read = "the target runs its image's own entrypoint (no command), so fairbench-nofile did not start it";
    } else {
      auto log = client_.GetText(kube::resources::Pods(), ns_, pod_, "log",
                                 {{"container", std::string(k8s::kTargetContainer)}, {"limitBytes", "65536"}},
                                 options_.api_call_timeout);
      if (!log.ok()) {
        f.not_read = "the target's log could not be read (" + log.error().ToString() + ")";
      } else if (auto v = CpuViewFromLog(*log)) {
        f.view = std::move(*v);
      } else {
        f.not_read = "fairbench-nofile's fairbench-cpus line is missing from the target's log";
      }
    }
    auto config =
        client_.Get(kube::resources::Nodes(), "", node_ + "/proxy/configz", Timeout(options_.api_call_timeout));
    if (!config.ok()) {
      f.policy_not_read = "the kubelet's /configz through the node proxy: " + config.error().ToString();
    } else {
      f.cpu_manager_policy = k8s::CpuManagerPolicy(*config, &f.policy_not_read);
    }
    return f;
  }

  Result<TargetUsage> Usage() override {
    // The node proxy path travels as the node "name": the client has no call
    // for a raw path (the query string rides along unescaped).
    const std::string path = k8s::SummaryPath(node_);
    const std::string prefix = "/api/v1/nodes/";
    auto got =
        client_.Get(kube::resources::Nodes(), "", path.substr(prefix.size()), Timeout(options_.api_call_timeout));
    if (!got.ok()) return Status::Unavailable("stats/summary of node " + node_ + ": " + got.error().ToString());
    return k8s::UsageFromSummary(*got, ns_, pod_, k8s::kTargetContainer);
  }

  Status Teardown() override {
    return DeletePodAndWait(client_, ns_, pod_, options_.grace_period_seconds, options_.teardown_timeout,
                            options_.poll_interval, options_.api_call_timeout, {});
  }

 private:
  void Remember(const kube::Pod& pod) {
    MutexLock lock(mu_);
    if (!pod.status.pod_ip.empty()) ip_ = pod.status.pod_ip;
  }

  const bool wrapped_;                           // started through fairbench-nofile
  const int64_t nofile_;                         // asked for
  const std::optional<api::CpuQuantity> asked_;  // resources.cpu
  kube::Client& client_;
  const KubernetesPlatformOptions options_;
  kube::TypedClient<kube::Pod> pods_;
  const std::string ns_, pod_, target_, node_;
  const uint16_t port_;
  const std::string description_;
  mutable Mutex mu_;
  std::string ip_ GUARDED_BY(mu_);
  Mutex gone_mu_;
  std::optional<report::TargetExit> gone_ GUARDED_BY(gone_mu_);  // sticky once set
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

std::string NodeSummary(const kube::Node& node) {
  const kube::NodeSystemInfo& info = node.node_info;
  return info.os_image + ", kernel " + info.kernel_version + ", " + info.container_runtime_version + ", kubelet " +
         info.kubelet_version;
}

}  // namespace

KubernetesPlatform::KubernetesPlatform(kube::Client& client, KubernetesPlatformOptions options)
    : client_(client),
      options_(std::move(options)),
      ns_(options_.ns.empty() ? client.default_namespace() : options_.ns) {}

KubernetesPlatform::~KubernetesPlatform() = default;

Result<std::vector<kube::Node>> KubernetesPlatform::ListNodes() {
  kube::ListOptions o;
  o.timeout = options_.api_call_timeout * 5;
  auto list = kube::NodeClient(client_).List("", o);
  if (!list.ok()) return Status::Unavailable("cannot list nodes: " + list.error().ToString());
  MutexLock lock(mu_);
  nodes_ = *list;
  return std::move(*list);
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
  MutexLock lock(mu_);
  choices_[run] = std::move(choice);
}

std::optional<k8s::NodeChoice> KubernetesPlatform::node_choice(const std::string& run) const {
  MutexLock lock(mu_);
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
  const auto graceful = std::min<std::chrono::milliseconds>(options_.teardown_timeout,
                                                            std::chrono::seconds(grace) + std::chrono::seconds(5));
  Status s =
      DeletePodAndWait(client_, ns_, name, grace, graceful, options_.poll_interval, options_.api_call_timeout, stop);
  if (s.code() != Status::Code::kDeadlineExceeded) return s;
  spdlog::warn("pod {}/{} was not removed by its kubelet: deleting it at once", ns_, name);
  return DeletePodAndWait(client_, ns_, name, 0, options_.teardown_timeout, options_.poll_interval,
                          options_.api_call_timeout, std::move(stop));
}

Status KubernetesPlatform::ReleaseRun(const std::string& run) {
  {
    MutexLock lock(mu_);
    choices_.erase(run);
  }
  kube::ListOptions selector;
  selector.label_selector = k8s::RunPodsSelector(run);
  Backoff backoff(kWriteBackoff);
  kube::TypedClient<kube::Pod> pods_client = kube::PodClient(client_);
  auto pods = pods_client.List(ns_, selector);
  for (int attempt = 1; !pods.ok() && RetryAfter(pods.error(), "GET", kube::resources::Pods().Path(ns_, ""), attempt,
                                                 kWriteAttempts, backoff, {});
       ++attempt) {
    pods = pods_client.List(ns_, selector);
  }
  if (!pods.ok()) return Status::Unavailable("pods of run " + run + ": " + pods.error().message);
  for (const kube::Pod& pod : *pods) {
    if (Status s = DeleteAndWait(pod.metadata.name, options_.grace_period_seconds, {}); !s.ok()) return s;
  }
  return Status::Ok();
}

Result<std::unique_ptr<TargetInstance>> KubernetesPlatform::Deploy(const DeployRequest& request, std::stop_token stop) {
  const api::Target& target = request.target;
  if (stop.stop_requested()) return Status::Cancelled("stopped before deploying " + target.name);
  if (target.image.empty()) {
    return Status::InvalidArgument("spec.targets[" + std::to_string(request.target_index) +
                                   "].image: required on Kubernetes");
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
    MutexLock lock(mu_);
    last_target_node_ = node;
    for (const std::string& n : tmpl.notes) {
      if (std::find(notes_.begin(), notes_.end(), n) == notes_.end()) notes_.push_back(n);
    }
  }
  spdlog::info("created target pod {}/{} on node {}", ns_, pod_name, node);
  const std::string description = "pod " + ns_ + "/" + pod_name + " (image " + target.image + ") on node " + node;
  return std::unique_ptr<TargetInstance>(new KubeTarget(client_, options_, ns_, pod_name, target.name, node,
                                                        static_cast<uint16_t>(target.port), description,
                                                        !params.command.empty(), target.nofile, target.resources.cpu));
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
    Backoff backoff(kWriteBackoff);
    kube::TypedClient<kube::Pod> pods = kube::PodClient(client_);
    auto got = pods.Get(ns_, name, Timeout(options_.api_call_timeout));
    for (int attempt = 1; !got.ok() && got.reason() != kube::Reason::kNotFound &&
                          RetryAfter(got.error(), "GET", kube::resources::Pods().Path(ns_, name), attempt,
                                     kWriteAttempts, backoff, stop);
         ++attempt) {
      got = pods.Get(ns_, name, Timeout(options_.api_call_timeout));
    }
    bool create = false;
    if (got.ok()) {
      auto gone = PodGone(*got, k8s::kAgentContainer);
      if (gone || got->Terminating()) {
        spdlog::warn("agent pod {}/{} {}; replacing it", ns_, name, gone ? gone->text : "is being deleted");
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
  MutexLock lock(mu_);
  const kube::Node* node = nullptr;
  for (const kube::Node& n : nodes_) {
    if (n.metadata.name == last_target_node_) node = &n;
  }
  if (node != nullptr) {
    auto capacity = [&](const char* name) {
      const auto it = node->capacity.find(name);
      return it == node->capacity.end() ? std::string() : it->second;
    };
    e.hostname = last_target_node_;
    e.kernel = node->node_info.kernel_version;
    if (auto cpu = api::ParseCpu(capacity("cpu")); cpu.ok()) e.cpus = static_cast<int>(cpu->millicores / 1000);
    if (auto mem = api::ParseMemory(capacity("memory")); mem.ok()) e.memory_bytes = static_cast<uint64_t>(mem->bytes);
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
  e.notes.push_back(
      "pods pinned with spec.nodeName (plus the placement's nodeSelector and tolerations); requests == "
      "limits for Guaranteed QoS, whole CPUs for exclusive cores under the kubelet's static CPU manager");
  e.notes.push_back(
      "target memory is the container's working set and CPU its cumulative usage, from the kubelet's "
      "stats/summary (sampled every ~10-15 s, timed by the kubelet's own timestamps)");
  e.notes.insert(e.notes.end(), notes_.begin(), notes_.end());
  return e;
}

}  // namespace fairbench::controller
