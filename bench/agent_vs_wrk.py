#!/usr/bin/env python3
"""fairbench-agent versus wrk, in the same run, against the same nginx.

nginx (Debian's) runs one worker pinned to one CPU; wrk and fairbench-agent
run alternately, pinned to another CPU, with -t1, at each connection level.

The tools do not measure alike, so their own requests/s are not compared
as they are: wrk's clock starts before its connections are open and stops
with the requests still in flight uncounted; fairbench-agent opens every
connection first, starts its clock when they are all open, and lets the
requests in flight finish after it stops (the drain). At 10,000
connections opening them takes a noticeable share of a short run. So the
requests are counted on the server too — nginx's own request counter
(stub_status, read before and after each run; it costs nginx nothing per
request, unlike an access log) — and requests/s is reported three ways:

  tool's own      what the tool printed: its count over its own window
                  (the figure each tool's users see; the old method)
  server/window   the server's count over the tool's own window
  server/wall     the server's count over the tool's whole run, from the
                  process's start to its exit, connection setup included

A run in which either tool saw an error (socket errors, non-2xx, port
exhaustion), or in which the server counted fewer requests than the tool
reported, makes its pair invalid; medians are over valid pairs only.

Per tool it also prints the generator's CPU seconds per request served
(user + system over the whole run, from wait4), system calls per request (a
separate, shorter run under strace -c -f) and peak RSS — and fairbench's
ratio to wrk; and nginx's own CPU time per request served and its busy
share of the run's wall time (from /proc), which show whether the server
was the bottleneck and what each tool's requests cost it. Its targets
(requests/s ≥ 1.0, CPU per request ≤ 0.9, nginx's CPU per request ≤ 1.0)
are judged by the pairs' 95 % interval (bench/verdicts.py: met, not worse
or missed; none from fewer than 7 pairs).

HTTPS (--modes https,https-short): nginx also listens with TLS (a
self-signed ECDSA P-256 certificate made with `openssl req -x509` for the
run; TLS 1.3, nginx's default session tickets). `https` is keep-alive, the
same figures as plain HTTP; `https-short` is one connection per request
(fairbench-agent --no-keep-alive, wrk -H "Connection: close"): each request
is a TCP connect and a TLS handshake, so its requests/s are handshakes/s.
Certificate verification is off in both tools (wrk never verifies).

    bench/agent_vs_wrk.py [--levels 100,1000,10000] [--pairs 3] [--duration 10]
                          [--modes http,https,https-short] [--short-levels 100]
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
import tempfile
import time

from verdicts import ratio_stats, spread_text, verdict

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
    location = /nginx-status {{ stub_status; }}
  }}
{tls_server}}}
"""

TLS_SERVER = """  server {{
    listen 127.0.0.1:{port} ssl backlog=65535 reuseport;
    ssl_certificate {dir}/cert.pem;
    ssl_certificate_key {dir}/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:bench:10m;
    location / {{ default_type text/plain; return 200 "Hello, World!"; }}
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


def served(port):
    """nginx's count of requests so far, this one included (stub_status)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET /nginx-status HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    m = re.search(rb"\n\s*(\d+)\s+(\d+)\s+(\d+)\s*\n", data)
    if not m:
        raise RuntimeError("no counters in nginx's stub_status:\n" + data.decode(errors="replace"))
    return int(m.group(3))


def process_cpu(pid):
    """user + system CPU seconds of a process so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_measured(argv, timeout):
    """Runs argv under GNU time; returns (stdout, cpu_seconds, maxrss_kb, exit_code, wall_seconds).

    GNU time forks the tool from a small process, so the peak RSS is the
    tool's own (a fork of this Python process would carry its RSS along).
    The wall time runs from before the start to after the exit."""
    start = time.monotonic()
    p = subprocess.Popen(["/usr/bin/time", "-f", "FAIRBENCH-TIME %U %S %M"] + argv,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = []
    # Read output while waiting so the pipe never fills.
    while True:
        line = p.stdout.readline()
        if not line:
            break
        out.append(line)
        if time.monotonic() - start > timeout:
            p.kill()
    code = p.wait()
    wall = time.monotonic() - start
    text = "".join(out)
    m = re.search(r"^FAIRBENCH-TIME ([\d.]+) ([\d.]+) (\d+)$", text, re.M)
    if not m:
        return text, 0.0, 0, code or 1, wall
    return text, float(m.group(1)) + float(m.group(2)), int(m.group(3)), code, wall


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
    h = re.search(r"handshake errors (\d+)", text)
    if h:
        errors += int(h.group(1))
    g = re.search(r"HTTP/2 stream errors: goaway (\d+), rst_stream (\d+), protocol (\d+)", text)
    if g:
        errors += sum(int(x) for x in g.groups())
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


def tool_argv(tool, agent, url, conns, duration, keep_alive=True, agent_flags=()):
    if tool == "wrk":
        short = [] if keep_alive else ["-H", "Connection: close"]
        return ["wrk", "-t1", f"-c{conns}", f"-d{duration}s"] + short + [url]
    short = [] if keep_alive else ["--no-keep-alive"]
    return [agent, "load", "-t1", f"-c{conns}", f"-d{duration}s"] + short + list(agent_flags) + [url]


def one_run(tool, args, url, port, conns, server_pid, keep_alive=True):
    argv = ["taskset", "-c", args.client_cpu] + tool_argv(tool, args.agent, url, conns, args.duration, keep_alive,
                                                         args.agent_flags.split())
    before = served(port)
    server_cpu = process_cpu(server_pid)
    out, cpu, rss, code, wall = run_measured(argv, args.duration + 60)
    server_cpu = process_cpu(server_pid) - server_cpu
    after = served(port)
    if code != 0:
        raise SystemExit(f"{tool} failed ({code}):\n{out}")
    requests, seconds, rps, errors = parse_output(out)
    server = after - before - 1  # the "after" status request counts itself
    return {"requests": requests, "seconds": seconds, "rps": rps, "errors": errors,
            "server_requests": server, "wall_seconds": wall,
            "server_rps_window": server / seconds, "server_rps_wall": server / wall,
            "cpu": cpu, "cpu_per_request_us": cpu / max(server, 1) * 1e6, "rss_kb": rss,
            "server_cpu_per_request_us": server_cpu / max(server, 1) * 1e6, "server_busy": server_cpu / wall,
            "valid": errors == 0 and server >= requests, "idle": idle_line(out)}


def idle_line(out):
    """fairbench-agent's "Idle wait: …" summary line, without its numbers' run-to-run detail."""
    m = re.search(r"^\s*Idle wait: (\w+)", out, re.M)
    return m.group(1) if m else ("block" if "--- fairbench" in out else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levels", default="100,1000,10000")
    ap.add_argument("--modes", default="http", help="comma-separated: http, https (keep-alive), https-short")
    ap.add_argument("--short-levels", default="100", help="connection levels of the https-short mode")
    ap.add_argument("--pairs", type=int, default=7, help="interleaved pairs per level (default 7)")
    ap.add_argument("--duration", type=int, default=10, help="seconds per run")
    ap.add_argument("--strace-duration", type=int, default=3)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--agent", default=os.path.join(ROOT, "build", "bin", "fairbench-agent"))
    ap.add_argument("--agent-flags", default="", help="more flags for fairbench-agent load, e.g. --idle-wait block")
    ap.add_argument("--json", help="write the raw figures here")
    args = ap.parse_args()

    modes = args.modes.split(",")
    for mode in modes:
        if mode not in ("http", "https", "https-short"):
            raise SystemExit(f"--modes: unknown mode '{mode}' (http, https, https-short)")
    for tool in ("nginx", "wrk", "strace", "taskset", "time", "openssl"):
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
    tls_port = free_port()
    tls_server = ""
    if any(m.startswith("https") for m in modes):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", os.path.join(tmp, "key.pem"), "-out", os.path.join(tmp, "cert.pem"), "-days", "2",
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       check=True, capture_output=True)
        tls_server = TLS_SERVER.format(dir=tmp, port=tls_port)
    with open(os.path.join(tmp, "nginx.conf"), "w") as f:
        f.write(NGINX_CONF.format(dir=tmp, port=port, nofile=min(hard, 65536), tls_server=tls_server))
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    nginx = subprocess.Popen(["taskset", "-c", args.server_cpu, nginx_bin, "-p", tmp, "-c", os.path.join(tmp, "nginx.conf")],
                             stderr=subprocess.DEVNULL)
    results = {"levels": {}, "nginx": subprocess.run([nginx_bin, "-v"], capture_output=True, text=True).stderr.strip(),
               "wrk": "Debian wrk", "pairs": args.pairs, "duration": args.duration}
    try:
        wait_port(port)
        if tls_server:
            wait_port(tls_port)
        print(f"nginx pid {nginx.pid} on CPU {args.server_cpu}; generators on CPU {args.client_cpu}, -t1, "
              f"{args.duration}s runs, {args.pairs} pairs per level\n")
        cases = []
        for mode in modes:
            mode_levels = [int(x) for x in args.short_levels.split(",")] if mode == "https-short" else levels
            for conns in mode_levels:
                cases.append((mode, conns))
        for mode, conns in cases:
            url = f"http://127.0.0.1:{port}/" if mode == "http" else f"https://127.0.0.1:{tls_port}/"
            keep_alive = mode != "https-short"
            key = conns if mode == "http" else f"{mode} {conns}"
            runs = {"wrk": [], "fairbench": [], "pairs_valid": []}
            for pair in range(args.pairs):
                order = ["wrk", "fairbench"] if pair % 2 == 0 else ["fairbench", "wrk"]
                for tool in order:
                    r = one_run(tool, args, url, port, conns, nginx.pid, keep_alive)
                    runs[tool].append(r)
                    print(f"  {mode:<11} c={conns:<6} pair {pair + 1} {tool:<9} own {r['rps']:>9.0f}  server/window "
                          f"{r['server_rps_window']:>9.0f}  server/wall {r['server_rps_wall']:>9.0f} req/s "
                          f"({r['requests']} counted by the tool, {r['server_requests']} by nginx, "
                          f"{r['seconds']:.2f}s window, {r['wall_seconds']:.2f}s wall)  "
                          f"{r['cpu_per_request_us']:5.2f} us CPU/req  nginx {r['server_cpu_per_request_us']:6.2f} us/req "
                          f"busy {r['server_busy'] * 100:3.0f}%  rss {r['rss_kb'] / 1024:5.1f} MiB  "
                          f"errors {r['errors']}{'' if r['valid'] else '  INVALID'}", flush=True)
                    time.sleep(1)
                runs["pairs_valid"].append(runs["wrk"][-1]["valid"] and runs["fairbench"][-1]["valid"])
            # Under strace everything is slower: give the connections of the
            # higher levels time to open, so that setup does not dominate.
            strace_secs = max(args.strace_duration, 3 + conns // 1000)
            for tool in ("wrk", "fairbench"):
                trace = os.path.join(tmp, f"strace-{tool}-{mode}-{conns}.txt")
                argv = ["strace", "-c", "-f", "-o", trace, "taskset", "-c", args.client_cpu] + \
                    tool_argv(tool, args.agent, url, conns, strace_secs, keep_alive, args.agent_flags.split())
                before = served(port)
                out, _, _, code, _ = run_measured(argv, strace_secs + 60)
                requests = served(port) - before - 1
                runs[tool + "_syscalls_per_request"] = strace_calls(trace) / max(requests, 1)
                time.sleep(1)
            runs["mode"] = mode
            runs["connections"] = conns
            results["levels"][key] = runs

        print()
        keys = ("rps", "server_rps_window", "server_rps_wall", "cpu_per_request_us", "server_cpu_per_request_us",
                "server_busy", "rss_kb")
        for key, runs in results["levels"].items():
            valid = [i for i, ok in enumerate(runs["pairs_valid"]) if ok]
            what = {"http": "HTTP keep-alive", "https": "HTTPS keep-alive",
                    "https-short": "HTTPS short connections: requests/s = handshakes/s"}[runs["mode"]]
            print(f"== {runs['connections']} connections, {what} (median of {len(valid)} valid pairs of {args.pairs})")
            if not valid:
                print("   no valid pair: every pair had errors or a tool counted more than the server served")
                continue
            med = {t: {k: statistics.median(runs[t][i][k] for i in valid) for k in keys} for t in ("wrk", "fairbench")}
            # The two runs of a pair are seconds apart: their ratio is less
            # disturbed by a machine whose load drifts than a ratio of medians.
            pair_ratios = {k: [runs["fairbench"][i][k] / runs["wrk"][i][k] for i in valid] for k in keys}
            stats = {k: ratio_stats(v) for k, v in pair_ratios.items()}
            ratio = {k: st["median"] for k, st in stats.items()}
            spread = {k: "  " + spread_text(st) for k, st in stats.items()}
            runs["median"] = med
            runs["median_pair_ratio"] = ratio
            runs["pair_ratio_range"] = {k: [min(v), max(v)] for k, v in pair_ratios.items()}
            runs["pair_ratio_stats"] = stats
            w, f = med["wrk"], med["fairbench"]
            print(f"   {'':30}{'wrk':>12}{'fairbench':>12}{'ratio':>8}   (medians; ratio: median of the pairs' ratios [their range])")
            for key, label in (("rps", "requests/s, tool's own"), ("server_rps_window", "requests/s, server/window"),
                               ("server_rps_wall", "requests/s, server/wall")):
                print(f"   {label:30}{w[key]:>12.0f}{f[key]:>12.0f}{ratio[key]:>8.2f}{spread[key]}")
            print(f"   {'CPU us per request served':30}{w['cpu_per_request_us']:>12.2f}{f['cpu_per_request_us']:>12.2f}"
                  f"{ratio['cpu_per_request_us']:>8.2f}{spread['cpu_per_request_us']}")
            print(f"   {'nginx CPU us per request':30}{w['server_cpu_per_request_us']:>12.2f}"
                  f"{f['server_cpu_per_request_us']:>12.2f}{ratio['server_cpu_per_request_us']:>8.2f}"
                  f"{spread['server_cpu_per_request_us']}")
            print(f"   {'nginx busy share of wall':30}{w['server_busy']:>12.2f}{f['server_busy']:>12.2f}"
                  f"{ratio['server_busy']:>8.2f}{spread['server_busy']}")
            sw, sf = runs["wrk_syscalls_per_request"], runs["fairbench_syscalls_per_request"]
            print(f"   {'syscalls per request':30}{sw:>12.2f}{sf:>12.2f}{sf / sw:>8.2f}")
            print(f"   {'peak RSS MiB':30}{w['rss_kb'] / 1024:>12.1f}{f['rss_kb'] / 1024:>12.1f}"
                  f"{ratio['rss_kb']:>8.2f}")
            idle = sorted({r.get("idle", "") for r in runs["fairbench"] if r.get("idle")})
            if idle:
                print(f"   fairbench-agent's idle wait: {'; '.join(idle)}")
            if runs["mode"] != "https-short":
                print(f"   targets (by the pairs' 95% interval, bench/verdicts.py): requests/s (server/window) ≥ 1.0 "
                      f"{verdict(stats['server_rps_window'], 1.0, False)}; CPU per request ≤ 0.9 "
                      f"{verdict(stats['cpu_per_request_us'], 0.9, True)}; nginx CPU per request ≤ 1.0 "
                      f"{verdict(stats['server_cpu_per_request_us'], 1.0, True)}")
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
