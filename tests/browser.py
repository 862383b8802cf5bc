"""A small headless-Chromium driver for the report tests, over the DevTools protocol on a pipe.

Chromium is started with ``--remote-debugging-pipe`` (it reads commands on fd 3 and writes replies and events on
fd 4, each message JSON ended by a NUL byte), so no port is opened and no extra package is needed.  For each page
:meth:`Browser.visit` records every network request that is not a local file (``file:``, ``data:``, ``blob:``,
``about:``), every uncaught JavaScript exception, every ``console.error`` and every browser log entry of level
error, waits until each ``.ett-chart`` holds a drawn SVG, and returns what it saw; :meth:`Browser.screenshot`
writes a PNG of the whole page or of one element.

Run by hand: ``python tests/browser.py PAGE.html OUT.png`` (a full-page screenshot).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty, Queue

LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:", "chrome-error:")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--disable-extensions",
    "--mute-audio",
)


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@dataclass
class Visit:
    """What one page did."""

    url: str
    title: str = ""
    network: list[str] = field(default_factory=list)  # requests to anything but local files
    errors: list[str] = field(default_factory=list)  # JavaScript exceptions, console errors, log errors
    charts: int = 0
    drawn: int = 0
    links: dict[str, str] = field(default_factory=dict)  # nav link class -> resolved href


class Browser:
    def __init__(self, binary: str | None = None, timeout: float = 60.0):
        binary = binary or chromium()
        if binary is None:
            raise RuntimeError("Chromium is not installed")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="ett-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def fds() -> None:  # the child's fd 3 reads our commands, its fd 4 writes replies
            r, w = os.dup(to_child_r), os.dup(from_child_w)  # away from 3 and 4 first, so neither is overwritten
            os.dup2(r, 3, inheritable=True)
            os.dup2(w, 4, inheritable=True)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-pipe", "about:blank"],
            preexec_fn=fds,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=None if os.environ.get("ETT_BROWSER_DEBUG") else subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._id = 0
        self._replies: dict[int, Queue] = {}
        self._events: Queue = Queue()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -------------------------------------------------------------------- protocol

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_child, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._lock:
                        q = self._replies.get(msg["id"])
                    if q is not None:
                        q.put(msg)
                else:
                    self._events.put(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        with self._lock:
            self._id += 1
            mid = self._id
            self._replies[mid] = Queue()
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        try:
            reply = self._replies[mid].get(timeout=self.timeout)
        except Empty:
            raise TimeoutError(f"no reply to {method}") from None
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def _drain(self, visit: Visit, session: str) -> list[dict]:
        seen = []
        while True:
            try:
                ev = self._events.get_nowait()
            except Empty:
                return seen
            if ev.get("sessionId") != session:
                continue
            seen.append(ev)
            m, p = ev["method"], ev.get("params", {})
            if m == "Network.requestWillBeSent":
                url = p["request"]["url"]
                if not url.startswith(LOCAL_SCHEMES):
                    visit.network.append(url)
            elif m == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                visit.errors.append("exception: " + (d.get("exception", {}).get("description") or d.get("text", "")))
            elif m == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
                visit.errors.append(
                    "console.error: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
                )
            elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
                visit.errors.append("log: " + p["entry"]["text"] + " " + p["entry"].get("url", ""))

    def evaluate(self, session: str, expression: str):
        r = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session
        )
        return r.get("result", {}).get("value")

    # -------------------------------------------------------------------- pages

    def open(self) -> str:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Network", "Runtime", "Log", "Page"):
            self.send(f"{domain}.enable", {}, session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
            session,
        )
        return session

    def visit(self, session: str, url: str, settle_s: float = 20.0) -> Visit:
        """Load ``url`` and wait until the page has loaded and drawn every chart; ``settle_s`` only bounds a page that
        never does (a chart that fails to draw), it is not how long a page may take."""
        visit = Visit(url)
        self.send("Page.navigate", {"url": url}, session)
        deadline = time.monotonic() + settle_s
        while time.monotonic() < deadline:
            time.sleep(0.25)
            self._drain(visit, session)
            state = self.evaluate(
                session,
                "[document.readyState, document.querySelectorAll('.ett-chart').length,"
                " document.querySelectorAll('.ett-chart svg.marks').length]",
            )
            if state and state[0] == "complete" and state[1] == state[2]:
                break
        time.sleep(0.5)  # late requests or errors after the last chart
        self._drain(visit, session)
        visit.charts, visit.drawn = state[1], state[2]
        visit.title = self.evaluate(session, "document.title")
        visit.links = (
            self.evaluate(
                session,
                "Object.fromEntries([...document.querySelectorAll('nav.ett-nav.top a')]"
                ".map(a => [a.className, a.href]))",
            )
            or {}
        )
        return visit

    def screenshot(
        self, session: str, path: Path, selector: str | None = None, index: int = 0, max_height: int = 12000
    ) -> Path:
        """A PNG of the whole page, or of the ``index``-th element matching ``selector``."""
        if selector:
            box = self.evaluate(
                session,
                f"(() => {{ const e = document.querySelectorAll({json.dumps(selector)})[{index}];"
                " e.scrollIntoView(); const r = e.getBoundingClientRect();"
                " return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height]; })()",
            )
            clip = {"x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1}
        else:
            h = self.evaluate(session, "document.documentElement.scrollHeight")
            clip = {"x": 0, "y": 0, "width": 1280, "height": min(int(h), max_height), "scale": 1}
        data = self.send(
            "Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True}, session
        )["data"]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


if __name__ == "__main__":
    page, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    with Browser() as b:
        s = b.open()
        v = b.visit(s, page.as_uri())
        b.screenshot(s, out, *(sys.argv[3:4] or [None]), *(int(x) for x in sys.argv[4:5]))
        print(json.dumps(v.__dict__, indent=1))
