#!/usr/bin/env bash
# Proves our contracts (proto/ and docs/openapi.json) are products clients can use:
#   lint     buf lint of proto/ (buf.yaml: STANDARD + COMMENTS)            @bufbuild/buf (npm)
#   grpc     Python gRPC client generated from proto/ with grpcio-tools     contracts/python/grpc_client.py
#   rest     TypeScript client generated from docs/openapi.json, type-checked with tsc and run with tsx
#            (openapi-typescript + openapi-fetch)                          contracts/ts/client.ts
#   openapi  openapi-spec-validator: docs/openapi.json is valid OpenAPI 3.1
#   fuzz     schemathesis: property-based tests of the REST binding against docs/openapi.json
#            (no 5xx, every response matches its schema), bounded for CI
#
# Installs what it needs (contracts/.venv from requirements.txt, `npm ci` in contracts/ts; all
# pinned), builds target/debug/trident (or uses $TRIDENT_BIN), starts `trident serve --agent demo
# --store memory` on a free loopback port, runs the checks, stops the server, and ends with the
# one line `contracts: N passed, M failed`. Exit status is non-zero when any check failed.
#
# Environment: TRIDENT_BIN (server binary), CONTRACTS_FUZZ_EXAMPLES (schemathesis
# --max-examples per operation, default 20), CONTRACTS_FUZZ_TIME (its --max-time, default 120).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
cd "$root"

log() { printf 'contracts: %s\n' "$*" >&2; }

# --- dependencies (skipped when the pinned files have not changed since the last install) ---

venv="$here/.venv"
req="$here/requirements.txt"
if [[ ! -x "$venv/bin/python" ]] || ! cmp -s "$req" "$venv/.contracts-requirements"; then
  log "installing the Python tools into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$req"
  cp "$req" "$venv/.contracts-requirements"
fi

ts="$here/ts"
lock="$ts/package-lock.json"
if [[ ! -d "$ts/node_modules" ]] || ! cmp -s "$lock" "$ts/node_modules/.contracts-lock"; then
  log "installing the npm tools (npm ci)"
  (cd "$ts" && npm ci --no-audit --no-fund --loglevel=error) >&2
  cp "$lock" "$ts/node_modules/.contracts-lock"
fi

passed=0
failed=0
step() { # step NAME COMMAND...: runs one check, counts it
  local name="$1"
  shift
  log "--- $name"
  if "$@"; then
    passed=$((passed + 1))
    printf '  ok    %s\n' "$name"
  else
    failed=$((failed + 1))
    printf '  FAIL  %s\n' "$name"
  fi
}

# --- static checks ---

step "lint: buf lint proto/" "$ts/node_modules/.bin/buf" lint
step "openapi: docs/openapi.json is valid OpenAPI 3.1" \
  "$venv/bin/python" -c '
import json, sys
from openapi_spec_validator import validate
from openapi_spec_validator.validation import OpenAPIV31SpecValidator
with open("docs/openapi.json") as f:
    spec = json.load(f)
assert spec["openapi"].startswith("3.1"), spec["openapi"]
validate(spec, cls=OpenAPIV31SpecValidator)
print("  docs/openapi.json: valid OpenAPI", spec["openapi"], "-", len(spec["paths"]), "paths,", len(spec["components"]["schemas"]), "schemas")
'

# --- generated clients (at CI time, from the committed contracts) ---

gen="$(mktemp -d -t trident-contracts.XXXXXX)"
wkt="$("$venv/bin/python" -c 'import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"))')"
# -Iproto resolves the google/api stand-ins at compile time; at run time the google.api modules
# come from googleapis-common-protos (same files, same extension numbers).
step "grpc: generate the Python client (grpcio-tools)" \
  "$venv/bin/python" -m grpc_tools.protoc -Iproto -I"$wkt" \
  --python_out="$gen" --grpc_python_out="$gen" lf/a2a/v1/a2a.proto
mkdir -p "$ts/gen"
step "rest: generate the TypeScript types (openapi-typescript)" \
  "$ts/node_modules/.bin/openapi-typescript" docs/openapi.json -o "$ts/gen/a2a.d.ts" --silent
step "rest: the TypeScript client type-checks (tsc --noEmit)" \
  "$ts/node_modules/.bin/tsc" -p "$ts"

# --- the server ---

target_dir="${CARGO_TARGET_DIR:-$root/target}"
bin="${TRIDENT_BIN:-$target_dir/debug/trident}"
if [[ -z "${TRIDENT_BIN:-}" ]]; then
  cargo build --quiet --bin trident
fi

server_pid=""
server_log="$(mktemp -t trident-contracts.XXXXXX)"
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$gen" "$server_log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port="$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
base="http://127.0.0.1:$port"
"$bin" serve --agent demo --store memory --listen "127.0.0.1:$port" >"$server_log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  if "$venv/bin/python" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)" \
    "$base/openapi.json" 2>/dev/null; then
    break
  fi
  if ! kill -0 "$server_pid" 2>/dev/null; then
    log "the server exited:"
    cat "$server_log" >&2
    exit 1
  fi
  sleep 0.1
done
log "trident serve on $base (pid $server_pid)"

step "openapi: the server serves docs/openapi.json at /openapi.json" \
  "$venv/bin/python" -c '
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/openapi.json", timeout=5) as r:
    served = json.load(r)
with open("docs/openapi.json") as f:
    assert served == json.load(f), "served document differs from docs/openapi.json"
' "$base"

step "grpc: the Python client calls trident serve" \
  timeout 120 "$venv/bin/python" "$here/python/grpc_client.py" "$gen" "127.0.0.1:$port"
step "rest: the TypeScript client calls trident serve" \
  timeout 120 "$ts/node_modules/.bin/tsx" "$ts/client.ts" "$base"

# --- property-based tests of the REST binding ---

examples="${CONTRACTS_FUZZ_EXAMPLES:-20}"
max_time="${CONTRACTS_FUZZ_TIME:-120}"
fuzz() {
  # Bounded twice: at most $examples cases per operation and phase, and at most $max_time
  # seconds for the run; the outer timeout is a last resort.
  # From contracts/, so schemathesis's cache (.schemathesis/) stays there, ignored.
  (cd "$here" && timeout $((max_time + 120)) "$venv/bin/st" run "$root/docs/openapi.json" \
    --url "$base" \
    --checks not_a_server_error,response_schema_conformance \
    --max-examples "$examples" \
    --max-time "$max_time" \
    --request-timeout 10 \
    --seed 1 \
    --workers 1 \
    --generation-database none \
    --no-color)
}
step "fuzz: schemathesis (no 5xx, responses match their schemas)" fuzz

if ! kill -0 "$server_pid" 2>/dev/null; then
  log "the server died during the run:"
  tail -50 "$server_log" >&2
  failed=$((failed + 1))
fi

echo "contracts: $passed passed, $failed failed"
[[ "$failed" -eq 0 ]]
