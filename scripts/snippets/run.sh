#!/usr/bin/env bash
# Runs the README's Python and Node testcontainers snippets for real (agent_sim_python.py,
# agent_sim_node.mjs): installs pinned testcontainers from PyPI and npm into a temp dir, starts
# the agent-sim:latest image through each with host networking on free ports, and checks the
# simulated agent answers and is gone afterwards. Needs a Docker daemon and the image
# (scripts/build-images.sh agent-sim). Ryuk (testcontainers' reaper) is off: it is an image
# from a registry this machine cannot reach; each snippet removes its own container. About a
# minute, mostly the installs.
#
#   scripts/snippets/run.sh
#   SNIPPETS_DIR=/tmp/sn scripts/snippets/run.sh     # reuse an install dir
set -euo pipefail

PY_TESTCONTAINERS_VERSION=4.15.0
# 10.x: 11 and later bring undici 7, which needs a newer Node than Debian's (zlib zstd).
NPM_TESTCONTAINERS_VERSION=10.28.0

here="$(cd "$(dirname "$0")" && pwd)"
if [[ -n "${SNIPPETS_DIR:-}" ]]; then
  work="$SNIPPETS_DIR"
  cleanup_work=""
else
  work="$(mktemp -d)"
  cleanup_work="$work"
fi
trap '[[ -n "$cleanup_work" ]] && rm -rf "$cleanup_work"' EXIT
mkdir -p "$work"

timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1 || {
  echo "snippets: no Docker daemon answers (as root: scripts/dockerd.sh start)" >&2; exit 2; }
docker image inspect agent-sim:latest >/dev/null 2>&1 || {
  echo "snippets: no agent-sim:latest image (scripts/build-images.sh agent-sim)" >&2; exit 2; }

if [[ ! -x "$work/venv/bin/python" ]]; then
  python3 -m venv "$work/venv"
fi
"$work/venv/bin/pip" install -q "testcontainers==$PY_TESTCONTAINERS_VERSION"
if [[ "$(cat "$work/node_modules/testcontainers/package.json" 2>/dev/null | "$work/venv/bin/python" -c "import json,sys; print(json.load(sys.stdin)[\"version\"])" 2>/dev/null)" != "$NPM_TESTCONTAINERS_VERSION" ]]; then
  (cd "$work" && npm init -y >/dev/null \
    && npm install --silent --no-audit --no-fund "testcontainers@$NPM_TESTCONTAINERS_VERSION" >/dev/null)
fi

# Two free ports below the ephemeral range for each snippet (host networking: no mapping).
free_ports() {
  "$work/venv/bin/python" - <<'PY'
import random, socket
ports = []
while len(ports) < 2:
    p = random.randint(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    if p not in ports:
        ports.append(p)
print(*ports)
PY
}

export TESTCONTAINERS_RYUK_DISABLED=true
# The daemon here has no bridge network, where testcontainers-node looks for the Docker host's
# gateway; with host networking the host is loopback.
export TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1
passed=0 failed=0
# shellcheck disable=SC2046
if "$work/venv/bin/python" "$here/agent_sim_python.py" $(free_ports); then
  passed=$((passed + 1))
else
  echo "snippets: the Python snippet failed" >&2; failed=$((failed + 1))
fi
cp "$here/agent_sim_node.mjs" "$work/agent_sim_node.mjs"   # resolves testcontainers from $work
# shellcheck disable=SC2046
if (cd "$work" && node agent_sim_node.mjs $(free_ports)); then
  passed=$((passed + 1))
else
  echo "snippets: the Node snippet failed" >&2; failed=$((failed + 1))
fi
echo "snippets: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
