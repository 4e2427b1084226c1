#!/usr/bin/env python3
"""What a container costs on the Docker platform (fairbench run --platform docker).

1. The agent in a container against the agent as a process. Debian's nginx
   runs one worker pinned to CPU 0 (bench/agent_vs_wrk.py's configuration);
   fairbench-agent loads it from CPU 1 either as a process (taskset) or as a
   container of the agent image on the host's network (docker run --network
   host --cpuset-cpus 1), in interleaved pairs. Requests are counted by nginx
   (stub_status) over the agent's own window; CPU per request is the agent's
   own figure (its summary's "Generator CPU" line: the same code measures
   both). Ratios are container / process, median of the pairs with their
   range and the 95 % interval of their mean (targets: requests/s >= 0.97,
   CPU per request <= 1.03, judged by that interval: bench/verdicts.py).

2. Wall time between cells: the same two reference targets (Boost.Beast and
   cpp-httplib), one scenario, 1 s cells, run locally (processes) and with
   --platform docker (their images); from results.json, the time from the
   end of the first target's cell to the start of the second's (teardown,
   cooldown, deploy, readiness, warmup), and the run's whole wall time.

    bench/docker_overhead.py [--pairs 7] [--duration 4] [--connections 100]
                             [--image fairbench.test/fairbench-agent:test]
                             [--target-image-prefix fairbench.test/fairbench-target-] [--tag test]
                             [--parts agent,cells] [--json out.json]

Needs an engine (scripts/docker-engine start; DOCKER_HOST as it prints) and
the images (scripts/images, or scripts/images --prebuilt build/bin --only
fairbench --registry fairbench.test --version test).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_vs_wrk import NGINX_CONF, free_port, parse_output, process_cpu, served, wait_port  # noqa: E402
from verdicts import ratio_stats, verdict  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def generator_cpu_us(text):
    m = re.search(r"Generator CPU: ([\d.]+) cores for \d+ threads \(([\d.]+) us per request\)", text)
    if not m:
        raise RuntimeError("no Generator CPU line:\n" + text)
    return float(m.group(2))


def agent_run(variant, args, url, port, server_pid):
    load = ["load", url, "-t1", f"-c{args.connections}", f"-d{args.duration}s"]
    if variant == "process":
        argv = ["taskset", "-c", args.client_cpu, args.agent] + load
    else:
        argv = ["docker", "run", "--rm", "--network", "host", "--cpuset-cpus", args.client_cpu, "--read-only",
                "--cap-drop", "ALL", args.image] + load
    before = served(port)
    cpu0 = process_cpu(server_pid)
    out = subprocess.run(argv, capture_output=True, text=True, timeout=args.duration + 60)
    server_cpu = process_cpu(server_pid) - cpu0
    after = served(port)
    if out.returncode != 0:
        raise SystemExit(f"{variant} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    requests, seconds, rps, errors = parse_output(out.stdout)
    server = after - before - 1
    return {"rps": rps, "requests": requests, "seconds": seconds, "server_requests": server,
            "server_rps_window": server / seconds, "cpu_per_request_us": generator_cpu_us(out.stdout),
            "nginx_cpu_per_request_us": server_cpu / max(server, 1) * 1e6, "errors": errors}


def spread(values):
    return statistics.median(values), min(values), max(values)


def part_agent(args, results):
    tmp = tempfile.mkdtemp(prefix="fairbench-docker-bench-")
    port = free_port()
    with open(os.path.join(tmp, "nginx.conf"), "w") as f:
        f.write(NGINX_CONF.format(dir=tmp, port=port, nofile=20000, tls_server=""))
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    nginx = subprocess.Popen(["taskset", "-c", args.server_cpu, nginx_bin, "-p", tmp, "-c", os.path.join(tmp, "nginx.conf")],
                             stderr=subprocess.DEVNULL)
    try:
        wait_port(port)
        url = f"http://127.0.0.1:{port}/"
        runs = {"process": [], "container": []}
        for pair in range(args.pairs):
            order = ["process", "container"] if pair % 2 == 0 else ["container", "process"]
            for v in order:
                r = agent_run(v, args, url, port, nginx.pid)
                runs[v].append(r)
                print(f"  pair {pair + 1} {v:<9} server/window {r['server_rps_window']:>9.0f} req/s  agent "
                      f"{r['cpu_per_request_us']:5.2f} us CPU/req  nginx {r['nginx_cpu_per_request_us']:5.2f} us/req")
        rps = [c["server_rps_window"] / p["server_rps_window"] for p, c in zip(runs["process"], runs["container"])]
        cpu = [c["cpu_per_request_us"] / p["cpu_per_request_us"] for p, c in zip(runs["process"], runs["container"])]
        rps_st, cpu_st = ratio_stats(rps), ratio_stats(cpu)
        print(f"\nagent in a container / as a process, {args.pairs} pairs, c={args.connections}, {args.duration}s:")
        for label, st, target, at_most in (("requests/s (nginx's count)", rps_st, 0.97, False),
                                           ("CPU per request (agent's) ", cpu_st, 1.03, True)):
            print(f"  {label}  {st['median']:.3f}  [{st['min']:.3f} – {st['max']:.3f}]  95% CI {st['ci95'][0]:.3f} – "
                  f"{st['ci95'][1]:.3f}   target {'<=' if at_most else '>='} {target}: {verdict(st, target, at_most)}")
        results["agent"] = {"runs": runs, "rps_ratio": [rps_st["median"], rps_st["min"], rps_st["max"]],
                            "cpu_ratio": [cpu_st["median"], cpu_st["min"], cpu_st["max"]],
                            "rps_ratio_stats": rps_st, "cpu_ratio_stats": cpu_st}
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(tmp, ignore_errors=True)


RUN = """apiVersion: fairbench.dev/v1alpha1
kind: BenchmarkRun
metadata: {{name: cells-{platform}}}
spec:
  targets:
{targets}  scenarios:
  - name: hello
    request: {{path: /}}
    expect: {{status: 200}}
  load: {{threads: 1, connections: [10], warmup: 300ms, duration: 1s, agents: 1}}
  cooldown: 200ms
"""


def part_cells(args, results):
    fairbench = os.path.join(ROOT, "build", "bin", "fairbench")
    out = {}
    for platform in ("local", "docker"):
        targets = ""
        for server in ("beast", "cpp-httplib-debian"):
            if platform == "local":
                binary = os.path.join(ROOT, "build", "bin", f"fairbench-target-{server}")
                targets += (f"  - name: {server}\n    local:\n      command: [{binary}, --port, \"{{port}}\", --threads, \"1\"]\n"
                            "    resources: {cpu: \"1\", memory: 256Mi}\n    nofile: 4096\n")
            else:
                targets += (f"  - name: {server}\n    image: {args.target_image_prefix}{server}:{args.tag}\n"
                            "    args: [--host, 127.0.0.1, --port, \"{port}\", --threads, \"1\"]\n"
                            "    resources: {cpu: \"1\", memory: 256Mi}\n    nofile: 4096\n")
        gaps, walls = [], []
        for i in range(args.cell_runs):
            tmp = tempfile.mkdtemp(prefix="fairbench-cells-")
            with open(os.path.join(tmp, "run.yaml"), "w") as f:
                f.write(RUN.format(platform=platform, targets=targets))
            argv = [fairbench, "run", os.path.join(tmp, "run.yaml"), "-o", os.path.join(tmp, "out"), "-q",
                    "--lock-file", os.path.join(tmp, "lock")]
            if platform == "docker":
                argv += ["--platform", "docker"]
            start = time.monotonic()
            p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
            wall = time.monotonic() - start
            if p.returncode != 0:
                raise SystemExit(f"fairbench run ({platform}) failed ({p.returncode}):\n{p.stderr}")
            with open(os.path.join(tmp, "out", "results.json")) as f:
                cells = json.load(f)["cells"]
            from datetime import datetime

            def t(s):
                return datetime.fromisoformat(s.replace("Z", "+00:00")[:26] + "+00:00" if "." in s else s.replace("Z", "+00:00"))
            gap = (t(cells[1]["result"]["startTime"]) - t(cells[0]["result"]["endTime"])).total_seconds()
            gaps.append(gap)
            walls.append(wall)
            shutil.rmtree(tmp, ignore_errors=True)
        out[platform] = {"gap_s": gaps, "wall_s": walls}
        g, glo, ghi = spread(gaps)
        w, wlo, whi = spread(walls)
        print(f"  {platform:<7} between the two targets' cells {g:5.2f} s [{glo:.2f} – {ghi:.2f}]   "
              f"whole run {w:5.2f} s [{wlo:.2f} – {whi:.2f}]  ({args.cell_runs} runs)")
    d = statistics.median(out["docker"]["gap_s"]) - statistics.median(out["local"]["gap_s"])
    print(f"  containers add {d:.2f} s between cells of two targets (create, start, ready, stop, remove)")
    results["cells"] = out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--connections", type=int, default=100)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--agent", default=os.path.join(ROOT, "build", "bin", "fairbench-agent"))
    ap.add_argument("--image", default="fairbench.test/fairbench-agent:test")
    ap.add_argument("--target-image-prefix", default="fairbench.test/fairbench-target-")
    ap.add_argument("--tag", default="test")
    ap.add_argument("--cell-runs", type=int, default=3)
    ap.add_argument("--parts", default="agent,cells")
    ap.add_argument("--json")
    args = ap.parse_args()
    if subprocess.run(["docker", "version"], capture_output=True).returncode != 0:
        raise SystemExit("no Docker engine answers: scripts/docker-engine start, then export the DOCKER_HOST it prints")
    results = {"date": time.strftime("%Y-%m-%d"), "pairs": args.pairs, "duration": args.duration}
    parts = args.parts.split(",")
    if "agent" in parts:
        part_agent(args, results)
    if "cells" in parts:
        print("\nwall time between cells, local processes against containers:")
        part_cells(args, results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
