#!/usr/bin/env bash
# The durable store's cost per blocking SendMessage, load-independently:
#   bash bench/profile-sqlite.sh [--n1 200] [--n2 1200] [--connections 16] \
#        [--stores "memory sqlite"] [--bindings "jsonrpc rest grpc"] [--out DIR] [--no-build] [--debug]
#
# For each store, `trident serve --agent echo --store STORE` (SQLite: a fresh file in a
# temporary directory) runs twice, never both at once:
#
# 1. under `valgrind --tool=callgrind`. Per binding: a warm-up load, then the counters are
#    zeroed (`callgrind_control -z`), N1 requests sent (`trident-bench load --requests`),
#    the counters dumped (`callgrind_control -d`); zeroed again, N2 requests, dumped again.
#    Instructions per request = (Ir(N2) - Ir(N1)) / (N2 - N1): what a connection, a load and a
#    dump cost alike cancels out. Valgrind runs one thread at a time, so the writer's batches
#    are those of a serialised process (see the fsync figures for a real run).
# 2. under `strace -f` (fsync, fdatasync and pwrite64 only, logged as they happen). Per
#    binding: the log's lines are counted before and after N2 requests, so the figures are
#    syscalls per request at full speed with `--connections` requests in flight.
#
# Prints one markdown table (Ir/req, the ratio to the memory store, syscalls/req per binding)
# and leaves the callgrind dumps in --out (default: a temporary directory, printed) for
# `callgrind_annotate --inclusive=yes DUMP`.
# Needs valgrind (callgrind_control), strace, and a release build (built here unless --no-build;
# --debug uses target/debug as it is, to try the script quickly).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
cd "$root"

n1=200
n2=1200
connections=16
stores="memory sqlite"
bindings="jsonrpc rest grpc"
out=""
build=1
profile=release
while [[ $# -gt 0 ]]; do
  case "$1" in
    --n1) n1="$2"; shift 2 ;;
    --n2) n2="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --stores) stores="$2"; shift 2 ;;
    --bindings) bindings="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --debug) build=0; profile=debug; shift ;;
    *) echo "profile-sqlite: unknown option $1" >&2; exit 2 ;;
  esac
done
if (( n2 <= n1 )); then
  echo "profile-sqlite: --n2 must exceed --n1" >&2
  exit 2
fi
log() { printf 'profile-sqlite: %s\n' "$*" >&2; }

if (( build )); then
  log "building trident and trident-bench (release)"
  cargo build --quiet --release --locked -p trident-cli -p trident-bench
fi
bin="${CARGO_TARGET_DIR:-$root/target}/$profile"
[[ -n "$out" ]] || out="$(mktemp -d /tmp/trident-profile.XXXXXX)"
mkdir -p "$out"
log "output in $out"

server_pid=""  # the server process (valgrind runs in it; strace is its parent)
wrapper_pid="" # what was started: valgrind (= server_pid) or strace
scratch=""
cleanup() {
  if [[ -n "$server_pid" ]]; then
    kill -INT "$server_pid" 2>/dev/null || true
    wait "$wrapper_pid" 2>/dev/null || true
  fi
  [[ -z "$scratch" ]] || rm -rf "$scratch"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Waits until the server at $1 answers (valgrind starts slowly).
wait_up() {
  local addr="$1" i
  for ((i = 0; i < 600; i++)); do
    if curl -fsS -o /dev/null "http://$addr/.well-known/agent-card.json" 2>/dev/null; then
      return 0
    fi
    sleep 0.5
  done
  log "server at $addr did not come up"
  return 1
}

load() { # binding addr requests
  "$bin/trident-bench" load --binding "$1" --target "$2" --connections "$connections" \
    --requests "$3" >&2
}

store_spec() { # store -> --store value (fresh file per run)
  case "$1" in
    memory) echo memory ;;
    sqlite) echo "sqlite:$scratch/tasks.db" ;;
    *) log "unknown store $1"; exit 2 ;;
  esac
}

# Starts `trident serve` behind the wrapper "$@" (sets server_pid, wrapper_pid, addr).
start() { # store wrapper...
  local store="$1" i; shift
  scratch="$(mktemp -d /tmp/trident-profile-db.XXXXXX)"
  addr="127.0.0.1:$(free_port)"
  "$@" "$bin/trident" serve --agent echo --listen "$addr" --store "$(store_spec "$store")" \
    >"$out/serve-$store.log" 2>&1 &
  wrapper_pid=$!
  server_pid=$wrapper_pid
  if [[ "$1" == strace ]]; then
    # strace forks the server: signal the server, not strace (which would detach).
    for ((i = 0; i < 100; i++)); do
      server_pid="$(pgrep -P "$wrapper_pid" | head -n1 || true)"
      [[ -z "$server_pid" ]] || break
      sleep 0.1
    done
  fi
  wait_up "$addr"
}

stop() {
  kill -INT "$server_pid" 2>/dev/null || true
  wait "$wrapper_pid" 2>/dev/null || true
  server_pid=""
  wrapper_pid=""
  rm -rf "$scratch"
  scratch=""
}

# Total Ir of a callgrind dump.
ir_of() {
  awk '/^(summary|totals):/ { print $2; exit }' "$1"
}

# Dumps the counters of $server_pid's callgrind into a new file and prints its path.
dump() { # label
  local before after f
  before="$(ls "$out"/callgrind.* 2>/dev/null | sort)"
  callgrind_control -d "$1" "$server_pid" >/dev/null
  for ((i = 0; i < 100; i++)); do
    after="$(ls "$out"/callgrind.* 2>/dev/null | sort)"
    f="$(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after") | head -n1)"
    if [[ -n "$f" ]]; then
      # The dump is written by the profiled process: wait until it is complete.
      while ! grep -q '^totals:\|^summary:' "$f" 2>/dev/null; do sleep 0.2; done
      echo "$f"
      return 0
    fi
    sleep 0.2
  done
  log "no callgrind dump appeared for $1"
  return 1
}

declare -A ir fs
for store in $stores; do
  log "$store: callgrind"
  start "$store" valgrind --tool=callgrind --quiet --dump-instr=no \
    --callgrind-out-file="$out/callgrind.$store.%p"
  # valgrind's pid is the server's (it runs the program in its own process).
  for b in $bindings; do
    load "$b" "$addr" 50
    callgrind_control -z "$server_pid" >/dev/null
    load "$b" "$addr" "$n1"
    d1="$(dump "$store-$b-n1")"
    callgrind_control -z "$server_pid" >/dev/null
    load "$b" "$addr" "$n2"
    d2="$(dump "$store-$b-n2")"
    i1="$(ir_of "$d1")"
    i2="$(ir_of "$d2")"
    ir[$store.$b]=$(( (i2 - i1) / (n2 - n1) ))
    log "$store $b: Ir(N1=$n1)=$i1 Ir(N2=$n2)=$i2 -> ${ir[$store.$b]} Ir/request ($d2)"
  done
  stop

  log "$store: strace"
  start "$store" strace -f -qq --seccomp-bpf -e trace=fsync,fdatasync,pwrite64 \
    -o "$out/strace.$store"
  count() { # syscall regex: lines of the strace log so far
    grep -cE " ($1)\(" "$out/strace.$store" || true
  }
  for b in $bindings; do
    load "$b" "$addr" 50
    sleep 0.5
    fsync_before="$(count 'fsync|fdatasync')"
    pwrite_before="$(count pwrite64)"
    load "$b" "$addr" "$n2"
    sleep 0.5
    fsync_after="$(count 'fsync|fdatasync')"
    pwrite_after="$(count pwrite64)"
    fs[$store.$b]="$(awk -v a="$fsync_before" -v b="$fsync_after" -v c="$pwrite_before" \
      -v d="$pwrite_after" -v n="$n2" 'BEGIN { printf "%.3f | %.2f", (b-a)/n, (d-c)/n }')"
    log "$store $b: fsync | pwrite64 per request: ${fs[$store.$b]}"
  done
  stop
done

commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates src || echo '+dirty')"
echo "Commit $commit; \`bash bench/profile-sqlite.sh --n1 $n1 --n2 $n2 --connections $connections\`"
echo
echo "| store | binding | Ir / request | × memory | fsync / request | pwrite64 / request |"
echo "|---|---|---:|---:|---:|---:|"
for store in $stores; do
  for b in $bindings; do
    ratio="-"
    if [[ -n "${ir[memory.$b]:-}" && "${ir[memory.$b]}" -gt 0 ]]; then
      ratio="$(awk -v a="${ir[$store.$b]}" -v m="${ir[memory.$b]}" 'BEGIN { printf "%.2f×", a/m }')"
    fi
    echo "| $store | $b | ${ir[$store.$b]} | $ratio | ${fs[$store.$b]} |"
  done
done
