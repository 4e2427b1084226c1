#!/usr/bin/env python3
"""What fairbench's orchestration costs, beyond the load itself.

1. Overhead per cell: `fairbench run` with one target and several cells;
   from results.json, the wall time between one cell's measurement end and
   the next one's start, minus the configured cooldown and warmup. The
   target's start is outside this (it happens before the first cell).
   Target: ≤ 0.5 s per cell.
2. The controller's own CPU while four agents stream snapshots: a 10 s cell
   with agents: 4, the `fairbench` process's CPU time (not its children's)
   sampled from /proc over the measurement. Target: ≤ 2 % of one core.
3. The cost to ingest one agent snapshot: see build/bin/ingest_bench
   (Google Benchmark), run at the end.

    bench/orchestration.py [--build build]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_time(text):
    # RFC 3339 with up to nanoseconds: keep microseconds for Python.
    base, _, frac = text.rstrip("Z").partition(".")
    t = datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").timestamp() - time.timezone
    return t + (float("0." + frac) if frac else 0.0)


def run_file(path, build, levels, agents, warmup, duration, cooldown):
    beast = os.path.join(ROOT, build, "bin", "fairbench-target-beast")
    text = f"""apiVersion: fairbench.dev/v1alpha1
kind: BenchmarkRun
metadata: {{name: orchestration-bench}}
spec:
  targets:
  - name: beast
    local: {{command: [{beast}, --port, "{{port}}", --threads, "1"]}}
  scenarios:
  - name: hello
    request: {{path: /}}
    expect: {{status: 200, body: "Hello, World!"}}
    connections: [{", ".join(str(c) for c in levels)}]
  load: {{threads: 1, warmup: {warmup}s, duration: {duration}s, timeout: 2s, agents: {agents}}}
  cooldown: {cooldown}s
"""
    with open(path, "w") as f:
        f.write(text)


def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    fairbench = os.path.join(ROOT, args.build, "bin", "fairbench")
    tmp = tempfile.mkdtemp(prefix="fairbench-orch-")

    # 1. Overhead per cell.
    warmup, duration, cooldown = 1.0, 2.0, 1.0
    levels = [10, 20, 30, 40, 50, 60]
    run = os.path.join(tmp, "overhead.yaml")
    run_file(run, args.build, levels, 1, warmup, duration, cooldown)
    out = os.path.join(tmp, "overhead")
    subprocess.run([fairbench, "run", run, "-o", out, "-q", "--lock-file", os.path.join(tmp, "lock")],
                   stdout=subprocess.DEVNULL, check=True)
    cells = json.load(open(os.path.join(out, "results.json")))["cells"]
    overheads = []
    for a, b in zip(cells, cells[1:]):
        gap = parse_time(b["result"]["startTime"]) - parse_time(a["result"]["endTime"])
        overheads.append(gap - cooldown - warmup)
    print(f"Overhead per cell ({len(overheads)} transitions, warmup {warmup}s, cooldown {cooldown}s):")
    print("  " + ", ".join(f"{o:.3f}s" for o in overheads))
    print(f"  max {max(overheads):.3f}s, mean {sum(overheads) / len(overheads):.3f}s  (target ≤ 0.5 s)")

    # 2. Controller CPU with four agents streaming.
    run = os.path.join(tmp, "cpu.yaml")
    run_file(run, args.build, [40], 4, 1.0, 10.0, 0.0)
    out = os.path.join(tmp, "cpu")
    p = subprocess.Popen([fairbench, "run", run, "-o", out, "-q", "--lock-file", os.path.join(tmp, "lock")],
                         stdout=subprocess.DEVNULL)
    time.sleep(4.0)  # deploy, verify, warm up, and into the measurement
    c0, t0 = proc_cpu(p.pid), time.time()
    time.sleep(6.0)
    c1, t1 = proc_cpu(p.pid), time.time()
    p.wait()
    share = (c1 - c0) / (t1 - t0)
    print(f"Controller CPU while 4 agents stream: {share * 100:.2f} % of one core over {t1 - t0:.1f}s (target ≤ 2 %)")

    # 3. Snapshot ingest.
    bench = os.path.join(ROOT, args.build, "bin", "ingest_bench")
    if os.access(bench, os.X_OK):
        print("Snapshot ingest (Google Benchmark):")
        sys.stdout.flush()
        subprocess.run([bench, "--benchmark_min_time=0.5"], check=True)


if __name__ == "__main__":
    main()
