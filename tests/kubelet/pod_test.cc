// Pods on a real test kubelet, checked through the API and kubectl, and
// against what is outside the kubelet's code: the HTTP the target answers,
// the CPU /proc says it burnt, the exit code the program chose, the signal
// it saw.
#include <dirent.h>
#include <unistd.h>

#include <cmath>

#include "host/cgroup.h"
#include "testing/support/http_client.h"
#include "testing/support/test_certs.h"
#include "tests/kubelet/kubelet_test_env.h"

namespace fairbench::kubelet::testenv {
namespace {

// The pid of a process whose command line contains every needle.
pid_t FindProcess(const std::vector<std::string>& needles) {
  DIR* d = opendir("/proc");
  pid_t found = -1;
  while (dirent* e = d ? readdir(d) : nullptr) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    std::string cmd = ReadFile(std::string("/proc/") + e->d_name + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    bool all = !cmd.empty();
    for (const auto& n : needles) all = all && cmd.find(n) != std::string::npos;
    if (all) found = std::stoi(e->d_name);
  }
  if (d) closedir(d);
  return found;
}

// utime + stime of one process, in nanoseconds (/proc/PID/stat fields 14, 15).
double ProcCpuNanos(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream in(stat.substr(stat.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks * 1e9 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

uint64_t ProcRssBytes(pid_t pid) {
  std::istringstream in(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

const Json* FindSummaryContainer(const Json& summary, const std::string& pod, const std::string& container) {
  for (const Json& p : summary["pods"]) {
    if (p["podRef"]["name"] != pod) continue;
    for (const Json& c : p["containers"]) {
      if (c["name"] == container) return &c;
    }
  }
  return nullptr;
}

// Seconds between an RFC 3339 time and now.
double AgeSeconds(const std::string& t) {
  std::tm tm{};
  strptime(t.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::difftime(std::time(nullptr), timegm(&tm));
}

// Catches: a pod that never leaves Pending, a target not bound to its pod
// IP, Ready set before (or without) the readiness probe, logs not reaching
// kubectl through pods/log, the node proxy not reaching the kubelet, stats
// not taken from the container (working set 0, CPU frozen, or CPU that is
// not what the kernel charged the process).
TEST_F(KubeletTest, TargetPodBecomesReadyServesHttpLogsAndStats) {
  StartKubelet();
  const std::string target = R"Y(
  - name: web
    image: example.org/fairbench/httplib:dev
    args: ["--host", "$(POD_IP)", "--port", "PORT", "--threads", "2"]
    env:
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    ports: [{name: http, containerPort: PORT}]
    readinessProbe:
      httpGet: {path: PROBE, port: http}
      periodSeconds: 1
    resources:
      limits: {cpu: "1", memory: 256Mi}
)Y";
  auto pod = [&](const std::string& name, const std::string& port, const std::string& probe) {
    std::string c = target;
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"PORT", port}, {"PROBE", probe}}) {
      for (size_t at; (at = c.find(from)) != std::string::npos;) c.replace(at, from.size(), to);
    }
    return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  nodeName: " + node_ +
           "\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n  containers:" + c + "---\n";
  };
  Apply(pod("web", "8080", "/") + pod("unready", "8081", "/not-there"));

  Json web = WaitPod("web", [](const Json& p) { return Condition(p, "Ready") == "True"; });
  EXPECT_EQ(Phase(web), "Running");
  const std::string ip = web["status"].value("podIP", "");
  EXPECT_EQ(ip.rfind(ip_base_ + ".", 0), 0u) << ip;
  EXPECT_EQ(web["status"]["hostIP"], "127.0.0.1");
  EXPECT_EQ(web["status"]["qosClass"], "Guaranteed");
  const Json& cs = web["status"]["containerStatuses"][0];
  EXPECT_TRUE(cs["ready"].get<bool>());
  EXPECT_TRUE(cs["state"].contains("running"));
  EXPECT_EQ(cs["restartCount"], 0);

  // The target answers on the pod IP.
  auto conn = fairbench::testing::HttpConnection::Connect(ip, 8080);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  auto res = conn->RoundTrip(fairbench::testing::BuildRequest("GET", "/", ip));
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "Hello, World!");

  // The kubelet's Events, as kubectl describe shows them.
  EXPECT_TRUE(Eventually(
      [&] {
        const std::string ev = KubectlOk({"get", "events", "--field-selector", "involvedObject.name=web"});
        return ev.find("Started container web") != std::string::npos && ev.find("Created") != std::string::npos;
      },
      5s));

  // kubectl logs through pods/log.
  EXPECT_NE(KubectlOk({"logs", "web"}).find("listening on " + ip + ":8080"), std::string::npos);

  // A failing probe keeps its pod Running but not Ready, probe after probe.
  Json unready = WaitPod("unready", [](const Json& p) { return Phase(p) == "Running"; });
  const auto watch_until = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < watch_until) {
    ASSERT_NE(Condition(*Pod("unready"), "Ready"), "True") << "Ready although every probe fails";
    std::this_thread::sleep_for(50ms);
  }
  unready = *Pod("unready");
  EXPECT_EQ(Condition(unready, "Ready"), "False");
  EXPECT_EQ(Condition(unready, "ContainersReady"), "False");
  EXPECT_FALSE(unready["status"]["containerStatuses"][0]["ready"].get<bool>());

  // Stats through the node proxy, against /proc.
  const pid_t pid = FindProcess({"fairbench-target-cpp-httplib-debian", "--host " + ip + " "});
  ASSERT_GT(pid, 0);
  auto summary = [&] {
    return Json::parse(KubectlOk({"get", "--raw", "/api/v1/nodes/" + node_ + "/proxy/stats/summary"}));
  };
  const double before = ProcCpuNanos(pid);
  const auto s1_at = std::chrono::steady_clock::now();
  Json s1 = summary();
  const Json* c1 = FindSummaryContainer(s1, "web", "web");
  ASSERT_NE(c1, nullptr) << s1.dump(2);
  const double cpu1 = (*c1)["cpu"]["usageCoreNanoSeconds"].get<double>();
  EXPECT_GE(cpu1, before - 20e6);
  const uint64_t ws = (*c1)["memory"]["workingSetBytes"].get<uint64_t>();
  EXPECT_GT(ws, 0u);
  EXPECT_LT(ws, 256ull << 20);
  const double rss = (*c1)["memory"]["rssBytes"].get<double>();
  EXPECT_LT(std::fabs(rss - static_cast<double>(ProcRssBytes(pid))), 4.0 * (1 << 20));
  EXPECT_LT(std::fabs(AgeSeconds((*c1)["cpu"]["time"])), 5.0);
  EXPECT_EQ(s1["node"]["nodeName"], node_);
  // Collected every --stats-period (2 s here), as a real kubelet's
  // cAdvisor does: a second request at once gets the same collection.
  // Requests in between make the target burn CPU, which a fresh collection
  // would show.
  for (int i = 0; i < 200; ++i) {
    if (!conn->RoundTrip(fairbench::testing::BuildRequest("GET", "/", ip)).ok()) break;
  }
  const Json s1b = summary();
  const Json* c1b = FindSummaryContainer(s1b, "web", "web");
  ASSERT_NE(c1b, nullptr);
  if (std::chrono::steady_clock::now() - s1_at < 1500ms) {
    EXPECT_EQ((*c1b)["cpu"]["usageCoreNanoSeconds"], (*c1)["cpu"]["usageCoreNanoSeconds"])
        << "stats collected again within the stats period";
    EXPECT_EQ((*c1b)["cpu"]["time"], (*c1)["cpu"]["time"]);
  }
  // Load: the target burns CPU; the summary follows what the kernel charged.
  for (int i = 0; i < 3000; ++i) {
    auto r = conn->RoundTrip(fairbench::testing::BuildRequest("GET", "/", ip));
    if (!r.ok()) {
      conn = fairbench::testing::HttpConnection::Connect(ip, 8080);
      ASSERT_TRUE(conn.ok());
    }
  }
  std::this_thread::sleep_for(2100ms);  // past the stats period: a fresh collection
  Json s2 = summary();
  const double after = ProcCpuNanos(pid);
  const Json* c2 = FindSummaryContainer(s2, "web", "web");
  ASSERT_NE(c2, nullptr);
  const double cpu2 = (*c2)["cpu"]["usageCoreNanoSeconds"].get<double>();
  EXPECT_GT(cpu2, cpu1);
  EXPECT_LE(cpu2, after + 20e6) << "summary CPU above what /proc says the process burnt";
  EXPECT_TRUE((*c2)["cpu"].contains("usageNanoCores"));
}

// Catches: a wrong exit code or reason, a phase that ignores
// restartPolicy, restarts not counted, restarts not happening, emptyDir not
// kept across restarts of a container.
TEST_F(KubeletTest, ExitCodesPhasesAndRestarts) {
  StartKubelet();
  auto pod = [&](const std::string& name, const std::string& policy, const std::string& script) {
    return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  nodeName: " + node_ +
           "\n  restartPolicy: " + policy +
           "\n  volumes: [{name: data, emptyDir: {}}]\n  containers:\n  - name: main\n    image: example.org/sh:1\n"
           "    volumeMounts: [{name: data, mountPath: /data}]\n    args: ['" +
           script + "']\n---\n";
  };
  Apply(pod("exit3", "Never", "echo hello; echo bye; exit 3") + pod("exit0", "Never", "exit 0") +
        pod("flaky", "OnFailure",
            "n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; test $n -ge 3") +
        pod("crashloop", "Always", "echo run; exit 1"));

  Json exit3 = WaitPod("exit3", [](const Json& p) { return Phase(p) == "Failed"; });
  const Json& t = exit3["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(t["exitCode"], 3);
  EXPECT_EQ(t["reason"], "Error");
  EXPECT_FALSE(t.value("finishedAt", "").empty());
  EXPECT_EQ(Condition(exit3, "Ready"), "False");
  EXPECT_EQ(exit3["status"]["qosClass"], "BestEffort");
  EXPECT_EQ(KubectlOk({"logs", "exit3"}), "hello\nbye\n");
  EXPECT_EQ(KubectlOk({"logs", "exit3", "--tail=1"}), "bye\n");

  Json exit0 = WaitPod("exit0", [](const Json& p) { return Phase(p) == "Succeeded"; });
  EXPECT_EQ(exit0["status"]["containerStatuses"][0]["state"]["terminated"]["reason"], "Completed");

  Json flaky = WaitPod("flaky", [](const Json& p) { return Phase(p) == "Succeeded"; });
  const Json& fs = flaky["status"]["containerStatuses"][0];
  EXPECT_EQ(fs["restartCount"], 2);
  EXPECT_EQ(fs["lastState"]["terminated"]["exitCode"], 1);
  EXPECT_EQ(fs["state"]["terminated"]["exitCode"], 0);

  Json crash = WaitPod("crashloop", [](const Json& p) {
    return p["status"].contains("containerStatuses") && p["status"]["containerStatuses"][0]["restartCount"] >= 2;
  });
  EXPECT_EQ(Phase(crash), "Running");
  EXPECT_EQ(crash["status"]["containerStatuses"][0]["lastState"]["terminated"]["reason"], "Error");
  EXPECT_EQ(KubectlOk({"logs", "crashloop", "--previous"}), "run\n");
}

// Catches: deletion that skips SIGTERM, ignores the grace period (kills at
// once, or never), or never sends the final delete (the pod would stay
// Terminating for ever).
TEST_F(KubeletTest, GracefulDeletionSendsSigtermThenKillsAndRemoves) {
  StartKubelet();
  const std::string seen = dir_->File("term-seen");
  const std::string pidfile = dir_->File("stubborn-pid");
  Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: polite}\nspec:\n  nodeName: " + node_ +
        "\n  terminationGracePeriodSeconds: 30\n  containers:\n  - name: main\n    image: example.org/sh:1\n"
        "    args: [\"trap 'echo TERM > " +
        seen +
        "; exit 0' TERM; while true; do sleep 0.1; done\"]\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: stubborn}\nspec:\n  nodeName: " +
        node_ +
        "\n  containers:\n  - name: main\n    image: example.org/sh:1\n"
        "    args: [\"trap '' TERM; echo $$$$ > " +
        pidfile + "; while true; do sleep 0.1; done\"]\n");
  WaitPod("polite", [](const Json& p) { return Phase(p) == "Running"; });
  WaitPod("stubborn", [](const Json& p) { return Phase(p) == "Running"; });
  ASSERT_TRUE(Eventually([&] { return !ReadFile(pidfile).empty(); }));
  const pid_t stubborn_pid = std::stoi(ReadFile(pidfile));

  // The polite one exits on SIGTERM: kubectl's wait ends long before 30 s.
  const auto t0 = std::chrono::steady_clock::now();
  KubectlOk({"delete", "pod", "polite", "--timeout=20s"});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_EQ(ReadFile(seen), "TERM\n");
  EXPECT_FALSE(Pod("polite").has_value());

  // The stubborn one ignores SIGTERM: Terminating for its grace period, then killed.
  const auto t1 = std::chrono::steady_clock::now();
  KubectlOk({"delete", "pod", "stubborn", "--grace-period=2", "--wait=false"});
  auto terminating = Pod("stubborn");
  ASSERT_TRUE(terminating.has_value());
  EXPECT_TRUE(terminating->at("metadata").contains("deletionTimestamp"));
  EXPECT_EQ(terminating->at("metadata").value("deletionGracePeriodSeconds", -1), 2);
  EXPECT_TRUE(Eventually([&] { return !Pod("stubborn").has_value(); }, 15s));
  const auto took = std::chrono::steady_clock::now() - t1;
  EXPECT_GE(took, 1900ms);
  EXPECT_LT(took, 8s);
  EXPECT_NE(kill(stubborn_pid, 0), 0) << "the process outlived its pod";
}

// Catches: fieldRef values not from the pod, a secretKeyRef not read (or
// not decoded), $(VAR) not expanded in env or argv, $$ not escaping, an
// emptyDir not shared between an init container and the container, the
// kubelet's own environment leaking into containers.
TEST_F(KubeletTest, EnvFromFieldRefSecretExpansionAndEmptyDir) {
  StartKubelet();
  const std::string out = dir_->File("env.txt");
  Apply(R"(apiVersion: v1
kind: Secret
metadata: {name: agent-token}
data: {token: )" +
        std::string("czNjcjN0LXZhbHVl") + R"(}
---
apiVersion: v1
kind: Pod
metadata: {name: envpod}
spec:
  nodeName: )" +
        node_ + R"(
  restartPolicy: Never
  volumes: [{name: scratch, emptyDir: {}}]
  initContainers:
  - name: prepare
    image: example.org/sh:1
    args: ["echo from-init > /scratch/note"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  containers:
  - name: main
    image: example.org/sh:1
    command: ["/bin/sh", "-c", "env > )" +
        out + R"(.tmp; echo ARG=$(POD_NAME) >> )" + out + R"(.tmp; echo NOTE=$(cat /scratch/note) >> )" + out +
        R"(.tmp; mv )" + out + ".tmp " + out + R"Y("]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
    env:
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
    - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: TOKEN, valueFrom: {secretKeyRef: {name: agent-token, key: token}}}
    - {name: COMBINED, value: "$(POD_NAME).$(POD_NAMESPACE)"}
    - {name: ESCAPED, value: "$$(POD_NAME)"}
    - {name: UNKNOWN, value: "$(NOT_DEFINED)"}
)Y");
  Json pod = WaitPod("envpod", [](const Json& p) { return Phase(p) == "Succeeded"; });
  ASSERT_TRUE(Eventually([&] { return !ReadFile(out).empty(); }));
  std::map<std::string, std::string> env;
  std::istringstream in(ReadFile(out));
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  EXPECT_EQ(env["POD_NAME"], "envpod");
  EXPECT_EQ(env["POD_NAMESPACE"], ns());
  EXPECT_EQ(env["POD_UID"], pod["metadata"]["uid"]);
  EXPECT_EQ(env["NODE_NAME"], node_);
  EXPECT_EQ(env["POD_IP"], pod["status"]["podIP"]);
  EXPECT_EQ(env["HOST_IP"], "127.0.0.1");
  EXPECT_EQ(env["TOKEN"], "s3cr3t-value");
  EXPECT_EQ(env["COMBINED"], "envpod." + ns());
  EXPECT_EQ(env["ESCAPED"], "$(POD_NAME)");
  EXPECT_EQ(env["UNKNOWN"], "$(NOT_DEFINED)");
  EXPECT_EQ(env["ARG"], "envpod");
  EXPECT_EQ(env["NOTE"], "from-init");
  EXPECT_EQ(env["HOSTNAME"], "envpod");
  EXPECT_EQ(env.count("KUBECONFIG") + env.count("CTEST_INTERACTIVE_DEBUG_MODE") + env.count("GTEST_OUTPUT"), 0u);
  const Json& init = pod["status"]["initContainerStatuses"][0];
  EXPECT_EQ(init["state"]["terminated"]["reason"], "Completed");
  EXPECT_EQ(Condition(pod, "Initialized"), "True");
}

// Catches: exec and tcpSocket readiness probes ignored (Ready at once, or
// never): readiness must follow the probe's outcome.
TEST_F(KubeletTest, ExecAndTcpSocketReadinessProbes) {
  StartKubelet();
  const std::string flag = dir_->File("ready-flag");
  Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: probes}\nspec:\n  nodeName: " + node_ +
        "\n  containers:\n"
        "  - name: exec\n    image: example.org/sh:1\n    args: ['exec sleep 60']\n"
        "    readinessProbe: {exec: {command: [/bin/sh, -c, 'test -f " +
        flag +
        "']}, periodSeconds: 1}\n"
        "  - name: tcp\n    image: example.org/fairbench/httplib:dev\n"
        "    args: ['--host', '$(POD_IP)', '--port', '8090', '--threads', '1']\n"
        "    env: [{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]\n"
        "    readinessProbe: {tcpSocket: {port: 8090}, periodSeconds: 1}\n");
  auto ready = [](const Json& p, const std::string& name) {
    for (const Json& c : p["status"].value("containerStatuses", Json::array())) {
      if (c["name"] == name) return c["ready"].get<bool>();
    }
    return false;
  };
  Json pod = WaitPod("probes", [&](const Json& p) { return ready(p, "tcp"); });
  EXPECT_FALSE(ready(pod, "exec"));
  EXPECT_EQ(Condition(pod, "Ready"), "False");
  std::this_thread::sleep_for(1500ms);
  EXPECT_FALSE(ready(*Pod("probes"), "exec")) << "exec probe passed while its command fails";
  std::ofstream(flag) << "ok";
  pod = WaitPod("probes", [](const Json& p) { return Condition(p, "Ready") == "True"; });
  EXPECT_TRUE(ready(pod, "exec"));
}

// Catches: an httpGet probe's scheme ignored (plain HTTP to a TLS server
// never succeeds, so the HTTPS container never becomes Ready), or the
// probe verifying the certificate (a real kubelet does not: a self-signed
// one must pass), or a plain-HTTP probe that passes against TLS.
TEST_F(KubeletTest, HttpsReadinessProbeSpeaksTlsWithoutVerifying) {
  auto certs = fairbench::testing::SharedTestCertificates();
  ASSERT_TRUE(certs.ok()) << certs.status().ToString();
  StartKubelet();
  // openssl s_server -www answers any GET with 200 and a status page.
  auto server = [&](const std::string& name, int port, const std::string& scheme) {
    return "  - name: " + name +
           "\n    image: example.org/sh:1\n    args: ['exec openssl s_server -quiet -www -accept \"$POD_IP\":" +
           std::to_string(port) + " -cert " + (*certs)->self_cert + " -key " + (*certs)->self_key + "']\n" +
           "    env: [{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]\n" +
           "    readinessProbe: {httpGet: {path: /, port: " + std::to_string(port) + ", scheme: " + scheme +
           "}, periodSeconds: 1}\n";
  };
  Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: tls}\nspec:\n  nodeName: " + node_ + "\n  containers:\n" +
        server("https", 8443, "HTTPS") + server("plain", 8444, "HTTP"));
  auto ready = [](const Json& p, const std::string& name) {
    for (const Json& c : p["status"].value("containerStatuses", Json::array())) {
      if (c["name"] == name) return c["ready"].get<bool>();
    }
    return false;
  };
  Json pod = WaitPod("tls", [&](const Json& p) { return ready(p, "https"); });
  std::this_thread::sleep_for(1500ms);  // a probe or more of the plain one
  pod = *Pod("tls");
  EXPECT_TRUE(ready(pod, "https"));
  EXPECT_FALSE(ready(pod, "plain")) << "a plain-HTTP probe passed against a TLS server";
  EXPECT_EQ(Condition(pod, "Ready"), "False");
}

// Catches: a grpc readiness probe not run (the container never Ready, as
// before), run as a TCP connect (the HTTP server and the gRPC server with
// the wrong service would pass), its service ignored (no.such.Service
// would pass as ""), or its port ignored; and Ready before the gRPC server
// serves. The servers are the real reference gRPC target (Debian's gRPC and
// its default health service).
TEST_F(KubeletTest, GrpcReadinessProbeIsReadyOnlyOnceTheTargetServes) {
  StartKubelet();
  const std::string flag = dir_->File("serve-flag");
  const std::string grpc = fairbench::testing::BinaryPath("fairbench-target-grpc");
  const auto target = [](const std::string& name, const std::string& image, int port, const std::string& probe) {
    return "  - name: " + name + "\n    image: " + image + "\n    args: ['--host', '$(POD_IP)', '--port', '" +
           std::to_string(port) + "', '--threads', '1']\n" +
           "    env: [{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]\n" +
           "    readinessProbe: {grpc: " + probe + ", periodSeconds: 1}\n";
  };
  Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: grpc}\nspec:\n  nodeName: " + node_ + "\n  containers:\n" +
        // Serves only once the flag exists.
        "  - name: late\n    image: example.org/sh:1\n    args: ['while [ ! -f " + flag +
        " ]; do sleep 0.1; done; exec " + grpc + " --host \"$POD_IP\" --port 8091 --threads 1']\n" +
        "    env: [{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]\n" +
        "    readinessProbe: {grpc: {port: 8091}, periodSeconds: 1}\n" +
        target("named", "example.org/fairbench/grpc:dev", 8092, "{port: 8092, service: fairbench.echo.v1.Echo}") +
        target("unknown", "example.org/fairbench/grpc:dev", 8093, "{port: 8093, service: no.such.Service}") +
        target("http", "example.org/fairbench/httplib:dev", 8094, "{port: 8094}") +
        target("wrongport", "example.org/fairbench/grpc:dev", 8095, "{port: 8096}"));
  auto ready = [](const Json& p, const std::string& name) {
    for (const Json& c : p["status"].value("containerStatuses", Json::array())) {
      if (c["name"] == name) return c["ready"].get<bool>();
    }
    return false;
  };
  Json pod = WaitPod("grpc", [&](const Json& p) { return ready(p, "named"); });
  std::this_thread::sleep_for(1500ms);  // a probe or more of each of the others
  pod = *Pod("grpc");
  for (const char* name : {"late", "unknown", "http", "wrongport"}) {
    EXPECT_FALSE(ready(pod, name)) << name << " Ready while its gRPC health check cannot pass";
  }
  EXPECT_EQ(Condition(pod, "Ready"), "False");
  // The kubelet's words: the health service's NOT_FOUND for a service it
  // does not know, as pkg/probe/grpc puts it.
  EXPECT_TRUE(Eventually(
      [&] {
        const std::string ev = KubectlOk({"get", "events", "--field-selector", "involvedObject.name=grpc"});
        return ev.find("Readiness probe failed: error: health rpc probe failed: rpc error: code = NotFound") !=
               std::string::npos;
      },
      5s));

  std::ofstream(flag) << "serve";
  pod = WaitPod("grpc", [&](const Json& p) { return ready(p, "late"); });
  for (const char* name : {"unknown", "http", "wrongport"}) EXPECT_FALSE(ready(pod, name)) << name;
}

// Catches: a pod the node cannot hold started anyway (a real kubelet
// rejects it at admission: phase Failed, reason OutOfcpu / NodeAffinity,
// no pod IP), and a memory limit not enforced or an OOM kill reported as a
// plain error.
TEST_F(KubeletTest, AdmissionRejectsAndOomKills) {
  StartKubelet({"--labels", "zone=a"});
  Apply(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: too-big}\nspec:\n  nodeName: " + node_ +
      "\n  containers:\n  - {name: main, image: 'example.org/sh:1', args: ['sleep 60'],"
      " resources: {requests: {cpu: '3'}}}\n---\n"
      "apiVersion: v1\nkind: Pod\nmetadata: {name: elsewhere}\nspec:\n  nodeName: " +
      node_ +
      "\n  nodeSelector: {zone: b}\n  containers:\n  - {name: main, image: 'example.org/sh:1', args: ['sleep 60']}\n");
  Json big = WaitPod("too-big", [](const Json& p) { return Phase(p) == "Failed"; });
  EXPECT_EQ(big["status"].value("reason", ""), "OutOfcpu");
  EXPECT_NE(big["status"].value("message", "").find("requested: 3000, used: 0, capacity: 2000"), std::string::npos)
      << big["status"].dump();
  EXPECT_FALSE(big["status"].contains("podIP"));
  Json away = WaitPod("elsewhere", [](const Json& p) { return Phase(p) == "Failed"; });
  EXPECT_EQ(away["status"].value("reason", ""), "NodeAffinity");

  // OOM: only where this machine lets the kubelet enforce a memory limit.
  auto probe = host::TargetCgroup::Create("kubelet-test-probe-" + std::to_string(getpid()), 64 << 20, std::nullopt);
  if (!probe.ok()) GTEST_SKIP() << "no writable memory cgroup here: " << probe.status().ToString();
  probe->reset();
  Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: hog}\nspec:\n  nodeName: " + node_ +
        "\n  restartPolicy: Never\n  containers:\n  - {name: main, image: 'example.org/sh:1', args: ['tail /dev/zero'],"
        " resources: {limits: {memory: 32Mi}}}\n");
  Json hog = WaitPod(
      "hog", [](const Json& p) { return Phase(p) == "Failed"; }, 30s);
  const Json& t = hog["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(t["reason"], "OOMKilled");
  EXPECT_EQ(t["exitCode"], 137);
}

}  // namespace
}  // namespace fairbench::kubelet::testenv
