#!/usr/bin/env bash
# Re-run every benchmark, one at a time (never two timing runs at once), then rebuild
# docs/benchmarks.md. ~40 minutes on 2 cores. Run it after any change under erblock/:
# summarize.py marks a result stale once erblock/ changed since its commit.
#
#   bash benchmarks/run_all.sh [LOGDIR]      # logs per script in LOGDIR (default /tmp/erblock-bench)
set -u
cd "$(dirname "$0")/.."
DATA="${ERBLOCK_DATA:-../shared/datasets}"
LOGS="${1:-/tmp/erblock-bench}"
mkdir -p "$LOGS"
failed=0
run() {
    local name="$1"; shift
    echo "$(date +%T) start $name"
    if python "$@" > "$LOGS/$name.log" 2>&1; then
        echo "$(date +%T) done  $name"
    else
        echo "$(date +%T) FAILED $name (see $LOGS/$name.log)"; failed=1
    fi
}
run quality    benchmarks/bench_quality.py --data "$DATA"
run blockings  benchmarks/bench_blockings.py --data "$DATA"
run fresh      benchmarks/bench_fresh.py
run tokens     benchmarks/bench_tokens.py --data "$DATA"
run sweep      benchmarks/bench_sweep.py
run households benchmarks/bench_households.py
run household_keys benchmarks/bench_household_keys.py
run sn         benchmarks/bench_sn.py
run strategies benchmarks/bench_strategies.py
run cluster    benchmarks/bench_cluster.py
run core       benchmarks/bench_core.py
run encoded    benchmarks/bench_encoded.py --data "$DATA"
run scale_real benchmarks/bench_scale_real.py --data "$DATA"
run fuzz       benchmarks/fuzz_nightly.py --examples 50
run scale      benchmarks/bench_scale.py
python benchmarks/summarize.py && python benchmarks/summarize.py --check || failed=1
exit $failed
