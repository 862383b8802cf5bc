"""What the tests of the real monitoring stack share: starting and stopping ``tools/monitoring`` (free ports read back
from its ``ports`` file), Prometheus' HTTP API, and a webhook receiver that keeps what Alertmanager posts.

Every part is the real program (Debian's prometheus, prometheus-node-exporter, prometheus-alertmanager); a test
module marks itself with :data:`needs_stack` so that it skips only where a package is absent, saying which.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from ettcore.config import PROJECT_ROOT

START = PROJECT_ROOT / "tools" / "monitoring" / "start.sh"
STOP = PROJECT_ROOT / "tools" / "monitoring" / "stop.sh"
BINARIES = ("prometheus", "prometheus-node-exporter", "prometheus-alertmanager", "promtool")
MISSING = [b for b in BINARIES if shutil.which(b) is None]
needs_stack = pytest.mark.skipif(
    bool(MISSING),
    reason=f"not installed: {', '.join(MISSING)} (Debian packages prometheus, prometheus-node-exporter, "
    "prometheus-alertmanager; .ci/run installs them)",
)


class Webhook:
    """A tiny HTTP server on 127.0.0.1 that keeps every alert Alertmanager posts, with the instant it came (both
    ``time.monotonic()`` and ``time.time()``, to set against the instants other processes print)."""

    def __init__(self) -> None:
        got = self.got = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                got.append((time.monotonic(), time.time(), body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def firing(self, name: str, wall: bool = False, **labels: str) -> list[tuple[float, dict]]:
        """``(instant, alert)`` of each firing ``name`` posted so far whose labels include ``labels``; the instant
        monotonic, or ``time.time()`` with ``wall``."""
        return [
            (w if wall else m, a)
            for m, w, body in self.got
            for a in body["alerts"]
            if a["labels"]["alertname"] == name
            and a["status"] == "firing"
            and all(a["labels"].get(k) == v for k, v in labels.items())
        ]


def api(port: int, path: str, **params: str) -> dict:
    url = f"http://127.0.0.1:{port}/api/v1/{path}?" + urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            doc = json.load(r)
    except urllib.error.HTTPError as e:  # Prometheus answers 400 with the parse error
        raise AssertionError(f"{params}: {e.read().decode()}") from None
    assert doc["status"] == "success", (params, doc)
    return doc["data"]


def query(port: int, promql: str) -> list[dict]:
    """An instant query's result (a list of series, each with ``metric`` and ``value``)."""
    return api(port, "query", query=promql)["result"]


def value(port: int, promql: str) -> float | None:
    """The value of a query that returns at most one series (None when it returns none)."""
    got = query(port, promql)
    assert len(got) <= 1, (promql, got)
    return float(got[0]["value"][1]) if got else None


def wait_for(port: int, promql: str, within_s: float = 30.0) -> list[dict]:
    """Poll until ``promql`` returns something; fail after ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while not (got := query(port, promql)):
        assert time.monotonic() < deadline, f"Prometheus never answered {promql}"
        time.sleep(0.3)
    return got


@contextmanager
def stack(state: Path, rules: Path | None = None, webhook: Webhook | None = None) -> Iterator[dict]:
    """``tools/monitoring/start.sh`` on the state folder ``state`` (its textfile folder made first, so an export can
    be there before Prometheus looks); yields its ``ports`` file as a dict plus ``start_s``, the seconds start.sh
    took.  Stops it at the end and fails if a process or PID file is left: installed but failing to start or stop
    is a failure."""
    env = {**os.environ, "ETT_MON_DIR": str(state)}
    if rules is not None:
        env["ETT_MON_RULES"] = str(rules)
    if webhook is not None:
        env["ETT_MON_WEBHOOK_URL"] = webhook.url
    (state / "textfile").mkdir(parents=True, exist_ok=True)
    t = time.monotonic()
    res = subprocess.run([str(START)], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    started = time.monotonic() - t
    ports = dict(line.split("=", 1) for line in (state / "ports").read_text().split())
    try:
        yield {**ports, "start_s": started}
    finally:
        stop = subprocess.run([str(STOP)], env=env, capture_output=True, text=True, timeout=60)
        if webhook is not None:
            webhook.server.shutdown()
        assert stop.returncode == 0, stop.stdout + stop.stderr  # stop leaves no process
        assert not any((state / "run").glob("*.pid"))
