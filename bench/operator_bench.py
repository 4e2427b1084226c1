#!/usr/bin/env python3
"""What the operator (fairbench-controller) costs with many BenchmarkRuns.

Part 1, no kubelets (nothing can be scheduled, so the first run waits for
its pods and every other run stays Queued): Kubernetes' own control plane
(`scripts/kube up`: etcd, kube-apiserver, kube-controller-manager and
kube-scheduler of the pinned release) with the CRD, one fairbench-controller
(as the cluster's administrator), 1,000 BenchmarkRuns created in bulk
(`kubectl create -f` of one file). Then:
  - apply → Queued: `kubectl apply` of one more run until the API server
    shows status.phase Queued (7 times; target ≤ 1 s, judged by the 95 %
    interval of their mean: bench/verdicts.py);
  - full resync: with the controller stopped, every run's status is removed
    (merge patch on the status subresource), the controller is started
    again, and the time until all 1,001 runs have a phase again is taken
    (list + reconcile + a status write each; target ≤ 30 s);
  - the controller's RSS (/proc; target ≤ 256 MiB) and its CPU while idle
    with 1,001 runs queued (target ≤ 1 % of one core).
Part 2, the test cluster of tests/operator/operator_e2e_test.cc (target
node on CPU 0, two load nodes on CPU 1, test kubelets with node
certificates), a fresh control plane and controller:
one run with one cpp-httplib-debian target and several cells;
  - apply → first target pod created (target ≤ 5 s);
  - per-cell overhead: from status.results[], the next cell's startTime
    minus this cell's endTime, minus the configured cooldown and warmup
    (target ≤ 0.5 s per cell; the reference is `fairbench run`'s
    0.11 s per cell measured by bench/orchestration.py).

    bench/operator_bench.py [--build build] [--runs 1000] [--skip-queued] [--skip-cluster] [--keep]

Each part starts its own control plane (10–15 s; the first `scripts/kube
build` takes minutes, once).

Loopback only. Every process it starts is stopped at the end, also on failure.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdicts import ratio_stats, verdict  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROUP = "/apis/fairbench.dev/v1alpha1/namespaces/default/benchmarkruns"

PROCS = []  # every process started, stopped in reverse order at the end
CLUSTERS = []  # every control plane started, stopped after the processes


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(name, argv, tmp):
    log = open(os.path.join(tmp, name + ".log"), "ab")
    p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    PROCS.append((name, p))
    return p


def stop(p, timeout=10):
    if p.poll() is not None:
        return
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def stop_all():
    while PROCS:
        _, p = PROCS.pop()
        stop(p)
    while CLUSTERS:
        CLUSTERS.pop().down()


def wait_for(f, timeout, step=0.05):
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        v = f()
        if v:
            return v
        time.sleep(step)
    return f()


class Cluster:
    """Kubernetes' own control plane (scripts/kube up), its admin
    kubeconfig, the kubectl built with it, and the controller."""

    def __init__(self, build, tmp, name):
        self.build, self.tmp = build, os.path.join(tmp, name)
        os.makedirs(self.tmp)
        self.bin = os.path.join(build, "bin")
        self.dir = os.path.join(self.tmp, "cluster")
        self.script = os.path.join(ROOT, "scripts", "kube")
        kube_bin = subprocess.run([self.script, "build"], capture_output=True, text=True, check=True).stdout.strip()
        self.kubectl = os.path.join(kube_bin, "kubectl")
        self.agent_port = free_port()
        self.controller = None
        # Stopped with this process, whatever way it ends (--die-with).
        up = subprocess.run([self.script, "up", "--dir", self.dir, "--die-with", str(os.getpid())],
                            capture_output=True, text=True)
        if up.returncode != 0:
            raise RuntimeError(f"scripts/kube up: {up.stderr.strip()}")
        CLUSTERS.append(self)
        self.kubeconfig = os.path.join(self.dir, "admin.kubeconfig")
        with open(os.path.join(self.dir, "server")) as f:
            self.server = f.read().strip()
        pki = os.path.join(self.dir, "pki")
        self.tls = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.tls.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
        self.ok("apply", "-f", os.path.join(ROOT, "manifests", "crd", "benchmarkruns.fairbench.dev.yaml"))
        # kubectl 1.37's wait fails at once on a CRD with no conditions yet.
        if not wait_for(lambda: self.kubectl_run("wait", "--for=condition=Established",
                                                 "crd/benchmarkruns.fairbench.dev", "--timeout=20s").returncode == 0,
                        30, 0.5):
            raise RuntimeError("the CRD was not established")

    def down(self):
        subprocess.run([self.script, "down", "--dir", self.dir], capture_output=True)

    def node(self, name):
        """A node's kubeconfig, certificate and key, and its kube-proxy kubeconfig."""
        out = subprocess.run([self.script, "node-kubeconfig", name, "--dir", self.dir], capture_output=True,
                             text=True, check=True).stdout.strip()
        base = os.path.join(self.dir, "nodes", name)
        return out, base + ".crt", base + ".key", base + "-proxy.kubeconfig"

    def node_file(self, what):
        with open(os.path.join(self.dir, what)) as f:
            return f.read().strip()

    def kubectl_run(self, *args, timeout=300):
        env = dict(os.environ, HOME=self.tmp, KUBECONFIG="")
        return subprocess.run([self.kubectl, "--kubeconfig", self.kubeconfig, "--cache-dir",
                               os.path.join(self.tmp, "cache"), *args], capture_output=True, text=True, env=env,
                              timeout=timeout)

    def ok(self, *args, timeout=300):
        r = self.kubectl_run(*args, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def api(self, path, method="GET", body=None, content_type="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        with urllib.request.urlopen(req, timeout=30, context=self.tls) as r:
            return json.loads(r.read())

    def runs(self):
        return self.api(GROUP)["items"]

    def start_controller(self):
        self.controller = start("controller", [
            os.path.join(self.bin, "fairbench-controller"), "--kubeconfig", self.kubeconfig, "--identity", "bench",
            "--namespace", "default", "--pod-namespace", "default", "--agent-listen",
            f"127.0.0.1:{self.agent_port}", "--agent-address", f"127.0.0.1:{self.agent_port}", "--agent-image",
            "example.org/fairbench/agent:dev", "--nofile-helper-path", os.path.join(self.bin, "fairbench-nofile"),
            "--agent-timeout", "600s", "--leader-lease-duration", "4s", "--leader-renew-deadline", "3s",
            "--leader-retry-period", "500ms"], self.tmp)
        return self.controller


def run_yaml(name, target_port, target_cmd, levels=(8,), warmup="300ms", duration="1s", cooldown="200ms",
             role="target"):
    return (f"apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {{name: {name}, namespace: default}}\n"
            f"spec:\n  targets:\n  - name: alpha\n    image: example.org/fairbench/target:dev\n    port: {target_port}\n"
            f"    command: [{target_cmd}, --host, 0.0.0.0, --port, \"{{port}}\", --threads, \"1\"]\n"
            f"    resources: {{cpu: \"1\", memory: 256Mi}}\n    nofile: 8192\n"
            f"  scenarios:\n  - name: hello\n    request: {{path: /}}\n"
            f"    expect: {{status: 200, body: \"Hello, World!\"}}\n"
            f"  load: {{threads: 1, connections: [{', '.join(str(c) for c in levels)}], warmup: {warmup}, "
            f"duration: {duration}, timeout: 1s, agents: 2}}\n"
            f"  cooldown: {cooldown}\n"
            f"  placement:\n    target: {{nodeSelector: {{fairbench.dev/role: {role}}}}}\n"
            f"    agents: {{nodeSelector: {{fairbench.dev/role: load}}}}\n")


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0  # MiB
    return -1.0


def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parse_time(text):
    base, _, frac = text.rstrip("Z").partition(".")
    t = datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    return t + (float("0." + frac) if frac else 0.0)


ROWS = []  # (figure, value text, target text, met or None)


def met_text(met):
    """A single measurement's comparison (a bool), or a verdict from samples' 95 % interval (bench/verdicts.py)."""
    if isinstance(met, str):
        return met
    return "met" if met else "NOT met"


def row(figure, value, target="", met=None):
    ROWS.append((figure, value, target, met))
    mark = "" if met is None else f"  [{met_text(met)}]"
    print(f"  {figure}: {value}  {target}{mark}", flush=True)


def queued_part(build, tmp, n):
    print(f"== Part 1: {n} queued BenchmarkRuns, no kubelets", flush=True)
    c = Cluster(build, tmp, "queued")
    # A Ready node with both roles and no kubelet behind it (its status
    # written once by the administrator): placement succeeds, the first
    # run's target pod is created and stays Pending, so that run stays
    # active and every other one stays Queued.
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "node-nobody", "labels": {"fairbench.dev/role": "target"}},
            "status": {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                       "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}
    c.api("/api/v1/nodes", "POST", node)
    c.api("/api/v1/nodes/node-nobody/status", "PATCH", {"status": node["status"]}, "application/merge-patch+json")
    ctl = c.start_controller()
    if not wait_for(lambda: "leading as" in open(os.path.join(c.tmp, "controller.log")).read() or
                    ctl.poll() is not None, 20, 0.1):
        print("  (no leader line in the controller's log after 20 s; going on)")
    # 1,000 runs in one file, created in bulk. The target command is never
    # run: no node exists, so the first run waits for its pods.
    path = os.path.join(c.tmp, "runs.yaml")
    with open(path, "w") as f:
        for i in range(n):
            f.write(run_yaml(f"run-{i:04d}", 20000 + i % 1000, "/bin/true") + "---\n")
    t0 = time.monotonic()
    c.ok("create", "-f", path, "-o", "name", timeout=600)
    created = time.monotonic() - t0
    row(f"kubectl create of {n} runs", f"{created:.1f} s", "", None)

    def all_phased(count):
        items = c.runs()
        return len(items) >= count and all((it.get("status") or {}).get("phase") for it in items)

    def phase_counts():
        counts = {}
        for it in c.runs():
            p = (it.get("status") or {}).get("phase") or "(none)"
            counts[p] = counts.get(p, 0) + 1
        return counts
    if not wait_for(lambda: all_phased(n), 600, 2.0):  # a list of 1,000 runs costs the API server ~0.5 s
        raise RuntimeError(f"the runs did not all get a phase in 600 s: {phase_counts()}")
    row(f"create start → all {n} runs have a phase", f"{time.monotonic() - t0:.1f} s", "", None)
    print(f"  phases: {phase_counts()}", flush=True)

    # apply → Queued, several times.
    samples = []
    for k in range(7):
        name = f"extra-{k}"
        one = os.path.join(c.tmp, name + ".yaml")
        with open(one, "w") as f:
            f.write(run_yaml(name, 21000 + k, "/bin/true"))
        t0 = time.monotonic()
        c.ok("apply", "-f", one)

        def queued():
            try:
                return (c.api(f"{GROUP}/{name}").get("status") or {}).get("phase") == "Queued"
            except urllib.error.HTTPError:
                return False
        if not wait_for(queued, 30, 0.01):
            raise RuntimeError(f"{name} was not Queued in 30 s")
        samples.append(time.monotonic() - t0)
    total = n + len(samples)
    st = ratio_stats(samples)
    row(f"kubectl apply → Queued (median of {len(samples)}, {n} runs queued)", f"{st['median'] * 1000:.0f} ms "
        f"(min {st['min'] * 1000:.0f}, max {st['max'] * 1000:.0f}; mean {st['mean'] * 1000:.0f}, 95% CI "
        f"{st['ci95'][0] * 1000:.0f}–{st['ci95'][1] * 1000:.0f})", "target ≤ 1000 ms",
        verdict(st, 1.0, True, "samples"))

    time.sleep(2)
    c0, w0 = proc_cpu(ctl.pid), time.monotonic()
    time.sleep(10)
    idle = (proc_cpu(ctl.pid) - c0) / (time.monotonic() - w0) * 100
    row(f"controller CPU idle, {total} runs queued (10 s)", f"{idle:.2f} % of one core", "target ≤ 1 %", idle <= 1.0)
    rss, hwm = proc_status(ctl.pid, "VmRSS"), proc_status(ctl.pid, "VmHWM")
    row(f"controller RSS, {total} runs", f"{rss:.1f} MiB (peak {hwm:.1f})", "target ≤ 256 MiB", hwm <= 256)

    # Full resync: stop the controller, remove every run's status, start it again.
    stop(ctl)
    PROCS.remove(("controller", ctl))
    items = c.runs()
    for it in items:
        c.api(f"{GROUP}/{it['metadata']['name']}/status", "PATCH", {"status": None},
              "application/merge-patch+json")
    if any((it.get("status") or {}).get("phase") for it in c.runs()):
        raise RuntimeError("the status of some runs could not be removed")
    t0 = time.monotonic()
    ctl = c.start_controller()
    if not wait_for(lambda: all_phased(total), 600, 1.0):
        raise RuntimeError(f"the resync did not finish in 600 s: {phase_counts()}")
    resync = time.monotonic() - t0
    row(f"full resync: controller start → all {total} runs reconciled (status written)", f"{resync:.2f} s",
        "target ≤ 30 s", resync <= 30)
    row("  the same per run", f"{resync / total * 1000:.1f} ms", "", None)
    print(f"  phases: {phase_counts()}", flush=True)
    cpu = proc_cpu(ctl.pid)
    row("controller CPU for the resync (process total)", f"{cpu:.2f} s", "", None)
    # From the controller's log: a run is over → the next one started, with
    # about 1,000 runs queued (every key is requeued when a run ends).
    gaps, over = [], None
    with open(os.path.join(c.tmp, "controller.log")) as f:
        for line in f:
            if not line.startswith("[") or ("is over" not in line and "] started " not in line):
                continue
            t = parse_time(line[1:24].replace(" ", "T"))
            if "is over" in line:
                over = t
            elif over is not None:
                gaps.append(t - over)
                over = None
    if gaps:
        row("run over → next run started, ~1,000 queued (controller log)",
            ", ".join(f"{g:.1f} s" for g in gaps), "target ≤ 1 s", max(gaps) <= 1.0)
    rss, hwm = proc_status(ctl.pid, "VmRSS"), proc_status(ctl.pid, "VmHWM")
    row(f"controller RSS after the resync, {total} runs", f"{rss:.1f} MiB (peak {hwm:.1f})", "target ≤ 256 MiB",
        hwm <= 256)
    stop_all()


def cluster_part(build, tmp):
    print("== Part 2: the test cluster (target node CPU 0, load nodes CPU 1)", flush=True)
    c = Cluster(build, tmp, "cluster")
    images = os.path.join(c.tmp, "images.yaml")
    with open(images, "w") as f:
        f.write(f"example.org/fairbench/agent:dev: [{c.bin}/fairbench-agent]\n"
                f"example.org/fairbench/target:dev: [{c.bin}/fairbench-target-cpp-httplib-debian]\n")
    for node, cpus, labels, ip in [("node-target", "0", "fairbench.dev/role=target", "127.0.10"),
                                   ("node-load-1", "1", "fairbench.dev/role=load", "127.0.11"),
                                   ("node-load-2", "1", "fairbench.dev/role=load", "127.0.12")]:
        # As tests/operator's kubelets: the node's own certificate, serving
        # HTTPS in the cluster's node network namespace.
        kubeconfig, cert, key, proxy = c.node(node)
        start(node, [os.path.join(c.bin, "fairbench-test-kubelet"), "--kubeconfig", kubeconfig, "--node", node,
                     "--cpus", cpus, "--memory", "4Gi", "--labels", labels, "--images", images, "--pod-ip-base", ip,
                     "--listen", c.node_file("node-address") + ":0", "--log-dir", os.path.join(c.tmp, node),
                     "--heartbeat", "1s", "--tls-cert-file", cert, "--tls-private-key-file", key,
                     "--proxy-kubeconfig", proxy, "--listen-netns", c.node_file("node-netns")], c.tmp)
    if not wait_for(lambda: len(c.api("/api/v1/nodes")["items"]) >= 3, 20, 0.2):
        raise RuntimeError("the kubelets did not register")
    c.start_controller()
    if not wait_for(lambda: "leading as" in open(os.path.join(c.tmp, "controller.log")).read(), 20, 0.1):
        print("  (no leader line in the controller's log after 20 s; going on)")

    warmup, duration, cooldown = 0.3, 1.0, 0.2
    levels = [4, 8, 12, 16, 20, 24]
    path = os.path.join(c.tmp, "cells.yaml")
    with open(path, "w") as f:
        f.write(run_yaml("cells", free_port(), os.path.join(c.bin, "fairbench-target-cpp-httplib-debian"), levels,
                         f"{int(warmup * 1000)}ms", f"{duration}s", f"{int(cooldown * 1000)}ms"))
    t0 = time.monotonic()
    c.ok("apply", "-f", path)

    def target_pod():
        for p in c.api("/api/v1/namespaces/default/pods")["items"]:
            labels = p["metadata"].get("labels") or {}
            if labels.get("app.kubernetes.io/name") != "fairbench-agent":
                return True
        return False
    if not wait_for(target_pod, 60, 0.01):
        raise RuntimeError("no target pod in 60 s")
    first_pod = time.monotonic() - t0
    row("kubectl apply → first target pod created", f"{first_pod * 1000:.0f} ms", "target ≤ 5000 ms",
        first_pod <= 5.0)

    def finished():
        ph = (c.api(f"{GROUP}/cells").get("status") or {}).get("phase")
        return ph if ph in ("Succeeded", "Failed", "Cancelled") else None
    phase = wait_for(finished, 180, 0.2)
    total = time.monotonic() - t0
    st = c.api(f"{GROUP}/cells").get("status") or {}
    if phase != "Succeeded":
        raise RuntimeError(f"the run ended {phase}: {json.dumps(st.get('conditions'))}")
    results = st.get("results") or []
    overheads = []
    for a, b in zip(results, results[1:]):
        overheads.append(parse_time(b["startTime"]) - parse_time(a["endTime"]) - cooldown - warmup)
    print("  per-cell gaps beyond warmup + cooldown: " + ", ".join(f"{o:.3f}s" for o in overheads), flush=True)
    row(f"per-cell overhead ({len(overheads)} transitions, warmup {warmup}s duration {duration}s cooldown {cooldown}s)",
        f"max {max(overheads):.3f} s, mean {statistics.mean(overheads):.3f} s", "target ≤ 0.5 s per cell",
        max(overheads) <= 0.5)
    cells = len(results)
    row(f"apply → Succeeded, {cells} cells", f"{total:.1f} s (load itself {cells * (warmup + duration):.1f} s, "
        f"cooldowns {(cells - 1) * cooldown:.1f} s)", "", None)
    stop_all()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--skip-cluster", action="store_true")
    ap.add_argument("--skip-queued", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the logs' directory")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fairbench-operator-bench-")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    failed = False
    try:
        for part in (([] if args.skip_queued else [lambda: queued_part(args.build, tmp, args.runs)]) +
                     ([] if args.skip_cluster else [lambda: cluster_part(args.build, tmp)])):
            try:
                part()
            except Exception as e:  # report and go on with the next part
                failed = True
                print(f"  FAILED: {e} (logs in {tmp})", flush=True)
                args.keep = True
            finally:
                stop_all()
    finally:
        stop_all()
    print("\n| figure | measured | target | met |\n|---|---|---|---|")
    for figure, value, target, met in ROWS:
        mark = "" if met is None else (met if isinstance(met, str) else ("yes" if met else "NO"))
        print(f"| {figure} | {value} | {target} | {mark} |")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"logs: {tmp}")
    return 1 if failed or any(m is False for *_, m in ROWS) else 0


if __name__ == "__main__":
    sys.exit(main())
