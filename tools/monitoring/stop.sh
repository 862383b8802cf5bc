#!/usr/bin/env bash
# Stop the monitoring stack started by tools/monitoring/start.sh: each daemon by the PID start.sh recorded (TERM,
# then KILL after 10 s), then check that no process of this stack (one whose command line names its state folder)
# is left; exit 1 if one is.
#
#   tools/monitoring/stop.sh [--purge]      --purge: also delete the state folder
set -uo pipefail
DIR="${ETT_MON_DIR:-${TMPDIR:-/tmp}/ett-monitoring}"
say() { echo "[monitoring] $*"; }
alive() { [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
for name in prometheus alertmanager node_exporter; do
  pidfile="$DIR/run/$name.pid"
  alive "$pidfile" || { rm -f "$pidfile"; continue; }
  pid="$(cat "$pidfile")"
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && { say "$name did not stop on TERM: KILL"; kill -KILL "$pid" 2>/dev/null; sleep 0.2; }
  rm -f "$pidfile"
  say "stopped $name ($pid)"
done
left=""
for p in /proc/[0-9]*; do
  [[ -r "$p/cmdline" ]] || continue
  tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -qF -- "$DIR/" && left+=" ${p#/proc/}"
done
if [[ -n "$left" ]]; then say "processes of $DIR left:$left"; exit 1; fi
[[ "${1:-}" == "--purge" ]] && rm -rf "$DIR"
exit 0
