#!/usr/bin/env python3
"""Screenshot an HTML report in headless Chromium, so a person can look at what logmem made.

    python bench/screenshot.py [LOG ...] [-o DIR] [--width 1000 --width 390]

Renders ``logmem analyze LOG -f html`` (default: corpus log 021, else the fixture), opens
it from disk (file://) in Debian's Chromium and writes one full-page PNG per width, then
prints what the page did: console errors, network requests, figures found, and whether
the page is wider than the screen (tables must scroll inside their own box).

The browser is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages separated by NUL on file descriptors 3 and 4), so no websocket library or
browser download is needed. tests/test_browser.py imports ``open_page`` from here.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LOG = "021-laguna-s21-int4-dgx-spark-dflash-spec.log"

# The flags that keep Chromium quiet on a machine with no network and no screen.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)

# What the page is asked after loading: figures, findings, scripts, overflow.
PROBE = """(() => {
  const figs = [...document.querySelectorAll('figure.plot')];
  return {
    title: document.title,
    figures: figs.map(f => ({kind: f.dataset.kind, svg: !!f.querySelector('svg'),
                             width: Math.round(f.getBoundingClientRect().width),
                             height: Math.round(f.getBoundingClientRect().height)})),
    findings: [...document.querySelectorAll('ul.findings li')].map(li => li.textContent),
    verdict: [...document.querySelectorAll('.verdict')].map(v => v.textContent),
    tables: document.querySelectorAll('table').length,
    sources: document.querySelectorAll('details.sources').length,
    scripts: document.querySelectorAll('script').length,
    injected: document.querySelectorAll('img, iframe, object, embed, [onerror], [onload]').length,
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    text: document.body.innerText,
  };
})()"""


def find_chromium() -> str | None:
    """Debian's chromium, or what LOGMEM_CHROMIUM names."""
    env = os.environ.get("LOGMEM_CHROMIUM")
    if env:
        return env if shutil.which(env) or Path(env).is_file() else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class CDPError(RuntimeError):
    pass


class Browser:
    """One headless Chromium process and its DevTools pipe."""

    def __init__(self, binary: str, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="logmem-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire() -> None:  # in the child, before exec: its fds 3 (commands) and 4 (replies)
            a = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=wire,
            close_fds=False,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    err = (
                        self.proc.stderr.read().decode(errors="replace")[-2000:]
                        if self.proc.stderr
                        else ""
                    )
                    raise CDPError(f"Chromium closed the DevTools pipe; stderr ends: {err}")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        msg: dict[str, Any] = json.loads(raw)
        return msg

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        """Send one command and wait for its reply; events that arrive meanwhile are kept."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            if "method" in reply:
                self.events.append(reply)

    def wait_for(self, method: str, timeout: float | None = None) -> dict[str, Any]:
        for e in self.events:
            if e["method"] == method:
                return e
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            msg = self._read_message(deadline)
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg

    def close(self) -> None:
        with contextlib.suppress(CDPError, OSError):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.proc.stderr:
            self.proc.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)


@dataclass
class PageReport:
    url: str
    width: int
    screenshot: bytes
    probe: dict[str, Any]
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def _console_errors(events: list[dict[str, Any]]) -> list[str]:
    out = []
    for e in events:
        m, p = e["method"], e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            out.append(
                f"console.{p['type']}: "
                + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            )
        elif m == "Runtime.exceptionThrown":
            out.append("exception: " + str(p.get("exceptionDetails", {}).get("text", "")))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            entry = p["entry"]
            out.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}".strip())
        elif m == "Network.loadingFailed":
            out.append(f"load failed: {p.get('errorText')}")
    return out


def open_page(
    html_path: Path, widths: tuple[int, ...] = (1000,), binary: str | None = None
) -> list[PageReport]:
    """Open a page from disk at each width; return screenshot, DOM probe, console errors and requests."""
    binary = binary or find_chromium()
    if binary is None:
        raise FileNotFoundError("no chromium on PATH (Debian: apt-get install chromium)")
    url = html_path.resolve().as_uri()
    browser = Browser(binary)
    out = []
    try:
        for width in widths:
            target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
                "sessionId"
            ]
            start = len(browser.events)
            for domain in ("Page", "Runtime", "Log", "Network"):
                browser.send(f"{domain}.enable", session=session)
            browser.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600},
                session=session,
            )
            browser.events = browser.events[:start]  # what about:blank did is not the page's
            browser.send("Page.navigate", {"url": url}, session=session)
            browser.wait_for("Page.loadEventFired")
            probe = browser.send(
                "Runtime.evaluate", {"expression": PROBE, "returnByValue": True}, session=session
            )["result"]["value"]
            size = browser.send("Page.getLayoutMetrics", session=session)["cssContentSize"]
            shot = browser.send(
                "Page.captureScreenshot",
                {
                    "format": "png",
                    "captureBeyondViewport": True,
                    "clip": {
                        "x": 0,
                        "y": 0,
                        "width": size["width"],
                        "height": size["height"],
                        "scale": 1,
                    },
                },
                session=session,
            )
            page_events = [
                e for e in browser.events[start:] if e.get("sessionId") in (None, session)
            ]
            requests = [
                e["params"]["request"]["url"]
                for e in page_events
                if e["method"] == "Network.requestWillBeSent"
            ]
            out.append(
                PageReport(
                    url,
                    width,
                    base64.b64decode(shot["data"]),
                    probe,
                    _console_errors(page_events),
                    requests,
                )
            )
            browser.send("Target.closeTarget", {"targetId": target})
            browser.events = []
    finally:
        browser.close()
    return out


def _default_log() -> Path:
    for base in (ROOT.parent / "shared" / "corpus", ROOT / "fixtures"):
        if (base / DEFAULT_LOG).is_file():
            return base / DEFAULT_LOG
    raise SystemExit(f"no {DEFAULT_LOG} in ../shared/corpus or fixtures/; name a log")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "logs", nargs="*", type=Path, help="SGLang logs of one launch (default: corpus 021)"
    )
    ap.add_argument(
        "-o", "--out", type=Path, default=None, help="folder for the PNGs (default: a temp folder)"
    )
    ap.add_argument(
        "--width",
        type=int,
        action="append",
        help="viewport width in CSS px (repeatable; default 1000 and 390)",
    )
    args = ap.parse_args(argv)
    logs = args.logs or [_default_log()]
    widths = tuple(args.width or (1000, 390))
    out_dir = args.out or Path(tempfile.mkdtemp(prefix="logmem-screens-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT))
    from logmem.api import read_log
    from logmem.report import html

    report = out_dir / f"{logs[0].stem}.html"
    report.write_text(html.render(read_log(*map(str, logs))), encoding="utf-8")
    for page in open_page(report, widths):
        png = out_dir / f"{logs[0].stem}-{page.width}px.png"
        png.write_bytes(page.screenshot)
        p = page.probe
        overflow = p["scrollWidth"] > p["innerWidth"]
        print(f"{png}  ({len(page.screenshot):,} bytes)")
        print(
            f"  figures: {', '.join(f['kind'] + ('' if f['svg'] else ' (no svg!)') for f in p['figures'])}"
        )
        print(
            f"  findings: {len(p['findings'])}, tables: {p['tables']}, source blocks: {p['sources']}"
        )
        print(
            f"  page width {p['scrollWidth']} px in a {p['innerWidth']} px window"
            + ("  <- WIDER THAN THE SCREEN" if overflow else "")
        )
        print(f"  network requests: {page.requests}")
        print(f"  console errors: {page.console_errors or 'none'}")
    print(f"report: {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
