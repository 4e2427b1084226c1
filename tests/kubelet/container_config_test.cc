// The test kubelet's translation of a pod's container into the Docker
// Engine API's create body (container_config.h), checked field by field
// against what Kubernetes documents for each pod field and what the engine
// takes (docker run's flags: --entrypoint, --memory/--memory-swap,
// --cpu-quota, --cpuset-cpus, --user, --read-only, --cap-drop,
// --security-opt no-new-privileges / seccomp=unconfined, --group-add).
#include "testing/kubelet/container_config.h"

#include <gtest/gtest.h>

namespace fairbench::kubelet {
namespace {

using Json = nlohmann::json;

ContainerInputs Inputs(const Json& container, const Json& pod_security = Json::object(),
                       const std::string& user = "65532") {
  ContainerInputs in;
  in.pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "u-1"}}},
            {"spec", {{"containers", Json::array({container})}}}};
  if (!pod_security.empty()) in.pod["spec"]["securityContext"] = pod_security;
  in.container = container;
  in.image_user = user;
  in.cpus = {0, 1};
  in.nofile = 20000;
  return in;
}

Json Body(const ContainerInputs& in) {
  auto b = DockerCreateBody(in);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return b.ok() ? *b : Json();
}

// Kubernetes: command replaces the ENTRYPOINT (and the image's CMD is not
// used), args replace the CMD alone. Catches: command passed as Cmd (the
// entrypoint would run with it as arguments), the image's CMD kept after a
// command, an empty Entrypoint sent when only args are given.
TEST(ContainerConfigTest, CommandAndArgsOverTheImagesEntrypointAndCmd) {
  ContainerInputs in = Inputs({{"name", "c"}, {"image", "i"}});
  in.command = {"/bin/server"};
  in.has_command = true;
  Json b = Body(in);
  EXPECT_EQ(b["Entrypoint"], Json({"/bin/server"}));
  EXPECT_EQ(b["Cmd"], Json::array());
  in = Inputs({{"name", "c"}, {"image", "i"}});
  in.args = {"--port", "80"};
  in.has_args = true;
  b = Body(in);
  EXPECT_FALSE(b.contains("Entrypoint"));
  EXPECT_EQ(b["Cmd"], Json({"--port", "80"}));
  b = Body(Inputs({{"name", "c"}, {"image", "i"}}));
  EXPECT_FALSE(b.contains("Entrypoint"));
  EXPECT_FALSE(b.contains("Cmd"));
  EXPECT_EQ(b["Image"], "i");
  EXPECT_EQ(b["HostConfig"]["NetworkMode"], "host");
}

// resources.limits as the kubelet sets cgroups: memory without swap, CPU
// as a quota per 100 ms period, requests as shares. Catches: swap left on
// (MemorySwap 0 = twice the memory: no OOM kill at the limit), a quota in
// the wrong unit, NanoCpus (which the engine refuses above the machine's
// CPUs), the node's CPUs not pinned.
TEST(ContainerConfigTest, LimitsBecomeCgroupLimits) {
  Json b = Body(
      Inputs({{"name", "c"},
              {"image", "i"},
              {"resources", {{"limits", {{"memory", "256Mi"}, {"cpu", "500m"}}}, {"requests", {{"cpu", "250m"}}}}}}));
  const Json& h = b["HostConfig"];
  EXPECT_EQ(h["Memory"], 256LL << 20);
  EXPECT_EQ(h["MemorySwap"], 256LL << 20);
  EXPECT_EQ(h["CpuPeriod"], 100000);
  EXPECT_EQ(h["CpuQuota"], 50000);
  EXPECT_EQ(h["CpuShares"], 256);
  EXPECT_EQ(h["CpusetCpus"], "0-1");
  EXPECT_FALSE(h.contains("NanoCpus"));
  EXPECT_EQ(h["Ulimits"], Json::parse(R"([{"Name":"nofile","Soft":20000,"Hard":20000}])"));
  // No limits: no memory or quota, the least shares (BestEffort).
  b = Body(Inputs({{"name", "c"}, {"image", "i"}}));
  EXPECT_FALSE(b["HostConfig"].contains("Memory"));
  EXPECT_FALSE(b["HostConfig"].contains("CpuQuota"));
  EXPECT_EQ(b["HostConfig"]["CpuShares"], 2);
  // Requests default to limits.
  b = Body(Inputs({{"name", "c"}, {"image", "i"}, {"resources", {{"limits", {{"cpu", "2"}}}}}}));
  EXPECT_EQ(b["HostConfig"]["CpuShares"], 2048);
  EXPECT_EQ(b["HostConfig"]["CpuQuota"], 200000);
}

// The pod's and the container's securityContext merged as the kubelet does
// (the container's fields win). Catches: the pod's runAsUser ignored, the
// container's not winning, runAsGroup dropped, allowPrivilegeEscalation
// false not made no-new-privileges, RuntimeDefault not the engine's profile
// (or the engine's profile used where Kubernetes' default is Unconfined),
// capabilities or the read-only root not passed, fsGroup not a group.
TEST(ContainerConfigTest, SecurityContext) {
  const Json pod_sc = {{"runAsUser", 1000},
                       {"runAsGroup", 3000},
                       {"fsGroup", 2000},
                       {"supplementalGroups", {4000}},
                       {"seccompProfile", {{"type", "RuntimeDefault"}}}};
  Json b = Body(Inputs({{"name", "c"},
                        {"image", "i"},
                        {"securityContext",
                         {{"runAsUser", 1001},
                          {"readOnlyRootFilesystem", true},
                          {"allowPrivilegeEscalation", false},
                          {"capabilities", {{"drop", {"ALL"}}, {"add", {"NET_BIND_SERVICE"}}}}}}},
                       pod_sc));
  EXPECT_EQ(b["User"], "1001:3000");
  const Json& h = b["HostConfig"];
  EXPECT_EQ(h["ReadonlyRootfs"], true);
  EXPECT_EQ(h["CapDrop"], Json({"ALL"}));
  EXPECT_EQ(h["CapAdd"], Json({"NET_BIND_SERVICE"}));
  EXPECT_EQ(h["SecurityOpt"], Json({"no-new-privileges"}));
  EXPECT_EQ(h["GroupAdd"], Json({"2000", "4000"}));
  // Nothing said: the image's user, Kubernetes' default seccomp
  // (Unconfined), privilege escalation allowed, a writable root.
  b = Body(Inputs({{"name", "c"}, {"image", "i"}}));
  EXPECT_FALSE(b.contains("User"));
  EXPECT_EQ(b["HostConfig"]["SecurityOpt"], Json({"seccomp=unconfined"}));
  EXPECT_EQ(b["HostConfig"]["ReadonlyRootfs"], false);
  // runAsGroup alone keeps the image's user.
  b = Body(
      Inputs({{"name", "c"}, {"image", "i"}, {"securityContext", {{"runAsGroup", 7}}}}, Json::object(), "65532:65532"));
  EXPECT_EQ(b["User"], "65532:7");
}

// runAsNonRoot as the kubelet checks it against the image (its
// verifyRunAsNonRoot, with its words): the container is never created.
// Catches: a root image let through (no USER, USER 0), a named user taken
// for non-root, a runAsUser: 0 let through, a non-root runAsUser refused
// because the image is root.
TEST(ContainerConfigTest, RunAsNonRootRefusesARootImage) {
  const Json c = {{"name", "web"}, {"image", "nginx"}};
  const Json non_root = {{"runAsNonRoot", true}};
  auto refused = [&](const std::string& image_user, const Json& container) {
    auto b = DockerCreateBody(Inputs(container, non_root, image_user));
    return b.ok() ? std::string() : b.status().message();
  };
  EXPECT_EQ(refused("", c),
            "container has runAsNonRoot and image will run as root (pod: \"p_ns(u-1)\", container: web)");
  EXPECT_EQ(refused("0:0", c),
            "container has runAsNonRoot and image will run as root (pod: \"p_ns(u-1)\", container: web)");
  EXPECT_EQ(refused("nginx", c),
            "container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root (pod: "
            "\"p_ns(u-1)\", container: web)");
  EXPECT_EQ(refused("65532", c), "");
  Json as_root = c;
  as_root["securityContext"] = {{"runAsUser", 0}};
  EXPECT_EQ(refused("65532", as_root),
            "container's runAsUser breaks non-root policy (pod: \"p_ns(u-1)\", container: web)");
  Json as_user = c;
  as_user["securityContext"] = {{"runAsUser", 1000}};
  EXPECT_EQ(refused("", as_user), "");
  // The container may lift the pod's runAsNonRoot.
  Json lifted = c;
  lifted["securityContext"] = {{"runAsNonRoot", false}};
  EXPECT_EQ(refused("", lifted), "");
}

// Volumes and the pod's /etc/hosts as bind mounts. Catches: readOnly lost,
// the hosts file not mounted (Service names would not resolve).
TEST(ContainerConfigTest, MountsAreBinds) {
  ContainerInputs in = Inputs({{"name", "c"}, {"image", "i"}});
  in.mounts = {{"/k/v/tmp", "/tmp", false}, {"/k/v/sa", "/var/run/secrets/kubernetes.io/serviceaccount", true}};
  in.hosts_file = "/k/etc-hosts";
  in.labels = {{"io.kubernetes.pod.name", "p"}};
  in.env = {{"A", "1"}, {"B", "x=y"}};
  const Json b = Body(in);
  EXPECT_EQ(b["HostConfig"]["Binds"], Json({"/k/v/tmp:/tmp", "/k/v/sa:/var/run/secrets/kubernetes.io/serviceaccount:ro",
                                            "/k/etc-hosts:/etc/hosts"}));
  EXPECT_EQ(b["Labels"]["io.kubernetes.pod.name"], "p");
  EXPECT_EQ(b["Env"], Json({"A=1", "B=x=y"}));
}

}  // namespace
}  // namespace fairbench::kubelet
