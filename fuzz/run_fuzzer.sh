#!/usr/bin/env bash
# run_fuzzer.sh FUZZER SCRATCH SEEDS [libFuzzer options…]: one short fuzzing
# run from the seed corpus (ctest's fuzz tests). New inputs and any crash
# reproducer go to SCRATCH, emptied first; the seeds are only read. The exit
# status is the fuzzer's: non-zero on a crash, a sanitizer report, a leak,
# a timeout or running out of memory; and 1 when it left files behind in
# its temporary folder (TMPDIR, SCRATCH/tmp here) after a clean run.
set -euo pipefail
fuzzer=$1 scratch=$2 seeds=$3
shift 3
[ -x "$fuzzer" ] || { echo "run_fuzzer: $fuzzer is not built" >&2; exit 1; }
[ -d "$seeds" ] && [ -n "$(ls -A "$seeds")" ] || { echo "run_fuzzer: no seeds in $seeds" >&2; exit 1; }
rm -rf "$scratch"
mkdir -p "$scratch/corpus" "$scratch/tmp"
rc=0
TMPDIR="$scratch/tmp" "$fuzzer" "$@" "$scratch/corpus" "$seeds" || rc=$?
if [ "$rc" = 0 ] && [ -n "$(ls -A "$scratch/tmp")" ]; then
  echo "run_fuzzer: $(basename "$fuzzer") left in its temporary folder: $(ls -A "$scratch/tmp" | tr '\n' ' ')" >&2
  exit 1
fi
exit "$rc"
