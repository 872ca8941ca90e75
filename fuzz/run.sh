#!/usr/bin/env bash
# The fuzz targets of fuzz/ (cargo-fuzz, libFuzzer). See fuzz/README.md.
#
#   bash fuzz/run.sh --ci      each target for CI_SECONDS (default 20) from the seed corpus;
#                              fails on any crash (CI runs this)
#   bash fuzz/run.sh --long    each target until RUNS executions (default 10,000,000), one
#                              after the other, one fuzzing process at a time (libFuzzer's
#                              default in-process mode: -jobs=1 would only add a child
#                              process logging to fuzz-0.log)
#   bash fuzz/run.sh --seeds   rewrites the seed corpora (seeds.py, then the proto_requests
#                              seeds from the ProtoJSON ones)
#   bash fuzz/run.sh --ci|--long TARGET...   only those targets
#
# The targets are built with cargo itself, with the flags cargo-fuzz would pass (so CI does not
# spend minutes installing cargo-fuzz): SanitizerCoverage (inline 8-bit counters, PC table,
# compare tracing) and `--cfg fuzzing`, for the host triple only (build scripts and proc macros
# stay uninstrumented), then each binary is run as the libFuzzer program it is.
#   FUZZ_SANITIZER=address (default for --long and --seeds) adds AddressSanitizer; only stable
#     Rust is installed, so RUSTC_BOOTSTRAP=1 lets it take -Zsanitizer.
#   FUZZ_SANITIZER=none (default for --ci) builds without it: the targets are safe Rust, the 20 s
#     smoke run in CI is after panics, hangs and unbounded allocation (libFuzzer's own limits),
#     and the build takes a fraction of the time.
#   FUZZ_PROFILE=release (default for --long and --seeds: -O3, debug assertions on) or fuzz-ci
#     (default for --ci: opt-level 1, no debug info, quicker to build).
set -euo pipefail
cd "$(dirname "$0")"
FUZZ_DIR=$PWD

MODE=${1:-}
shift || true
TARGETS=(jsonrpc_envelope rest_request proto_requests protojson_requests sse_parser)
[ "$#" -gt 0 ] && TARGETS=("$@")

export CARGO_TARGET_DIR="$FUZZ_DIR/target"
export CARGO_TERM_COLOR=never
if [ "$MODE" = "--ci" ]; then
    SANITIZER=${FUZZ_SANITIZER:-none}
    PROFILE=${FUZZ_PROFILE:-fuzz-ci}
else
    SANITIZER=${FUZZ_SANITIZER:-address}
    PROFILE=${FUZZ_PROFILE:-release}
fi
CI_SECONDS=${CI_SECONDS:-20}
RUNS=${RUNS:-10000000}
HOST=$(rustc -vV | sed -n 's/^host: //p')
BIN_DIR="$CARGO_TARGET_DIR/$HOST/$PROFILE"

RUSTFLAGS_FUZZ="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
RUSTFLAGS_FUZZ+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
RUSTFLAGS_FUZZ+=" -Cllvm-args=-sanitizer-coverage-pc-table"
RUSTFLAGS_FUZZ+=" -Cllvm-args=-sanitizer-coverage-trace-compares"
RUSTFLAGS_FUZZ+=" -Cdebug-assertions -Coverflow-checks"
case "$SANITIZER" in
    none) ;;
    address)
        export RUSTC_BOOTSTRAP=1
        RUSTFLAGS_FUZZ+=" -Zsanitizer=address"
        ;;
    *)
        echo "fuzz: FUZZ_SANITIZER must be none or address" >&2
        exit 2
        ;;
esac

dict_of() {
    case "$1" in
        jsonrpc_envelope) echo "jsonrpc protojson" ;;
        rest_request) echo "rest protojson" ;;
        protojson_requests) echo "protojson" ;;
        sse_parser) echo "sse protojson" ;;
        *) echo "" ;;
    esac
}

# sse_parser's rate falls as its inputs grow (each runs through the reference, the decoder
# and both clients, whole and cut); SSE framing needs no more than 512 bytes to show itself.
max_len_args() {
    case "$1" in
        sse_parser) echo "-max_len=512" ;;
        *) echo "" ;;
    esac
}

# libFuzzer takes one -dict: the target's dictionaries, concatenated.
dict_args() {
    local parts dict
    parts=$(dict_of "$1")
    [ -z "$parts" ] && return 0
    dict="$CARGO_TARGET_DIR/dict/$1.dict"
    mkdir -p "$(dirname "$dict")"
    : >"$dict"
    for p in $parts; do cat "dict/$p.dict" >>"$dict"; done
    echo "-dict=$dict"
}

build() {
    # One cargo invocation for every target: they share all their dependencies.
    echo "fuzz: building the targets (sanitizer $SANITIZER, profile $PROFILE)"
    local start=$SECONDS
    RUSTFLAGS="$RUSTFLAGS_FUZZ" cargo build --locked --bins --profile "$PROFILE" --target "$HOST"
    echo "fuzz: built in $((SECONDS - start))s"
}

# run TARGET LIBFUZZER-ARGS...: runs on a scratch copy of the seeds (new inputs found stay out
# of git), prints one summary line, returns non-zero on a crash.
run() {
    local t=$1
    shift
    local work="$CARGO_TARGET_DIR/corpus/$t" log="$CARGO_TARGET_DIR/logs/$t.log"
    mkdir -p "$work" "$(dirname "$log")" "artifacts/$t"
    local start=$SECONDS status=0
    # shellcheck disable=SC2046
    "$BIN_DIR/$t" "$work" "corpus/$t" \
        -artifact_prefix="artifacts/$t/" -print_final_stats=1 \
        -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 $(dict_args "$t") \
        $(max_len_args "$t") "$@" \
        >"$log" 2>&1 || status=$?
    local secs=$((SECONDS - start))
    local execs rate cov
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
    if [ "$status" -eq 0 ]; then
        printf 'fuzz: %-20s ok     %12s execs in %4ss (%s/s), coverage %s, 0 crashes\n' \
            "$t" "${execs:-?}" "$secs" "${rate:-?}" "${cov:-?}"
    else
        printf 'fuzz: %-20s FAILED after %ss (exit %s): see %s\n' "$t" "$secs" "$status" "$log"
        grep -E 'panicked at|ERROR: |SUMMARY|Test unit written' "$log" | head -8 | sed 's/^/fuzz:   /'
        grep -A3 'panicked at' "$log" | head -8 | sed 's/^/fuzz:   /'
    fi
    return "$status"
}

case "$MODE" in
    --ci)
        build
        failed=0
        for t in "${TARGETS[@]}"; do
            run "$t" -max_total_time="$CI_SECONDS" || failed=1
        done
        [ "$failed" -eq 0 ] || { echo "fuzz: a target crashed (inputs in fuzz/artifacts/)"; exit 1; }
        ;;
    --long)
        build
        failed=0
        for t in "${TARGETS[@]}"; do
            run "$t" -runs="$RUNS" -max_total_time="${LONG_MAX_SECONDS:-0}" || failed=1
        done
        [ "$failed" -eq 0 ] || exit 1
        ;;
    --seeds)
        python3 seeds.py
        TARGETS=(protojson_requests)
        build
        rm -rf corpus/proto_requests
        mkdir -p corpus/proto_requests
        TRIDENT_FUZZ_PROTO_SEEDS="$FUZZ_DIR/corpus/proto_requests" \
            "$BIN_DIR/protojson_requests" corpus/protojson_requests -runs=0 \
            >/dev/null 2>&1
        echo "proto_requests: $(ls corpus/proto_requests | wc -l) seeds"
        ;;
    *)
        sed -n '2,15p' "$0"
        exit 2
        ;;
esac
