#!/usr/bin/env python3
"""What spec.profile costs the target: requests/s with and without perf sampling.

A reference target (fairbench-target-beast, one thread) serves hello world
at 100 connections; `fairbench run` measures it in pairs of runs, one
without spec.profile and one with it (perf record -F HZ -g on the target's
process during the measured window), alternating which goes first, so that
drifts of a shared machine fall on both sides. Printed: every pair, the
median requests/s of each side, the ratio (profiled ÷ plain), the target's
CPU, and the samples each profile took; and the target's CPU time per
request, whose ratio holds even when other work on the machine takes a
varying share of the target's CPU (sampling runs in the target's context,
so its cost is in that time).

    bench/profile_overhead.py [--build build] [--pairs 5] [--duration 10] [--hz 99]

Needs perf (Debian: linux-perf) and the permission to use it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_file(path, build, duration, hz):
    beast = os.path.join(ROOT, build, "bin", "fairbench-target-beast")
    profile = f"  profile: {{all: true, frequency: {hz}}}\n" if hz else ""
    with open(path, "w") as f:
        f.write(f"""apiVersion: fairbench.dev/v1alpha1
kind: BenchmarkRun
metadata: {{name: profile-overhead}}
spec:
  targets:
  - name: beast
    local: {{command: [{beast}, --port, "{{port}}", --threads, "1"]}}
  scenarios:
  - name: hello
    request: {{path: /}}
    expect: {{status: 200, body: "Hello, World!"}}
  load: {{threads: 1, connections: [100], warmup: 2s, duration: {duration}s, timeout: 2s}}
  cooldown: 1s
{profile}""")


def measure(fairbench, tmp, build, duration, hz, n):
    run = os.path.join(tmp, f"run-{n}.yaml")
    run_file(run, build, duration, hz)
    out = os.path.join(tmp, f"out-{n}")
    subprocess.run([fairbench, "run", run, "-o", out, "-q", "--lock-file", os.path.join(tmp, "lock")],
                   stdout=subprocess.DEVNULL, check=True)
    cell = json.load(open(os.path.join(out, "results.json")))["cells"][0]
    profile = cell.get("profile")
    if hz and (profile is None or profile["state"] != "Recorded"):
        sys.exit(f"profiling did not work here: {profile and profile.get('message')}")
    r = cell["result"]
    return r["requestsPerSecond"], r.get("targetCpu"), (profile or {}).get("samples")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--hz", type=int, default=99)
    args = ap.parse_args()
    fairbench = os.path.join(ROOT, args.build, "bin", "fairbench")
    tmp = tempfile.mkdtemp(prefix="fairbench-profile-bench-")
    plain, profiled, ratios, cpu_ratios = [], [], [], []
    print(f"beast, 1 thread, hello @ 100 connections, {args.duration:g} s per run; profiled at {args.hz} Hz")
    print(" pair | plain req/s (target CPU) | profiled req/s (target CPU, samples) | ratio | CPU/request ratio")
    n = 0
    for pair in range(args.pairs):
        results = {}
        for hz in ([0, args.hz] if pair % 2 == 0 else [args.hz, 0]):
            n += 1
            results[hz] = measure(fairbench, tmp, args.build, args.duration, hz, n)
        (p_rps, p_cpu, _), (q_rps, q_cpu, samples) = results[0], results[args.hz]
        plain.append(p_rps)
        profiled.append(q_rps)
        ratios.append(q_rps / p_rps)
        cpu_ratio = (q_cpu / q_rps) / (p_cpu / p_rps) if p_cpu and q_cpu else None
        if cpu_ratio is not None:
            cpu_ratios.append(cpu_ratio)
        cpu = lambda c: f"{c:.2f}" if c is not None else "–"
        print(f" {pair + 1:4d} | {p_rps:12,.0f} ({cpu(p_cpu)}) | {q_rps:14,.0f} ({cpu(q_cpu)}, {samples}) | "
              f"{q_rps / p_rps:.3f} | {cpu(cpu_ratio) if cpu_ratio is None else f'{cpu_ratio:.3f}'}")
        sys.stdout.flush()
    print(f"median requests/s: plain {statistics.median(plain):,.0f}, profiled {statistics.median(profiled):,.0f}")
    print(f"ratio profiled / plain: median {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")
    if cpu_ratios:
        print(f"target CPU per request, profiled / plain: median {statistics.median(cpu_ratios):.3f} "
              f"(min {min(cpu_ratios):.3f}, max {max(cpu_ratios):.3f})")


if __name__ == "__main__":
    main()
