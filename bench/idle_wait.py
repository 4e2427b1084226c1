#!/usr/bin/env python3
"""What fairbench-agent's idle waiting adds to the latency it measures.

The delay server (fairbench-test-delay-server) answers every request a
known time after its last byte arrived and records, per request, when it
arrived and when the response was handed to the kernel (CLOCK_MONOTONIC,
the agent's clock). The agent's mean latency minus the server's mean
(sent − arrived) is what the generator and the loopback added: writing the
request, waking up to read the response, parsing it. The agent runs
alternately with --idle-wait block and --idle-wait nap (pinned to CPU 1,
the server to CPU 0), in interleaved pairs; the nap's added latency is
bounded by 2 % of the mean latency (at most 50 us; 4 % and 100 us with 25
requests or more in flight), and this shows what it
is in practice.

    bench/idle_wait.py [--delay-us 1000] [--connections 16] [--pairs 7] [--duration 4]
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdicts import ratio_stats  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_records(path):
    """(requests, mean server-side microseconds) of a delay-records file."""
    total, n = 0, 0
    with open(path) as f:
        header = True
        for line in f:
            if header:
                header = not line.startswith("conn seq index")
                continue
            parts = line.split()
            arrived, sent = int(parts[4]), int(parts[5])
            if sent > 0:
                total += sent - arrived
                n += 1
    return n, (total / n / 1e3 if n else 0.0)


def one_run(args, mode, tmp, run):
    records = os.path.join(tmp, f"records-{run}.txt")
    server = subprocess.Popen(["taskset", "-c", args.server_cpu, args.server, "--port", "0", "--delay",
                               f"{args.delay_us}us", "--records", records],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = server.stdout.readline()
    if "listening on" not in line:
        raise SystemExit("the delay server did not start: " + line)
    port = line.strip().rsplit(":", 1)[1]
    out_json = os.path.join(tmp, f"agent-{run}.json")
    agent = subprocess.run(["taskset", "-c", args.client_cpu, args.agent, "load", f"http://127.0.0.1:{port}/", "-t1",
                            f"-c{args.connections}", f"-d{args.duration}s", "--idle-wait", mode, "--json", out_json],
                           capture_output=True, text=True)
    server.send_signal(signal.SIGTERM)
    server.wait(10)
    if agent.returncode != 0:
        raise SystemExit(f"fairbench-agent failed:\n{agent.stdout}{agent.stderr}")
    with open(out_json) as f:
        j = json.load(f)
    served, server_us = read_records(records)
    lat = j["latency"]
    idle = j["idleWait"]
    return {"mode": mode, "requests": j["requests"], "server_requests": served, "agent_mean_us": lat["meanUs"],
            "agent_p50_us": lat["percentilesUs"]["p50"], "agent_p99_us": lat["percentilesUs"]["p99"],
            "server_mean_us": server_us, "added_us": lat["meanUs"] - server_us, "naps": idle["naps"],
            "nap_hits": idle["napHits"], "max_nap_us": idle["maxNapUs"],
            "cpu_per_request_us": j["agentCpuSeconds"] / max(j["requests"], 1) * 1e6}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--delay-us", type=int, default=1000)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--agent", default=os.path.join(ROOT, "build", "bin", "fairbench-agent"))
    ap.add_argument("--server", default=os.path.join(ROOT, "build", "bin", "fairbench-test-delay-server"))
    ap.add_argument("--json", help="write the raw figures here")
    args = ap.parse_args()
    for path in (args.agent, args.server):
        if not os.access(path, os.X_OK):
            raise SystemExit(f"{path} not found: build first (scripts/setup)")
    tmp = tempfile.mkdtemp(prefix="fairbench-idle-")
    runs = {"block": [], "nap": []}
    print(f"delay server on CPU {args.server_cpu} answering after {args.delay_us} us; fairbench-agent on CPU "
          f"{args.client_cpu}, -t1 -c{args.connections}, {args.duration}s runs, {args.pairs} pairs\n")
    for pair in range(args.pairs):
        for mode in (("block", "nap") if pair % 2 == 0 else ("nap", "block")):
            r = one_run(args, mode, tmp, f"{pair}-{mode}")
            runs[mode].append(r)
            print(f"  pair {pair + 1} {mode:<5} agent mean {r['agent_mean_us']:8.1f} us (p50 {r['agent_p50_us']}, "
                  f"p99 {r['agent_p99_us']})  server {r['server_mean_us']:8.1f} us  added {r['added_us']:6.1f} us  "
                  f"naps {r['naps']} ({r['nap_hits']} found a response), longest {r['max_nap_us']:.1f} us  "
                  f"CPU/req {r['cpu_per_request_us']:.2f} us", flush=True)
    print()
    for mode in ("block", "nap"):
        added = [r["added_us"] for r in runs[mode]]
        print(f"{mode:<5}: the generator added {statistics.median(added):.1f} us to the mean latency "
              f"[{min(added):.1f}–{max(added):.1f}] of {statistics.median(r['server_mean_us'] for r in runs[mode]):.1f} us "
              f"at the server; CPU per request {statistics.median(r['cpu_per_request_us'] for r in runs[mode]):.2f} us")
    diff = [n["added_us"] - b["added_us"] for n, b in zip(runs["nap"], runs["block"])]
    share = [d / b["server_mean_us"] * 100 for d, b in zip(diff, runs["block"])]
    st = ratio_stats(diff)
    print(f"nap − block, per pair: {st['median']:.1f} us [{st['min']:.1f}–{st['max']:.1f}], mean {st['mean']:.1f}, "
          f"95% CI {st['ci95'][0]:.1f}–{st['ci95'][1]:.1f} us; {statistics.median(share):.2f} % of the latency")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=2)


if __name__ == "__main__":
    main()
