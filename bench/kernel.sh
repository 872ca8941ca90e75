#!/usr/bin/env bash
# Where a blocking SendMessage's server CPU goes besides Trident's own instructions: user and
# kernel time per request, context switches and page faults (perf's software events), and the
# system calls made (strace -c), for the raw axum/tonic echo, Trident on the memory store and
# Trident on the memory store without retention (`trident-bench server`), one binding at a
# time. Callgrind (bench/profile.sh) counts user-space instructions only; this is the rest.
#
#   bash bench/kernel.sh [--no-build] [--requests N] [--bindings "jsonrpc rest grpc"] [--syscalls]
#                        [--preload LIBRARY]
#
# --preload runs the servers (not the load generator) with LD_PRELOAD=LIBRARY, e.g. another
# malloc (Debian's libjemalloc2 or libmimalloc2.0) in place of glibc's, for both servers alike.
#
# Each server gets 3 000 requests of warm-up, then N (default 20 000) measured ones from
# `trident-bench load` with 8 connections, nothing pinned. User and kernel time come from
# /proc/PID/stat around the measured run, context switches and page faults from `perf stat -p`
# (software events, which work where hardware counters do not), and, where the kernel's
# tracepoints can be read, wake-ups (`sched:sched_waking`) and futex calls
# (`syscalls:sys_enter_futex`) per request. With --syscalls, a second
# measured run of 5 000 requests under `strace -f -c` counts the system calls per request
# (strace slows the server: its times are not used). Prints one markdown table.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
cd "$root"

build=1
requests=20000
bindings="jsonrpc rest grpc"
syscalls=0
preload=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) build=0 ;;
    --requests) requests="$2"; shift ;;
    --bindings) bindings="$2"; shift ;;
    --syscalls) syscalls=1 ;;
    --preload) preload="$2"; shift ;;
    *) echo "usage: bash bench/kernel.sh [--no-build] [--requests N] [--bindings LIST] [--syscalls] [--preload LIB]" >&2; exit 2 ;;
  esac
  shift
done
for tool in perf python3; do
  command -v "$tool" >/dev/null || { echo "kernel: $tool is missing (perf: apt-get install linux-perf)" >&2; exit 2; }
done
if [[ $syscalls -eq 1 ]] && ! command -v strace >/dev/null; then
  echo "kernel: strace is missing (apt-get install strace)" >&2; exit 2
fi
target_dir="${CARGO_TARGET_DIR:-$root/target}"
if [[ $build -eq 1 ]]; then
  cargo build --release --locked -p trident-bench >&2
fi
bench="$target_dir/release/trident-bench"
scratch=$(mktemp -d)
pid=
cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Starts server $1 on a free port; sets pid and addr.
start() {
  addr=127.0.0.1:$(free_port)
  local env=()
  if [[ -n "$preload" ]]; then env=(env "LD_PRELOAD=$preload"); fi
  case "$1" in
    raw) "${env[@]}" "$bench" server --mode raw --runtime default --listen "$addr" >"$scratch/server.log" 2>&1 & ;;
    memory) "${env[@]}" "$bench" server --mode trident --store memory --runtime default --listen "$addr" >"$scratch/server.log" 2>&1 & ;;
    unbounded) "${env[@]}" "$bench" server --mode trident --store memory-unbounded --runtime default --listen "$addr" >"$scratch/server.log" 2>&1 & ;;
  esac
  pid=$!
  for _ in $(seq 1 100); do
    "$bench" load --binding rest --target "$addr" --connections 1 --requests 1 >/dev/null 2>&1 && return
    sleep 0.1
  done
  cat "$scratch/server.log" >&2
  exit 1
}

load() { # binding, requests
  "$bench" load --binding "$1" --target "$addr" --connections 8 --requests "$2" >/dev/null 2>&1
}

ticks() { awk '{print $14, $15}' "/proc/$pid/stat"; }

events=context-switches,page-faults
if perf stat -e sched:sched_waking,syscalls:sys_enter_futex true >/dev/null 2>&1; then
  events=$events,sched:sched_waking,syscalls:sys_enter_futex
fi

echo "| binding | server | user µs/req | kernel µs/req | kernel ÷ raw | context switches/req | page faults/req | wake-ups/req | futex calls/req | system calls/req |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
declare -A kernel_raw
for binding in $bindings; do
  for server in raw memory unbounded; do
    start "$server"
    load "$binding" 3000
    read -r ut st < <(ticks)
    perf stat -x, -e "$events" -p "$pid" -o "$scratch/perf" 2>/dev/null &
    perf_pid=$!
    sleep 0.3
    load "$binding" "$requests"
    kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
    read -r ut2 st2 < <(ticks)
    calls=-
    if [[ $syscalls -eq 1 ]]; then
      strace -f -c -p "$pid" -o "$scratch/strace" 2>/dev/null &
      strace_pid=$!
      sleep 0.5
      load "$binding" 5000
      kill -INT "$strace_pid"; wait "$strace_pid" 2>/dev/null || true
      calls=$(awk '$NF == "total" {printf "%.2f", $(NF-2) / 5000}' "$scratch/strace")
    fi
    kill "$pid"; wait "$pid" 2>/dev/null || true
    pid=
    read -r user kern switches faults wakeups futexes < <(python3 - "$scratch/perf" "$requests" "$ut" "$st" "$ut2" "$st2" "$(getconf CLK_TCK)" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
ut, st, ut2, st2, tck = map(int, sys.argv[3:8])
events = {}
for line in open(path):
    parts = line.strip().split(",")
    if len(parts) > 2 and parts[0][:1].isdigit():
        events[parts[2]] = float(parts[0])
us = lambda t: t / tck * 1e6 / n
per = lambda name: f"{events[name] / n:.2f}" if name in events else "-"
print(f"{us(ut2 - ut):.1f} {us(st2 - st):.1f} {per('context-switches')} {per('page-faults')} "
      f"{per('sched:sched_waking')} {per('syscalls:sys_enter_futex')}")
PY
)
    if [[ $server == raw ]]; then kernel_raw[$binding]=$kern; fi
    ratio=$(python3 -c "print(f'{$kern / max(${kernel_raw[$binding]}, 0.1):.2f}×')")
    echo "| $binding | $server | $user | $kern | $ratio | $switches | $faults | $wakeups | $futexes | $calls |"
  done
done
