#!/usr/bin/env bash
# Interop checks of `trident serve` against the official A2A SDKs:
#   Python  a2a-sdk (PyPI)      JSONRPC, HTTP+JSON, GRPC   interop/python/interop_client.py
#   JS      @a2a-js/sdk (npm)   JSONRPC, HTTP+JSON, GRPC   interop/js/interop.mjs
#   Python  a2a-sdk==0.3.26     JSONRPC, HTTP+JSON, GRPC   interop/python03/interop_v03.py (A2A v0.3)
#   JS      @a2a-js/sdk@0.3.14  JSONRPC, HTTP+JSON, GRPC   interop/js03/interop_v03.mjs (A2A v0.3)
# and of `trident gateway` between the two protocol versions:
#   python03-gw, js03-gw   the v0.3 clients above -> `trident gateway` -> `trident serve
#                          --protocols 1.0` (a 1.0-only agent)
#   python-gw03, js-gw03   the 1.0 clients above -> `trident gateway` -> interop/python03/agent.py
#                          (an agent built with a2a-sdk==0.3.26); what v0.3 cannot carry is listed
#                          in interop/gateway03-expected.md and checked to fail exactly so
#
# Installs what it needs (interop/.venv from python/requirements.txt, interop/.venv03 from
# python03/requirements.txt, `npm ci` in js/ and js03/), builds target/debug/trident
# (incrementally; or uses $TRIDENT_BIN as is), starts the servers on free loopback ports, runs
# the clients, and ends with the one line `interop: N passed, M failed`. Exit status is non-zero
# when any check failed.
#
# Then: our Rust clients through the behaviour suite against the Python SDK demo agents (1.0 and
# v0.3), card signing both ways, and `trident conformance` against the Python and JS SDK echo
# agents (each plain and with the conformance script) compared with interop/conformance/expected.md.
#
# Environment: TRIDENT_BIN (server binary), INTEROP_ONLY=python|js|python03|js03|python03-gw|
# js03-gw|python-gw03|js-gw03 (run only that client, then the rest of the steps),
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

# --- the servers ---

target_dir="${CARGO_TARGET_DIR:-$root/target}"
bin="${TRIDENT_BIN:-$target_dir/debug/trident}"
if [[ -z "${TRIDENT_BIN:-}" ]]; then
  # Incremental: a no-op when the binary is current, a rebuild when the sources moved on.
  cargo build --quiet --bin trident
fi

# Every process started here is stopped on exit; when a check failed their logs are printed.
# `serving` holds those that came up, which must still run after the clients.
pids=()
serving=()
logs_dir="$(mktemp -d -t trident-interop.XXXXXX)"
stop_all() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
cleanup() {
  stop_all
  rm -rf "$logs_dir"
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

# start_trident NAME ARGS...: runs `trident ARGS --listen 127.0.0.1:<free port>` (its log in
# $logs_dir/NAME.log) until it serves its card; sets started_url (empty on failure).
started_url=""
start_trident() {
  local name="$1" attempt port pid
  shift
  started_url=""
  for attempt in 1 2 3; do
    port="$(free_port)"
    "$bin" "$@" --listen "127.0.0.1:$port" >"$logs_dir/$name.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 1 100); do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      if card_ready "http://127.0.0.1:$port/.well-known/agent-card.json"; then
        started_url="http://127.0.0.1:$port"
        serving+=("$pid")
        log "$name: trident $1 at $started_url"
        return 0
      fi
      sleep 0.1
    done
    log "$name did not come up on port $port (attempt $attempt):"
    cat "$logs_dir/$name.log" >&2
    kill "$pid" 2>/dev/null || true
  done
  return 1
}

# start_agent NAME DIR COMMAND...: runs an SDK agent that prints `agent card <url>` once it
# serves and stops when its stdin (a FIFO this script holds open) closes; sets agent_url (empty
# when it did not start).
agent_url=""
start_agent() {
  local name="$1" dir="$2" fifo="$logs_dir/$1.in" holder
  agent_url=""
  shift 2
  mkfifo "$fifo"
  (cd "$dir" && exec "$@" <"$fifo" >"$logs_dir/$name.out" 2>"$logs_dir/$name.log") &
  local pid=$!
  pids+=("$pid")
  exec {holder}>"$fifo"
  for _ in $(seq 1 300); do
    agent_url="$(sed -n 's/^agent card //p' "$logs_dir/$name.out" 2>/dev/null | head -n 1)"
    if [[ -n "$agent_url" ]]; then
      serving+=("$pid")
      log "$name: agent at $agent_url"
      return 0
    fi
    sleep 0.1
  done
  log "$name did not start:"
  cat "$logs_dir/$name.log" >&2
  return 1
}

passed=0
failed=0

# The server every client calls first: 1.0 and v0.3 on one listener, with the A2A 1.1 preview
# on (issue 29): none of these clients asks for it, and each must see exactly what a server
# without it answers.
start_trident server serve --agent demo --store memory --push-allow 127.0.0.1 \
  --protocols 1.0,0.3,1.1-preview || true
base_url="$started_url"
if [[ -z "$base_url" ]]; then
  echo "FAIL interop server-start"
  echo "interop: 0 passed, 1 failed"
  exit 1
fi
# A 1.0-only agent behind `trident gateway`: the v0.3 clients reach it through the gateway.
rev_url=""
if start_trident serve10 serve --protocols 1.0 --agent demo --store memory --push-allow 127.0.0.1 &&
  start_trident gateway-rev gateway --upstream "$started_url"; then
  rev_url="$started_url"
fi
# An agent built with the v0.3 Python SDK behind `trident gateway`, for the 1.0 clients.
gw03_url=""
if start_agent agent03 "$here/python03" "$venv03/bin/python" agent.py --exit-on-stdin-eof &&
  start_trident gateway03 gateway --upstream "$agent_url"; then
  gw03_url="$started_url"
fi

# --- the clients ---

run_client() { # name, url (empty: its server did not start), command... (it names the URL itself)
  local name="$1" url="$2" out rc=0
  shift 2
  if [[ -n "${INTEROP_ONLY:-}" && "$INTEROP_ONLY" != "$name" ]]; then return; fi
  if [[ -z "$url" ]]; then
    echo "FAIL $name client-run: its server did not start"
    failed=$((failed + 1))
    return
  fi
  out="$(mktemp -t "interop-$name.XXXXXX")"
  INTEROP_SUBTOTAL=1 timeout 600 "$@" 2>&1 | tee "$out" || rc=$?
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
  log "$name: $p passed, $f failed"
  if [[ "$rc" -ne 0 && "$f" -eq 0 ]]; then
    echo "FAIL $name client-run: exited $rc"
    failed=$((failed + 1))
  fi
}

run_client python "$base_url" "$venv/bin/python" "$here/python/interop_client.py" "$base_url"
run_client js "$base_url" node "$here/js/interop.mjs" "$base_url"
# A2A v0.3 clients against the same server (its v0.3 compatibility layer, on by default).
run_client python03 "$base_url" "$venv03/bin/python" "$here/python03/interop_v03.py" "$base_url"
run_client js03 "$base_url" node "$here/js03/interop_v03.mjs" "$base_url"
# The same v0.3 clients through `trident gateway` in front of the 1.0-only agent.
# (Push deliveries come in 1.0's shape there: the 1.0 agent holds the configuration.)
run_client python03-gw "$rev_url" "$venv03/bin/python" "$here/python03/interop_v03.py" "$rev_url" \
  --label python03-gw --push-shape 1.0
run_client js03-gw "$rev_url" node "$here/js03/interop_v03.mjs" "$rev_url" --label js03-gw
# The 1.0 clients through `trident gateway` in front of the v0.3 SDK agent: every check runs;
# those v0.3 cannot hold are listed in gateway03-expected.md and must fail exactly as listed.
expected03="$here/gateway03-expected.md"
run_client python-gw03 "$gw03_url" "$venv/bin/python" "$here/python/interop_client.py" "$gw03_url" \
  --label python-gw03 --expect-differences "$expected03"
run_client js-gw03 "$gw03_url" node "$here/js/interop.mjs" "$gw03_url" \
  --label js-gw03 --expect-differences "$expected03"

dead=0
for pid in "${serving[@]}"; do kill -0 "$pid" 2>/dev/null || dead=$((dead + 1)); done
if [[ "$dead" -ne 0 ]]; then
  echo "FAIL interop servers-alive: $dead server or agent process(es) exited during the run"
  failed=$((failed + 1))
fi
if [[ "$failed" -ne 0 ]]; then
  for f in "$logs_dir"/*.log; do
    log "--- $(basename "$f") (last 40 lines):"
    tail -n 40 "$f" >&2
  done
fi
stop_all

# Our Rust clients (all three bindings) through the behaviour suite against an agent built with
# the official Python SDK (interop/python/agent.py).
log "our clients against the Python SDK agent"
if TRIDENT_INTEROP_PYTHON="$venv/bin/python" cargo test --workspace --locked --test it suite::python_sdk:: -- --ignored >&2; then
  echo "ok   rust-clients python-sdk-agent (behaviour suite: 3 bindings, and gRPC + HTTP+JSON through trident gateway in front of its JSON-RPC)"
  passed=$((passed + 1))
else
  echo "FAIL rust-clients python-sdk-agent (behaviour suite: 3 bindings, and gRPC + HTTP+JSON through trident gateway in front of its JSON-RPC)"
  failed=$((failed + 1))
fi
# The same through our clients speaking v0.3 to the agent built with a2a-sdk==0.3.26
# (interop/python03/agent.py); the cases left out are listed, with why, in tests/it/suite.rs.
log "our clients (speaking v0.3) against the v0.3 Python SDK agent"
if TRIDENT_INTEROP_PYTHON03="$venv03/bin/python" cargo test --workspace --locked --test it suite::python_sdk_v03:: -- --ignored >&2; then
  echo "ok   rust-clients python-sdk-v03-agent (behaviour suite over v0.3: 3 bindings)"
  passed=$((passed + 1))
else
  echo "FAIL rust-clients python-sdk-v03-agent (behaviour suite over v0.3: 3 bindings)"
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

# `trident console` in headless Chromium against the Python SDK agent: the card, a stream, an
# input-required task, the task list, a subscription, a cancel and a push delivery, on each
# binding; conformance run from the page, and the bindings compared; and against the v0.3
# SDK agent, its 0.3 card read and 0.3 spoken on each binding.
log "trident console against the Python SDK agent"
if TRIDENT_INTEROP_PYTHON="$venv/bin/python" TRIDENT_INTEROP_PYTHON03="$venv03/bin/python" cargo test --locked --test it console -- --ignored >&2; then
  echo "ok   console python-sdk-agent (card, stream, input, tasks, cancel, push, conformance, compare: 3 bindings in Chromium; the v0.3 agent too)"
  passed=$((passed + 1))
else
  echo "FAIL console python-sdk-agent (card, stream, input, tasks, cancel, push, conformance, compare: 3 bindings in Chromium; the v0.3 agent too)"
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
