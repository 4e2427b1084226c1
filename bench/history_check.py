#!/usr/bin/env python3
"""`fairbench history check` over 1,000 series (docs/results.md, "Results that last").

Makes a store of --runs runs (default 10,000) of 30 cells each: 3 of 100
targets per run x 2 scenarios x 5 connection levels, so 1,000 series of
about 300 runs each. requests/s is 40,000 with 3 % noise; in 20 series,
chosen at random, it drops 10 % from the 151st run of the series on; p99
has 5 % noise and no step. The first run is a real one
(controller/results/testdata/local_run.json through `fairbench import`),
the rest rows as the store writes them (sqlite3), as bench/result_store.py
does.

Then times `fairbench history check` (the whole process) --repeat times and
says how many of the stepped series it failed, between the right runs, and
how many of the others. Target: <= 5 s, judged by the 95 % interval of the
mean of the --repeat runs (bench/verdicts.py).

    bench/history_check.py [--fairbench build/bin/fairbench] [--runs 10000] [--repeat 7] [--dir DIR]
"""
import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import tempfile
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdicts import ratio_stats, verdict  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATE = os.path.join(ROOT, "controller", "results", "testdata", "local_run.json")
TARGETS = ["t%03d" % i for i in range(100)]
SCENARIOS = ["hello", "json"]
LEVELS = [10, 50, 100, 500, 1000]
START_NS = 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z
HOUR_NS = 3600 * 10**9


def fill(db, runs, rng):
    """Replaces the store's one run by `runs` synthetic ones; returns {series: run id of its first stepped point}."""
    con = sqlite3.connect(db)
    run_cols = [r[1] for r in con.execute("PRAGMA table_info(runs)")]
    cell_cols = [r[1] for r in con.execute("PRAGMA table_info(cells)")]
    rest = [c for c in run_cols if c not in ("id", "run_key", "start_ns", "end_ns", "name")]
    base = con.execute("SELECT %s FROM runs" % ", ".join(rest)).fetchone()
    cell = dict(zip(cell_cols, con.execute("SELECT * FROM cells LIMIT 1").fetchone()))
    con.execute("BEGIN")
    for table in ("cells", "run_targets", "run_labels", "run_records", "runs"):
        con.execute("DELETE FROM " + table)
    stepped = set(rng.sample([(t, s, c) for t in TARGETS for s in SCENARIOS for c in LEVELS], 20))
    count, first_after = {}, {}
    for i in range(runs):
        rid = i + 1
        con.execute("INSERT INTO runs (id, run_key, start_ns, end_ns, name, %s) VALUES (?, ?, ?, ?, ?, %s)" %
                    (", ".join(rest), ", ".join("?" * len(rest))),
                    (rid, "bench:%d" % rid, START_NS + i * HOUR_NS, START_NS + i * HOUR_NS + HOUR_NS // 2,
                     "nightly-%d" % rid, *base))
        rows = []
        for t in rng.sample(TARGETS, 3):
            for s in SCENARIOS:
                for level in LEVELS:
                    key = (t, s, level)
                    n = count.get(key, 0)
                    count[key] = n + 1
                    step = key in stepped and n >= 150
                    if step and key not in first_after:
                        first_after[key] = rid
                    c = dict(cell)
                    c.update(run_id=rid, position=len(rows), target=t, scenario=s, connections=level, repetition=1,
                             requests_per_second=40000 * rng.gauss(1, 0.03) * (0.9 if step else 1),
                             p99_us=level * 25 * rng.gauss(1, 0.05))
                    rows.append(tuple(c[k] for k in cell_cols))
        con.executemany("INSERT INTO cells VALUES (%s)" % ", ".join("?" * len(cell_cols)), rows)
    con.commit()
    con.execute("ANALYZE")
    con.close()
    return first_after


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fairbench", default=os.path.join(ROOT, "build", "bin", "fairbench"))
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.dir or tmp
        db = os.path.join(work, "check.db")
        if os.path.exists(db):
            os.remove(db)
        subprocess.run([args.fairbench, "import", TEMPLATE, "--store", db], check=True, stdout=subprocess.DEVNULL)
        first_after = fill(db, args.runs, random.Random(43))
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            p = subprocess.run([args.fairbench, "history", "check", "--store", db, "--format", "json"],
                               stdout=subprocess.PIPE, text=True)
            times.append(time.perf_counter() - t0)
            if p.returncode not in (0, 1):
                raise SystemExit("history check failed (%d)" % p.returncode)
        report = json.loads(p.stdout)
        right, elsewhere, other = 0, 0, {"requestsPerSecond": 0, "p99Us": 0}
        for s in report["series"]:
            key = (s["target"], s["scenario"], s["connections"])
            for m in s["metrics"]:
                for c in m["changes"]:
                    if not c["failing"]:
                        continue
                    if m["metric"] == "requestsPerSecond" and first_after.get(key) == c["after"]["run"]:
                        right += 1
                    elif m["metric"] == "requestsPerSecond" and key in first_after:
                        elsewhere += 1
                    else:
                        other[m["metric"]] += 1
        st = ratio_stats(times)
        print("history check, %d series of ~%d runs: median %.2f s [%.2f-%.2f], mean %.2f, 95%% CI %.2f-%.2f, n=%d"
              "  target <= 5 s: %s" %
              (len(report["series"]), args.runs * 3 // 100, statistics.median(times), min(times), max(times),
               st["mean"], st["ci95"][0], st["ci95"][1], len(times), verdict(st, 5.0, True, "runs")))
        print("  stepped series failed between the right runs: %d of %d" % (right, len(first_after)))
        print("  other failing regressions: in the stepped series %d; requests/s %d, p99 %d of the others" %
              (elsewhere, other["requestsPerSecond"], other["p99Us"]))


if __name__ == "__main__":
    main()
