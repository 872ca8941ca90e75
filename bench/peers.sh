#!/usr/bin/env bash
# Trident beside the official A2A SDKs' echo agents, one command, one table:
#   bash bench/peers.sh [trident-bench peers options, e.g. --duration 5 --rounds 1]
#
# Builds (release) trident-bench and the Rust SDK peer (bench/peers/rust-sdk: a cargo project
# of its own, outside the workspace, with its own Cargo.lock and target/), installs the Python
# SDK (a2a-sdk 1.3.0 and uvicorn, pinned by interop/python/requirements.txt) into
# bench/peers/.venv and the JS SDK (@a2a-js/sdk 1.3.0, pinned by bench/peers/js/package-lock.json)
# with `npm ci`, each only when its pins changed, then runs `trident-bench peers`.
# Needs cargo, python3 (venv), node >= 20 and npm; taskset for pinning.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
peers="$here/peers"
cd "$root"
log() { printf 'peers: %s\n' "$*" >&2; }

log "building trident-bench (release)"
cargo build --quiet --release --locked -p trident-bench

log "building the Rust SDK echo agent (release, bench/peers/rust-sdk)"
(cd "$peers/rust-sdk" && cargo build --quiet --release --locked)

venv="$peers/.venv"
req="$root/interop/python/requirements.txt"
if [[ ! -x "$venv/bin/python" ]] || ! cmp -s "$req" "$venv/.peers-requirements"; then
  log "installing the Python SDK into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$req"
  cp "$req" "$venv/.peers-requirements"
fi

lock="$peers/js/package-lock.json"
if [[ ! -d "$peers/js/node_modules" ]] || ! cmp -s "$lock" "$peers/js/node_modules/.peers-lock"; then
  log "installing the JS SDK (npm ci)"
  (cd "$peers/js" && npm ci --no-audit --no-fund --loglevel=error) >&2
  cp "$lock" "$peers/js/node_modules/.peers-lock"
fi

target_dir="${CARGO_TARGET_DIR:-$root/target}"
exec "$target_dir/release/trident-bench" peers --dir "$peers" "$@"
