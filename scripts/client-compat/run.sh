#!/usr/bin/env bash
# Held-out wire checks: installs pinned independent Consul clients (PyPI py-consul, npm consul)
# into a temp dir, starts the agent-sim binary on a free port, runs both client scripts against
# it, and exits non-zero if any expectation fails.
#
#   scripts/client-compat/run.sh            # builds agent-sim (debug) first
#   AGENT_SIM=/path/to/agent-sim scripts/client-compat/run.sh
#   CLIENT_COMPAT_DIR=/tmp/cc scripts/client-compat/run.sh   # reuse an install dir
set -euo pipefail

PY_CONSUL_VERSION=1.8.0
NPM_CONSUL_VERSION=2.0.1

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if [[ -n "${CLIENT_COMPAT_DIR:-}" ]]; then
  work="$CLIENT_COMPAT_DIR"
  cleanup_work=""
else
  work="$(mktemp -d)"
  cleanup_work="$work"
fi
mkdir -p "$work"
started=$(date +%s)

if [[ -z "${AGENT_SIM:-}" ]]; then
  cargo build -q -p agent-sim --bin agent-sim --manifest-path "$root/Cargo.toml"
  AGENT_SIM="$root/target/debug/agent-sim"
fi

if [[ ! -x "$work/venv/bin/python" ]]; then
  python3 -m venv "$work/venv"
fi
"$work/venv/bin/pip" install -q "py-consul==$PY_CONSUL_VERSION"
if [[ ! -d "$work/node_modules/consul" ]]; then
  (cd "$work" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund "consul@$NPM_CONSUL_VERSION" >/dev/null)
fi

port=$("$work/venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$AGENT_SIM" --listen "127.0.0.1:$port" --grpc-listen off >"$work/agent-sim.log" 2>&1 &
sim=$!
trap 'kill "$sim" 2>/dev/null || true; [[ -n "$cleanup_work" ]] && rm -rf "$cleanup_work"' EXIT
for _ in $(seq 1 100); do
  if curl -sf "http://127.0.0.1:$port/v1/status/leader" >/dev/null; then break; fi
  sleep 0.1
done

status=0
"$work/venv/bin/python" "$here/py_client.py" "127.0.0.1:$port" || status=1
NODE_PATH="$work/node_modules" node "$here/node_client.js" "127.0.0.1:$port" || status=1
echo "client-compat: $(( $(date +%s) - started ))s, status $status"
exit $status
