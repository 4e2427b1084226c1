#!/usr/bin/env python3
"""fairbench-agent versus h2load (Debian's nghttp2-client), HTTP/2 against nginx.

nginx (Debian's) runs one worker pinned to one CPU with an h2c listener
(`listen ... http2` without TLS: HTTP/2 with prior knowledge, what h2load
speaks to an http:// URL), an h2 listener (`listen ... ssl http2`, a
self-signed certificate made here by openssl(1): HTTP/2 chosen by ALPN,
what h2load speaks to an https:// URL) and a third, HTTP/1.1 listener for
its stub_status. The generators run alternately, pinned to another CPU, with
one thread, C connections and S concurrent streams per connection (by
default S = 10 and 100).

Requests are counted on the server (stub_status before and after each run,
as bench/agent_vs_wrk.py does) and reported as the tool's own requests/s,
the server's count over the tool's window and over its whole run; CPU per
request is the generator's user + system time over the requests the
server served; nginx's own CPU time per request served (from /proc) and
its busy share of the run's wall time show whether the server was the
bottleneck and what each tool's requests cost it. A run with failed or
errored requests is invalid.

fairbench-agent (`fairbench-agent load --h2c|--h2 --streams S`) is
compared when it has those flags; otherwise that part is skipped with a
message and h2load's figures are printed alone. The ratios printed are
fairbench-agent ÷ h2load, the median of the pairs' ratios (targets:
requests/s ≥ 1.0, CPU per request ≤ 0.9, each judged by the pairs' 95 %
interval, bench/verdicts.py: met, not worse or missed; none from fewer
than 7 pairs).

    bench/agent_vs_h2load.py [--protocols h2c,h2] [--streams 10,100] [--connections 10] [--runs 3]
                             [--duration 10] [--agent build/bin/fairbench-agent] [--json out.json]
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_vs_wrk import free_port, idle_line, parse_output, process_cpu, run_measured, served, wait_port  # noqa: E402
from verdicts import ratio_stats, spread_text, verdict  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NGINX_CONF = """
worker_processes 1;
master_process off;
daemon off;
worker_rlimit_nofile 65536;
pid {dir}/nginx.pid;
error_log {dir}/error.log error;
events {{ worker_connections 65536; }}
http {{
  access_log off;
  keepalive_requests 1000000000;
  keepalive_timeout 300s;
  http2_max_concurrent_streams {max_streams};
  client_body_temp_path {dir}/body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  server {{
    listen 127.0.0.1:{port} http2 backlog=65535;
    location / {{ default_type text/plain; return 200 "Hello, World!"; }}
  }}
  server {{
    listen 127.0.0.1:{tls_port} ssl http2 backlog=65535;
    ssl_certificate {dir}/cert.pem;
    ssl_certificate_key {dir}/key.pem;
    ssl_protocols TLSv1.3;
    location / {{ default_type text/plain; return 200 "Hello, World!"; }}
  }}
  server {{
    listen 127.0.0.1:{status_port};
    location = /nginx-status {{ stub_status; }}
  }}
}}
"""


def parse_h2load(text):
    """(requests done, seconds, req/s, errors) from h2load's summary."""
    m = re.search(r"^finished in ([\d.]+)(us|ms|s), ([\d.]+) req/s", text, re.M)
    r = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored, (\d+) timeout", text, re.M)
    if not m or not r:
        raise RuntimeError("no summary in h2load's output:\n" + text)
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]
    done, succeeded = int(r.group(3)), int(r.group(4))
    errors = int(r.group(5)) + int(r.group(6)) + int(r.group(7))
    s = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text, re.M)
    if s:
        errors += int(s.group(3)) + int(s.group(4))
    return succeeded, float(m.group(1)) * scale, float(m.group(3)), errors + (done - succeeded)


def agent_speaks_h2(agent):
    try:
        out = subprocess.run([agent, "load", "--help"], capture_output=True, text=True, timeout=10)
    except OSError as e:
        return False, f"cannot run {agent}: {e}"
    text = out.stdout + out.stderr
    missing = [f for f in ("--h2c", "--h2", "--streams") if f not in text]
    if missing:
        return False, f"{agent} load has no {' / '.join(missing)} flag"
    return True, ""


def tool_argv(tool, args, url, streams):
    if tool == "h2load":
        return ["h2load", "-t1", f"-c{args.connections}", f"-m{streams}", f"-D{args.duration}", url]
    return [args.agent, "load", "-t1", f"-c{args.connections}", f"-d{args.duration}s",
            "--h2" if url.startswith("https:") else "--h2c", "--streams", str(streams),
            # h2load's default windows (-w 30, -W 30: 2^30 - 1), so that both announce the same
            "--h2-stream-window", str(2**30 - 1), "--h2-connection-window", str(2**30 - 1)] + args.agent_flags.split() + [url]


def one_run(tool, args, url, status_port, streams, server_pid):
    argv = ["taskset", "-c", args.client_cpu] + tool_argv(tool, args, url, streams)
    before = served(status_port)
    server_cpu = process_cpu(server_pid)
    out, cpu, rss, code, wall = run_measured(argv, args.duration + 60)
    server_cpu = process_cpu(server_pid) - server_cpu
    after = served(status_port)
    if code != 0:
        raise SystemExit(f"{tool} failed ({code}):\n{out}")
    if tool == "h2load":
        requests, seconds, rps, errors = parse_h2load(out)
    else:
        requests, seconds, rps, errors = parse_output(out)
    server = after - before - 1  # the "after" status request counts itself
    return {"requests": requests, "seconds": seconds, "rps": rps, "errors": errors, "server_requests": server,
            "wall_seconds": wall, "server_rps_window": server / seconds, "server_rps_wall": server / wall,
            "cpu": cpu, "cpu_per_request_us": cpu / max(server, 1) * 1e6, "rss_kb": rss,
            "server_cpu_per_request_us": server_cpu / max(server, 1) * 1e6, "server_busy": server_cpu / wall,
            "valid": errors == 0 and server >= requests, "idle": idle_line(out) if tool != "h2load" else ""}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--protocols", default="h2c,h2", help="h2c (prior knowledge) and/or h2 (TLS, ALPN)")
    ap.add_argument("--streams", default="10,100", help="concurrent streams per connection, comma-separated")
    ap.add_argument("--connections", type=int, default=10)
    ap.add_argument("--runs", type=int, default=7, help="runs (interleaved pairs) per stream level (default 7)")
    ap.add_argument("--duration", type=int, default=10, help="seconds per run")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--agent", default=os.path.join(ROOT, "build", "bin", "fairbench-agent"))
    ap.add_argument("--agent-flags", default="", help="more flags for fairbench-agent load, e.g. --idle-wait block")
    ap.add_argument("--json", help="write the raw figures here")
    args = ap.parse_args()

    for tool in ("nginx", "h2load", "taskset", "time"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            package = {"h2load": "nghttp2-client"}.get(tool, tool)
            raise SystemExit(f"{tool} is not installed (Debian package {package}; scripts/setup installs it)")
    levels = [int(x) for x in args.streams.split(",")]
    tools = ["h2load"]
    if not os.access(args.agent, os.X_OK):
        print(f"fairbench-agent not compared: {args.agent} not found (build it first)\n")
    else:
        ok, why = agent_speaks_h2(args.agent)
        if ok:
            tools.append("fairbench")
        else:
            print(f"fairbench-agent not compared: {why} (it does not speak HTTP/2 yet); h2load alone\n")

    tmp = tempfile.mkdtemp(prefix="fairbench-h2bench-")
    port, tls_port, status_port = free_port(), free_port(), free_port()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", os.path.join(tmp, "key.pem"), "-out", os.path.join(tmp, "cert.pem"), "-days", "2",
                    "-subj", "/CN=localhost"], check=True, capture_output=True)
    with open(os.path.join(tmp, "nginx.conf"), "w") as f:
        f.write(NGINX_CONF.format(dir=tmp, port=port, tls_port=tls_port, status_port=status_port,
                                  max_streams=max(128, max(levels))))
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    nginx = subprocess.Popen(["taskset", "-c", args.server_cpu, nginx_bin, "-p", tmp, "-c",
                              os.path.join(tmp, "nginx.conf")], stderr=subprocess.DEVNULL)
    h2load_version = subprocess.run(["h2load", "--version"], capture_output=True, text=True).stdout.strip()
    results = {"levels": {}, "nginx": subprocess.run([nginx_bin, "-v"], capture_output=True, text=True).stderr.strip(),
               "h2load": h2load_version, "connections": args.connections, "runs": args.runs,
               "duration": args.duration, "tools": tools}
    try:
        wait_port(port)
        wait_port(tls_port)
        wait_port(status_port)
        urls = {"h2c": f"http://127.0.0.1:{port}/", "h2": f"https://127.0.0.1:{tls_port}/"}
        protocols = [p for p in args.protocols.split(",") if p]
        for p in protocols:
            if p not in urls:
                raise SystemExit(f"--protocols: unknown protocol {p!r} (h2c or h2)")
        print(f"nginx pid {nginx.pid} on CPU {args.server_cpu} (h2c and h2); generators on CPU {args.client_cpu}, -t1, "
              f"{args.connections} connections, {args.duration}s runs, {args.runs} runs per level; {h2load_version}\n")
        for protocol, streams in [(p, s) for p in protocols for s in levels]:
            url = urls[protocol]
            level = f"{protocol}/{streams}"
            runs = {t: [] for t in tools}
            for i in range(args.runs):
                order = tools if i % 2 == 0 else list(reversed(tools))
                for tool in order:
                    r = one_run(tool, args, url, status_port, streams, nginx.pid)
                    runs[tool].append(r)
                    print(f"  {protocol:<3} streams={streams:<4} run {i + 1} {tool:<9} own {r['rps']:>9.0f}  server/window "
                          f"{r['server_rps_window']:>9.0f}  server/wall {r['server_rps_wall']:>9.0f} req/s "
                          f"({r['requests']} counted by the tool, {r['server_requests']} by nginx)  "
                          f"{r['cpu_per_request_us']:5.2f} us CPU/req  nginx {r['server_cpu_per_request_us']:5.2f} us/req "
                          f"busy {r['server_busy'] * 100:3.0f}%  rss {r['rss_kb'] / 1024:5.1f} MiB  "
                          f"errors {r['errors']}{'' if r['valid'] else '  INVALID'}", flush=True)
                    time.sleep(1)
            results["levels"][level] = runs

        print()
        keys = ("rps", "server_rps_window", "server_rps_wall", "cpu_per_request_us", "server_cpu_per_request_us",
                "server_busy", "rss_kb")
        for level, runs in results["levels"].items():
            valid = [i for i in range(args.runs) if all(runs[t][i]["valid"] for t in tools)]
            protocol, streams = level.split("/")
            print(f"== {protocol}: {streams} streams per connection, {args.connections} connections "
                  f"(median of {len(valid)} valid runs of {args.runs})")
            if not valid:
                print("   no valid run: every run had errors or a tool counted more than the server served")
                continue
            med = {t: {k: statistics.median(runs[t][i][k] for i in valid) for k in keys} for t in tools}
            runs["median"] = med
            header = "".join(f"{t:>12}" for t in tools)
            ratio = None
            if "fairbench" in tools:
                pair_ratios = {k: [runs["fairbench"][i][k] / runs["h2load"][i][k] for i in valid] for k in keys}
                stats = {k: ratio_stats(v) for k, v in pair_ratios.items()}
                ratio = {k: st["median"] for k, st in stats.items()}
                runs["median_pair_ratio"] = ratio
                runs["pair_ratio_range"] = {k: [min(v), max(v)] for k, v in pair_ratios.items()}
                runs["pair_ratio_stats"] = stats
                header += f"{'ratio':>8}"
            print(f"   {'':30}{header}")
            for key, label, fmt in (("rps", "requests/s, tool's own", "{:>12.0f}"),
                                    ("server_rps_window", "requests/s, server/window", "{:>12.0f}"),
                                    ("server_rps_wall", "requests/s, server/wall", "{:>12.0f}"),
                                    ("cpu_per_request_us", "CPU us per request served", "{:>12.2f}"),
                                    ("server_cpu_per_request_us", "nginx CPU us per request", "{:>12.2f}"),
                                    ("server_busy", "nginx busy share of wall", "{:>12.2f}")):
                line = "".join(fmt.format(med[t][key]) for t in tools)
                if ratio:
                    line += f"{ratio[key]:>8.2f}  {spread_text(stats[key])}"
                print(f"   {label:30}{line}")
            print(f"   {'peak RSS MiB':30}" + "".join(f"{med[t]['rss_kb'] / 1024:>12.1f}" for t in tools))
            if ratio:
                idle = sorted({r["idle"] for r in runs["fairbench"] if r.get("idle")})
                if idle:
                    print(f"   fairbench-agent's idle wait: {'; '.join(idle)}")
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
