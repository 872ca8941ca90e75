#!/usr/bin/env bash
# Interop checks of `trident serve` against the official A2A SDKs:
#   Python  a2a-sdk (PyPI)      JSONRPC, HTTP+JSON, GRPC   interop/python/interop_client.py
#   JS      @a2a-js/sdk (npm)   JSONRPC, HTTP+JSON, GRPC   interop/js/interop.mjs
#   Python  a2a-sdk==0.3.26     JSONRPC, HTTP+JSON, GRPC   interop/python03/interop_v03.py (A2A v0.3)
#   JS      @a2a-js/sdk@0.3.14  JSONRPC, HTTP+JSON         interop/js03/interop_v03.mjs (A2A v0.3)
#
# Installs what it needs (interop/.venv from python/requirements.txt, `npm ci` in js/), builds
# target/debug/trident (incrementally; or uses $TRIDENT_BIN as is), starts it on a free
# loopback port, runs both clients, stops the server, and ends with the one line
# `interop: N passed, M failed`. Exit status is non-zero when any check failed.
#
# Then: our Rust clients through the behaviour suite against the Python SDK's demo agent, card
# signing both ways, and `trident conformance` against the Python and JS SDK echo agents (each
# plain and with the conformance script) compared with interop/conformance/expected.md.
#
# Environment: TRIDENT_BIN (server binary), INTEROP_ONLY=python|js|python03|js03 (run one client),
# INTEROP_VERBOSE=1 (tracebacks for unexpected exceptions).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
cd "$root"

log() { printf 'interop: %s\n' "$*" >&2; }

# --- dependencies (skipped when the pinned files have not changed since the last install) ---

venv="$here/.venv"
req="$here/python/requirements.txt"
if [[ ! -x "$venv/bin/python" ]] || ! cmp -s "$req" "$venv/.interop-requirements"; then
  log "installing the Python SDK into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$req"
  cp "$req" "$venv/.interop-requirements"
fi

# The v0.3 Python SDK (a2a-sdk 0.3.26) in a venv of its own, for the v0.3 compatibility checks.
venv03="$here/.venv03"
req03="$here/python03/requirements.txt"
if [[ ! -x "$venv03/bin/python" ]] || ! cmp -s "$req03" "$venv03/.interop-requirements"; then
  log "installing the v0.3 Python SDK into $venv03"
  rm -rf "$venv03"
  python3 -m venv "$venv03"
  "$venv03/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$req03"
  cp "$req03" "$venv03/.interop-requirements"
fi

lock="$here/js/package-lock.json"
if [[ ! -d "$here/js/node_modules" ]] || ! cmp -s "$lock" "$here/js/node_modules/.interop-lock"; then
  log "installing the JS SDK (npm ci)"
  (cd "$here/js" && npm ci --no-audit --no-fund --loglevel=error) >&2
  cp "$lock" "$here/js/node_modules/.interop-lock"
fi

lock03="$here/js03/package-lock.json"
if [[ ! -d "$here/js03/node_modules" ]] || ! cmp -s "$lock03" "$here/js03/node_modules/.interop-lock"; then
  log "installing the v0.3 JS SDK (npm ci in js03)"
  (cd "$here/js03" && npm ci --no-audit --no-fund --loglevel=error) >&2
  cp "$lock03" "$here/js03/node_modules/.interop-lock"
fi

# --- the server ---

target_dir="${CARGO_TARGET_DIR:-$root/target}"
bin="${TRIDENT_BIN:-$target_dir/debug/trident}"
if [[ -z "${TRIDENT_BIN:-}" ]]; then
  # Incremental: a no-op when the binary is current, a rebuild when the sources moved on.
  cargo build --quiet --bin trident
fi

server_pid=""
server_log="$(mktemp -t trident-interop.XXXXXX)"
stop_server() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  server_pid=""
}
cleanup() {
  stop_server
  rm -f "$server_log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  "$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

card_ready() {
  "$venv/bin/python" - "$1" <<'EOF'
import json, sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=1) as r:
        card = json.load(r)
    sys.exit(0 if card.get("supportedInterfaces") else 1)
except Exception:
    sys.exit(1)
EOF
}

base_url=""
for attempt in 1 2 3; do
  port="$(free_port)"
  "$bin" serve --agent demo --store memory --push-allow 127.0.0.1 --listen "127.0.0.1:$port" >"$server_log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 100); do
    if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    if card_ready "http://127.0.0.1:$port/.well-known/agent-card.json"; then
      base_url="http://127.0.0.1:$port"
      break
    fi
    sleep 0.1
  done
  [[ -n "$base_url" ]] && break
  log "server did not come up on port $port (attempt $attempt):"
  cat "$server_log" >&2
  stop_server
done
if [[ -z "$base_url" ]]; then
  echo "FAIL interop server-start"
  echo "interop: 0 passed, 1 failed"
  exit 1
fi
log "server $bin at $base_url"

# --- the clients ---

passed=0
failed=0
run_client() { # name, command...
  local name="$1" out rc=0
  shift
  if [[ -n "${INTEROP_ONLY:-}" && "$INTEROP_ONLY" != "$name" ]]; then return; fi
  out="$(mktemp -t "interop-$name.XXXXXX")"
  INTEROP_SUBTOTAL=1 timeout 600 "$@" "$base_url" 2>&1 | tee "$out" || rc=$?
  local line p f
  line="$(grep -E "^$name subtotal passed=[0-9]+ failed=[0-9]+$" "$out" | tail -n 1 || true)"
  rm -f "$out"
  if [[ -z "$line" ]]; then
    echo "FAIL $name client-run: exited $rc without a subtotal"
    failed=$((failed + 1))
    return
  fi
  p="${line#*passed=}"; p="${p%% *}"
  f="${line#*failed=}"
  passed=$((passed + p))
  failed=$((failed + f))
  if [[ "$rc" -ne 0 && "$f" -eq 0 ]]; then
    echo "FAIL $name client-run: exited $rc"
    failed=$((failed + 1))
  fi
}

run_client python "$venv/bin/python" "$here/python/interop_client.py"
run_client js node "$here/js/interop.mjs"
# A2A v0.3 clients against the same server (its v0.3 compatibility layer, on by default).
run_client python03 "$venv03/bin/python" "$here/python03/interop_v03.py"
run_client js03 node "$here/js03/interop_v03.mjs"

if ! kill -0 "$server_pid" 2>/dev/null; then
  echo "FAIL interop server-alive: the server exited during the run"
  failed=$((failed + 1))
fi
if [[ "$failed" -ne 0 ]]; then
  log "server log:"
  cat "$server_log" >&2
fi

# Our Rust clients (all three bindings) through the behaviour suite against an agent built with
# the official Python SDK (interop/python/agent.py).
log "our clients against the Python SDK agent"
if TRIDENT_INTEROP_PYTHON="$venv/bin/python" cargo test --workspace --locked --test it suite::python_sdk -- --ignored >&2; then
  echo "ok   rust-clients python-sdk-agent (behaviour suite: 3 bindings, and gRPC + HTTP+JSON through trident gateway in front of its JSON-RPC)"
  passed=$((passed + 1))
else
  echo "FAIL rust-clients python-sdk-agent (behaviour suite: 3 bindings, and gRPC + HTTP+JSON through trident gateway in front of its JSON-RPC)"
  failed=$((failed + 1))
fi

# Card signing: our signatures with the official SDK's verifier, and its signatures with ours.
log "card signing against the Python SDK's signer and verifier"
if TRIDENT_INTEROP_PYTHON="$venv/bin/python" cargo test --locked -p trident-security -- --ignored >&2; then
  echo "ok   signing python-sdk (cards signed by each verify with the other)"
  passed=$((passed + 1))
else
  echo "FAIL signing python-sdk (cards signed by each verify with the other)"
  failed=$((failed + 1))
fi

# `trident conformance` against the Python SDK agent: an honest table, no crash or hang.
log "trident conformance against the Python SDK agent"
if TRIDENT_INTEROP_PYTHON="$venv/bin/python" cargo test --locked --test it conformance:: -- --ignored >&2; then
  echo "ok   conformance python-sdk-agent (table printed, exit status matches it)"
  passed=$((passed + 1))
else
  echo "FAIL conformance python-sdk-agent (table printed, exit status matches it)"
  failed=$((failed + 1))
fi

# `trident conformance` against echo agents built with the official SDKs (interfaces under path
# prefixes): Python and JS, each plain and following the conformance script. The observed
# outcome table must equal the committed one (interop/conformance/expected.md). All run at once.
log "trident conformance against the SDK echo agents (expected table)"
conf_dir="$(mktemp -d -t trident-conformance.XXXXXX)"
conf_pids=()
agent_url=""
start_echo_agent() { # name, dir, command...; sets agent_url (empty when it did not start)
  local name="$1" dir="$2" fifo="$conf_dir/$1.in" holder
  agent_url=""
  shift 2
  mkfifo "$fifo"
  (cd "$dir" && exec "$@" <"$fifo" >"$conf_dir/$name.out" 2>"$conf_dir/$name.err") &
  conf_pids+=("$!")
  exec {holder}>"$fifo" # the agent stops when this closes (its stdin reaches EOF)
  for _ in $(seq 1 300); do
    agent_url="$(sed -n 's/^agent card //p' "$conf_dir/$name.out" 2>/dev/null | head -n 1)"
    [[ -n "$agent_url" ]] && break
    sleep 0.1
  done
}
run_conformance() { # name, url
  local name="$1" url="$2"
  if [[ -z "$url" ]]; then
    echo "FAIL conformance $name: the agent did not start"; cat "$conf_dir/$name.err" >&2
    return 1
  fi
  "$bin" conformance "$url" --json --timeout 20 >"$conf_dir/$name.json" 2>"$conf_dir/$name.cerr" || true
  if "$venv/bin/python" "$here/conformance/check.py" "$here/conformance/expected.md" "$name" "$conf_dir/$name.json" >"$conf_dir/$name.check" 2>&1; then
    echo "ok   conformance $name ($(tail -n 1 "$conf_dir/$name.check"))"
  else
    echo "FAIL conformance $name (the observed table differs from interop/conformance/expected.md):"
    cat "$conf_dir/$name.check" "$conf_dir/$name.cerr"
    return 1
  fi
}
conf_jobs=()
for server in python-echo python-script js-echo js-script; do
  case "$server" in
    python-echo) start_echo_agent "$server" "$here/python" "$venv/bin/python" echo_agent.py ;;
    python-script) start_echo_agent "$server" "$here/python" "$venv/bin/python" echo_agent.py --script ;;
    js-echo) start_echo_agent "$server" "$here/js" node echo_agent.mjs ;;
    js-script) start_echo_agent "$server" "$here/js" node echo_agent.mjs --script ;;
  esac
  run_conformance "$server" "$agent_url" >"$conf_dir/$server.result" &
  conf_jobs+=("$!:$server")
done
for job in "${conf_jobs[@]}"; do
  if wait "${job%%:*}"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  cat "$conf_dir/${job#*:}.result"
done
for pid in "${conf_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
wait "${conf_pids[@]}" 2>/dev/null || true
rm -rf "$conf_dir"

echo "interop: $passed passed, $failed failed"
[[ "$failed" -eq 0 ]]
