#!/usr/bin/env python3
"""The result store (controller/results/) at 10,000 runs of 30 cells.

Makes synthetic but valid results.json files from a real one
(controller/results/testdata/local_run.json, written by `fairbench run`):
30 cells each (3 targets x 2 scenarios x 5 connection levels), every cell
with the real cell's latency histogram, wrk text and a 35-interval
timeline (a 30 s cell with 5 s of warm-up), its own requests/s and p99;
nginx in every run, two more of eight frameworks per run; 80 % of the runs
on one machine, 20 % on another (another kernel: another fingerprint).

Fills the store: --distinct files through `fairbench import` (one
process), then copies of those runs under new keys and start times (one
run an hour) with sqlite3 until it holds --runs runs — the copies are rows
as the store writes them, so the indexes and the file are those of a store
filled one run at a time, in seconds instead of minutes.

Then measures, on the full store, each --repeat times:
  - one run stored: `fairbench import` of one new file, the whole process
    (start, open, parse, store, exit), wall time; and the same per run of a
    bulk import of --bulk new files in one process;
  - one series: `fairbench history series --json`, the whole process, for
    a series in a quarter of the runs (a framework: ~2,000 points on the
    first machine) and for one in every run of that machine (nginx: ~8,000
    points);
  - the list: `fairbench history --limit 50`.
Then result_store_bench (bench/result_store_bench.cc) does the same in one
process, without a process's start or the file's parsing: Store() of a
new run and its parts, QuerySeries, ListRuns.
Targets: one run stored <= 50 ms, one series <= 100 ms, each judged by the
95 % interval of the mean of the --repeat runs (bench/verdicts.py: met, not
worse or missed; none from fewer than 7).

    bench/result_store.py [--fairbench build/bin/fairbench] [--bench build/bin/result_store_bench] [--runs 10000] [--distinct 200]
                          [--bulk 100] [--repeat 15] [--dir DIR] [--json out.json]
"""
import argparse
import copy
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdicts import ratio_stats, verdict  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATE = os.path.join(ROOT, "controller", "results", "testdata", "local_run.json")
FRAMEWORKS = ["drogon", "crow", "oatpp", "cinatra", "hical", "beast", "cpp-httplib", "actix"]
SCENARIOS = ["hello", "json"]
LEVELS = [10, 50, 100, 500, 1000]
HOUR_NS = 3600 * 10**9
START_NS = 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z


def rfc3339(ns):
    s, frac = divmod(ns, 10**9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + ".%09dZ" % frac


def make_run(template, index, rng, machine_a=False):
    """A results.json of 30 cells, the `index`th run, started index hours after START_NS."""
    d = copy.deepcopy(template)
    start = START_NS + index * HOUR_NS
    other_machine = not machine_a and rng.random() < 0.2
    targets = ["nginx"] + rng.sample(FRAMEWORKS, 2)
    run = d["run"]
    run["metadata"] = {"name": "nightly", "labels": {"branch": "main", "commit": "%08x" % rng.getrandbits(32)}}
    base_target = run["spec"]["targets"][0]
    run["spec"]["targets"] = []
    for t in targets:
        tt = copy.deepcopy(base_target)
        tt["name"] = t
        tt["image"] = "example.org/fairbench/%s:1.%d" % (t, index % 7)
        run["spec"]["targets"].append(tt)
    base_scenario = run["spec"]["scenarios"][0]
    run["spec"]["scenarios"] = []
    for s in SCENARIOS:
        ss = copy.deepcopy(base_scenario)
        ss["name"] = s
        ss["connections"] = LEVELS
        run["spec"]["scenarios"].append(ss)
    run["spec"]["repetitions"] = 1
    status = run["status"]
    status["progress"] = "30/30"
    status["completedCells"] = 30
    status["totalCells"] = 30
    status["startTime"] = rfc3339(start)
    status["completionTime"] = rfc3339(start + 40 * 60 * 10**9)
    status.pop("cpus", None)
    d["schedule"] = {"order": "Sequential", "seed": 0, "rounds": [targets]}
    if other_machine:
        d["environment"]["kernel"] = "Linux 6.12.0 x86_64"
        d["environment"]["cpuModel"] = "Intel Xeon"
    base_cell = template["cells"][0]
    point = base_cell["timeline"][-1]
    cells = []
    n = 0
    for t in targets:
        for s in SCENARIOS:
            for level in LEVELS:
                c = copy.deepcopy(base_cell)
                r = c["result"]
                r["target"], r["scenario"], r["connections"], r["repetition"] = t, s, level, 1
                rate = 40000.0 * (1.5 if t == "nginx" else 1.0) * rng.gauss(1.0, 0.03)
                r["requestsPerSecond"] = round(rate, 1)
                r["requests"] = int(rate * 30)
                r["latency"]["p99"] = float(int(level * 25 * rng.gauss(1.0, 0.05)))
                cell_start = start + n * 40 * 10**9
                r["startTime"] = rfc3339(cell_start + 5 * 10**9)
                r["endTime"] = rfc3339(cell_start + 35 * 10**9)
                timeline = []
                for k in range(35):
                    p = copy.deepcopy(point)
                    p["sequence"] = k
                    p["phase"] = "warmup" if k < 5 else "measure"
                    p["start"], p["end"] = float(k), float(k + 1)
                    timeline.append(p)
                c["timeline"] = timeline
                cells.append(c)
                n += 1
    d["cells"] = cells
    return d


def timed(argv):
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(argv), p.stderr))
    return elapsed, p.stdout


def summary(ms):
    st = ratio_stats(ms)
    return {"median_ms": st["median"], "min_ms": st["min"], "max_ms": st["max"], "n": st["n"], "mean_ms": st["mean"],
            "ci95_ms": st["ci95"], "stats": st}


def fmt(s):
    return "median %.1f ms [%.1f-%.1f], mean %.1f, 95%% CI %.1f-%.1f, n=%d" % (
        s["median_ms"], s["min_ms"], s["max_ms"], s["mean_ms"], s["ci95_ms"][0], s["ci95_ms"][1], s["n"])


def copy_runs(db, want):
    """Copies the stored runs under new ids, keys and start times (one an hour after the last) until `want` runs."""
    con = sqlite3.connect(db)
    con.execute("PRAGMA foreign_keys = ON")
    have = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    base = [r[0] for r in con.execute("SELECT id FROM runs ORDER BY id")]
    last_start = con.execute("SELECT max(start_ns) FROM runs").fetchone()[0]
    max_id = con.execute("SELECT max(id) FROM runs").fetchone()[0]
    run_cols = [r[1] for r in con.execute("PRAGMA table_info(runs)")]
    cell_cols = [r[1] for r in con.execute("PRAGMA table_info(cells)")]
    rest = [c for c in run_cols if c not in ("id", "run_key", "start_ns", "end_ns")]
    con.execute("BEGIN")
    k = 0
    while have < want:
        for src in base:
            if have >= want:
                break
            k += 1
            new_id = max_id + k
            shift = last_start + k * HOUR_NS - con.execute("SELECT start_ns FROM runs WHERE id = ?", (src,)).fetchone()[0]
            con.execute(
                "INSERT INTO runs (id, run_key, start_ns, end_ns, %s) SELECT ?, run_key || '#copy' || ?, start_ns + ?, "
                "end_ns + ?, %s FROM runs WHERE id = ?" % (", ".join(rest), ", ".join(rest)),
                (new_id, k, shift, shift, src))
            other = [c for c in cell_cols if c not in ("run_id", "requests_per_second", "p99_us")]
            con.execute(
                "INSERT INTO cells (run_id, requests_per_second, p99_us, %s) SELECT ?, requests_per_second * (0.97 + "
                "0.06 * abs(random() %% 1000) / 1000.0), p99_us, %s FROM cells WHERE run_id = ?" %
                (", ".join(other), ", ".join(other)), (new_id, src))
            con.execute("INSERT INTO run_records (run_id, encoding, bytes, results) SELECT ?, encoding, bytes, results "
                        "FROM run_records WHERE run_id = ?", (new_id, src))
            con.execute("INSERT INTO run_targets (run_id, name, image, command, facts) SELECT ?, name, image, command, "
                        "facts FROM run_targets WHERE run_id = ?", (new_id, src))
            con.execute("INSERT INTO run_labels (run_id, key, value) SELECT ?, key, value FROM run_labels WHERE "
                        "run_id = ?", (new_id, src))
            have += 1
    con.commit()
    con.execute("ANALYZE")
    con.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fairbench", default=os.path.join(ROOT, "build", "bin", "fairbench"))
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "bin", "result_store_bench"))
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--distinct", type=int, default=200)
    ap.add_argument("--bulk", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--dir", default=None, help="Work here (default: a temporary directory, removed)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    with open(TEMPLATE) as f:
        template = json.load(f)
    rng = random.Random(43)
    tmp = None
    work = args.dir
    if work is None:
        tmp = tempfile.TemporaryDirectory(prefix="fairbench-result-store-")
        work = tmp.name
    os.makedirs(work, exist_ok=True)
    db = os.path.join(work, "results.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    fb = args.fairbench

    def write_runs(first, count, folder, machine_a=False):
        os.makedirs(folder, exist_ok=True)
        paths = []
        for i in range(first, first + count):
            path = os.path.join(folder, "run-%05d.json" % i)
            with open(path, "w") as f:
                json.dump(make_run(template, i, rng, machine_a), f, indent=1)
            paths.append(path)
        return paths

    t0 = time.perf_counter()
    paths = write_runs(0, args.distinct, os.path.join(work, "distinct"))
    size = sum(os.path.getsize(p) for p in paths) / len(paths)
    print("%d distinct results.json files of %.0f KiB each written in %.1f s" %
          (len(paths), size / 1024, time.perf_counter() - t0), flush=True)
    elapsed, _ = timed([fb, "import", "--store", db] + paths)
    print("imported by one `fairbench import`: %.1f s, %.1f ms a run (empty store growing to %d runs)" %
          (elapsed, 1000 * elapsed / len(paths), len(paths)), flush=True)
    t0 = time.perf_counter()
    copy_runs(db, args.runs)
    con = sqlite3.connect(db)
    runs, cells = con.execute("SELECT count(*), (SELECT count(*) FROM cells) FROM runs").fetchone()
    con.close()
    print("copied to %d runs, %d cells in %.1f s; the store is %.0f MiB" %
          (runs, cells, time.perf_counter() - t0, os.path.getsize(db) / 2**20), flush=True)

    # New runs, after every run in the store.
    con = sqlite3.connect(db)
    next_index = int((con.execute("SELECT max(start_ns) FROM runs").fetchone()[0] - START_NS) // HOUR_NS) + 1
    con.close()
    # On the first machine: the series below are that machine's (the latest run's).
    single = write_runs(next_index, args.repeat, os.path.join(work, "single"), True)
    bulk = write_runs(next_index + args.repeat, args.bulk, os.path.join(work, "bulk"), True)
    one = []
    for p in single:
        elapsed, out = timed([fb, "import", "--store", db, p])
        if "stored as run" not in out:
            sys.exit("not stored: " + out)
        one.append(1000 * elapsed)
    elapsed, _ = timed([fb, "import", "--store", db] + bulk)
    per_run_bulk = 1000 * elapsed / len(bulk)

    def series(target, connections):
        ms, points = [], 0
        for _ in range(args.repeat):
            elapsed, out = timed([fb, "history", "series", "--store", db, "--target", target, "--scenario", "hello",
                                  "--connections", str(connections), "--json"])
            ms.append(1000 * elapsed)
            points = len(json.loads(out)["points"])
        return summary(ms), points

    framework_series, framework_points = series("drogon", 100)
    nginx_series, nginx_points = series("nginx", 100)
    listing = []
    for _ in range(args.repeat):
        elapsed, _ = timed([fb, "history", "--store", db, "--limit", "50"])
        listing.append(1000 * elapsed)

    result = {
        "runs": runs, "cells": cells, "store_mib": os.path.getsize(db) / 2**20, "results_json_kib": size / 1024,
        "one_run_stored": summary(one), "bulk_ms_per_run": per_run_bulk,
        "series_framework": dict(framework_series, points=framework_points),
        "series_nginx": dict(nginx_series, points=nginx_points),
        "list_50": summary(listing),
    }
    print("one run stored (`fairbench import FILE`, whole process): %s  target <= 50 ms: %s" %
          (fmt(result["one_run_stored"]), verdict(result["one_run_stored"]["stats"], 50, True, "runs")))
    print("per run of a bulk import of %d files: %.1f ms" % (len(bulk), per_run_bulk))
    print("series drogon/hello/100 (%d points): %s  target <= 100 ms: %s" %
          (framework_points, fmt(framework_series), verdict(framework_series["stats"], 100, True, "runs")))
    print("series nginx/hello/100 (%d points): %s  target <= 100 ms: %s" %
          (nginx_points, fmt(nginx_series), verdict(nginx_series["stats"], 100, True, "runs")))
    print("history --limit 50: %s" % fmt(result["list_50"]))
    print("in one process (result_store_bench):", flush=True)
    extra = write_runs(next_index + args.repeat + args.bulk, 1, os.path.join(work, "extra"), True)
    _, out = timed([args.bench, db, extra[0], str(args.repeat), "drogon", "hello", "100", "nginx"])
    print(out, end="")
    result["in_process"] = out.splitlines()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
