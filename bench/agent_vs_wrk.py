#!/usr/bin/env python3
"""fairbench-agent versus wrk, in the same run, against the same nginx.

nginx (Debian's) runs one worker pinned to one CPU; wrk and fairbench-agent
run alternately, pinned to another CPU, with -t1, at each connection level.
For every level this prints, per tool, the median over the pairs of:
requests/s, the generator's CPU seconds per request (user + system, from
wait4), system calls per request (a separate, shorter run under strace -c -f),
peak RSS, and errors — and fairbench's ratio to wrk.

    bench/agent_vs_wrk.py [--levels 100,1000,10000] [--pairs 3] [--duration 10]
                          [--agent build/bin/fairbench-agent] [--json out.json]
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NGINX_CONF = """
worker_processes 1;
master_process off;
daemon off;
worker_rlimit_nofile {nofile};
pid {dir}/nginx.pid;
error_log {dir}/error.log error;
events {{ worker_connections {nofile}; }}
http {{
  access_log off;
  keepalive_requests 1000000000;
  keepalive_timeout 300s;
  client_body_temp_path {dir}/body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  server {{
    listen 127.0.0.1:{port} backlog=65535 reuseport;
    location / {{ default_type text/plain; return 200 "Hello, World!"; }}
  }}
}}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nginx did not listen on port {port}")


def run_measured(argv, timeout):
    """Runs argv under GNU time; returns (stdout, cpu_seconds, maxrss_kb, exit_code).

    GNU time forks the tool from a small process, so the peak RSS is the
    tool's own (a fork of this Python process would carry its RSS along)."""
    p = subprocess.Popen(["/usr/bin/time", "-f", "FAIRBENCH-TIME %U %S %M"] + argv,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    start = time.time()
    out = []
    # Read output while waiting so the pipe never fills.
    while True:
        line = p.stdout.readline()
        if not line:
            break
        out.append(line)
        if time.time() - start > timeout:
            p.kill()
    code = p.wait()
    text = "".join(out)
    m = re.search(r"^FAIRBENCH-TIME ([\d.]+) ([\d.]+) (\d+)$", text, re.M)
    if not m:
        return text, 0.0, 0, code or 1
    return text, float(m.group(1)) + float(m.group(2)), int(m.group(3)), code


def parse_output(text):
    m = re.search(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m),", text, re.M)
    if not m:
        raise RuntimeError("no summary in output:\n" + text)
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[m.group(3)]
    requests, seconds = int(m.group(1)), float(m.group(2)) * scale
    errors = 0
    e = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if e:
        errors += sum(int(x) for x in e.groups())
    n = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if n:
        errors += int(n.group(1))
    p = re.search(r"Port exhaustion \(EADDRNOTAVAIL\): (\d+)", text)
    if p:
        errors += int(p.group(1))
    rps = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M)
    return requests, seconds, float(rps.group(1)), errors


def strace_calls(path):
    total = 0
    with open(path) as f:
        for line in f:
            m = re.match(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\S+)$", line)
            if m and m.group(2) != "total":
                total += int(m.group(1))
    return total


def tool_argv(tool, agent, url, conns, duration):
    if tool == "wrk":
        return ["wrk", "-t1", f"-c{conns}", f"-d{duration}s", url]
    return [agent, "load", "-t1", f"-c{conns}", f"-d{duration}s", url]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levels", default="100,1000,10000")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10, help="seconds per run")
    ap.add_argument("--strace-duration", type=int, default=3)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--agent", default=os.path.join(ROOT, "build", "bin", "fairbench-agent"))
    ap.add_argument("--json", help="write the raw figures here")
    args = ap.parse_args()

    for tool in ("nginx", "wrk", "strace", "taskset", "time"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            raise SystemExit(f"{tool} is not installed (scripts/setup installs it)")
    if not os.access(args.agent, os.X_OK):
        raise SystemExit(f"{args.agent} not found: build first (scripts/setup)")

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    levels = [int(x) for x in args.levels.split(",")]
    if max(levels) + 100 > hard:
        raise SystemExit(f"the open-file limit {hard} is too low for {max(levels)} connections")

    tmp = tempfile.mkdtemp(prefix="fairbench-bench-")
    port = free_port()
    with open(os.path.join(tmp, "nginx.conf"), "w") as f:
        f.write(NGINX_CONF.format(dir=tmp, port=port, nofile=min(hard, 65536)))
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    nginx = subprocess.Popen(["taskset", "-c", args.server_cpu, nginx_bin, "-p", tmp, "-c", os.path.join(tmp, "nginx.conf")],
                             stderr=subprocess.DEVNULL)
    results = {"levels": {}, "nginx": subprocess.run([nginx_bin, "-v"], capture_output=True, text=True).stderr.strip(),
               "wrk": "Debian wrk", "pairs": args.pairs, "duration": args.duration}
    try:
        wait_port(port)
        url = f"http://127.0.0.1:{port}/"
        print(f"nginx pid {nginx.pid} on CPU {args.server_cpu}; generators on CPU {args.client_cpu}, -t1, "
              f"{args.duration}s runs, {args.pairs} pairs per level\n")
        for conns in levels:
            runs = {"wrk": [], "fairbench": []}
            for pair in range(args.pairs):
                order = ["wrk", "fairbench"] if pair % 2 == 0 else ["fairbench", "wrk"]
                for tool in order:
                    argv = ["taskset", "-c", args.client_cpu] + tool_argv(tool, args.agent, url, conns, args.duration)
                    out, cpu, rss, code = run_measured(argv, args.duration + 60)
                    if code != 0:
                        raise SystemExit(f"{tool} failed ({code}):\n{out}")
                    requests, seconds, rps, errors = parse_output(out)
                    runs[tool].append({"requests": requests, "seconds": seconds, "rps": rps, "cpu": cpu,
                                       "cpu_per_request_us": cpu / max(requests, 1) * 1e6, "rss_kb": rss,
                                       "errors": errors})
                    print(f"  c={conns:<6} pair {pair + 1} {tool:<9} {rps:>11.0f} req/s  "
                          f"{cpu / max(requests, 1) * 1e6:6.2f} us CPU/req  rss {rss / 1024:6.1f} MiB  errors {errors}",
                          flush=True)
                    time.sleep(1)
            # Under strace everything is slower: give the connections of the
            # higher levels time to open, so that setup does not dominate.
            strace_secs = max(args.strace_duration, 3 + conns // 1000)
            for tool in ("wrk", "fairbench"):
                trace = os.path.join(tmp, f"strace-{tool}-{conns}.txt")
                argv = ["strace", "-c", "-f", "-o", trace, "taskset", "-c", args.client_cpu] + \
                    tool_argv(tool, args.agent, url, conns, strace_secs)
                out, _, _, code = run_measured(argv, strace_secs + 60)
                requests, _, _, _ = parse_output(out)
                runs[tool + "_syscalls_per_request"] = strace_calls(trace) / max(requests, 1)
                time.sleep(1)
            results["levels"][conns] = runs

        print()
        for conns, runs in results["levels"].items():
            med = {t: {k: statistics.median(r[k] for r in runs[t]) for k in ("rps", "cpu_per_request_us", "rss_kb")}
                   for t in ("wrk", "fairbench")}
            errs = {t: max(r["errors"] for r in runs[t]) for t in ("wrk", "fairbench")}
            w, f = med["wrk"], med["fairbench"]
            print(f"== {conns} connections (median of {args.pairs})")
            print(f"   {'':24}{'wrk':>14}{'fairbench':>14}{'ratio':>9}")
            print(f"   {'requests/s':24}{w['rps']:>14.0f}{f['rps']:>14.0f}{f['rps'] / w['rps']:>9.2f}")
            print(f"   {'CPU us per request':24}{w['cpu_per_request_us']:>14.2f}{f['cpu_per_request_us']:>14.2f}"
                  f"{f['cpu_per_request_us'] / w['cpu_per_request_us']:>9.2f}")
            sw, sf = runs["wrk_syscalls_per_request"], runs["fairbench_syscalls_per_request"]
            print(f"   {'syscalls per request':24}{sw:>14.2f}{sf:>14.2f}{sf / sw:>9.2f}")
            print(f"   {'peak RSS MiB':24}{w['rss_kb'] / 1024:>14.1f}{f['rss_kb'] / 1024:>14.1f}{f['rss_kb'] / w['rss_kb']:>9.2f}")
            print(f"   {'errors (max of runs)':24}{errs['wrk']:>14}{errs['fairbench']:>14}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2)
    finally:
        nginx.send_signal(signal.SIGTERM)
        try:
            nginx.wait(10)
        except subprocess.TimeoutExpired:
            nginx.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
