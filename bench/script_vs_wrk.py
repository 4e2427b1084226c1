#!/usr/bin/env python3
"""fairbench-agent versus wrk running the same wrk script, against the same nginx.

The method of bench/agent_vs_wrk.py (whose helpers this imports): Debian's
nginx, one worker pinned to one CPU, answers "Hello, World!" to every
request; the tools run alternately pinned to another CPU, -t1, at 100
connections (--connections); nginx's own request counter (stub_status,
read before and after each run) counts what each run was served; the
generator's CPU time comes from GNU time (user + system over the whole
run). Each pair's ratio fairbench ÷ wrk is taken, and the median of the
pairs with their range [min–max] and the 95 % interval of their mean is
printed, and each target's verdict from that interval (bench/verdicts.py:
met, not worse or missed; none from fewer than 7 rounds).

Two scripts:

  dynamic   request() builds a new request each time: a counter in the
            path and in a header (wrk's own counter example)
  static    a POST with a JSON body and a Content-Type header set at the
            top level: no Lua runs per request. Also run with the same
            request given as flags (-m POST --body … -H …), which the static
            script must cost the same as.

Then one more run of fairbench-agent per script under `perf record`: the
share of its CPU samples in LuaJIT (libluajit and the code it compiled) —
the Lua share of the agent's CPU.

    bench/script_vs_wrk.py [--pairs 7] [--duration 10] [--connections 100]
                           [--agent build/bin/fairbench-agent] [--json out.json]
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
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_vs_wrk import (NGINX_CONF, ROOT, free_port, parse_output, process_cpu,  # noqa: E402
                          run_measured, served, wait_port)
from verdicts import ratio_stats, spread_text, verdict  # noqa: E402

DYNAMIC = """
local counter = 1
function request()
  local path = "/" .. counter
  counter = counter + 1
  return wrk.format(nil, path, { ["X-Counter"] = counter })
end
"""

BODY = '{"name":"Alice","age":30,"email":"alice@example.com"}'

STATIC = """
wrk.method = "POST"
wrk.body   = '%s'
wrk.headers["Content-Type"] = "application/json"
""" % BODY


def argv_of(kind, args, script_dir, url):
    base = ["-t1", f"-c{args.connections}", f"-d{args.duration}s"]
    if kind == "wrk-dynamic":
        return ["wrk"] + base + ["-s", os.path.join(script_dir, "dynamic.lua"), url]
    if kind == "wrk-static":
        return ["wrk"] + base + ["-s", os.path.join(script_dir, "static.lua"), url]
    if kind == "ours-dynamic":
        return [args.agent, "load"] + base + ["-s", os.path.join(script_dir, "dynamic.lua"), url]
    if kind == "ours-static":
        return [args.agent, "load"] + base + ["-s", os.path.join(script_dir, "static.lua"), url]
    if kind == "ours-flags":
        return [args.agent, "load"] + base + ["-m", "POST", "--body", BODY, "-H", "Content-Type: application/json", url]
    raise ValueError(kind)


def one_run(kind, args, script_dir, url, port, server_pid):
    argv = ["taskset", "-c", args.client_cpu] + argv_of(kind, args, script_dir, url)
    before = served(port)
    server_cpu = process_cpu(server_pid)
    out, cpu, rss, code, wall = run_measured(argv, args.duration + 60)
    server_cpu = process_cpu(server_pid) - server_cpu
    server = served(port) - before - 1
    if code != 0:
        raise SystemExit(f"{kind} failed ({code}):\n{out}")
    requests, seconds, rps, errors = parse_output(out)
    return {"requests": requests, "seconds": seconds, "rps": rps, "errors": errors, "server_requests": server,
            "server_rps_window": server / seconds, "wall_seconds": wall, "cpu": cpu,
            "cpu_per_request_us": cpu / max(server, 1) * 1e6, "rss_kb": rss,
            "server_cpu_per_request_us": server_cpu / max(server, 1) * 1e6,
            "valid": errors == 0 and server >= requests}


def lua_share(args, script_dir, url, kind, tmp):
    """Share of fairbench-agent's perf samples in LuaJIT (its library and JIT code)."""
    if not shutil.which("perf"):
        return None
    data = os.path.join(tmp, f"perf-{kind}.data")
    argv = ["perf", "record", "-q", "-F", "1999", "-o", data, "--", "taskset", "-c", args.client_cpu] + \
        argv_of(kind, args, script_dir, url)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=args.duration + 60)
    rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "dso", "--comm", "fairbench-agent"],
                         capture_output=True, text=True)
    lua = 0.0
    for line in rep.stdout.splitlines():
        m = re.match(r"^\s*([\d.]+)%\s+(\S.*)$", line)
        if m and ("luajit" in m.group(2) or m.group(2).startswith("[JIT")):
            lua += float(m.group(1))
    # The shares above are of every sample (user and kernel); the agent's
    # own are its command's share.
    comm = subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "comm"], capture_output=True, text=True)
    m = re.search(r"^\s*([\d.]+)%\s+fairbench-agent\s*$", comm.stdout, re.M)
    total = float(m.group(1)) if m else 0.0
    return lua / total * 100 if total > 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--duration", type=int, default=10, help="seconds per run")
    ap.add_argument("--connections", type=int, default=100)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--agent", default=os.path.join(ROOT, "build", "bin", "fairbench-agent"))
    ap.add_argument("--only", choices=["dynamic", "static"], help="run one of the two scripts only")
    ap.add_argument("--json", help="write the raw figures here")
    args = ap.parse_args()
    for tool in ("nginx", "wrk", "taskset", "time"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            raise SystemExit(f"{tool} is not installed (scripts/setup installs it)")
    if not os.access(args.agent, os.X_OK):
        raise SystemExit(f"{args.agent} not found: build first (scripts/setup)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    tmp = tempfile.mkdtemp(prefix="fairbench-script-bench-")
    with open(os.path.join(tmp, "dynamic.lua"), "w") as f:
        f.write(DYNAMIC)
    with open(os.path.join(tmp, "static.lua"), "w") as f:
        f.write(STATIC)
    port = free_port()
    with open(os.path.join(tmp, "nginx.conf"), "w") as f:
        f.write(NGINX_CONF.format(dir=tmp, port=port, nofile=min(hard, 65536), tls_server=""))
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    nginx = subprocess.Popen(["taskset", "-c", args.server_cpu, nginx_bin, "-p", tmp, "-c", os.path.join(tmp, "nginx.conf")],
                             stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    groups = {"dynamic": ["wrk-dynamic", "ours-dynamic"], "static": ["wrk-static", "ours-static", "ours-flags"]}
    if args.only:
        groups = {args.only: groups[args.only]}
    results = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "pairs": args.pairs, "duration": args.duration,
               "connections": args.connections, "runs": {k: [] for g in groups.values() for k in g}}
    try:
        wait_port(port)
        print(f"nginx pid {nginx.pid} on CPU {args.server_cpu}; generators on CPU {args.client_cpu}, -t1 "
              f"-c{args.connections}, {args.duration}s runs, {args.pairs} rounds\n")
        for pair in range(args.pairs):
            for group, kinds in groups.items():
                # Each round turns the order, so that no tool always runs first.
                order = kinds[pair % len(kinds):] + kinds[:pair % len(kinds)]
                for kind in order:
                    r = one_run(kind, args, tmp, url, port, nginx.pid)
                    results["runs"][kind].append(r)
                    print(f"  round {pair + 1} {kind:<13} server/window {r['server_rps_window']:>9.0f} req/s  "
                          f"{r['cpu_per_request_us']:5.2f} us CPU/req  ({r['server_requests']} served, "
                          f"{r['requests']} counted){'' if r['valid'] else '  INVALID'}", flush=True)
                    time.sleep(1)
        print()

        def compare(label, a, b):
            ra, rb = results["runs"][a], results["runs"][b]
            valid = [i for i in range(len(ra)) if ra[i]["valid"] and rb[i]["valid"]]
            out = {}
            for key, name in (("server_rps_window", "requests/s"), ("cpu_per_request_us", "CPU per request")):
                ratios = [ra[i][key] / rb[i][key] for i in valid]
                if not ratios:
                    print(f"   {label}: no valid pair")
                    return None
                out[key] = dict(ratio_stats(ratios), a=statistics.median(ra[i][key] for i in valid),
                                b=statistics.median(rb[i][key] for i in valid))
                o = out[key]
                print(f"   {label:34} {name:16} {o['a']:>10.2f} / {o['b']:>10.2f}  ratio {o['median']:.3f} "
                      f"{spread_text(o)}  ({len(valid)} valid pairs)")
            return out

        print(f"== {args.connections} connections, medians (ratio: median of the rounds' ratios [their range], the 95 % interval of their mean)")
        if "dynamic" in groups:
            results["dynamic"] = compare("dynamic script: fairbench ÷ wrk", "ours-dynamic", "wrk-dynamic")
        if "static" in groups:
            results["static"] = compare("static script: fairbench ÷ wrk", "ours-static", "wrk-static")
            results["static_vs_flags"] = compare("fairbench: static script ÷ flags", "ours-static", "ours-flags")
        print("   targets: dynamic rps ≥ 1.0, CPU/req ≤ 1.0; static rps ≥ 1.0, CPU/req ≤ 0.9; static ÷ flags within 2 %")
        # Each judged by the rounds' 95 % interval (bench/verdicts.py); "within
        # 2 %" is two targets, ≥ 0.98 and ≤ 1.02.
        rps, cpu = "server_rps_window", "cpu_per_request_us"
        for label, got, checks in (
                ("dynamic", results.get("dynamic"), (("rps", rps, 1.0, False), ("CPU/req", cpu, 1.0, True))),
                ("static", results.get("static"), (("rps", rps, 1.0, False), ("CPU/req", cpu, 0.9, True))),
                ("static ÷ flags", results.get("static_vs_flags"),
                 (("CPU/req", cpu, 0.98, False), ("CPU/req", cpu, 1.02, True)))):
            if got:
                print(f"   {label}: " + "; ".join(
                    f"{name} {'≤' if at_most else '≥'} {target} {verdict(got[key], target, at_most, 'rounds')}"
                    for name, key, target, at_most in checks))
        for kind in [k for k in ("ours-dynamic", "ours-static") if k.split("-")[1] in groups]:
            share = lua_share(args, tmp, url, kind, tmp)
            results[f"lua_share_{kind}"] = share
            if share is None:
                print(f"   {kind}: Lua share not measured (perf missing or no samples)")
            else:
                print(f"   {kind}: Lua share of fairbench-agent's CPU {share:.1f} % (perf samples in LuaJIT)")
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
