#!/usr/bin/env bash
# Stop the project's Slurm cluster started by tools/slurm/start.sh: cancel every job and wait for its
# processes to end, then stop every slurmd, slurmctld, slurmdbd, MariaDB and (if start.sh started it) munge,
# each by the PID start.sh recorded, and check that none is left.
#
#   tools/slurm/stop.sh [--purge]      --purge: also delete the state folder (database, logs)
set -uo pipefail

DIR="${ETT_SLURM_DIR:-${TMPDIR:-/tmp}/ett-slurm}"
export SLURM_CONF="$DIR/etc/slurm.conf"
export PATH="$PATH:/usr/sbin"
say() { echo "[slurm] $*"; }

alive() { [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

if alive "$DIR/run/slurmctld.pid"; then
  scancel --full --user="$(id -un)" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do
    [[ -z "$(squeue -h -t RUNNING,COMPLETING,SUSPENDED -o %i 2>/dev/null)" ]] && break
    sleep 0.1
  done
  # pending (requeued) jobs were cancelled too; give slurmctld a moment to tell slurmdbd
  sleep 1
fi

stop() {  # name: TERM by recorded PID, wait up to 20 s, then KILL
  local name="$1" pidfile="$DIR/run/$1.pid"
  alive "$pidfile" || { rm -f "$pidfile"; return 0; }
  local pid; pid="$(cat "$pidfile")"
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < 200; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then say "$name did not stop on TERM: KILL"; kill -KILL "$pid" 2>/dev/null; sleep 0.2; fi
  rm -f "$pidfile"
  say "stopped $name ($pid)"
}
# slurmd, or with ETT_SLURM_NODES > 1 one slurmd a node (run/slurmd-nodeK.pid)
for f in "$DIR"/run/slurmd-*.pid; do [[ -e "$f" ]] && stop "$(basename "$f" .pid)"; done
for d in slurmd slurmctld slurmdbd mariadbd munged; do stop "$d"; done

# Processes of this cluster are the ones whose environment names its slurm.conf (slurmstepd inherits it from slurmd).
left=""
for p in /proc/[0-9]*; do
  if { tr '\0' '\n' < "$p/environ"; } 2>/dev/null | grep -qx "SLURM_CONF=$SLURM_CONF"; then
    case "$(basename "$(readlink "$p/exe" 2>/dev/null)")" in
      slurmstepd*|slurmd*|slurmctld*|slurmdbd*) left="$left ${p#/proc/}($(basename "$(readlink "$p/exe")"))";;
    esac
  fi
done
if [[ -n "$left" ]]; then say "still running:$left"; exit 1; fi
if [[ "${1:-}" == "--purge" ]]; then rm -rf "$DIR"; say "removed $DIR"; fi
say "no Slurm process left"
