#!/usr/bin/env bash
# Stop the Spark cluster started by tools/spark/start.sh: the Connect server first (its application ends and the
# workers stop its executors), then each worker, then the master, each JVM by the PID start.sh recorded (TERM, then
# KILL after 20 s). Then the executors the workers started, if any is left: the JVMs working in a folder of this
# cluster's, each by its own PID. Exit 1 if a JVM of this cluster is still running after that.
#
#   tools/spark/stop.sh [--purge]      --purge: also delete the state folder (logs, the workers' work folders)
set -uo pipefail

DIR="$(realpath -m "${ETT_SPARK_DIR:-${TMPDIR:-/tmp}/ett-spark}")"
say() { echo "[spark] $*"; }
alive() { [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

end() {  # name, pid: TERM, wait up to 20 s, then KILL
  local name="$1" pid="$2"
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 200; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then say "$name did not stop on TERM: KILL"; kill -KILL "$pid" 2>/dev/null; sleep 0.2; fi
  say "stopped $name ($pid)"
}
for name in connect worker2 worker1 master; do
  pidfile="$DIR/run/$name.pid"
  alive "$pidfile" && end "$name" "$(cat "$pidfile")"
  rm -f "$pidfile"
done

# A JVM of this cluster: one whose working folder or command line is in the state folder (the workers start their
# executors in their work folders; the daemons' command lines name their work folders and logs).
ours() {
  local found="" p
  for p in /proc/[0-9]*; do
    [[ "$(readlink "$p/exe" 2>/dev/null)" == */java ]] || continue
    if [[ "$(readlink "$p/cwd" 2>/dev/null)/" == "$DIR"/* ]] || tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -qF -- "$DIR/"; then
      found+=" ${p#/proc/}"
    fi
  done
  echo "$found"
}
for pid in $(ours); do end "executor" "$pid"; done
left="$(ours)"
if [[ -n "$left" ]]; then say "JVMs of $DIR still running:$left"; exit 1; fi
if [[ "${1:-}" == "--purge" ]]; then rm -rf "$DIR"; say "removed $DIR"; fi
say "no Spark JVM of $DIR left"
