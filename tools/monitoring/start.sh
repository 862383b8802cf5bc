#!/usr/bin/env bash
# Start the project's monitoring stack from Debian's packages, with the project's own configuration:
# prometheus-node-exporter (textfile collector on $DIR/textfile, where `ett export prometheus --out` writes),
# prometheus (scrapes it, evaluates tools/monitoring/rules/ett.rules.yml, sends alerts to Alertmanager) and
# prometheus-alertmanager (routes every alert to a webhook when ETT_MON_WEBHOOK_URL is set).
# No systemd: each daemon runs in the background of this script, its PID in $DIR/run/; tools/monitoring/stop.sh
# stops them all. No root needed. Everything listens on 127.0.0.1 only.
#
#   tools/monitoring/start.sh            prints the ports and writes them to $DIR/ports (shell lines NAME=VALUE)
#
# Settings (environment): ETT_MON_DIR state folder (default ${TMPDIR:-/tmp}/ett-monitoring), ETT_MON_SCRAPE scrape
# interval (default 2s), ETT_MON_EVAL rule evaluation interval (default 2s), ETT_MON_RULES rules file (default
# tools/monitoring/rules/ett.rules.yml), ETT_MON_WEBHOOK_URL where Alertmanager posts alerts (default: nowhere),
# ETT_MON_WAIT seconds to wait for each daemon to be ready (default 60). Ports: three the kernel picks free at start.
# Short intervals are for the tests; a real deployment scrapes every 15-60 s.
# Alertmanager has no inhibition rules: a stale export (its refresher dead) never silences another alert.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${ETT_MON_DIR:-${TMPDIR:-/tmp}/ett-monitoring}"
SCRAPE="${ETT_MON_SCRAPE:-2s}"
EVAL="${ETT_MON_EVAL:-2s}"
RULES="$(realpath "${ETT_MON_RULES:-$HERE/rules/ett.rules.yml}")"
WEBHOOK="${ETT_MON_WEBHOOK_URL:-}"
WAIT="${ETT_MON_WAIT:-60}"
say() { echo "[monitoring] $*"; }
die() {
  echo "[monitoring] error: $*" >&2
  for f in "$DIR"/log/*.log; do [[ -s "$f" ]] && { echo "--- $f (last lines)" >&2; tail -n 8 "$f" >&2; }; done
  "$HERE/stop.sh" >&2 || true
  exit 3
}
for bin in prometheus prometheus-node-exporter prometheus-alertmanager; do
  command -v "$bin" >/dev/null 2>&1 || die "$bin not found: apt-get install prometheus prometheus-node-exporter prometheus-alertmanager"
done
alive() { [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
for d in node_exporter prometheus alertmanager; do
  alive "$DIR/run/$d.pid" && die "$d of $DIR already runs (PID $(cat "$DIR/run/$d.pid")): tools/monitoring/stop.sh first"
done
mkdir -p "$DIR"/{etc,run,log,textfile,prometheus-data,alertmanager-data}

# three free ports at once, held together so that they are distinct
read -r PROM NODE AM < <(python3 -c '
import socket
s = [socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')

cat > "$DIR/etc/prometheus.yml" <<CONF
# Written by tools/monitoring/start.sh
global:
  scrape_interval: $SCRAPE
  evaluation_interval: $EVAL
rule_files:
  - $RULES
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:$AM"]
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ["127.0.0.1:$NODE"]
CONF
{
  echo "# Written by tools/monitoring/start.sh; no inhibit_rules: no alert silences another"
  echo "route:"
  echo "  receiver: $([[ -n "$WEBHOOK" ]] && echo webhook || echo nowhere)"
  echo "  group_by: [alertname, job_id, model, cause]"
  echo "  group_wait: 1s"
  echo "  group_interval: 2s"
  echo "  repeat_interval: 1h"
  echo "receivers:"
  echo "  - name: nowhere"
  if [[ -n "$WEBHOOK" ]]; then
    echo "  - name: webhook"
    echo "    webhook_configs:"
    echo "      - url: \"$WEBHOOK\""
    echo "        send_resolved: true"
  fi
} > "$DIR/etc/alertmanager.yml"

start() {  # name, command...: run in the background, record its PID
  local name="$1"; shift
  "$@" >"$DIR/log/$name.log" 2>&1 &
  echo $! > "$DIR/run/$name.pid"
}
start node_exporter prometheus-node-exporter --web.listen-address="127.0.0.1:$NODE" \
  --collector.disable-defaults --collector.textfile --collector.textfile.directory="$DIR/textfile"
start alertmanager prometheus-alertmanager --config.file="$DIR/etc/alertmanager.yml" \
  --storage.path="$DIR/alertmanager-data" --web.listen-address="127.0.0.1:$AM" --cluster.listen-address=""
start prometheus prometheus --config.file="$DIR/etc/prometheus.yml" --storage.tsdb.path="$DIR/prometheus-data" \
  --web.listen-address="127.0.0.1:$PROM" --web.enable-lifecycle

ready() {  # name, url: wait until it answers 200, fail at once if the daemon exited
  local name="$1" url="$2"
  for ((i = 0; i < WAIT * 5; i++)); do
    alive "$DIR/run/$name.pid" || die "$name exited at start"
    python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" "$url" 2>/dev/null && return 0
    sleep 0.2
  done
  die "$name not ready after $WAIT s ($url)"
}
ready node_exporter "http://127.0.0.1:$NODE/metrics"
ready alertmanager "http://127.0.0.1:$AM/-/ready"
ready prometheus "http://127.0.0.1:$PROM/-/ready"

cat > "$DIR/ports" <<PORTS
PROMETHEUS_PORT=$PROM
NODE_EXPORTER_PORT=$NODE
ALERTMANAGER_PORT=$AM
TEXTFILE_DIR=$DIR/textfile
SCRAPE_INTERVAL=$SCRAPE
EVAL_INTERVAL=$EVAL
RULES=$RULES
PORTS
say "prometheus http://127.0.0.1:$PROM  node_exporter http://127.0.0.1:$NODE  alertmanager http://127.0.0.1:$AM"
say "textfile folder $DIR/textfile (write: ett export prometheus TRACE --out $DIR/textfile/ett.prom); ports in $DIR/ports"
