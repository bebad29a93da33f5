#!/usr/bin/env bash
# Starts or stops a Docker daemon for the container tests, idempotently: no bridge network, no
# iptables, no forwarding, no masquerading (every container runs with host networking, so all
# traffic stays on loopback). `start` does nothing when a daemon already answers; `stop` stops
# only the daemon this script started (its pid is recorded), never one started otherwise.
#
#   scripts/dockerd.sh start|stop|status
#
# State lives in $DOCKERD_STATE (default /tmp/conformance-dockerd): pid and log files.
set -euo pipefail

state=${DOCKERD_STATE:-/tmp/conformance-dockerd}
pidfile=$state/dockerd.pid
logfile=$state/dockerd.log
docker=${DOCKER:-docker}

answers() { timeout 5 "$docker" version --format '{{.Server.Version}}' >/dev/null 2>&1; }
ours() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

case "${1:-}" in
start)
  if answers; then
    echo "dockerd: a daemon already answers; not starting another" >&2
    exit 0
  fi
  command -v dockerd >/dev/null 2>&1 || { echo "dockerd: not installed (apt-get install -y docker.io)" >&2; exit 2; }
  [ "$(id -u)" = 0 ] || { echo "dockerd: must run as root" >&2; exit 2; }
  mkdir -p "$state"
  if ours; then
    echo "dockerd: our daemon (pid $(cat "$pidfile")) runs but does not answer yet" >&2
  else
    nohup dockerd --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
      >"$logfile" 2>&1 </dev/null &
    echo $! >"$pidfile"
  fi
  for _ in $(seq 1 60); do
    if answers; then
      echo "dockerd: started (pid $(cat "$pidfile"), log $logfile)" >&2
      exit 0
    fi
    ours || { echo "dockerd: exited; see $logfile" >&2; tail -n 20 "$logfile" >&2; rm -f "$pidfile"; exit 1; }
    sleep 0.5
  done
  echo "dockerd: no answer after 30 s; see $logfile" >&2
  exit 1
  ;;
stop)
  if ! ours; then
    rm -f "$pidfile"
    echo "dockerd: none started by this script is running" >&2
    exit 0
  fi
  pid=$(cat "$pidfile")
  kill -TERM "$pid"
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; echo "dockerd: stopped (pid $pid)" >&2; exit 0; }
    sleep 0.5
  done
  echo "dockerd: pid $pid still running after 30 s; sending SIGKILL" >&2
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
  ;;
status)
  if answers; then echo "running"; else echo "not running"; exit 1; fi
  ;;
*)
  echo "usage: $0 start|stop|status" >&2
  exit 2
  ;;
esac
