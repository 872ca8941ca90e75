#!/usr/bin/env bash
# Instructions per blocking SendMessage, per binding, under callgrind: the raw axum/tonic echo
# beside `trident serve --store STORE` (the echo agent, the runtime `trident serve` ships
# with). Load-independent: instruction counts do not move with the machine's load, so runs on
# a shared machine compare.
#
# Method: each server runs under `valgrind --tool=callgrind`; per binding, WARMUP requests
# first (connections, caches, lazily built state), then the counters are zeroed
# (`callgrind_control -z`), exactly REQUESTS more are sent (`trident-bench load --requests`),
# and the counters are dumped (`callgrind_control --dump`). The dump holds the cost of those
# REQUESTS requests alone (no start-up, no warm-up): Ir / REQUESTS is the figure, and the calls
# the dump records into malloc/calloc/realloc, over REQUESTS, are the heap allocations per request. The dumps are
# kept in OUT; bench/callgrind_top.py prints their top functions per request, exclusive and
# inclusive (callgrind_annotate 3.19 folds a dump taken with --dump into one entry).
#
# Usage: bash bench/profile.sh [--requests N] [--warmup N] [--connections C] [--store SPEC]
#                              [--bindings "jsonrpc rest grpc"] [--servers "raw trident"]
#                              [--out DIR] [--top K] [--no-build] [--server-bin DIR]
# --server-bin runs the servers from DIR (e.g. binaries of an older commit saved aside, for a
# before/after table); the load generator is always target/release/trident-bench.
set -euo pipefail

requests=2000
warmup=300
connections=8
store=memory
bindings="jsonrpc rest grpc"
servers="raw trident"
out=target/profile
top=25
build=1
server_bin=
while [ $# -gt 0 ]; do
    case "$1" in
        --requests) requests=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --connections) connections=$2; shift 2 ;;
        --store) store=$2; shift 2 ;;
        --bindings) bindings=$2; shift 2 ;;
        --servers) servers=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --top) top=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        --server-bin) server_bin=$2; shift 2 ;;
        *) echo "unknown argument $1 (see the head of $0)" >&2; exit 2 ;;
    esac
done

cd "$(dirname "$0")/.."
for tool in valgrind callgrind_control python3; do
    command -v "$tool" >/dev/null || { echo "$tool is needed (apt-get install valgrind)" >&2; exit 1; }
done
if [ "$build" = 1 ]; then
    cargo build --release --locked -p trident-cli -p trident-bench
fi
bin=target/release
sbin=${server_bin:-$bin}
mkdir -p "$out"
scratch=$(mktemp -d)
pid=
cleanup() {
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$scratch"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Starts server $1 under callgrind on a free port; sets pid and addr.
start() {
    local name=$1 port
    port=$(free_port)
    addr=127.0.0.1:$port
    local cmd
    case "$name" in
        raw) cmd=("$sbin/trident-bench" server --mode raw --runtime default --listen "$addr") ;;
        trident)
            local spec=$store
            [ "$spec" = sqlite ] && spec="sqlite:$scratch/tasks.db"
            cmd=("$sbin/trident" serve --store "$spec" --listen "$addr") ;;
        *) echo "unknown server $name" >&2; exit 2 ;;
    esac
    valgrind --tool=callgrind --callgrind-out-file="$out/$name.%p.start" \
        "${cmd[@]}" >"$scratch/$name.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do
        if "$bin/trident-bench" load --binding rest --target "$addr" --connections 1 \
            --requests 1 >/dev/null 2>&1; then
            return
        fi
        kill -0 "$pid" 2>/dev/null || { cat "$scratch/$name.log" >&2; exit 1; }
        sleep 0.5
    done
    echo "$name never answered on $addr" >&2
    exit 1
}

stop() {
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
}

declare -A ir allocs
for server in $servers; do
    start "$server"
    for binding in $bindings; do
        "$bin/trident-bench" load --binding "$binding" --target "$addr" \
            --connections "$connections" --requests "$warmup" >/dev/null
        callgrind_control -z "$pid" >/dev/null
        "$bin/trident-bench" load --binding "$binding" --target "$addr" \
            --connections "$connections" --requests "$requests" >&2
        callgrind_control --dump="$server-$binding" "$pid" >/dev/null
        # The newest dump of this process is the one just taken.
        dump=$(ls -t "$out/$server.$pid.start".* | head -n 1)
        mv "$dump" "$out/$server-$binding.out"
        total=$(grep -m1 '^summary:' "$out/$server-$binding.out" | awk '{print $2}')
        ir[$server-$binding]=$((total / requests))
        allocs[$server-$binding]=$(python3 bench/callgrind_top.py --allocations "$out/$server-$binding.out" "$requests")
    done
    stop
    rm -f "$out/$server".*.start*
done

echo
echo "Instructions per blocking SendMessage (callgrind Ir; $requests requests after $warmup, $connections connections; store: $store)"
echo
echo "| binding | raw Ir/req | Trident Ir/req | Trident ÷ raw | raw allocations/req | Trident allocations/req |"
echo "|---|---:|---:|---:|---:|---:|"
for binding in $bindings; do
    r=${ir[raw-$binding]:-}
    t=${ir[trident-$binding]:-}
    ratio=
    if [ -n "$r" ] && [ -n "$t" ]; then ratio=$(awk -v t="$t" -v r="$r" 'BEGIN{printf "%.2f×", t/r}'); fi
    echo "| $binding | ${r:--} | ${t:--} | ${ratio:--} | ${allocs[raw-$binding]:--} | ${allocs[trident-$binding]:--} |"
done
echo
echo "Dumps: $out/<server>-<binding>.out (callgrind format). Top functions per request:"
echo "  python3 bench/callgrind_top.py $out/trident-jsonrpc.out $requests $top"
for binding in $bindings; do
    if [ -f "$out/trident-$binding.out" ]; then
        echo
        echo "trident-$binding:"
        python3 bench/callgrind_top.py "$out/trident-$binding.out" "$requests" "$top"
    fi
done
