#!/usr/bin/env python3
"""fairbench-agent side by side with the load tools users pick instead: oha, vegeta, hey, fortio, ghz, Locust.

The peers come from their own registries at pinned versions, installed
outside the repository by bench/peers-setup (a peer it could not install is
reported and skipped here). k6 is left out: its licence (AGPL) rules it out.

For every mode a peer supports, fairbench-agent and the peer run alternately
(the order turns each pair) against the same server on the same CPU
(taskset: the server on --server-cpu, every generator on --client-cpu),
--pairs interleaved pairs (at least 7 for a verdict):

  http100, http1000  HTTP/1.1 keep-alive closed loop, 100 / 1,000 connections (nginx)
  rate               HTTP/1.1 at a constant --rate over 100 connections (nginx): CPU per
                     request at a fixed load, the rate reached and each tool's latency
  accuracy           a constant --accuracy-rate against fairbench-test-delay-server
                     --delay D over 50 connections: the known answer is D; each tool's
                     p50 error (its p50 from the send - D: fairbench-agent's uncorrected
                     latency, as the peers measure) and the pairs' difference of |error|,
                     its interval widened by half of each tool's output resolution
                     (RESOLUTION_US: hey prints 0.1 ms steps, fortio and Locust 1 ms)
  https              HTTPS keep-alive closed loop, 100 connections (nginx, TLS, HTTP/1.1 only)
  h2                 HTTP/2 over TLS, 100 requests in flight (nginx, h2 by ALPN): the agent and
                     oha as 10 connections x 10 streams; the Go tools as 100 workers over
                     Go's HTTP/2 transport, which chooses its connections itself
  grpc               gRPC unary fairbench.echo.v1.Echo/Unary, 10 connections x 10 in flight
                     (fairbench-target-grpc); ghz only
  mem10k             closed loop at 10,000 connections (nginx): peak RSS (and requests/s)

Besides the peers, "fortio-uniform" is fortio with -uniform (each
connection's requests spread evenly over the period, as the agent spaces
them, where fortio's default starts every connection's ticker at once), for
the rate and accuracy modes.

Requests are counted by the server: nginx's stub_status counter (read before
and after each run), the gRPC target's --request-log; only the delay server
is not asked (accuracy compares latency, not counts). Per run: the server's
count over the tool's own window (its reported duration; Locust's -t, which
is --locust-ramp seconds longer: starting its users takes seconds) and
over the tool's wall time; the generator's CPU (user + system of the process
and its children, from wait4 by GNU time, which also gives the peak RSS) and
the server's CPU (from /proc/PID/stat) per request served; how often each
slept per request served (the generator's voluntary context switches from
wait4, the server's summed over /proc/PID/task/*/status: at a light load
each sleep is a wake-up to pay for, so these say why a CPU figure moved);
the tool's own p50 and p99; in closed-loop modes the server's CPUs busy
(its CPU time over the wall time: at 1.0 of its one CPU no tool can drive
it faster, so requests/s ties). A run with errors the tool reported (a request cut off by the
end of the run is not one) or a server count below the tool's is invalid,
and so is its pair; statistics are over valid pairs.

Ratios fairbench ÷ peer, one per pair: median, range and the mean's 95 %
interval (bench/verdicts.py ratio_stats). The verdict is given only where
the whole interval lies on one side of 1 (for accuracy: of 0 difference):
"fairbench ahead" or "<peer> ahead"; otherwise "no verdict".

    bench/peers-setup && bench/peers.py [--peers oha,vegeta,hey,fortio,ghz,locust]
        [--modes http100,http1000,rate,accuracy,https,h2,grpc,mem10k] [--pairs 7] [--duration 4]
        [--rate 2000] [--accuracy-rate 500] [--delay 2ms] [--json out.json]
    bench/peers.py --self-test     # the output parsers on captured samples, no peer, no network
"""
import argparse
import csv
import io
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
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdicts import MET, MISSED, TOO_FEW, ratio_stats, spread_text, verdict  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS_DIR = os.environ.get("FAIRBENCH_PEERS", os.path.expanduser("~/.cache/fairbench/peers"))
GRPC_METHOD = "fairbench.echo.v1.Echo/Unary"
GRPC_PAYLOAD = b"Hello, World!"

MODES = ("http100", "http1000", "rate", "accuracy", "https", "h2", "grpc", "mem10k")
HTTP_MODES = {"http100", "http1000", "rate", "accuracy", "https", "mem10k"}
SUPPORTS = {
    "oha": HTTP_MODES | {"h2"},
    "vegeta": HTTP_MODES | {"h2"},
    "hey": HTTP_MODES | {"h2"},
    "fortio": HTTP_MODES | {"h2"},
    "locust": {"http100", "http1000", "rate", "accuracy", "https"},  # geventhttpclient: HTTP/1.1 only
    "ghz": {"grpc"},
    # fortio -uniform: each connection's requests spread evenly over the
    # period, as fairbench-agent spaces them (fortio's default starts every
    # connection's ticker at once, so requests leave in bursts): the
    # constant-rate modes only, to tell the schedule's cost from the tool's.
    "fortio-uniform": {"rate", "accuracy"},
}
PEER_BINARY = {"fortio-uniform": "fortio"}  # a variant run by another peer's binary
CONNECTIONS = {"http100": 100, "http1000": 1000, "rate": 100, "accuracy": 50, "https": 100, "h2": 10,
               "grpc": 10, "mem10k": 10000}
STREAMS = 10  # h2, grpc: in flight per connection

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
  http2_max_requests 1000000000;
  client_body_temp_path {dir}/body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  ssl_certificate {dir}/cert.pem;
  ssl_certificate_key {dir}/key.pem;
  ssl_protocols TLSv1.2 TLSv1.3;
  ssl_session_cache shared:bench:10m;
  server {{
    listen 127.0.0.1:{port} backlog=65535 reuseport;
    location / {{ default_type text/plain; return 200 "Hello, World!"; }}
    location = /nginx-status {{ stub_status; }}
  }}
  server {{
    listen 127.0.0.1:{tls_port} ssl backlog=65535 reuseport;
    location / {{ default_type text/plain; return 200 "Hello, World!"; }}
  }}
  server {{
    listen 127.0.0.1:{h2_port} ssl http2 backlog=65535 reuseport;
    location / {{ default_type text/plain; return 200 "Hello, World!"; }}
  }}
}}
"""

LOCUSTFILE = """
import os
from locust import FastHttpUser, constant, constant_throughput, task

RATE = float(os.environ.get("PEERS_USER_RATE", "0"))


class Get(FastHttpUser):
    insecure = True
    wait_time = constant_throughput(RATE) if RATE > 0 else constant(0)

    @task
    def get(self):
        self.client.get("/")
"""


# ---------------------------------------------------------------- parsers
# Each turns a tool's output into {"requests", "errors", "seconds", "p50_us",
# "p99_us"}: requests the tool counted as answered, errors it reported (a
# request cut off by the end of the run is not one), its own measuring
# window in seconds (None: it prints none), latency in microseconds.

def _duration_us(text):
    """Go's time.Duration text (1.5ms, 250µs, 2.1s, 1m2s) in microseconds."""
    total = 0.0
    for value, unit in re.findall(r"([\d.]+)(ns|us|µs|μs|ms|s|m|h)", text):
        total += float(value) * {"ns": 1e-3, "us": 1, "µs": 1, "μs": 1, "ms": 1e3, "s": 1e6, "m": 6e7, "h": 3.6e9}[unit]
    return total


def parse_agent(text):
    """fairbench-agent load --json."""
    d = json.loads(text)
    errors = sum(d["errors"].values())
    requests = d["requests"]
    if "grpc" in d:
        g = d["grpc"]
        errors += g["calls"] - g["status"]["OK"] + sum(g["protocolErrors"].values())
    lat = d.get("latency", {}).get("percentilesUs", {})
    # At a constant rate "latency" runs from each request's due time (corrected
    # for coordinated omission); "uncorrectedLatency" from its first byte
    # written, as every peer measures it.
    sent = d.get("uncorrectedLatency", {}).get("percentilesUs", {})
    return {"requests": requests, "errors": errors, "seconds": d["measureSeconds"],
            "p50_us": lat.get("p50"), "p99_us": lat.get("p99"), "p50_sent_us": sent.get("p50", lat.get("p50"))}


def parse_oha(text):
    """oha --output-format json: latencies in seconds; requests = the status codes' counts."""
    d = json.loads(text)
    errors = sum(n for what, n in (d.get("errorDistribution") or {}).items() if "deadline" not in what.lower())
    codes = d.get("statusCodeDistribution") or {}
    requests = sum(codes.values())
    errors += sum(n for code, n in codes.items() if not code.startswith("2"))
    p = d.get("latencyPercentiles") or {}
    us = (lambda v: None if v is None else v * 1e6)
    return {"requests": requests, "errors": errors, "seconds": d["summary"]["total"],
            "p50_us": us(p.get("p50")), "p99_us": us(p.get("p99"))}


def parse_hey(text):
    """hey's text summary: latencies in seconds; requests = the status code distribution's responses."""
    total = re.search(r"^\s*Total:\s+([\d.]+) secs", text, re.M)
    if not total:
        raise ValueError("no 'Total:' in hey's output")
    ok = errors = 0
    for code, n in re.findall(r"^\s*\[(\d+)\]\s+(\d+) responses", text, re.M):
        if code.startswith("2"):
            ok += int(n)
        else:
            errors += int(n)
    errs = text.split("Error distribution:", 1)
    if len(errs) == 2:
        for n, what in re.findall(r"^\s*\[(\d+)\]\s+(.*)$", errs[1], re.M):
            # The requests in flight when -z ends are cancelled: not errors.
            if "context canceled" not in what and "Client.Timeout" not in what:
                errors += int(n)

    def pct(p):
        m = re.search(rf"^\s*{p}%+ in ([\d.]+) secs", text, re.M)
        return float(m.group(1)) * 1e6 if m else None
    return {"requests": ok, "errors": errors, "seconds": float(total.group(1)), "p50_us": pct(50), "p99_us": pct(99)}


def parse_fortio(text):
    """fortio load -json: latencies in seconds, ActualDuration in nanoseconds."""
    d = json.loads(text)
    codes = d.get("RetCodes") or {}
    requests = sum(n for code, n in codes.items() if str(code).startswith("2"))
    errors = sum(n for code, n in codes.items() if not str(code).startswith("2"))
    pct = {p["Percentile"]: p["Value"] * 1e6 for p in d["DurationHistogram"].get("Percentiles") or []}
    return {"requests": requests, "errors": errors, "seconds": d["ActualDuration"] / 1e9,
            "p50_us": pct.get(50), "p99_us": pct.get(99)}


def parse_vegeta(text):
    """vegeta report -type=json: latencies and duration in nanoseconds."""
    d = json.loads(text)
    codes = d.get("status_codes") or {}
    requests = sum(n for code, n in codes.items() if code.startswith("2"))
    errors = sum(n for code, n in codes.items() if not code.startswith("2"))
    lat = d["latencies"]
    return {"requests": requests, "errors": errors, "seconds": d["duration"] / 1e9,
            "p50_us": lat["50th"] / 1e3, "p99_us": lat["99th"] / 1e3}


def parse_locust(text):
    """locust --csv's _stats.csv, the Aggregated row: times in milliseconds (Locust rounds them)."""
    for row in csv.DictReader(io.StringIO(text)):
        if row.get("Name") == "Aggregated":
            count, failures = int(row["Request Count"]), int(row["Failure Count"])

            def ms(key):
                v = row.get(key, "N/A")
                return None if v in ("N/A", "") else float(v) * 1e3
            return {"requests": count - failures, "errors": failures, "seconds": None,
                    "p50_us": ms("50%"), "p99_us": ms("99%")}
    raise ValueError("no Aggregated row in Locust's stats")


def parse_ghz(text):
    """ghz --format json: latencies and total in nanoseconds; calls = the OK statuses."""
    d = json.loads(text)
    codes = d.get("statusCodeDistribution") or {}
    requests = codes.get("OK", 0)
    errors = sum(n for code, n in codes.items() if code != "OK")
    if d.get("endReason") == "timeout":
        # The calls still running when -z ends fail as Unavailable (ghz closes
        # its connections under them) or Canceled: cut off, not errors.
        errors -= codes.get("Canceled", 0)
        errors -= sum(n for what, n in (d.get("errorDistribution") or {}).items()
                      if "closed network connection" in what or "transport is closing" in what)
    pct = {p["percentage"]: p["latency"] / 1e3 for p in d.get("latencyDistribution") or []}
    return {"requests": requests, "errors": max(errors, 0), "seconds": d["total"] / 1e9,
            "p50_us": pct.get(50), "p99_us": pct.get(99)}


# How finely each tool's p50 can be read near the accuracy mode's 2 ms, in
# microseconds: a reading printed in steps of R is the true value ± R/2, so
# the accuracy verdict's interval is widened by half of both tools' R.
# fairbench-agent: HdrHistogram, 3 significant digits (2 µs at 2 ms); oha
# and vegeta: the exact figure; hey: "%4.4f secs" (0.1 ms); fortio: its
# histogram's 1 ms bucket at -r 0.001 (its default), interpolated; Locust:
# whole milliseconds.
RESOLUTION_US = {"fairbench": 2, "oha": 0, "vegeta": 0, "hey": 100, "fortio": 1000, "fortio-uniform": 1000,
                 "locust": 1000, "ghz": 0}


PARSERS = {"fairbench": parse_agent, "oha": parse_oha, "hey": parse_hey, "fortio": parse_fortio,
           "vegeta": parse_vegeta, "locust": parse_locust, "ghz": parse_ghz,
           "fortio-uniform": parse_fortio}


# ---------------------------------------------------------------- running

def peer_bin(tool):
    """The pinned peer's binary from bench/peers-setup --list, and its version (None when not installed)."""
    out = subprocess.run([os.path.join(ROOT, "bench", "peers-setup"), "--list", tool], capture_output=True,
                         text=True, env=dict(os.environ, FAIRBENCH_PEERS=PEERS_DIR)).stdout.split()
    if len(out) == 3 and os.access(out[2], os.X_OK):
        return out[2], out[1]
    return None, out[1] if len(out) > 1 else "?"


def served_nginx(port):
    from agent_vs_wrk import served
    return served(port) - 1  # the status request counts itself


def served_log(path):
    from agent_vs_h2load_grpc import served
    return served(path)


class Case:
    """One mode's server, URL and load, shared by both tools of a pair."""

    def __init__(self, mode, args, ctx):
        self.mode, self.args, self.ctx = mode, args, ctx
        self.conns = CONNECTIONS[mode]
        self.rate = {"rate": args.rate, "accuracy": args.accuracy_rate}.get(mode)
        if mode == "accuracy":
            self.url = f"http://127.0.0.1:{ctx['delay_port']}/"
        elif mode == "https":
            self.url = f"https://127.0.0.1:{ctx['tls_port']}/"
        elif mode == "h2":
            self.url = f"https://127.0.0.1:{ctx['h2_port']}/"
        elif mode == "grpc":
            self.url = f"127.0.0.1:{ctx['grpc_port']}"
        else:
            self.url = f"http://127.0.0.1:{ctx['port']}/"

    def server_pid(self):
        if self.mode == "accuracy":
            return self.ctx["delay_pid"]
        if self.mode == "grpc":
            return self.ctx["grpc_pid"]
        return self.ctx["nginx_pid"]  # only started when a mode needs it

    def served(self):
        if self.mode == "accuracy":
            return None
        if self.mode == "grpc":
            time.sleep(0.3)  # the target's last 100 ms line
            return served_log(self.ctx["grpc_log"])
        return served_nginx(self.ctx["port"])

    def argv(self, tool, binary, out):
        """(argv, a command to run after it or None, the file to parse)."""
        d, c, r, url = self.args.duration, self.conns, self.rate, self.url
        if tool == "fairbench":
            argv = [binary, "load", "-t1", f"-c{c}", f"-d{d}s", "--json", out] + self.args.agent_flags.split()
            if r:
                argv += ["--rate", str(r), "--latency"]
            if self.mode == "mem10k":
                # Opening 10,000 connections on one shared CPU can hold a
                # response past the agent's default 2 s timeout; the peers
                # wait 3 s (fortio) to 30 s (vegeta).
                argv += ["--timeout", "20s"]
            if self.mode == "h2":
                argv += ["--h2", "--streams", str(STREAMS)]
            if self.mode == "grpc":
                argv += ["--streams", str(STREAMS), "--grpc", GRPC_METHOD, "--message-file", self.ctx["message"]]
                url = "http://" + url
            return argv + [url], None, out
        if tool == "oha":
            argv = [binary, "-z", f"{d}s", "-c", str(c), "--no-tui", "--output-format", "json", "-o", out, "--insecure"]
            if r:
                argv += ["-q", str(r)]
            if self.mode == "h2":
                argv += ["--http2", "-p", str(STREAMS)]
            return argv + [url], None, out
        if tool == "hey":
            n = c * STREAMS if self.mode == "h2" else c
            argv = [binary, "-z", f"{d}s", "-c", str(n)]
            if r:
                argv += ["-q", f"{r / n:g}"]  # hey's -q is per worker
            if self.mode == "h2":
                argv += ["-h2"]
            return argv + [url], None, None
        if tool in ("fortio", "fortio-uniform"):
            n = c * STREAMS if self.mode == "h2" else c
            argv = [binary, "load", "-quiet", "-qps", str(r or 0), "-c", str(n), "-t", f"{d}s", "-json", out, "-k"]
            if self.mode == "h2":
                argv += ["-h2"]
            if tool == "fortio-uniform":
                argv += ["-uniform"]
            return argv + [url], None, out
        if tool == "vegeta":
            n = c * STREAMS if self.mode == "h2" else c
            targets = out + ".targets"
            with open(targets, "w") as f:
                f.write(f"GET {url}\n")
            argv = [binary, "attack", "-targets", targets, "-duration", f"{d}s", "-output", out + ".bin",
                    "-insecure", "-http2=" + ("true" if self.mode == "h2" else "false")]
            if r:
                argv += ["-rate", f"{r}/1s", "-workers", str(n), "-max-workers", str(n)]
            else:
                argv += ["-rate", "0", "-workers", str(n), "-max-workers", str(n)]
            return argv, [binary, "report", "-type", "json", "-output", out, out + ".bin"], out
        if tool == "locust":
            with open(out + ".py", "w") as f:
                f.write(LOCUSTFILE)
            # Locust starts its users within its -t (over TLS each loads the
            # system's CA bundle: 100 users take seconds): it runs
            # --locust-ramp seconds longer, counted in its window.
            argv = [binary, "-f", out + ".py", "--headless", "-u", str(c), "-r", str(c), "-t",
                    f"{d + self.args.locust_ramp}s",
                    "--host", url.rstrip("/"), "--csv", out, "--only-summary", "--loglevel", "ERROR",
                    "--stop-timeout", "0", "--exit-code-on-error", "0"]
            return argv, None, out + "_stats.csv"
        if tool == "ghz":
            argv = [binary, "--insecure", "--proto", os.path.join(ROOT, "targets", "grpc", "echo.proto"),
                    "--call", GRPC_METHOD, "-d", json.dumps({"payload": "SGVsbG8sIFdvcmxkIQ=="}),
                    "-z", f"{d}s", "--connections", str(c), "-c", str(c * STREAMS), "--format", "json",
                    "-o", out, url]
            return argv, None, out
        raise ValueError(tool)

    def env(self, tool):
        env = dict(os.environ)
        if tool == "locust" and self.rate:
            env["PEERS_USER_RATE"] = f"{self.rate / self.conns:g}"
        return env


def run_timed(argv, env, timeout):
    """argv under GNU time: (output, cpu seconds of it and its children, peak RSS KiB, exit code, wall seconds,
    voluntary context switches: how often it slept)."""
    start = time.monotonic()
    p = subprocess.Popen(["/usr/bin/time", "-f", "FAIRBENCH-TIME %U %S %M %w"] + argv, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
    wall = time.monotonic() - start
    m = re.search(r"^FAIRBENCH-TIME ([\d.]+) ([\d.]+) (\d+) (\d+)$", out, re.M)
    if not m:
        return out, 0.0, 0, p.returncode or 1, wall, 0
    return out, float(m.group(1)) + float(m.group(2)), int(m.group(3)), p.returncode, wall, int(m.group(4))


def process_cpu(pid):
    from agent_vs_wrk import process_cpu as cpu
    return cpu(pid)


def process_sleeps(pid):
    """How often a process (all its threads) has slept so far: the sum of voluntary_ctxt_switches under
    /proc/PID/task/*/status. At a light load each sleep is one wake-up to pay for."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                total += int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", f.read(), re.M).group(1))
        except (OSError, AttributeError):
            pass  # a thread that ended in between
    return total


def one_run(tool, binary, case, tmp, index):
    out = os.path.join(tmp, f"{case.mode}-{tool}-{index}.out")
    argv, post, parse_file = case.argv(tool, binary, out)
    argv = ["taskset", "-c", case.args.client_cpu] + argv
    before = case.served()
    pid = case.server_pid()
    server_cpu, server_sleeps = process_cpu(pid), process_sleeps(pid)
    text, cpu, rss, code, wall, sleeps = run_timed(argv, case.env(tool), case.args.duration * 3 + 60)
    server_cpu, server_sleeps = process_cpu(pid) - server_cpu, process_sleeps(pid) - server_sleeps
    after = case.served()
    if post:
        subprocess.run(post, capture_output=True, timeout=120)
    r = {"code": code, "cpu": cpu, "rss_kb": rss, "wall_seconds": wall}
    try:
        if parse_file:
            with open(parse_file) as f:
                parsed = PARSERS[tool](f.read())
        else:
            parsed = PARSERS[tool](text)
    except (OSError, ValueError, KeyError) as e:
        r.update(valid=False, why=f"{tool} exit {code}, output unreadable ({e}): {text[-400:]}")
        return r
    r.update(parsed)
    if r["seconds"] is None:  # Locust: its -t
        r["seconds"] = float(case.args.duration + case.args.locust_ramp)
    server = None if before is None else after - before
    basis = server if server is not None else r["requests"]
    r["server_requests"] = server
    r["server_rps_window"] = basis / r["seconds"]
    r["server_rps_wall"] = basis / wall
    r["cpu_per_request_us"] = cpu / max(basis, 1) * 1e6
    r["server_cpu_per_request_us"] = server_cpu / max(basis, 1) * 1e6
    r["server_busy_cpus"] = server_cpu / wall  # the server's CPUs in use: 1.0 is all of its one
    r["sleeps_per_request"] = sleeps / max(basis, 1)
    r["server_sleeps_per_request"] = server_sleeps / max(basis, 1)
    if case.mode == "accuracy" and r.get("p50_us") is not None:
        # Like for like: each tool's p50 from the moment it sent (the peers
        # know no other); fairbench's from the due time is kept beside it.
        r["p50_error_us"] = r.get("p50_sent_us", r["p50_us"]) - case.args.delay_us
        if "p50_sent_us" in r:
            r["p50_due_error_us"] = r["p50_us"] - case.args.delay_us
    why = []
    if r["errors"]:
        why.append(f"{r['errors']} errors")
    if server is not None and server < r["requests"]:
        why.append(f"the server counted {server} < the tool's {r['requests']}")
    if r["requests"] == 0:
        why.append(f"no request answered (exit {code}): {text[-300:]}")
    r["valid"] = not why
    r["why"] = "; ".join(why)
    return r


def start_servers(args, modes, tmp, nofile):
    ctx = {"procs": []}
    from agent_vs_wrk import free_port, wait_port
    if modes & {"http100", "http1000", "rate", "https", "h2", "mem10k"}:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", os.path.join(tmp, "key.pem"), "-out", os.path.join(tmp, "cert.pem"), "-days", "2",
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       check=True, capture_output=True)
        ctx.update(port=free_port(), tls_port=free_port(), h2_port=free_port())
        with open(os.path.join(tmp, "nginx.conf"), "w") as f:
            f.write(NGINX_CONF.format(dir=tmp, nofile=nofile, port=ctx["port"], tls_port=ctx["tls_port"],
                                      h2_port=ctx["h2_port"]))
        nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
        p = subprocess.Popen(["taskset", "-c", args.server_cpu, nginx_bin, "-p", tmp, "-c",
                              os.path.join(tmp, "nginx.conf")], stderr=subprocess.DEVNULL)
        ctx["procs"].append(p)
        ctx["nginx_pid"] = p.pid
        for port in (ctx["port"], ctx["tls_port"], ctx["h2_port"]):
            wait_port(port)
        ctx["nginx"] = subprocess.run([nginx_bin, "-v"], capture_output=True, text=True).stderr.strip()
    if "accuracy" in modes:
        ctx["delay_port"] = free_port()
        p = subprocess.Popen(["taskset", "-c", args.server_cpu, args.delay_server, "--port", str(ctx["delay_port"]),
                              "--host", "127.0.0.1", "--delay", args.delay, "--max-records", "0"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ctx["procs"].append(p)
        ctx["delay_pid"] = p.pid
        wait_port(ctx["delay_port"])
    if "grpc" in modes:
        ctx["grpc_port"] = free_port()
        ctx["grpc_log"] = os.path.join(tmp, "grpc-requests.log")
        ctx["message"] = os.path.join(tmp, "message.bin")
        with open(ctx["message"], "wb") as f:
            f.write(b"\x0a" + bytes([len(GRPC_PAYLOAD)]) + GRPC_PAYLOAD)
        p = subprocess.Popen(["taskset", "-c", args.server_cpu, args.grpc_target, "--port", str(ctx["grpc_port"]),
                              "--threads", "1", "--request-log", ctx["grpc_log"]],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ctx["procs"].append(p)
        ctx["grpc_pid"] = p.pid
        wait_port(ctx["grpc_port"])
    return ctx


def stop_servers(ctx):
    for p in ctx["procs"]:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# Figures compared per pair: (key, label, lower is better, a difference instead of a ratio).
FIGURES = {
    "closed": [("server_rps_window", "requests/s (server/window)", False, False),
               ("server_rps_wall", "requests/s (server/wall)", False, False),
               ("cpu_per_request_us", "generator CPU us/request", True, False),
               ("server_cpu_per_request_us", "server CPU us/request", True, False),
               # Why requests/s can tie: a server at 1.0 of its one CPU cannot go faster; shown, not judged.
               ("server_busy_cpus", "server CPUs busy", None, False),
               ("rss_kb", "peak RSS KiB", True, False)],
    # The rate asked for is the same for both: the rate reached is shown, not judged.
    "rate": [("server_rps_window", "requests/s reached (server)", None, False),
             ("cpu_per_request_us", "generator CPU us/request", True, False),
             ("server_cpu_per_request_us", "server CPU us/request", True, False),
             # Why: each sleep is a wake-up to pay for; shown, not judged.
             ("sleeps_per_request", "generator sleeps/request", None, False),
             ("server_sleeps_per_request", "server sleeps/request", None, False),
             ("p50_us", "p50 latency us (tool's own)", None, False),
             ("p99_us", "p99 latency us (tool's own)", None, False)],
    "accuracy": [("p50_error_us", "p50 error us (p50 from send - D)", None, False),
                 ("abs_p50_error_us", "|p50 error| us: fairbench - peer", True, True),
                 ("cpu_per_request_us", "generator CPU us/request", True, False),
                 ("sleeps_per_request", "generator sleeps/request", None, False),
                 ("server_sleeps_per_request", "server sleeps/request", None, False)],
}


def figures_of(mode):
    return FIGURES["rate" if mode == "rate" else "accuracy" if mode == "accuracy" else "closed"]


def judge(st, lower_better, peer, difference):
    """The verdict only where the whole interval is on one side of 1 (a difference: of 0)."""
    v = verdict(st, 0.0 if difference else 1.0, at_most=lower_better)
    if v == TOO_FEW:
        return "too few pairs"
    if v == MET and st["ci95"][0] != st["ci95"][1] and (0.0 if difference else 1.0) in st["ci95"]:
        return "no verdict"
    return {MET: "fairbench ahead", MISSED: f"{peer} ahead"}.get(v, "no verdict")


def widened(st, half):
    """ratio_stats' interval widened by `half` on each side (a reading known only to ± half)."""
    if half:
        st = dict(st, ci95=[st["ci95"][0] - half, st["ci95"][1] + half], resolution_half=half)
    return st


def summarise(mode, peer, runs):
    valid = [i for i, (f, p) in enumerate(zip(runs["fairbench"], runs[peer])) if f["valid"] and p["valid"]]
    out = {"valid_pairs": len(valid), "pairs": len(runs["fairbench"]), "figures": {}}
    for key, label, lower_better, difference in figures_of(mode):
        src = "p50_error_us" if key == "abs_p50_error_us" else key
        vals = [(runs["fairbench"][i].get(src), runs[peer][i].get(src)) for i in valid]
        vals = [(f, p) for f, p in vals if f is not None and p is not None]
        if not vals:
            continue
        fig = {"label": label, "fairbench": statistics.median(f for f, _ in vals),
               peer: statistics.median(p for _, p in vals)}
        if difference:
            st = widened(ratio_stats([abs(f) - abs(p) for f, p in vals]),
                         (RESOLUTION_US["fairbench"] + RESOLUTION_US.get(peer, 0)) / 2)
        elif all(p for _, p in vals):
            st = ratio_stats([f / p for f, p in vals])
        else:
            st = None
        if st:
            fig["stats"] = st
            if lower_better is not None:
                fig["verdict"] = judge(st, lower_better, peer, difference)
        out["figures"][key] = fig
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--self-test", action="store_true", help="check the output parsers on captured samples and exit")
    ap.add_argument("--peers", default="oha,vegeta,hey,fortio,ghz,locust")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--pairs", type=int, default=7, help="interleaved pairs per peer and mode (default 7)")
    ap.add_argument("--duration", type=int, default=4, help="seconds per run (default 4)")
    ap.add_argument("--rate", type=int, default=2000, help="requests/s of the rate mode (default 2000)")
    ap.add_argument("--accuracy-rate", type=int, default=500, help="requests/s of the accuracy mode (default 500)")
    ap.add_argument("--delay", default="2ms", help="the delay server's delay, the accuracy mode's known answer")
    ap.add_argument("--locust-ramp", type=int, default=5, help="seconds Locust runs longer to start its users")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--agent", default=os.path.join(ROOT, "build", "bin", "fairbench-agent"))
    ap.add_argument("--agent-flags", default="", help="more flags for fairbench-agent load")
    ap.add_argument("--delay-server", default=os.path.join(ROOT, "build", "bin", "fairbench-test-delay-server"))
    ap.add_argument("--grpc-target", default=os.path.join(ROOT, "build", "bin", "fairbench-target-grpc"))
    ap.add_argument("--json", help="write every run's figures and the summaries here")
    args = ap.parse_args()
    if args.self_test:
        sys.argv = sys.argv[:1]
        unittest.main(module=__name__, verbosity=2)
    args.delay_us = _duration_us(args.delay)
    if args.delay_us <= 0:
        raise SystemExit(f"--delay {args.delay}: not a duration")

    modes = args.modes.split(",")
    for m in modes:
        if m not in MODES:
            raise SystemExit(f"--modes: unknown mode '{m}' ({', '.join(MODES)})")
    peers = {}
    for peer in args.peers.split(","):
        if peer == "k6":
            raise SystemExit("k6 is left out: its licence (AGPL) rules it out")
        if peer not in SUPPORTS:
            raise SystemExit(f"--peers: unknown peer '{peer}' ({', '.join(SUPPORTS)})")
        binary, version = peer_bin(PEER_BINARY.get(peer, peer))
        if not binary:
            print(f"{peer} {version}: not installed, skipped (bench/peers-setup installs it)")
            continue
        peers[peer] = (binary, version)
    for tool in ("nginx", "taskset", "openssl"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            raise SystemExit(f"{tool} is not installed (scripts/setup installs it)")
    for path in (args.agent, args.delay_server, args.grpc_target):
        if not os.access(path, os.X_OK):
            raise SystemExit(f"{path} not found: build it first")

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    work = [(m, p) for m in modes for p in peers if m in SUPPORTS[p]]
    if any(m == "mem10k" for m, _ in work) and hard < 10000 + 200:
        print(f"the open-file limit {hard} is too low for 10,000 connections: mem10k skipped")
        work = [(m, p) for m, p in work if m != "mem10k"]
    if not work:
        raise SystemExit("nothing to run: no installed peer supports the modes asked for")

    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    results = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit,
               "machine": f"{os.uname().machine}, {os.cpu_count()} CPUs, load average "
                          f"{os.getloadavg()[0]:.2f} at the start",
               "peers": {p: v for p, (_, v) in peers.items()}, "pairs": args.pairs, "duration": args.duration,
               "server_cpu": args.server_cpu, "client_cpu": args.client_cpu, "cases": {}}
    tmp = tempfile.mkdtemp(prefix="fairbench-peers-")
    ctx = start_servers(args, {m for m, _ in work}, tmp, min(hard, 65536))
    try:
        print(f"servers on CPU {args.server_cpu}, generators on CPU {args.client_cpu}; {args.pairs} pairs of "
              f"{args.duration}s runs; peers: " + ", ".join(f"{p} {v}" for p, (_, v) in peers.items()) + "\n")
        for mode, peer in work:
            case = Case(mode, args, ctx)
            runs = {"fairbench": [], peer: []}
            for i in range(args.pairs):
                order = ["fairbench", peer] if i % 2 == 0 else [peer, "fairbench"]
                for tool in order:
                    binary = args.agent if tool == "fairbench" else peers[peer][0]
                    r = one_run(tool, binary, case, tmp, i)
                    runs[tool].append(r)
                    lat = "" if r.get("p50_us") is None else f"  p50 {r['p50_us']:.0f}us p99 {r['p99_us'] or 0:.0f}us"
                    if "server_rps_window" in r:
                        print(f"  {mode:<8} {peer:<7} pair {i + 1} {tool:<9} {r['server_rps_window']:>9.0f} req/s "
                              f"(server/window; {r['requests']} by the tool, {r['server_requests']} by the server)  "
                              f"{r['cpu_per_request_us']:6.2f} us CPU/req  server {r['server_cpu_per_request_us']:6.2f}"
                              f" us/req  sleeps/req {r['sleeps_per_request']:.2f} server {r['server_sleeps_per_request']:.2f}"
                              f"  rss {r['rss_kb'] / 1024:6.1f} MiB{lat}"
                              f"{'' if r['valid'] else '  INVALID: ' + r['why']}", flush=True)
                    else:
                        print(f"  {mode:<8} {peer:<7} pair {i + 1} {tool:<9} INVALID: {r['why']}", flush=True)
                    time.sleep(0.5)
            summary = summarise(mode, peer, runs)
            results["cases"][f"{mode} {peer}"] = {"mode": mode, "peer": peer, "runs": runs, "summary": summary}
            print_summary(mode, peer, summary)
        print_table(results)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2)
    finally:
        stop_servers(ctx)
        shutil.rmtree(tmp, ignore_errors=True)


def _num(v):
    """A figure as printed: two decimals below 10 (sleeps per request), one above."""
    return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


def print_summary(mode, peer, s):
    print(f"== {mode}, fairbench ÷ {peer} ({s['valid_pairs']} valid pairs of {s['pairs']}; medians, "
          f"ratio [range] mean and 95% interval)")
    for key, fig in s["figures"].items():
        st = fig.get("stats")
        spread = f"{st['median']:>8.2f}  {spread_text(st)}" if st else ""
        if st and st.get("resolution_half"):
            spread += f" (widened ±{st['resolution_half']:g} us: the readings' resolution)"
        print(f"   {fig['label']:34}{_num(fig['fairbench']):>12}{_num(fig[peer]):>12}{spread}  {fig.get('verdict', '')}")
    print(flush=True)


def print_table(results):
    print("| mode | peer | figure | fairbench | peer | fairbench ÷ peer (95% CI) | verdict |")
    print("|---|---|---|---:|---:|---|---|")
    for case in results["cases"].values():
        mode, peer, s = case["mode"], case["peer"], case["summary"]
        for key, fig in s["figures"].items():
            st = fig.get("stats")
            ci = f"{st['median']:.2f} ({st['ci95'][0]:.2f}–{st['ci95'][1]:.2f})" if st else "–"
            print(f"| {mode} | {peer} | {fig['label']} | {_num(fig['fairbench'])} | {_num(fig[peer])} | {ci} | "
                  f"{fig.get('verdict', '–')} |")


# ---------------------------------------------------------------- self-test
# Samples of each tool's output, cut down from real runs of the pinned
# versions; the expected numbers are read off the samples by eye.

SAMPLES = {
    # fairbench-agent load -t1 -c10 -d1s --rate 200 --latency --json (delay server, 2 ms), cut down.
    "fairbench": """{"requests": 200, "measureSeconds": 1.0, "requestsPerSecond": 200.0, "errors": {"connect": 0,
        "goaway": 0, "h2Protocol": 0, "handshake": 0, "portExhaustion": 0, "read": 0, "rstStream": 0, "script": 0,
        "status": 0, "timeout": 0, "write": 0}, "statusClasses": {"1xx": 0, "2xx": 200, "3xx": 0, "4xx": 0,
        "5xx": 0, "other": 0}, "latency": {"percentilesUs": {"p50": 2139, "p75": 2147, "p90": 2157, "p99": 2291,
        "p99.9": 3772}, "meanUs": 2150.2}, "uncorrectedLatency": {"percentilesUs": {"p50": 2101, "p99": 2187}}}""",
    # oha 1.16.0 -z 1s -c 10 -q 200 --no-tui --output-format json (delay server, 2 ms), cut down: seconds.
    # The request aborted by the deadline was in flight at the end: not an error.
    "oha": """{"summary": {"successRate": 1.0, "total": 1.001602978, "slowest": 0.007071117, "fastest": 0.002074755,
        "average": 0.002147334305, "requestsPerSec": 200.67831707265552, "totalData": 2600, "sizePerRequest": 13},
        "metrics": {"success_rate": 1.0, "requests_per_sec": 200.67831707265552, "latency_ms": {"min": 2.075,
        "mean": 2.147, "p50": 2.118, "p95": 2.195, "p99": 2.425, "max": 7.071}},
        "latencyPercentiles": {"p10": 0.002106973, "p25": 0.002113012, "p50": 0.002117589, "p75": 0.002124149,
        "p90": 0.002140092, "p95": 0.002194853, "p99": 0.002424615, "p99.9": 0.007071117},
        "statusCodeDistribution": {"200": 200}, "errorDistribution": {"aborted due to deadline": 1}}""",
    # hey v0.1.5 -z 1s -c 10 -q 20 (delay server, 2 ms): its percentiles print as "50%%", times in seconds.
    "hey": """
Summary:
  Total:\t1.0196 secs
  Slowest:\t0.0045 secs
  Fastest:\t0.0021 secs
  Average:\t0.0026 secs
  Requests/sec:\t196.1598

  Total data:\t2600 bytes
  Size/request:\t13 bytes

Latency distribution:
  10%% in 0.0022 secs
  25%% in 0.0023 secs
  50%% in 0.0023 secs
  75%% in 0.0026 secs
  90%% in 0.0039 secs
  95%% in 0.0041 secs
  99%% in 0.0044 secs

Status code distribution:
  [200]\t197 responses
  [503]\t2 responses

Error distribution:
  [1]\tGet "http://127.0.0.1:18556/": context canceled
  [1]\tGet "http://127.0.0.1:18556/": dial tcp 127.0.0.1:18556: connect: connection refused
""",
    # fortio v1.68.2 load -qps 200 -c 10 -t 1s -json (delay server, 2 ms), cut down: seconds, ActualDuration in ns.
    "fortio": """{"RunType": "HTTP", "RequestedQPS": "200", "ActualQPS": 198.78159248024662,
        "ActualDuration": 1006129378, "NumThreads": 10, "Version": "1.68.2", "RetCodes": {"200": 200},
        "DurationHistogram": {"Count": 200, "Min": 0.002078992, "Max": 0.011249887, "Avg": 0.002860532395,
        "Percentiles": [{"Percentile": 50, "Value": 0.002615343717647059}, {"Percentile": 75,
        "Value": 0.002886228423529412}, {"Percentile": 90, "Value": 0.0044444444444444444},
        {"Percentile": 99, "Value": 0.0111999096}, {"Percentile": 99.9, "Value": 0.01124488926}]}}""",
    # vegeta v12.13.0 attack -rate 200/1s -duration 1s | report -type json (delay server, 2 ms): nanoseconds.
    "vegeta": """{"latencies":{"total":467013471,"mean":2335067,"50th":2176398,"90th":2253981,"95th":2371961,
        "99th":7662274,"max":13333926,"min":2110599},"bytes_in":{"total":2600,"mean":13},
        "bytes_out":{"total":0,"mean":0},"earliest":"2026-12-05T23:39:05.136958736Z",
        "latest":"2026-12-05T23:39:06.132263478Z","end":"2026-12-05T23:39:06.134488166Z","duration":995304742,
        "wait":2224688,"requests":200,"rate":200.94348148900912,"throughput":200.49533776662608,"success":1,
        "status_codes":{"200":200},"errors":[]}""",
    # locust 2.47.0 --csv (FastHttpUser, constant_throughput(20), 10 users): milliseconds, rounded.
    "locust": """Type,Name,Request Count,Failure Count,Median Response Time,Average Response Time,Min Response Time,\
Max Response Time,Average Content Size,Requests/s,Failures/s,50%,66%,75%,80%,90%,95%,98%,99%,99.9%,99.99%,100%
GET,/,190,3,5,8.847908410710883,2.754913999524433,141.29676499578636,13.0,189.9310338581643,0.0,5,6,7,8,9,65,69,\
74,140,140,140
,Aggregated,190,3,5,8.847908410710883,2.754913999524433,141.29676499578636,13.0,189.9310338581643,0.0,5,6,7,8,9,\
65,69,74,140,140,140
""",
    # ghz v0.120.0 -z 1s --connections 2 -c 4 --format json (the gRPC target, --delay-ms 2), cut down: nanoseconds.
    # The 4 Unavailable calls were cut off by the end of the run; one Internal is a real error.
    "ghz": """{"date": "2026-12-05T23:39:17Z", "endReason": "timeout", "count": 650, "total": 1000978894,
        "average": 6056096, "fastest": 2305177, "slowest": 32579295, "rps": 648.3653190793452,
        "errorDistribution": {"rpc error: code = Unavailable desc = error reading from server: read tcp 127.0.0.1:32878->127.0.0.1:18557: use of closed network connection": 2,
        "rpc error: code = Unavailable desc = error reading from server: read tcp 127.0.0.1:32884->127.0.0.1:18557: use of closed network connection": 2,
        "rpc error: code = Internal desc = boom": 1},
        "statusCodeDistribution": {"OK": 645, "Unavailable": 4, "Internal": 1},
        "latencyDistribution": [{"percentage": 10, "latency": 2905928}, {"percentage": 25, "latency": 3298930},
        {"percentage": 50, "latency": 5282901}, {"percentage": 75, "latency": 7970184},
        {"percentage": 90, "latency": 9033020}, {"percentage": 95, "latency": 11904147},
        {"percentage": 99, "latency": 17467523}]}""",
}

# What each sample says, read off it: (requests, errors, window seconds, p50 us, p99 us).
EXPECTED = {
    "fairbench": (200, 0, 1.0, 2139, 2291),
    "oha": (200, 0, 1.001602978, 2117.589, 2424.615),
    "hey": (197, 3, 1.0196, 2300, 4400),         # 2 responses 503, 1 refused; the cancelled one is cut off
    "fortio": (200, 0, 1.006129378, 2615.34, 11199.91),
    "vegeta": (200, 0, 0.995304742, 2176.398, 7662.274),
    "locust": (187, 3, None, 5000, 74000),       # 190 requests of which 3 failed
    "ghz": (645, 1, 1.000978894, 5282.901, 17467.523),
}


class ParserTest(unittest.TestCase):
    """Catches: a parser that misreads a peer's requests count or latency unit (every ratio would be off)."""

    def check(self, tool):
        got = PARSERS[tool](SAMPLES[tool])
        requests, errors, seconds, p50, p99 = EXPECTED[tool]
        self.assertEqual(got["requests"], requests, "requests")
        self.assertEqual(got["errors"], errors, "errors")
        if seconds is None:
            self.assertIsNone(got["seconds"])
        else:
            self.assertAlmostEqual(got["seconds"], seconds, places=6)
        self.assertAlmostEqual(got["p50_us"], p50, delta=0.01)
        self.assertAlmostEqual(got["p99_us"], p99, delta=0.01)

    def test_fairbench(self):
        self.check("fairbench")
        # Catches: the accuracy mode comparing fairbench's latency from the
        # due time with the peers' from the send.
        self.assertEqual(PARSERS["fairbench"](SAMPLES["fairbench"])["p50_sent_us"], 2101)

    def test_oha(self):
        self.check("oha")

    def test_hey(self):
        self.check("hey")

    def test_fortio(self):
        self.check("fortio")

    def test_vegeta(self):
        self.check("vegeta")

    def test_locust(self):
        self.check("locust")

    def test_ghz(self):
        self.check("ghz")

    def test_go_durations(self):
        self.assertAlmostEqual(_duration_us("2ms"), 2000)
        self.assertAlmostEqual(_duration_us("250us"), 250)
        self.assertAlmostEqual(_duration_us("1m2s"), 62e6)

    def test_verdict_only_outside_one(self):
        # Catches: a verdict given while the interval still contains 1.
        ahead = ratio_stats([1.20, 1.22, 1.19, 1.21, 1.20, 1.23, 1.18])
        spans = ratio_stats([0.9, 1.1, 1.0, 1.2, 0.8, 1.05, 0.95])
        behind = ratio_stats([0.80, 0.82, 0.79, 0.81, 0.80, 0.83, 0.78])
        self.assertEqual(judge(ahead, False, "oha", False), "fairbench ahead")
        self.assertEqual(judge(spans, False, "oha", False), "no verdict")
        self.assertEqual(judge(behind, False, "oha", False), "oha ahead")
        self.assertEqual(judge(behind, True, "oha", False), "fairbench ahead")
        self.assertEqual(judge(ratio_stats([0.8] * 3), True, "oha", False), "too few pairs")

    def test_a_coarse_reading_widens_the_accuracy_interval(self):
        # Catches: a verdict on a difference smaller than the peer's output
        # can show (hey prints 0.1 ms steps: 30 µs closer is no verdict).
        def run(error_us):
            return {"valid": True, "p50_error_us": error_us, "cpu_per_request_us": 1.0}
        runs = {"fairbench": [run(130 + i % 2) for i in range(7)],
                "hey": [run(100) for _ in range(7)], "oha": [run(100) for _ in range(7)]}
        hey = summarise("accuracy", "hey", runs)["figures"]["abs_p50_error_us"]
        oha = summarise("accuracy", "oha", runs)["figures"]["abs_p50_error_us"]
        self.assertEqual(oha["verdict"], "oha ahead")
        self.assertEqual(hey["verdict"], "no verdict")
        self.assertAlmostEqual(hey["stats"]["ci95"][0], oha["stats"]["ci95"][0] - 50, places=6)


if __name__ == "__main__":
    main()
