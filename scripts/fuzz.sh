#!/usr/bin/env bash
# Runs the libFuzzer executable on every target: SECONDS each from a working
# copy of its seed corpus, or (SECONDS = 0) once over the seeds only. Prints
# one line per target with its executions; exits 1 if any target crashed.
# Leak detection is off: Foundation's file reading keeps a 4 KB buffer for the
# process, which LeakSanitizer reports on the first media file; the targets'
# memory is bounded by -rss_limit_mb instead.
set -uo pipefail
fuzzer=${1:?usage: fuzz.sh FUZZER SECONDS}
seconds=${2:-60}
cd "$(dirname "$0")/.."
mkdir -p .build/fuzz-corpus .build/fuzz-crashes
targets=$(FUZZ_TARGET=list "$fuzzer" 2>&1 | sed -n 's/^set FUZZ_TARGET to one of: //p' | tr -d ',')
failed=0
printf '%-18s %12s %10s %s\n' target executions "exec/s" result
for target in $targets; do
  work=.build/fuzz-corpus/$target
  mkdir -p "$work"
  cp -n Fuzz/corpus/"$target"/* "$work"/ 2>/dev/null || true
  log=.build/fuzz-crashes/$target.log
  export ASAN_OPTIONS=detect_leaks=0
  if [ "$seconds" = 0 ]; then
    FUZZ_TARGET=$target "$fuzzer" -runs=0 -detect_leaks=0 -artifact_prefix=.build/fuzz-crashes/"$target"- Fuzz/corpus/"$target" >"$log" 2>&1
  else
    limit="-max_total_time=$seconds"
    # FUZZ_RUNS=N: run N executions per target instead of for a time.
    [ -n "${FUZZ_RUNS:-}" ] && limit="-runs=$FUZZ_RUNS"
    FUZZ_TARGET=$target "$fuzzer" "$limit" -max_len=65536 -rss_limit_mb=2048 -timeout=10 -detect_leaks=0 \
      -print_final_stats=1 -artifact_prefix=.build/fuzz-crashes/"$target"- "$work" >"$log" 2>&1
  fi
  status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  if [ $status -eq 0 ]; then result=ok; else result="FAILED (see $log)"; failed=1; fi
  printf '%-18s %12s %10s %s\n' "$target" "${runs:-seeds}" "${speed:--}" "$result"
done
exit $failed
