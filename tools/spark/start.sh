#!/usr/bin/env bash
# Start the project's Spark standalone cluster on this machine, from the pyspark pip package (its bin/spark-class and
# jars/, the Spark Connect jar included): a master, two workers (each its own JVM and work folder) and a Spark Connect
# server running on the cluster. Everything listens on 127.0.0.1 only (SPARK_LOCAL_IP, the hosts given to the master
# and the workers, the Connect server's gRPC binding address), on ports the kernel picks free at start.
# No root needed. No systemd: each JVM runs in the background of this script, its own PID (spark-class execs the JVM)
# in $DIR/run/; tools/spark/stop.sh stops them all.
#
#   tools/spark/start.sh [--fresh]        --fresh: stop a cluster of this state folder and wipe the folder first
#   . "$ETT_SPARK_DIR/ports"              SPARK_MASTER_URL (spark://), SPARK_CONNECT_URL (sc://), the web UIs' URLs
#
# Cores: each worker offers ETT_SPARK_WORKER_CORES (default 3; more than the machine has is allowed, the work is
# small) and ETT_SPARK_WORKER_MEMORY for executors (default 2g). An application that does not set spark.cores.max
# gets ETT_SPARK_APP_CORES (default 2: the master's spark.deploy.defaultCores), and the Connect server takes
# ETT_SPARK_CONNECT_CORES (default 2), so the Connect server and two spark:// applications (the tests' and an `ett`
# command beside them) all get cores: an application left to take every core starves the next one, which then waits
# forever. Each application's executors have ETT_SPARK_EXECUTOR_MEMORY (default 1g).
#
# Settings (environment): ETT_SPARK_DIR state folder (default ${TMPDIR:-/tmp}/ett-spark), SPARK_HOME (default: the
# pyspark package of the project's .venv, else of python3), ETT_SPARK_WAIT seconds to wait for each part (default
# 180: a loaded 2-core machine needs them; a JVM that exits fails the start at once), ETT_SPARK_JAVA_OPTS more options
# for the daemons' JVMs and the Connect server's driver and executors (CI gives -XX:TieredStopAtLevel=1: on tiny test
# data the JIT's optimizing compiler never pays back the CPU it takes).
# On a failure it prints the logs' tails and stops whatever it started.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DIR="$(realpath -m "${ETT_SPARK_DIR:-${TMPDIR:-/tmp}/ett-spark}")"
WAIT="${ETT_SPARK_WAIT:-180}"
WORKER_CORES="${ETT_SPARK_WORKER_CORES:-3}"
WORKER_MEMORY="${ETT_SPARK_WORKER_MEMORY:-2g}"
APP_CORES="${ETT_SPARK_APP_CORES:-2}"
CONNECT_CORES="${ETT_SPARK_CONNECT_CORES:-2}"
EXECUTOR_MEMORY="${ETT_SPARK_EXECUTOR_MEMORY:-1g}"
WORKERS=(worker1 worker2)
DAEMONS=(master "${WORKERS[@]}" connect)

say() { echo "[spark] $*"; }
die() {
  echo "[spark] error: $*" >&2
  for f in "$DIR"/log/*.log; do [[ -s "$f" ]] && { echo "--- $f (last lines)" >&2; tail -n 8 "$f" >&2; }; done
  [[ -d "$DIR/run" ]] && "$HERE/stop.sh" >&2 || true
  exit 3
}
alive() { [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

if [[ "${1:-}" == "--fresh" ]]; then
  "$HERE/stop.sh" >/dev/null 2>&1 || true
  rm -rf "$DIR"
fi
running=0
for d in "${DAEMONS[@]}"; do alive "$DIR/run/$d.pid" && running=$((running + 1)); done
if ((running == ${#DAEMONS[@]})) && [[ -s "$DIR/ports" ]]; then
  say "already running ($DIR)"; cat "$DIR/ports"; exit 0
fi
((running == 0)) || die "part of the cluster of $DIR runs ($running of ${#DAEMONS[@]}): tools/spark/stop.sh first"

# Spark itself: SPARK_HOME, or the pyspark pip package (it ships bin/spark-class, the jars and the Connect jar)
if [[ -z "${SPARK_HOME:-}" ]]; then
  for py in "$ROOT/.venv/bin/python" python3; do
    SPARK_HOME="$("$py" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null)" && break
  done
fi
[[ -n "${SPARK_HOME:-}" && -x "$SPARK_HOME/bin/spark-class" ]] \
  || die "Spark not found: set SPARK_HOME, or install pyspark (make setup installs it into .venv)"
compgen -G "$SPARK_HOME/jars/spark-connect_*.jar" >/dev/null \
  || die "no Spark Connect jar in $SPARK_HOME/jars (spark-connect_<scala>-<version>.jar): the Connect server cannot start"
command -v java >/dev/null 2>&1 || [[ -x "${JAVA_HOME:-/nonexistent}/bin/java" ]] \
  || die "java not found: apt-get install openjdk-17-jre-headless (or set JAVA_HOME)"
export SPARK_HOME

t_start=$(date +%s.%N)
mkdir -p "$DIR"/{conf,run,log,worker1,worker2,connect}
# free ports, held together so that they are distinct: master, its web UI, each worker and its web UI, Connect
read -r MASTER_PORT MASTER_UI W1_PORT W1_UI W2_PORT W2_UI CONNECT_PORT < <(python3 -c '
import socket
s = [socket.socket() for _ in range(7)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
MASTER_URL="spark://127.0.0.1:$MASTER_PORT"

# Only what this script says: an empty configuration folder of its own (no spark-env.sh, no spark-defaults.conf from
# elsewhere); every service on the loopback interface.
export SPARK_CONF_DIR="$DIR/conf" SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1
export SPARK_DAEMON_MEMORY=512m
export SPARK_DAEMON_JAVA_OPTS="-Djava.net.preferIPv4Stack=true -XX:+UseSerialGC${ETT_SPARK_JAVA_OPTS:+ $ETT_SPARK_JAVA_OPTS}"
# the master takes no REST submissions (port 6066 on by default): applications come through spark://
export SPARK_MASTER_OPTS="-Dspark.deploy.defaultCores=$APP_CORES -Dspark.master.rest.enabled=false"
unset SPARK_MASTER_HOST SPARK_MASTER_PORT SPARK_WORKER_DIR SPARK_WORKER_CORES SPARK_WORKER_MEMORY

start() {  # name, command...: run in the background, record its PID (spark-class and spark-submit exec the JVM)
  local name="$1"; shift
  "$@" >"$DIR/log/$name.log" 2>&1 &
  echo $! > "$DIR/run/$name.pid"
}
is_jvm() {  # pidfile: the recorded process is a JVM by now (the launcher has exec'ed it)
  alive "$1" && [[ "$(readlink "/proc/$(cat "$1")/exe" 2>/dev/null)" == */java ]]
}
master_json() { python3 - "http://127.0.0.1:$MASTER_UI/json/" "$@" <<'PY'
import json, sys, urllib.request
doc = json.load(urllib.request.urlopen(sys.argv[1], timeout=5))
what = sys.argv[2]
if what == "workers":  # alive workers
    print(sum(w["state"] == "ALIVE" for w in doc["workers"]))
elif what == "connect":  # the Connect server's application: its id and cores, once it has executors' cores
    apps = [a for a in doc["activeapps"] if a["name"] == sys.argv[3] and a["cores"] > 0]
    print(f'{apps[0]["id"]} {apps[0]["cores"]}' if apps else "")
PY
}
wait_for() {  # what, check command...: until the check succeeds; fail at once if a started JVM exited
  local what="$1"; shift
  for ((i = 0; i < WAIT * 2; i++)); do
    for d in "${DAEMONS[@]}"; do
      [[ -e "$DIR/run/$d.pid" ]] && ! alive "$DIR/run/$d.pid" && die "$d exited at start (log: $DIR/log/$d.log)"
    done
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  die "$what not ready after $WAIT s"
}

CLASS=org.apache.spark.deploy
start master "$SPARK_HOME/bin/spark-class" $CLASS.master.Master \
  --host 127.0.0.1 --port "$MASTER_PORT" --webui-port "$MASTER_UI"
wait_for "the master" master_json workers
say "master $MASTER_URL  web UI http://127.0.0.1:$MASTER_UI (JSON: /json/)  PID $(cat "$DIR/run/master.pid")"

ports=("$W1_PORT $W1_UI" "$W2_PORT $W2_UI")
for k in 0 1; do
  w="${WORKERS[$k]}"; read -r port ui <<<"${ports[$k]}"
  start "$w" "$SPARK_HOME/bin/spark-class" $CLASS.worker.Worker --host 127.0.0.1 --port "$port" --webui-port "$ui" \
    --cores "$WORKER_CORES" --memory "$WORKER_MEMORY" --work-dir "$DIR/$w" "$MASTER_URL"
done
two_workers() { [[ "$(master_json workers)" == 2 ]]; }
wait_for "two workers" two_workers
for k in 0 1; do
  w="${WORKERS[$k]}"; read -r port ui <<<"${ports[$k]}"
  say "$w 127.0.0.1:$port  $WORKER_CORES cores, $WORKER_MEMORY  web UI http://127.0.0.1:$ui  work $DIR/$w  PID $(cat "$DIR/run/$w.pid")"
done

# The Connect server: a Spark application on the cluster (its driver in this JVM, its executors on the workers),
# serving Spark Connect clients on 127.0.0.1:CONNECT_PORT. Its UI is off; its driver's ports are on 127.0.0.1.
CONNECT_NAME="ett Spark Connect server"
JAVA_OPTS="-Djava.net.preferIPv4Stack=true -XX:+UseSerialGC${ETT_SPARK_JAVA_OPTS:+ $ETT_SPARK_JAVA_OPTS}"
( cd "$DIR/connect" && start connect "$SPARK_HOME/bin/spark-submit" \
  --class org.apache.spark.sql.connect.service.SparkConnectServer --name "$CONNECT_NAME" --master "$MASTER_URL" \
  --driver-memory 1g --executor-memory "$EXECUTOR_MEMORY" \
  --conf spark.cores.max="$CONNECT_CORES" \
  --conf spark.connect.grpc.binding.address=127.0.0.1 --conf spark.connect.grpc.binding.port="$CONNECT_PORT" \
  --conf spark.driver.host=127.0.0.1 --conf spark.driver.bindAddress=127.0.0.1 --conf spark.ui.enabled=false \
  --conf spark.driver.extraJavaOptions="$JAVA_OPTS" --conf spark.executor.extraJavaOptions="$JAVA_OPTS" \
  --conf spark.sql.session.timeZone=UTC )
connect_up() {  # its gRPC port accepts connections, and its application has executors on the workers
  python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()' \
    "$CONNECT_PORT" && [[ -n "$(master_json connect "$CONNECT_NAME")" ]]
}
wait_for "the Spark Connect server" connect_up
read -r CONNECT_APP CONNECT_APP_CORES <<<"$(master_json connect "$CONNECT_NAME")"
say "Spark Connect server sc://127.0.0.1:$CONNECT_PORT  application $CONNECT_APP ($CONNECT_APP_CORES cores)  PID $(cat "$DIR/run/connect.pid")"

for d in "${DAEMONS[@]}"; do is_jvm "$DIR/run/$d.pid" || die "$d (PID $(cat "$DIR/run/$d.pid")) is not a JVM"; done
cat > "$DIR/ports" <<PORTS
SPARK_MASTER_URL=$MASTER_URL
SPARK_MASTER_WEBUI=http://127.0.0.1:$MASTER_UI
SPARK_WORKER1_WEBUI=http://127.0.0.1:$W1_UI
SPARK_WORKER2_WEBUI=http://127.0.0.1:$W2_UI
SPARK_CONNECT_URL=sc://127.0.0.1:$CONNECT_PORT
SPARK_HOME=$SPARK_HOME
PORTS
say "started in $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t_start" "$(date +%s.%N)") s; ports in $DIR/ports"
say "ett summarize TRACE --engine spark --spark-master $MASTER_URL   (or --spark-master sc://127.0.0.1:$CONNECT_PORT)"
