#!/usr/bin/env python3
"""Soak: does anything grow or drift when fairbench runs for long?

1. agent  fairbench-agent at 10,000 connections against Debian's nginx
          (started here on loopback, one worker, pinned to its own CPU) for
          --minutes. Every second: the agent's VmRSS (/proc/PID/status), its
          own requests/s, errors and open connections (its --progress line);
          before and after, nginx's request counter (stub_status: the
          server's count, independent of the agent's). PASS when
            - errors: zero (the agent's summary: socket errors, timeouts,
              non-2xx; and its per-second error counts), and nginx served at
              least what the agent counted;
            - RSS flat: the highest VmRSS after the first minute is at most
              1 % above VmRSS at the end of the first minute (sampled while
              the agent measures: its connection setup and final report
              are left out);
            - every connection stays open through the measurement;
            - requests/s stable: the coefficient of variation of the
              per-minute requests/s is at most --max-cv (default 5 %).
          With --minutes below 3 the "first minute" becomes the first half
          of the run and the per-minute windows 10 s ones, so that a short
          check has something to compare.
2. run    `fairbench run` of --cells short cells (a generated run file: one
          nginx target, the hello scenario, ~1 s cells: at most 100
          repetitions (what a run file allows), so more cells come from more
          connection levels, 50, 51, ...). Every --interval (0.2 s): the controller's VmRSS and
          its open file descriptors (/proc/PID/fd), from the first cell
          recorded to the last (start-up and the final report left out).
          PASS when
            - every cell succeeded and the run ended with exit code 0;
            - RSS flat: the highest VmRSS over the last quarter of the run is
              at most --max-rss-growth (default 5 %) above the highest over
              its second quarter (the first quarter is start-up); the record
              the controller holds grows by a few KiB per cell, which is
              printed as KiB per cell (least squares over the run);
            - no descriptor growth: neither the fewest nor the most
              descriptors open in the last quarter exceed those of the
              second quarter.

Prints the figures and a PASS/FAIL table; exits 1 if anything failed. Run by
hand (it is not a timed test): the full soak takes --minutes + the run's.

    bench/soak.py [--only agent|run] [--minutes 10] [--connections 10000]
                  [--cells 200] [--build build] [--json out.json]
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_vs_wrk import NGINX_CONF, free_port, parse_output, served, wait_port  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def vm_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def cv(values):
    if len(values) < 2:
        return 0.0
    return statistics.pstdev(values) / statistics.mean(values)


def slope(xs, ys):
    """Least-squares slope of ys over xs."""
    if len(xs) < 2:
        return 0.0
    mx, my = statistics.mean(xs), statistics.mean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


class Table:
    def __init__(self):
        self.rows = []

    def check(self, name, ok, figure):
        self.rows.append((name, ok, figure))
        return ok

    def print(self, title):
        print(f"\n== {title}")
        width = max(len(r[0]) for r in self.rows)
        for name, ok, figure in self.rows:
            print(f"   {'PASS' if ok else 'FAIL'}  {name:<{width}}  {figure}")
        return all(r[1] for r in self.rows)


def start_nginx(tmp, cpu, nofile):
    port = free_port()
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(dir=tmp, port=port, nofile=nofile, tls_server=""))
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    p = subprocess.Popen(["taskset", "-c", cpu, nginx_bin, "-p", tmp, "-c", conf], stderr=subprocess.DEVNULL)
    wait_port(port)
    return p, port


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


PROGRESS = re.compile(r"^\[\s*([\d.]+)s (\S+)\s*\]\s+([\d.]+) req/s .* errors (\d+)\s+open (\d+)")


def soak_agent(args, tmp, out):
    seconds = int(args.minutes * 60)
    settle = 60 if seconds >= 180 else seconds // 2
    window = 60 if seconds >= 180 else 10
    nginx, port = start_nginx(tmp, args.server_cpu, min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 65536))
    url = f"http://127.0.0.1:{port}/"
    argv = ["taskset", "-c", args.client_cpu, args.agent, "load", "-t1", f"-c{args.connections}",
            f"-d{seconds}s", "--timeout", "5s", "--progress", url]
    print(f"agent: {args.connections} connections for {seconds} s against nginx pid {nginx.pid} "
          f"(CPU {args.server_cpu}); agent on CPU {args.client_cpu}", flush=True)
    progress = []  # (agent seconds, phase, req/s, errors, open)
    try:
        before = served(port)
        agent = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def read_progress():
            for line in agent.stderr:
                m = PROGRESS.match(line)
                if m:
                    progress.append((float(m.group(1)), m.group(2), float(m.group(3)), int(m.group(4)),
                                     int(m.group(5))))
        reader = threading.Thread(target=read_progress, daemon=True)
        reader.start()
        samples = []  # (seconds since start, VmRSS kB)
        start = time.monotonic()
        next_tick = start + 1
        while agent.poll() is None and time.monotonic() - start < seconds + 120:
            time.sleep(max(0.0, next_tick - time.monotonic()))
            next_tick += 1
            try:
                rss = vm_rss_kb(agent.pid)
            except (FileNotFoundError, ProcessLookupError):
                break
            # Only while the agent measures (its per-second lines), not
            # while it opens its connections or builds its final report.
            measured = sum(1 for p in list(progress) if p[1] == "measure")
            if 1 <= measured < seconds:
                samples.append((time.monotonic() - start, rss))
            if samples and samples[-1][0] > time.monotonic() - start - 0.5 and len(samples) % 30 == 0:
                recent = [p[2] for p in progress[-30:]]
                print(f"  {samples[-1][0]:6.0f} s  VmRSS {rss / 1024:7.1f} MiB  "
                      f"{statistics.mean(recent) if recent else 0:9.0f} req/s (the agent's, last 30 s)", flush=True)
        if agent.poll() is None:
            agent.kill()
        summary = agent.stdout.read()
        code = agent.wait()
        reader.join(5)
        after = served(port)
    finally:
        stop(nginx)

    t = Table()
    requests, window_s, rps, errors = parse_output(summary)
    server = after - before - 1  # the "after" status request counts itself
    progress_errors = sum(p[3] for p in progress)
    t.check("agent exit code 0", code == 0, f"exit code {code}")
    kinds = re.search(r"Socket errors: .*", summary)
    t.check("zero errors", errors == 0 and progress_errors == 0,
            f"{errors} in the summary, {progress_errors} in the per-second lines "
            f"({requests} requests, {rps:.0f} req/s over {window_s:.1f} s)" + (f"; {kinds.group(0)}" if kinds else ""))
    t.check("nginx served what the agent counted", server >= requests,
            f"nginx {server}, agent {requests}")
    open_ok = [p[4] for p in progress if p[1] == "measure"]
    t.check(f"{args.connections} connections open throughout", bool(open_ok) and min(open_ok) == args.connections,
            f"open connections per second: min {min(open_ok) if open_ok else 0}, max {max(open_ok) if open_ok else 0}")
    base = [s for s in samples if s[0] <= settle]
    later = [s for s in samples if s[0] > settle]
    growth = 0.0
    if base and later:
        growth = (max(s[1] for s in later) - base[-1][1]) / base[-1][1]
        t.check(f"RSS flat after the first {settle} s (≤ 1 %)", growth <= 0.01,
                f"VmRSS {base[-1][1] / 1024:.1f} MiB at {settle} s, at most {max(s[1] for s in later) / 1024:.1f} MiB "
                f"after ({growth * 100:+.2f} %); first sample {samples[0][1] / 1024:.1f} MiB; every {window} s: " +
                ", ".join(f"{s[1] / 1024:.1f}" for s in samples[window - 1::window]))
    else:
        t.check("RSS sampled", False, f"{len(samples)} samples")
    # Per-window req/s: the agent's per-second counts over whole windows of
    # its measurement (nginx's total above checks that they were served).
    per_second = [p[2] for p in progress if p[1] == "measure"]
    rates = [statistics.mean(per_second[i:i + window]) for i in range(0, len(per_second) - window + 1, window)]
    variation = cv(rates)
    t.check(f"req/s stable (CV of {window} s windows ≤ {args.max_cv * 100:.0f} %)",
            len(rates) >= 2 and variation <= args.max_cv,
            f"{len(rates)} windows: " + ", ".join(f"{r:.0f}" for r in rates) + f"; CV {variation * 100:.2f} %")
    out["agent"] = {"connections": args.connections, "seconds": seconds, "requests": requests, "rps": rps,
                    "errors": errors, "server_requests": server, "rss_growth": growth, "window_rps": rates,
                    "cv": variation, "rss_kb": [s[1] for s in samples]}
    return t.print(f"agent soak: {args.connections} connections, {seconds} s")


def soak_run(args, tmp, out):
    fairbench = os.path.join(ROOT, args.build, "bin", "fairbench")
    nginx_target = os.path.join(ROOT, args.build, "bin", "fairbench-target-nginx")
    for f in (fairbench, nginx_target):
        if not os.access(f, os.X_OK):
            raise SystemExit(f"{f} not found: build it first")
    run = os.path.join(tmp, "soak.yaml")
    # spec.repetitions is at most 100: more cells take more connection levels.
    levels = -(-args.cells // 100)
    if args.cells % levels:
        raise SystemExit(f"--cells {args.cells}: above 100 it must be a multiple of {levels} (cells per level ≤ 100)")
    connections = ", ".join(str(50 + i) for i in range(levels))
    with open(run, "w") as f:
        f.write(f"""apiVersion: fairbench.dev/v1alpha1
kind: BenchmarkRun
metadata: {{name: soak}}
spec:
  targets:
  - name: nginx
    local: {{command: [{nginx_target}, --port, "{{port}}", --threads, "1"]}}
  scenarios:
  - name: hello
    request: {{path: /}}
    expect: {{status: 200, body: "Hello, World!"}}
  load: {{threads: 1, connections: [{connections}], warmup: 200ms, duration: 700ms, timeout: 2s, agents: 1}}
  repetitions: {args.cells // levels}
  cooldown: 100ms
""")
    output = os.path.join(tmp, "run")
    argv = [fairbench, "run", run, "-o", output, "-q", "--lock-file", os.path.join(tmp, "lock")]
    print(f"\nrun: {args.cells} cells of ~1 s, one nginx target", flush=True)
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "run-stderr.txt"), "w"))
    samples = []  # (seconds, VmRSS kB, fds, cells recorded)
    start = time.monotonic()
    results = os.path.join(output, "results.json")
    cells_seen, results_mtime = 0, 0.0
    peak_fds = (0, [])
    while p.poll() is None and time.monotonic() - start < args.cells * 10 + 120:
        time.sleep(args.interval)
        try:
            rss, fds = vm_rss_kb(p.pid), open_fds(p.pid)
            if fds > peak_fds[0]:
                peak_fds = (fds, sorted(os.readlink(f"/proc/{p.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{p.pid}/fd")))
        except (FileNotFoundError, ProcessLookupError):
            break
        if rss == 0 or fds == 0:
            break  # exiting
        try:
            m = os.stat(results).st_mtime
            if m != results_mtime:
                results_mtime = m
                cells_seen = len(json.load(open(results))["cells"])
        except (OSError, ValueError):
            pass
        # From the first cell recorded to the last: start-up and the final
        # report are not what a leak is judged by.
        if 0 < cells_seen < args.cells:
            samples.append((time.monotonic() - start, rss, fds, cells_seen))
        if samples and len(samples) % int(30 / args.interval) == 0:
            print(f"  {samples[-1][0]:6.0f} s  {cells_seen:4d} cells  VmRSS {rss / 1024:6.1f} MiB  {fds} fds",
                  flush=True)
    if p.poll() is None:
        p.kill()
    code = p.wait()
    wall = time.monotonic() - start
    t = Table()
    try:
        record = json.load(open(results))
    except (OSError, ValueError) as e:
        record = {"cells": []}
        print(f"no record: {e}")
    ok_cells = sum(1 for c in record["cells"] if c["result"]["state"] == "Succeeded")
    t.check("every cell succeeded, exit code 0", code == 0 and ok_cells == args.cells,
            f"{ok_cells} of {args.cells} cells succeeded, exit code {code}, {wall:.0f} s "
            f"({wall / max(args.cells, 1):.2f} s per cell)")
    n = len(samples)
    if n >= 8:
        q2 = samples[n // 4:n // 2]
        q4 = samples[3 * n // 4:]
        rss2, rss4 = max(s[1] for s in q2), max(s[1] for s in q4)
        growth = (rss4 - rss2) / rss2
        per_cell = slope([s[3] for s in samples[n // 4:]], [s[1] for s in samples[n // 4:]])
        t.check(f"controller RSS flat (last quarter ≤ {args.max_rss_growth * 100:.0f} % above second)",
                growth <= args.max_rss_growth,
                f"VmRSS max {rss2 / 1024:.1f} MiB in the second quarter, {rss4 / 1024:.1f} MiB in the last "
                f"({growth * 100:+.2f} %); {per_cell:+.1f} KiB per cell; first sample {samples[0][1] / 1024:.1f} MiB")
        fd2, fd4 = max(s[2] for s in q2), max(s[2] for s in q4)
        low2, low4 = min(s[2] for s in q2), min(s[2] for s in q4)
        t.check("no descriptor growth", fd4 <= fd2 and low4 <= low2,
                f"open descriptors: {low2}–{fd2} in the second quarter, {low4}–{fd4} in the last "
                f"(first sample {samples[0][2]}; {len(samples)} samples every {args.interval} s)")
        print(f"   (the most open at once, {peak_fds[0]}: {', '.join(peak_fds[1])})")
        out["run"] = {"cells": args.cells, "exit_code": code, "succeeded": ok_cells, "seconds": wall,
                      "rss_growth": growth, "kib_per_cell": per_cell, "fds_q2": fd2, "fds_q4": fd4,
                      "samples": samples}
    else:
        t.check("enough samples", False, f"{n} samples (the run ended too soon: see {tmp}/run-stderr.txt)")
    return t.print(f"fairbench run soak: {args.cells} cells")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("agent", "run"))
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--cells", type=int, default=200)
    ap.add_argument("--interval", type=float, default=0.2, help="run: seconds between samples")
    ap.add_argument("--max-cv", type=float, default=0.05)
    ap.add_argument("--max-rss-growth", type=float, default=0.05)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--build", default="build")
    ap.add_argument("--agent", default=None, help="default: BUILD/bin/fairbench-agent")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    args.agent = args.agent or os.path.join(ROOT, args.build, "bin", "fairbench-agent")

    for tool in ("nginx", "taskset"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            raise SystemExit(f"{tool} is not installed (scripts/setup installs it)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if args.only != "run":
        if not os.access(args.agent, os.X_OK):
            raise SystemExit(f"{args.agent} not found: build first")
        # nginx and the agent each hold one descriptor per connection.
        if args.connections + 100 > hard:
            raise SystemExit(f"the open-file limit {hard} is too low for {args.connections} connections")

    tmp = tempfile.mkdtemp(prefix="fairbench-soak-")
    out = {}
    ok = True
    try:
        if args.only != "run":
            ok &= soak_agent(args, tmp, out)
        if args.only != "agent":
            ok &= soak_run(args, tmp, out)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=2)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{'PASS' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
