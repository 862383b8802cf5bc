#!/usr/bin/env bash
# Start the project's single-machine Slurm cluster from Debian's packages:
# munge (own key and socket), MariaDB (own data folder), slurmdbd, the accounting entities, slurmctld, slurmd.
# Waits until sinfo shows the node idle. Needs root (munge runs as its user, the daemons as root).
#
#   tools/slurm/start.sh [--fresh]     --fresh: wipe the state folder first (new database, job ids from 1)
#   export SLURM_CONF="$(tools/slurm/start.sh --conf)"   # where clients (sbatch, sacct) find the cluster
#
# Settings (environment): ETT_SLURM_DIR state folder (default ${TMPDIR:-/tmp}/ett-slurm),
# ETT_SLURM_NODES node daemons (default 1: node ett1; N > 1: nodes node1..nodeN, one `slurmd -N nodeK` each on this
# machine, each on a port of its own, taken like the others and appended to etc/ports),
# ETT_SLURM_CPUS job slots of each node (default 4), ETT_SLURM_GPUS gres/gpu count of each node (default 4),
# ETT_SLURM_REQUEUE_EXIT exit code that Slurm requeues (default 42), ETT_SLURM_PORT first of four
# consecutive TCP ports (slurmctld, slurmd, slurmdbd, MariaDB; default: four free ports the kernel picks when none of
# the cluster's daemons runs, so clusters with different state folders run side by side), ETT_SLURM_WAIT seconds to
# wait for each daemon (default 180: a loaded 2-core machine needs them; a daemon that exits fails the start at once).
# The ports in use are in the rendered slurm.conf and in $ETT_SLURM_DIR/etc/ports (`ctld slurmd dbd db`).
# On a failure it prints the logs' tails and stops whatever it started.
# There is no systemd here: every daemon runs in the foreground (-D) in the background of this
# script, its PID in $ETT_SLURM_DIR/run/. tools/slurm/stop.sh stops them all.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${ETT_SLURM_DIR:-${TMPDIR:-/tmp}/ett-slurm}"
CPUS="${ETT_SLURM_CPUS:-4}"
GPUS="${ETT_SLURM_GPUS:-4}"
REQUEUE_EXIT="${ETT_SLURM_REQUEUE_EXIT:-42}"
NODES="${ETT_SLURM_NODES:-1}"
CONF="$DIR/etc/slurm.conf"

if [[ "${1:-}" == "--conf" ]]; then echo "$CONF"; exit 0; fi

WAIT="${ETT_SLURM_WAIT:-180}"
say() { echo "[slurm] $*"; }
die() {
  echo "[slurm] error: $*" >&2
  if [[ -d "$DIR/log" ]]; then
    for f in "$DIR"/log/* "$DIR"/munge/munged.log; do
      [[ -s "$f" ]] && { echo "--- $f (last lines)" >&2; tail -n 8 "$f" >&2; }
    done
  fi
  [[ -d "$DIR/run" ]] && "$HERE/stop.sh" >&2 || true
  exit 3
}

[[ "$NODES" =~ ^[1-9][0-9]*$ ]] || die "ETT_SLURM_NODES must be a whole number from 1, not '$NODES'"
if ((NODES == 1)); then
  NODE_NAMES=(ett1); NODE=ett1; SLURMD_ID=""  # the single-node cluster as it always was
else
  NODE_NAMES=(); for ((k = 1; k <= NODES; k++)); do NODE_NAMES+=("node$k"); done
  NODE="node[1-$NODES]"; SLURMD_ID="-%n"  # slurmd expands %n to its -N name: a pid file, log and spool of its own
fi
slurmd_pid() { if ((NODES == 1)); then echo "$DIR/run/slurmd.pid"; else echo "$DIR/run/slurmd-$1.pid"; fi; }

[[ "$(id -u)" == 0 ]] || die "needs root (munge must run as the munge user, slurmd as root); run with sudo"
for bin in munged mariadbd mariadb-install-db slurmdbd slurmctld slurmd sacctmgr sinfo; do
  command -v "$bin" >/dev/null 2>&1 || [[ -x "/usr/sbin/$bin" ]] || die "$bin not found: apt-get install slurm-wlm slurmdbd slurm-client munge mariadb-server slurm-wlm-basic-plugins slurm-wlm-mysql-plugin"
done
export PATH="$PATH:/usr/sbin"
export SLURM_CONF="$CONF"

alive() { [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

if [[ "${1:-}" == "--fresh" ]]; then
  "$HERE/stop.sh" >/dev/null 2>&1 || true
  rm -rf "$DIR"
fi
all_slurmd_alive() { local n; for n in "${NODE_NAMES[@]}"; do alive "$(slurmd_pid "$n")" || return 1; done; }
if all_slurmd_alive && alive "$DIR/run/slurmctld.pid" && sinfo -h >/dev/null 2>&1; then
  say "already running ($DIR)"; echo "export SLURM_CONF=$CONF"; exit 0
fi

t_start=$(date +%s.%N)
mkdir -p "$DIR"; chmod 755 "$DIR"
for u in munge mysql; do  # both daemons run as their own users: every folder above $DIR must let them through
  runuser -u "$u" -- test -x "$DIR" || die "user $u cannot reach $DIR (a parent folder is not searchable by others); set ETT_SLURM_DIR elsewhere"
done
HOST="$(hostname -s)"
USER_NAME="$(id -un)"
mkdir -p "$DIR"/{etc,state,spool,run,log,dev}
((NODES == 1)) || for n in "${NODE_NAMES[@]}"; do mkdir -p "$DIR/spool/$n"; done
for ((g = 0; g < GPUS; g++)); do touch "$DIR/dev/gpu$g"; done
chmod 755 "$DIR"
DB_PASS_FILE="$DIR/etc/db-pass"
[[ -s "$DB_PASS_FILE" ]] || (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$DB_PASS_FILE")
DB_PASS="$(cat "$DB_PASS_FILE")"

# Ports: a daemon of this cluster that still runs keeps the ones it has (from etc/ports); otherwise ETT_SLURM_PORT
# and the three after it, or four ports free now. With N > 1 nodes, node1 has the slurmd port and node2..nodeN
# N - 1 more (after ETT_SLURM_PORT + 3, or free ones), appended to etc/ports. bind() to port 0 gets them from the kernel (held together, so
# distinct; Linux gives bind(0) odd ports and outgoing connections even ones, so a connection made before a daemon
# binds does not take its port).
free_ports() {  # n -> n distinct TCP ports that no socket is bound to now
  python3 -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("0.0.0.0", 0))
print(*[s.getsockname()[1] for s in socks])' "$1"
}
PORTS_FILE="$DIR/etc/ports"
any_alive=""
for d in munged mariadbd slurmdbd slurmctld slurmd; do alive "$DIR/run/$d.pid" && any_alive=1; done
for f in "$DIR"/run/slurmd-*.pid; do alive "$f" && any_alive=1; done
NODE_PORTS=()
if [[ -n "$any_alive" && -s "$PORTS_FILE" ]]; then
  read -r CTLD_PORT SLURMD_PORT DBD_PORT DB_PORT NODE_PORTS_REST < "$PORTS_FILE"
  read -r -a NODE_PORTS <<< "${NODE_PORTS_REST:-}"
  ((${#NODE_PORTS[@]} == NODES - 1)) || die "the running cluster has $((${#NODE_PORTS[@]} + 1)) node(s) ($PORTS_FILE), not $NODES: stop it first"
elif [[ -n "${ETT_SLURM_PORT:-}" ]]; then
  P="$ETT_SLURM_PORT"; CTLD_PORT=$P; SLURMD_PORT=$((P + 1)); DBD_PORT=$((P + 2)); DB_PORT=$((P + 3))
  for ((k = 2; k <= NODES; k++)); do NODE_PORTS+=($((P + 2 + k))); done
else
  read -r CTLD_PORT SLURMD_PORT DBD_PORT DB_PORT NODE_PORTS_REST < <(free_ports $((3 + NODES))) \
    || die "could not find $((3 + NODES)) free TCP ports (python3 missing?)"
  read -r -a NODE_PORTS <<< "${NODE_PORTS_REST:-}"
fi
[[ -n "${DB_PORT:-}" ]] || die "no ports (see $PORTS_FILE)"
echo "$CTLD_PORT $SLURMD_PORT $DBD_PORT $DB_PORT${NODE_PORTS[*]:+ ${NODE_PORTS[*]}}" > "$PORTS_FILE"

# The node definitions of slurm.conf: one line for ett1 as before, or one a node, each with its own Port.
NODE_SPEC="NodeAddr=127.0.0.1 NodeHostname=$HOST CPUs=$CPUS RealMemory=4000 Gres=gpu:$GPUS State=UNKNOWN"
if ((NODES == 1)); then
  NODE_LINES="NodeName=ett1 $NODE_SPEC"
else
  NODE_LINES="NodeName=node1 Port=$SLURMD_PORT $NODE_SPEC"
  for ((k = 2; k <= NODES; k++)); do NODE_LINES+="\\nNodeName=node$k Port=${NODE_PORTS[k - 2]} $NODE_SPEC"; done
fi

render() {  # template -> file
  sed -e "s|@DIR@|$DIR|g" -e "s|@HOST@|$HOST|g" -e "s|@USER@|$USER_NAME|g" -e "s|@NODE@|$NODE|g" \
      -e "s|@NODE_LINES@|$NODE_LINES|g" -e "s|@SLURMD_ID@|$SLURMD_ID|g" -e "s|@SLURMD_ID_DIR@|${SLURMD_ID:+/%n}|g" \
      -e "s|@CPUS@|$CPUS|g" -e "s|@GPUS@|$GPUS|g" -e "s|@GPU_LAST@|$((GPUS - 1))|g" -e "s|@REQUEUE_EXIT@|$REQUEUE_EXIT|g" \
      -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@SLURMD_PORT@|$SLURMD_PORT|g" -e "s|@DBD_PORT@|$DBD_PORT|g" \
      -e "s|@DB_PORT@|$DB_PORT|g" -e "s|@DB_PASS@|$DB_PASS|g" "$1" > "$2"
}
render "$HERE/slurm.conf.in" "$DIR/etc/slurm.conf"
render "$HERE/gres.conf.in" "$DIR/etc/gres.conf"
render "$HERE/slurmdbd.conf.in" "$DIR/etc/slurmdbd.conf"
chmod 600 "$DIR/etc/slurmdbd.conf"
chmod 644 "$DIR/etc/slurm.conf" "$DIR/etc/gres.conf" "$PORTS_FILE"

declare -A PIDS  # daemon -> the PID this script started it with (its pidfile is rewritten by the daemon itself)
wait_for() {  # seconds, description, pidfile of the daemon, command...
  # Polls the command; fails at once when the daemon has exited (a port taken, a bad setting): then waiting longer
  # cannot help. The seconds only bound a daemon that runs but never answers.
  local n="$1" what="$2" pidfile="$3"; shift 3
  local name; name="$(basename "$pidfile" .pid)"
  local pid="${PIDS[$name]:-$(cat "$pidfile" 2>/dev/null || true)}"
  for ((i = 0; i < n * 10; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    if [[ -n "$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then die "$what exited before it came up (logs: $DIR/log)"; fi
    sleep 0.1
  done
  die "$what did not come up within ${n}s (logs: $DIR/log)"
}
background() {  # pidfile, log, command...
  local pidfile="$1" log="$2"; shift 2
  "$@" >>"$log" 2>&1 &
  PIDS[$(basename "$pidfile" .pid)]=$!
  echo $! > "$pidfile"
}

# 1. munge: a private daemon with its own key and socket (no /run/munge, nothing shared with a system munge)
MUNGE="$DIR/munge"
mkdir -p "$MUNGE"; chown munge:munge "$MUNGE"; chmod 755 "$MUNGE"  # munged: the socket folder must be searchable by all
if ! alive "$DIR/run/munged.pid"; then
  if [[ ! -s "$MUNGE/munge.key" ]]; then
    runuser -u munge -- mungekey --create --keyfile="$MUNGE/munge.key" >>"$DIR/log/munged.log" 2>&1 \
      || die "mungekey failed (see $DIR/log/munged.log)"
  fi
  runuser -u munge -- munged --socket="$MUNGE/munge.socket" --key-file="$MUNGE/munge.key" \
    --pid-file="$MUNGE/munged.pid" --log-file="$MUNGE/munged.log" --seed-file="$MUNGE/munged.seed" \
    >>"$DIR/log/munged.log" 2>&1 || die "munged did not start (see $DIR/log/munged.log and $MUNGE/munged.log)"
  cp "$MUNGE/munged.pid" "$DIR/run/munged.pid"
fi
wait_for "$WAIT" munge "$DIR/run/munged.pid" bash -c "munge -S '$MUNGE/munge.socket' -n </dev/null | unmunge -S '$MUNGE/munge.socket'"

# 2. MariaDB in its own data folder, TCP on 127.0.0.1 only
mkdir -p "$DIR/mysql-run"; chown mysql:mysql "$DIR/mysql-run"
SOCK="$DIR/mysql-run/mysql.sock"
if ! alive "$DIR/run/mariadbd.pid"; then
  if [[ ! -d "$DIR/mysql/mysql" ]]; then
    mkdir -p "$DIR/mysql"; chown mysql:mysql "$DIR/mysql"
    mariadb-install-db --no-defaults --datadir="$DIR/mysql" --user=mysql --auth-root-authentication-method=socket \
      --skip-test-db >>"$DIR/log/mariadb-install.log" 2>&1 || die "mariadb-install-db failed (see $DIR/log/mariadb-install.log)"
  fi
  background "$DIR/run/mariadbd.pid" "$DIR/log/mariadbd.log" \
    mariadbd --no-defaults --datadir="$DIR/mysql" --user=mysql --socket="$SOCK" \
      --pid-file="$DIR/mysql-run/mariadbd.pid" --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
      --innodb-buffer-pool-size=64M --innodb-log-file-size=16M --log-error="$DIR/log/mariadbd.err"
  wait_for "$WAIT" MariaDB "$DIR/run/mariadbd.pid" mariadb --no-defaults -S "$SOCK" -u root -e 'select 1'
fi
mariadb --no-defaults -S "$SOCK" -u root <<SQL
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
FLUSH PRIVILEGES;
SQL

# 3. slurmdbd, then the cluster, accounts and user in its database
if ! alive "$DIR/run/slurmdbd.pid"; then
  background "$DIR/run/slurmdbd.pid" "$DIR/log/slurmdbd.out" slurmdbd -D
fi
wait_for "$WAIT" slurmdbd "$DIR/run/slurmdbd.pid" sacctmgr -n list cluster
sacctmgr -i -Q add cluster ett >/dev/null 2>&1 || true
for acct in research production; do
  sacctmgr -i -Q add account "$acct" cluster=ett Description="$acct" Organization=ett >/dev/null 2>&1 || true
done
sacctmgr -i -Q add user "$USER_NAME" account=research,production DefaultAccount=research cluster=ett >/dev/null 2>&1 || true

# 4. slurmctld, then slurmd
if ! alive "$DIR/run/slurmctld.pid"; then
  background "$DIR/run/slurmctld.pid" "$DIR/log/slurmctld.out" slurmctld -D -i
fi
wait_for "$WAIT" slurmctld "$DIR/run/slurmctld.pid" scontrol ping
for n in "${NODE_NAMES[@]}"; do
  pf="$(slurmd_pid "$n")"
  if ! alive "$pf"; then
    background "$pf" "$DIR/log/slurmd$([[ $NODES == 1 ]] || echo "-$n").out" slurmd -D -N "$n"
  fi
done
node_idle() { [[ "$(sinfo -h -n "$1" -o %T 2>/dev/null | head -1)" == idle* ]]; }
for n in "${NODE_NAMES[@]}"; do
  wait_for "$WAIT" "node $n (idle in sinfo)" "$(slurmd_pid "$n")" node_idle "$n"
done
t_end=$(date +%s.%N)
say "up in $(awk "BEGIN{printf \"%.1f\", $t_end - $t_start}") s: $(sinfo -V), node $NODE with $CPUS slots and $GPUS gres/gpu$( ((NODES == 1)) || echo " each"); ports slurmctld $CTLD_PORT, slurmd $SLURMD_PORT${NODE_PORTS[*]:+ ${NODE_PORTS[*]}}, slurmdbd $DBD_PORT, MariaDB $DB_PORT; state in $DIR"
echo "export SLURM_CONF=$CONF"
