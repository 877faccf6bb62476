#!/bin/bash
# Runs one libFuzzer harness: run-fuzzer.sh HARNESS SEEDS WORKDIR SECONDS [LIBFUZZER-OPTIONS...]
# New inputs go to WORKDIR/corpus (the seeds in SEEDS stay as they are), a
# crashing, leaking or slow input to WORKDIR/ as crash-*, leak-*, timeout-*.
# Any of them, or a sanitizer report, fails the run (exit 1).
set -euo pipefail
harness=$1 seeds=$2 workdir=$3 seconds=$4
shift 4
mkdir -p "$workdir/corpus"
# UBSan reports must stop the run like ASan's; leaks are looked for after each input
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# (to see the whole stack of a leak through GLib, which has no frame pointers,
# run the harness on the leak-* file with ASAN_OPTIONS=fast_unwind_on_malloc=0)
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
exec "$harness" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
	-error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
	-artifact_prefix="$workdir/" "$@" "$workdir/corpus" "$seeds"
