#!/usr/bin/env python3
"""fairbench-agent --grpc versus h2load (Debian's nghttp2-client) sending the same gRPC frame.

The reference gRPC target (fairbench-target-grpc, callback API by default)
runs pinned to one CPU; the generators run alternately, pinned to another,
with one thread, C connections and S concurrent streams per connection (by
default S = 10 and 100) against fairbench.echo.v1.Echo/Unary:

  h2load      h2load -d FRAME -H 'content-type: application/grpc' -H 'te: trailers'
              (POSTs the pre-encoded 5-byte-prefixed frame; counts 2xx)
  fairbench   fairbench-agent load --grpc fairbench.echo.v1.Echo/Unary --message-file MSG
              (frames MSG itself; counts grpc-status)
  agent-h2c   fairbench-agent load --h2c -m POST --body-file FRAME with the same headers:
              the same bytes on the wire, the response read as plain HTTP/2 —
              what the gRPC accounting costs the agent

Calls are counted on the server (its --request-log: the calls served in
each 100 ms, summed before and after each run) and reported as the tool's
own calls/s, the server's count over the tool's window and over its whole
run; CPU per call is the generator's user + system time over the calls the
server served; the server's own CPU per call (from /proc) shows what each
tool's calls cost it. A run with errors, non-OK statuses or more calls
counted than served is invalid. The pairs are interleaved (the order turns
each run) and the ratios printed are the median of the pairs' ratios with
their range and the 95 % interval of the mean: fairbench ÷ h2load (targets:
calls/s ≥ 1.0, CPU per call ≤ 0.9), and fairbench ÷ agent-h2c for CPU per
call (the cost of gRPC's framing and status accounting). Each target's
verdict comes from the pairs' 95 % interval (bench/verdicts.py: met, not
worse or missed; none from fewer than 7 pairs).

    bench/agent_vs_h2load_grpc.py [--streams 10,100] [--connections 10] [--runs 7] [--duration 5]
                                  [--api callback|sync] [--server-threads 1]
                                  [--agent build/bin/fairbench-agent] [--json out.json]
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_vs_wrk import free_port, process_cpu, run_measured, wait_port  # noqa: E402
from verdicts import ratio_stats, spread_text, verdict  # noqa: E402
from agent_vs_h2load import parse_h2load  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METHOD = "fairbench.echo.v1.Echo/Unary"
GRPC_HEADERS = ["content-type: application/grpc", "te: trailers"]


def echo_request(payload):
    """EchoRequest{payload} in protobuf's wire format: field 1, length-delimited."""
    assert len(payload) < 128
    return b"\x0a" + bytes([len(payload)]) + payload


def served(log):
    """The calls the server counted so far: the sum of its request log's 100 ms lines."""
    total = 0
    try:
        with open(log) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[0].isdigit():
                    total += int(parts[1])
    except FileNotFoundError:
        pass
    return total


def parse_agent_json(path):
    """(calls, seconds, calls/s, errors, non-OK) from fairbench-agent's --json."""
    with open(path) as f:
        d = json.load(f)
    e = d["errors"]
    errors = sum(e[k] for k in ("connect", "read", "write", "timeout", "status", "portExhaustion", "handshake",
                                "goaway", "rstStream", "h2Protocol"))
    not_ok = 0
    if "grpc" in d:
        g = d["grpc"]
        not_ok = g["calls"] - g["status"]["OK"]
        errors += sum(g["protocolErrors"].values())
    return d["requests"], d["measureSeconds"], d["requestsPerSecond"], errors, not_ok


def tool_argv(tool, args, url, streams, files):
    if tool == "h2load":
        argv = ["h2load", "-t1", f"-c{args.connections}", f"-m{streams}", f"-D{args.duration}", "-d", files["frame"]]
        for h in GRPC_HEADERS:
            argv += ["-H", h]
        return argv + [url + "/" + METHOD]
    common = [args.agent, "load", "-t1", f"-c{args.connections}", f"-d{args.duration}s", "--streams", str(streams),
              # h2load's default windows (-w 30, -W 30: 2^30 - 1), so that both announce the same
              "--h2-stream-window", str(2**30 - 1), "--h2-connection-window", str(2**30 - 1),
              "--json", files["json"]] + args.agent_flags.split()
    if tool == "fairbench":
        return common + ["--grpc", METHOD, "--message-file", files["message"], url]
    argv = common + ["--h2c", "-m", "POST", "--body-file", files["frame"]]
    for h in GRPC_HEADERS:
        argv += ["-H", h]
    return argv + [url + "/" + METHOD]


def one_run(tool, args, url, streams, files, server_pid):
    argv = ["taskset", "-c", args.client_cpu] + tool_argv(tool, args, url, streams, files)
    before = served(files["log"])
    server_cpu = process_cpu(server_pid)
    out, cpu, rss, code, wall = run_measured(argv, args.duration + 60)
    server_cpu = process_cpu(server_pid) - server_cpu
    time.sleep(0.5)  # the server's last 100 ms line
    server = served(files["log"]) - before
    if code != 0:
        raise SystemExit(f"{tool} failed ({code}):\n{out}")
    if tool == "h2load":
        calls, seconds, rps, errors = parse_h2load(out)
        not_ok = 0
    else:
        calls, seconds, rps, errors, not_ok = parse_agent_json(files["json"])
    return {"calls": calls, "seconds": seconds, "rps": rps, "errors": errors, "not_ok": not_ok,
            "server_calls": server, "wall_seconds": wall, "server_rps_window": server / seconds,
            "server_rps_wall": server / wall, "cpu": cpu, "cpu_per_call_us": cpu / max(server, 1) * 1e6,
            "rss_kb": rss, "server_cpu_per_call_us": server_cpu / max(server, 1) * 1e6,
            "server_busy": server_cpu / wall, "valid": errors == 0 and not_ok == 0 and server >= calls}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", default="10,100", help="concurrent streams per connection, comma-separated")
    ap.add_argument("--connections", type=int, default=10)
    ap.add_argument("--runs", type=int, default=7, help="interleaved runs per tool and stream level (default 7)")
    ap.add_argument("--duration", type=int, default=5, help="seconds per run")
    ap.add_argument("--api", default="callback", choices=("callback", "sync"), help="the target's server API")
    ap.add_argument("--server-threads", type=int, default=1, help="the target's --threads")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--agent", default=os.path.join(ROOT, "build", "bin", "fairbench-agent"))
    ap.add_argument("--target", default=os.path.join(ROOT, "build", "bin", "fairbench-target-grpc"))
    ap.add_argument("--agent-flags", default="", help="more flags for fairbench-agent load, e.g. --idle-wait block")
    ap.add_argument("--json", help="write the raw figures here")
    args = ap.parse_args()

    for tool in ("h2load", "taskset"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is not installed (scripts/setup installs it)")
    for path in (args.agent, args.target):
        if not os.access(path, os.X_OK):
            raise SystemExit(f"{path} not found (build it first)")
    levels = [int(x) for x in args.streams.split(",")]
    tools = ["h2load", "fairbench", "agent-h2c"]

    tmp = tempfile.mkdtemp(prefix="fairbench-grpcbench-")
    message = echo_request(b"Hello, World!")
    files = {"message": os.path.join(tmp, "message.bin"), "frame": os.path.join(tmp, "frame.bin"),
             "json": os.path.join(tmp, "agent.json"), "log": os.path.join(tmp, "requests.log")}
    with open(files["message"], "wb") as f:
        f.write(message)
    with open(files["frame"], "wb") as f:
        f.write(b"\x00" + struct.pack(">I", len(message)) + message)
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", args.server_cpu, args.target, "--port", str(port), "--api", args.api,
                               "--threads", str(args.server_threads), "--request-log", files["log"]],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    h2load_version = subprocess.run(["h2load", "--version"], capture_output=True, text=True).stdout.strip()
    results = {"levels": {}, "api": args.api, "h2load": h2load_version, "connections": args.connections,
               "runs": args.runs, "duration": args.duration, "tools": tools,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    try:
        wait_port(port)
        url = f"http://127.0.0.1:{port}"
        print(f"fairbench-target-grpc --api {args.api} --threads {args.server_threads} (pid {server.pid}) on CPU "
              f"{args.server_cpu}; generators on CPU {args.client_cpu}, -t1, {args.connections} connections, "
              f"{args.duration}s runs, {args.runs} runs per level; {h2load_version}\n")
        for streams in levels:
            runs = {t: [] for t in tools}
            for i in range(args.runs):
                order = tools[i % len(tools):] + tools[:i % len(tools)]
                if i % 2:
                    order.reverse()
                for tool in order:
                    r = one_run(tool, args, url, streams, files, server.pid)
                    runs[tool].append(r)
                    print(f"  streams={streams:<4} run {i + 1} {tool:<9} own {r['rps']:>9.0f}  server/window "
                          f"{r['server_rps_window']:>9.0f} calls/s ({r['calls']} counted by the tool, "
                          f"{r['server_calls']} by the server)  {r['cpu_per_call_us']:5.2f} us CPU/call  server "
                          f"{r['server_cpu_per_call_us']:5.2f} us/call busy {r['server_busy'] * 100:3.0f}%  "
                          f"errors {r['errors']} non-OK {r['not_ok']}{'' if r['valid'] else '  INVALID'}", flush=True)
                    time.sleep(1)
            results["levels"][str(streams)] = runs

        print()
        keys = ("rps", "server_rps_window", "server_rps_wall", "cpu_per_call_us", "server_cpu_per_call_us",
                "server_busy", "rss_kb")
        for level, runs in results["levels"].items():
            valid = [i for i in range(args.runs) if all(runs[t][i]["valid"] for t in tools)]
            print(f"== {level} streams per connection, {args.connections} connections "
                  f"(median of {len(valid)} valid runs of {args.runs})")
            if not valid:
                print("   no valid run: every run had errors or a tool counted more than the server served")
                continue
            med = {t: {k: statistics.median(runs[t][i][k] for i in valid) for k in keys} for t in tools}
            runs["median"] = med
            vs_h2load = {k: ratio_stats([runs["fairbench"][i][k] / runs["h2load"][i][k] for i in valid]) for k in keys}
            vs_h2c = {k: ratio_stats([runs["fairbench"][i][k] / runs["agent-h2c"][i][k] for i in valid]) for k in keys}
            runs["pair_ratio_stats"] = {"fairbench/h2load": vs_h2load, "fairbench/agent-h2c": vs_h2c}
            print(f"   {'':30}" + "".join(f"{t:>12}" for t in tools) + f"{'÷ h2load':>10}")
            for key, label, fmt in (("rps", "calls/s, tool's own", "{:>12.0f}"),
                                    ("server_rps_window", "calls/s, server/window", "{:>12.0f}"),
                                    ("server_rps_wall", "calls/s, server/wall", "{:>12.0f}"),
                                    ("cpu_per_call_us", "CPU us per call served", "{:>12.2f}"),
                                    ("server_cpu_per_call_us", "server CPU us per call", "{:>12.2f}"),
                                    ("server_busy", "server busy share of wall", "{:>12.2f}")):
                line = "".join(fmt.format(med[t][key]) for t in tools)
                print(f"   {label:30}{line}{vs_h2load[key]['median']:>10.2f}  {spread_text(vs_h2load[key])}")
            print(f"   {'peak RSS MiB':30}" + "".join(f"{med[t]['rss_kb'] / 1024:>12.1f}" for t in tools))
            print(f"   agent CPU per gRPC call ÷ per HTTP/2 request (same bytes): "
                  f"{vs_h2c['cpu_per_call_us']['median']:.2f}  {spread_text(vs_h2c['cpu_per_call_us'])}")
            print(f"   targets (by the pairs' 95% interval, bench/verdicts.py): calls/s (server/window) ≥ 1.0 "
                  f"{verdict(vs_h2load['server_rps_window'], 1.0, False)}; CPU per call ≤ 0.9 "
                  f"{verdict(vs_h2load['cpu_per_call_us'], 0.9, True)}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
