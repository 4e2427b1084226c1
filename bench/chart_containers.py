#!/usr/bin/env python3
"""The operator from the chart with pods as containers: what it costs in time.

Follows the steps of docs/local-cluster.md: the Docker
engine (scripts/docker-engine), the images around build/bin
(scripts/images --prebuilt), Kubernetes' own control plane with three test
kubelets in container mode as its nodes (scripts/kube up --nodes), a namespace
enforcing "restricted" (`kubectl create namespace`, `kubectl label`),
`helm install fairbench charts/fairbench`; `helm uninstall` at the end.
Then, `--repeats` times, a run of two reference targets (cpp-httplib-debian, beast)
with three cells each (connections 8, 16, 32):
  - apply → first target container running (the engine's view, polled
    every 50 ms; target ≤ 5 s);
  - between cells, from status.results[]: the next cell's startTime minus
    this cell's endTime, minus the configured cooldown and warmup — within
    one target (the pod stays) and across targets (one container stopped
    and removed, the next created, started and ready; the target is
    ≤ 0.5 s, as with processes: bench/operator_bench.py).

    bench/chart_containers.py [--build build] [--repeats 3] [--keep]

As root (the engine). Loopback only; every process it starts is stopped at
the end, also on failure, and the kubelets remove their containers.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTERS = []


def stop_all():
    # The kubelets first: each removes its pods' containers as it stops.
    for c in CLUSTERS:
        subprocess.run([os.path.join(ROOT, "scripts/kube"), "down", "--dir", c], capture_output=True)


def parse_time(text):
    # RFC 3339 with up to nanoseconds.
    base, _, frac = text.rstrip("Z").partition(".")
    t = datetime.fromisoformat(base + "+00:00").timestamp()
    return t + (float("0." + frac) if frac else 0.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    kube_bin = subprocess.run([os.path.join(ROOT, "scripts/kube"), "build"], check=True, capture_output=True,
                              text=True).stdout.strip()
    kubectl, helm = os.path.join(kube_bin, "kubectl"), os.path.join(kube_bin, "helm")
    work = tempfile.mkdtemp(prefix="fairbench-chart-bench.")
    env = dict(os.environ)
    out = subprocess.run([os.path.join(ROOT, "scripts/docker-engine"), "start"], capture_output=True, text=True, check=True)
    env["DOCKER_HOST"] = out.stdout.strip().split("=", 1)[1]
    subprocess.run([os.path.join(ROOT, "scripts/images"), "--prebuilt", bin_dir, "--only", "fairbench", "--registry",
                    "fairbench.test", "--version", "test", "--revision", "test"], env=env, check=True,
                   stdout=subprocess.DEVNULL)

    def k(*a, check=True):
        r = subprocess.run([kubectl, *a], env=env, capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(a)}: {r.stderr}")
        return r.stdout

    def docker(*a):
        return subprocess.run(["docker", *a], env=env, capture_output=True, text=True).stdout

    try:
        cluster = os.path.join(work, "cluster")
        up = subprocess.run([os.path.join(ROOT, "scripts/kube"), "up", "--nodes", "--dir", cluster, "--die-with",
                             str(os.getpid())], env=env, capture_output=True, text=True)
        if up.returncode != 0:
            raise RuntimeError("scripts/kube up: " + up.stderr)
        CLUSTERS.append(cluster)
        env["KUBECONFIG"] = os.path.join(cluster, "admin.kubeconfig")
        k("create", "namespace", "fairbench")
        k("label", "namespace", "fairbench", "pod-security.kubernetes.io/enforce=restricted")
        subprocess.run([helm, "install", "fairbench", os.path.join(ROOT, "charts/fairbench"), "--namespace",
                        "fairbench", "--set", "image.registry=fairbench.test", "--set", "image.tag=test", "--set",
                        "controller.listenAddress=$(POD_IP)"], env=env, check=True, capture_output=True, text=True)
        while '"readyReplicas":1' not in k("get", "deploy", "-n", "fairbench", "-o", "json").replace(" ", ""):
            time.sleep(0.2)
        warmup, cooldown = 0.5, 0.2
        first, within, across = [], [], []
        for i in range(args.repeats):
            name = f"bench-{i}"
            run = f"""apiVersion: fairbench.dev/v1alpha1
kind: BenchmarkRun
metadata: {{name: {name}, namespace: fairbench}}
spec:
  targets:
  - {{name: cpp-httplib-debian, image: fairbench.test/fairbench-target-cpp-httplib-debian:test, port: 18080, nofile: 8192,
     command: [/usr/local/bin/fairbench-target-cpp-httplib-debian, --host, 0.0.0.0, --port, "{{port}}", --threads, "1"],
     resources: {{cpu: "1", memory: 256Mi}}}}
  - {{name: beast, image: fairbench.test/fairbench-target-beast:test, port: 18081, nofile: 8192,
     command: [/usr/local/bin/fairbench-target-beast, --host, 0.0.0.0, --port, "{{port}}", --threads, "1"],
     resources: {{cpu: "1", memory: 256Mi}}}}
  scenarios:
  - {{name: hello, request: {{path: /}}, expect: {{status: 200}}}}
  load: {{threads: 1, connections: [8, 16, 32], warmup: 500ms, duration: 1s, timeout: 1s, agents: 2}}
  cooldown: 200ms
  placement:
    target: {{nodeSelector: {{fairbench.dev/role: target}}}}
    agents: {{nodeSelector: {{fairbench.dev/role: load}}}}
"""
            t0 = time.monotonic()
            subprocess.run([kubectl, "apply", "-f", "-"], env=env, check=True, capture_output=True, text=True, input=run)
            while not docker("ps", "-q", "--filter", "label=io.kubernetes.container.name=target").strip():
                time.sleep(0.05)
            first.append(time.monotonic() - t0)
            while True:
                st = json.loads(k("get", "br", name, "-n", "fairbench", "-o", "json")).get("status", {})
                if st.get("phase") in ("Succeeded", "Failed"):
                    break
                time.sleep(0.5)
            if st["phase"] != "Succeeded":
                sys.exit(f"chart_containers: run {name} ended {st['phase']}: {json.dumps(st)[:2000]}")
            results = st["results"]
            for a, b in zip(results, results[1:]):
                gap = parse_time(b["startTime"]) - parse_time(a["endTime"]) - cooldown - warmup
                (within if a["target"] == b["target"] else across).append(gap)
            k("delete", "br", name, "-n", "fairbench")
        fmt = lambda xs: f"median {statistics.median(xs):.2f} s [{min(xs):.2f}–{max(xs):.2f}] over {len(xs)}"
        print(f"apply -> first target container running: {fmt(first)}")
        print(f"between cells of one target, beyond warmup and cooldown: {fmt(within)}")
        print(f"between targets (container stopped, removed, next created, started, ready): {fmt(across)}")
        subprocess.run([helm, "uninstall", "fairbench", "--namespace", "fairbench", "--wait"], env=env,
                       capture_output=True, text=True)
    finally:
        stop_all()
        if not args.keep:
            subprocess.run(["rm", "-rf", work])
        else:
            print(f"work folder: {work}")


if __name__ == "__main__":
    main()
