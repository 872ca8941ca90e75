#!/usr/bin/env bash
# Instructions per streamed event, per binding and store, load-independently (callgrind):
#   bash bench/profile-stream.sh [--events N] [--stores "memory sqlite"] [--bindings "jsonrpc rest grpc"] [--top N]
#
# For each store and binding: starts `trident-bench server --mode chunks` (Trident's router and
# `trident serve`'s accept loop, an agent streaming 16-byte artifact chunks as fast as the
# engine takes them) under `valgrind --tool=callgrind`, reads one warm-up stream of 1 000
# chunks, zeroes the counters (`callgrind_control -z`), reads one stream of N chunks with
# `trident-bench stream-once` (every event checked), dumps the counters (`callgrind_control
# -d`) and prints the server's instructions per event (every thread: runtime workers and, for
# SQLite, its writer) and the top functions by inclusive cost. With --syscalls, the same stream
# is also read under `strace -f -c` (no valgrind) and the write/fsync counts per event printed.
# Profiles are left in $OUT (default target/profile-stream). TRIDENT_BENCH=path profiles an
# existing build instead of building one.
set -euo pipefail

events=20000
stores="memory sqlite"
bindings="jsonrpc rest grpc"
top=25
syscalls=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --events) events="$2"; shift 2 ;;
    --stores) stores="$2"; shift 2 ;;
    --bindings) bindings="$2"; shift 2 ;;
    --top) top="$2"; shift 2 ;;
    --syscalls) syscalls=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
cd "$root"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
out="${OUT:-$target_dir/profile-stream}"
mkdir -p "$out"
log() { printf 'profile-stream: %s\n' "$*" >&2; }

# TRIDENT_BENCH=path profiles that binary (e.g. a build of another commit) instead of building.
bin="${TRIDENT_BENCH:-}"
if [[ -z "$bin" ]]; then
  log "building trident-bench (release)"
  cargo build --quiet --release --locked -p trident-bench
  bin="$target_dir/release/trident-bench"
fi

server_pid=""
cleanup() { if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

# start_server WRAPPER... : runs the chunks server (prefixed by WRAPPER), sets server_pid and addr.
start_server() {
  local store="$1"; shift
  local dir; dir="$(mktemp -d)"
  local fifo="$dir/stdout"
  mkfifo "$fifo"
  local args=(server --mode chunks --runtime default --listen 127.0.0.1:0 --store "$store")
  [[ "$store" == sqlite ]] && args+=(--sqlite-path "$dir/bench.db")
  "$@" "$bin" "${args[@]}" >"$fifo" &
  server_pid=$!
  exec {server_out}<"$fifo"
  local line=""
  read -r -t 120 line <&"$server_out" || { log "the server did not start"; exit 1; }
  addr="${line#listening on }"
}

stop_server() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  exec {server_out}<&-
}

printf '| store | binding | events | server instructions / event |\n|---|---|---:|---:|\n' >"$out/summary.md"
for store in $stores; do
  for binding in $bindings; do
    name="$store-$binding"
    rm -f "$out/$name".callgrind.*
    start_server "$store" valgrind --tool=callgrind --quiet \
      --callgrind-out-file="$out/$name.callgrind.%p"
    vg_pid="$server_pid"
    "$bin" stream-once --binding "$binding" --target "$addr" --events 1000 >/dev/null
    callgrind_control -z "$vg_pid" >/dev/null 2>&1
    "$bin" stream-once --binding "$binding" --target "$addr" --events "$events" >/dev/null
    callgrind_control -d "$vg_pid" >/dev/null 2>&1
    stop_server
    # The dump made by -d is part 1 (the one written at exit holds what followed it).
    dump="$(ls -1 "$out/$name".callgrind.*.1 | head -1)"
    total="$(grep -m1 '^summary:' "$dump" | awk '{print $2}')"
    per=$((total / (events + 3)))
    log "$store $binding: $per instructions per event ($dump)"
    printf '| %s | %s | %d | %d |\n' "$store" "$binding" "$((events + 3))" "$per" >>"$out/summary.md"
    {
      echo "== $store $binding: self cost (instructions in the function itself)"
      callgrind_annotate --auto=no --threshold=100 "$dump" 2>/dev/null | grep -E '^ *[0-9,]+ \(' | grep -v 'PROGRAM TOTALS' | grep -vE '\((100\.0|99\.9.)%\)' | head -n "$top" || true
      echo
      echo "== $store $binding: inclusive cost (with callees; below the runtime's own frames)"
      callgrind_annotate --auto=no --threshold=100 --inclusive=yes "$dump" 2>/dev/null | grep -E '^ *[0-9,]+ \(' | grep -v 'PROGRAM TOTALS' | grep -vE '\((100\.0|99\.9.)%\)' | head -n "$((top * 2))" || true
    } | cut -c1-240 >"$out/$name.top.txt"
    if [[ "$syscalls" == 1 ]]; then
      start_server "$store" strace -f -c -o "$out/$name.strace"
      "$bin" stream-once --binding "$binding" --target "$addr" --events "$events" >/dev/null
      stop_server
      log "$store $binding syscalls (whole run, $events events):"
      grep -E 'write|fsync|fdatasync|sendmsg|sendto|futex|epoll_wait' "$out/$name.strace" >&2 || true
    fi
  done
done
cat "$out/summary.md"
echo
echo "Top functions: $out/*.top.txt; profiles: $out/*.callgrind.*"
