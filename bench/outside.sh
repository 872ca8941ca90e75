#!/usr/bin/env bash
# Server CPU per blocking SendMessage, measured with a load generator we did not write and
# nothing pinned: h2load (Debian's nghttp2-client) drives each binding of the raw axum/tonic
# echo, of Trident on the memory store and of Trident on SQLite (`trident-bench server`, one
# port for every binding), with 32 connections, while the server's CPU time is read from
# /proc/PID/stat around the measured run. The check `trident-bench peers` makes with its own
# client (pinned: server on core 0, load on core 1), made again from outside.
#
#   bash bench/outside.sh [--no-build] [--duration SECONDS] [--connections N]
#
# JSON-RPC and HTTP+JSON go over HTTP/1.1 (`h2load --h1`), gRPC over h2c. Every request is the
# same body (h2load sends one); the echo agent does not deduplicate message ids, and each
# binding's answer is checked once with curl before it is loaded (h2load counts a gRPC error,
# which is HTTP 200 with a grpc-status trailer, as a success). Prints one markdown table:
# µs of server CPU per answered request and its ratio to the raw echo, requests/s, and SQLite
# against the memory store.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
cd "$root"

build=1
duration=5
connections=32
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) build=0 ;;
    --duration) duration="$2"; shift ;;
    --connections) connections="$2"; shift ;;
    *) echo "usage: bash bench/outside.sh [--no-build] [--duration SECONDS] [--connections N]" >&2; exit 2 ;;
  esac
  shift
done
for tool in h2load curl python3; do
  command -v "$tool" >/dev/null || { echo "outside: $tool is missing (h2load: apt-get install nghttp2-client)" >&2; exit 2; }
done
log() { printf 'outside: %s\n' "$*" >&2; }

target_dir="${CARGO_TARGET_DIR:-$root/target}"
bench="$target_dir/release/trident-bench"
if [[ $build == 1 ]]; then
  log "building trident-bench (release)"
  cargo build --quiet --release --locked -p trident-bench
fi

work="$(mktemp -d -t trident-outside.XXXXXX)"
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The bodies: the request `trident-bench load` sends (crates/trident-bench/src/payload.rs).
python3 - "$work" <<'EOF'
import sys
work = sys.argv[1]
text = "hello trident"
rest = '{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"%s"}]}}' % text
open(f"{work}/rest.json", "w").write(rest)
open(f"{work}/jsonrpc.json", "w").write('{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":%s}' % rest)
def field(number, payload):  # a length-delimited protobuf field (all lengths here < 128)
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload
part = field(1, text.encode())
message = field(1, b"m-1") + bytes([4 << 3, 1]) + field(5, part)  # message_id, role USER, parts
request = field(2, message)  # SendMessageRequest.message
open(f"{work}/grpc.bin", "wb").write(b"\x00" + len(request).to_bytes(4, "big") + request)
EOF

clk_tck=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# Starts `trident-bench server ARGS…` unpinned; sets server_pid and addr.
start_server() {
  "$bench" server --listen 127.0.0.1:0 "$@" > "$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  addr=""
  for _ in $(seq 1 100); do
    addr=$(grep -oE '127\.0\.0\.1:[0-9]+' "$work/server.out" | head -1 || true)
    [[ -n "$addr" ]] && break
    sleep 0.1
  done
  [[ -n "$addr" ]] || { log "the server did not start: $(cat "$work/server.err")"; exit 1; }
}

stop_server() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

# The binding's URL, body, headers and h2load protocol flag, as `url body flag header…`.
case_of() {
  case "$1" in
    JSONRPC) echo "http://$addr/ $work/jsonrpc.json --h1 content-type:application/json a2a-version:1.0" ;;
    HTTP+JSON) echo "http://$addr/message:send $work/rest.json --h1 content-type:application/json a2a-version:1.0" ;;
    GRPC) echo "http://$addr/lf.a2a.v1.A2AService/SendMessage $work/grpc.bin - content-type:application/grpc te:trailers a2a-version:1.0" ;;
  esac
}

# One answer checked with curl: a completed echo task (gRPC: status 0 in the trailers).
check_answer() {
  local binding=$1 url body flag
  read -r url body flag _ <<<"$(case_of "$binding")"
  if [[ $binding == GRPC ]]; then
    local head
    head=$(curl -s --http2-prior-knowledge -o /dev/null -D - --data-binary "@$body" \
      -H 'content-type: application/grpc' -H 'te: trailers' -H 'a2a-version: 1.0' "$url")
    grep -qi '^grpc-status: 0' <<<"$head" || { log "$binding: no grpc-status 0: $head"; return 1; }
  else
    local answer
    answer=$(curl -s --data-binary "@$body" -H 'content-type: application/json' -H 'a2a-version: 1.0' "$url")
    grep -q 'TASK_STATE_COMPLETED' <<<"$answer" || { log "$binding: not a completed task: $answer"; return 1; }
  fi
}

# h2load against the binding for SECONDS: prints `succeeded`.
load() {
  local binding=$1 seconds=$2 url body flag headers=() h
  read -r url body flag rest <<<"$(case_of "$binding")"
  for h in $rest; do headers+=(-H "${h%%:*}: ${h#*:}"); done
  local args=(-D "$seconds" -c "$connections" -m 1 -d "$body" "${headers[@]}")
  [[ $flag != - ]] && args+=("$flag")
  h2load "${args[@]}" "$url" > "$work/h2load.out" 2>&1 || true
  awk '/^requests:/ { for (i = 1; i <= NF; i++) if ($(i+1) ~ /^succeeded/) print $i }' "$work/h2load.out"
}

declare -A us rps
servers=("raw:--mode raw" "memory:--mode trident --store memory" "sqlite:--mode trident --store sqlite --sqlite-path $work/bench.db")
bindings=(JSONRPC HTTP+JSON GRPC)
for entry in "${servers[@]}"; do
  name=${entry%%:*}
  read -r -a args <<<"${entry#*:}"
  rm -f "$work/bench.db"*
  start_server "${args[@]}"
  log "$name on $addr"
  for binding in "${bindings[@]}"; do
    check_answer "$binding"
    load "$binding" 1 >/dev/null # warm-up
    before=$(cpu_ticks "$server_pid")
    done_requests=$(load "$binding" "$duration")
    after=$(cpu_ticks "$server_pid")
    if [[ -z "$done_requests" || "$done_requests" == 0 ]]; then
      log "$name $binding: no request succeeded: $(tail -5 "$work/h2load.out")"
      exit 1
    fi
    us[$name,$binding]=$(python3 -c "print(f'{($after - $before) / $clk_tck * 1e6 / $done_requests:.1f}')")
    rps[$name,$binding]=$(python3 -c "print(round($done_requests / $duration))")
    log "$name $binding: ${us[$name,$binding]} µs/req, ${rps[$name,$binding]} req/s"
  done
  stop_server
done

ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
echo "| server | JSON-RPC µs/req (× raw) | JSON-RPC req/s | HTTP+JSON µs/req (× raw) | HTTP+JSON req/s | gRPC µs/req (× raw) | gRPC req/s |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for name in raw memory sqlite; do
  row="| $name |"
  for binding in "${bindings[@]}"; do
    row+=" ${us[$name,$binding]} ($(ratio "${us[$name,$binding]}" "${us[raw,$binding]}")×) | ${rps[$name,$binding]} |"
  done
  echo "$row"
done
echo
row="SQLite ÷ memory, CPU per request:"
for binding in "${bindings[@]}"; do
  row+=" $binding $(ratio "${us[sqlite,$binding]}" "${us[memory,$binding]}")×"
done
echo "$row"
echo "(h2load $(h2load --version | head -1 | awk '{print $2}'), ${connections} connections, ${duration} s per case after 1 s of warm-up, nothing pinned, $(nproc) cores)"
