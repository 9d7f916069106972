"""Figures 9 and 10: the dashboard. Targets: the first response < 1 s after `automaton --dashboard`
starts, and the loops view of 200 loops served in < 200 ms.

Figure 9 times `automaton --dashboard --port P --project DIR` from the process start (Popen) to
the first complete `200` answer of `GET /` (the project has one loop), polling the port every
10 ms: interpreter start, imports (starlette, uvicorn, jinja2), the checks, the bind and the
first page. Median of the repetitions; each repetition is a fresh process (one untimed start
first compiles the bytecode, as installing does).

Figure 10 times `GET /` (the whole page: one row per loop, each with its sparkline) of a
running dashboard over 200 loops of 10 settled ticks each (`TICK_START` + `TICK` lines written
through the store, as the runner writes them), over HTTP on loopback, as the browser's refresh
sees it. The figure is the median of the repetitions, in milliseconds; the page polls every 2 s,
so a loop whose files did not change is not read again (`dashboard/views.py` `summary`). The
first request after the start (once the server answers a static file) reads and verifies every
loop's state, log and loop.json; it is reported beside the figure.
Run: .venv/bin/python bench/bench_dashboard.py [--quick] [--reps N]
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import _common as c
from bench_audit import make_loops

FIRST_TARGET_S = 1.0
VIEW_TARGET_MS = 200.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str, timeout: float = 10.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        if response.status != 200:
            raise c.BenchError(f"GET {url}: {response.status}")
        return bytes(response.read())


@contextmanager
def dashboard(project: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([c.exe("automaton"), "--dashboard", "--port", str(port), "--project", str(project)],
                            env=c.bench_env(AUTOMATON_APPROVER="bench"), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def first_response(project: Path) -> float:
    """Seconds from starting the process to the first 200 of `GET /`."""
    port = free_port()
    t0 = time.perf_counter()
    with dashboard(project, port) as proc:
        while True:
            try:
                get(f"http://127.0.0.1:{port}/", timeout=5)
                return time.perf_counter() - t0
            except (urllib.error.URLError, ConnectionError, OSError):
                if proc.poll() is not None:
                    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
                    raise c.BenchError(f"the dashboard exited {proc.returncode}: {err[-400:]}") from None
                if time.perf_counter() - t0 > 30:
                    raise c.BenchError("the dashboard did not answer within 30 s") from None
                time.sleep(0.01)


def add_ticks(project: Path, loops_n: int, ticks: int) -> None:
    """`ticks` settled ticks on each loop, as runner/ledger.py writes them (fsync skipped while
    generating only)."""
    from automaton.core import loopstate
    from automaton.core.loopstate import Verdict
    from automaton.store import loops
    from automaton.store.layout import Project

    proj = Project(project.resolve())
    real_fsync = os.fsync
    os.fsync = lambda fd: None
    try:
        for i in range(loops_n):
            name = f"loop-{i:05d}"
            for n in range(1, ticks + 1):
                loops.update_state(proj, name, partial(loopstate.reserve, reserved_usd=1.0,
                                                       now="2026-12-01T00:00:00Z"))
                score = round(0.1 * (n % 10), 4)
                fields = {"n": n, "score": f"{score:.4f}", "cost": "0.1000", "cost_known": True, "complete": False}
                loops.update_state(proj, name, partial(
                    loopstate.settle, counted_usd=0.1, reserved_usd=1.0, window=5, complete=False,
                    now="2026-12-01T00:00:00Z", fields=fields,
                    verdict=Verdict(score, False, False, f"tick {n}", "junit")))
    finally:
        os.fsync = real_fsync


def main() -> int:
    ns = c.args(__doc__)
    loops_n = 50 if ns.quick else 200
    reps = ns.reps or (3 if ns.quick else 30)
    starts = 2 if ns.quick else 7
    with c.workspace("dashboard", ns.keep) as tmp:
        small = c.init_repo(tmp / "small")
        make_loops(small, 1)
        first_response(small)  # untimed: compiles the bytecode into the bench's cache, as an install does
        firsts = [first_response(small) for _ in range(starts)]
        big = c.init_repo(tmp / "big")
        make_loops(big, loops_n)
        add_ticks(big, loops_n, 10)
        port = free_port()
        with dashboard(big, port):
            url = f"http://127.0.0.1:{port}/"
            deadline = time.perf_counter() + 30
            while True:  # ready: a page that reads no loop answers
                try:
                    get(url + "static/dashboard.css")
                    break
                except (urllib.error.URLError, ConnectionError, OSError):
                    if time.perf_counter() > deadline:
                        raise c.BenchError("the dashboard of the big project did not answer") from None
                    time.sleep(0.02)
            t0 = time.perf_counter()
            page = get(url)
            cold = time.perf_counter() - t0
            rows = page.count(b'<tr class="loop"')
            if rows != loops_n:
                raise c.BenchError(f"the loops view shows {rows} rows, expected {loops_n}")
            views = []
            for _ in range(reps):
                t0 = time.perf_counter()
                get(url)
                views.append(time.perf_counter() - t0)
    first = statistics.median(firsts)
    view_ms = statistics.median(views) * 1000
    print(f"  first response    {', '.join(f'{x:.3f}' for x in firsts)} s (n={len(firsts)})")
    print(f"  loops view        median {view_ms:.1f} ms, max {max(views) * 1000:.1f} ms, n={len(views)};"
          f" first request after start (every loop read and verified) {cold * 1000:.1f} ms")
    c.figure(9, "automaton --dashboard: start to first response", first, FIRST_TARGET_S,
             f"median of {len(firsts)} fresh processes (min {min(firsts):.3f} s)", unit=" s")
    c.figure(10, f"loops view of {loops_n} loops (GET /)", view_ms, VIEW_TARGET_MS,
             f"median of {reps} requests over HTTP; the first request after start {cold * 1000:.1f} ms"
             f" ({'met' if cold * 1000 <= VIEW_TARGET_MS else 'over'} the target too)", unit=" ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
