"""Install the pinned agent CLIs (`clis.lock.json`) with npm into a cache folder that outlives
a test run.

Cache: `$AUTOMATON_E2E_CACHE`, else `<repo>/.e2e-cache` (git-ignored; not under HOME, because
the tests give every subprocess a temporary HOME). Each CLI goes to
`<cache>/<package with "/" as "+">@<version>/` and is installed once: into a temporary folder
renamed into place, so an interrupted install never leaves a half folder that looks done.

`python -m tests.e2e.install [NAME…]` installs the named CLIs (all by default); exit 0, or 1
with one line per CLI that could not be installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
LOCK = HERE / "clis.lock.json"
INSTALL_TIMEOUT_S = 600


class InstallError(RuntimeError):
    """npm or node is missing, or `npm install` failed; the message is one line."""


@dataclass(frozen=True)
class Pinned:
    """One CLI of the lock file: harness `name`, npm `package`, `version`, `bin` name, `covers`."""

    name: str
    package: str
    version: str
    bin: str
    covers: str


def pinned() -> dict[str, Pinned]:
    """The lock file's CLIs by harness name."""
    doc = json.loads(LOCK.read_text(encoding="utf-8"))
    return {name: Pinned(name, e["package"], e["version"], e["bin"], e.get("covers", "")) for name, e in doc.items()}


def cache_dir() -> Path:
    return Path(os.environ.get("AUTOMATON_E2E_CACHE") or REPO / ".e2e-cache")


def folder(cli: Pinned) -> Path:
    return cache_dir() / f"{cli.package.replace('/', '+')}@{cli.version}"


def bin_path(cli: Pinned) -> Path:
    return folder(cli) / "node_modules" / ".bin" / cli.bin


def install(name: str) -> Path:
    """The pinned CLI `name`'s executable, installed first when missing. InstallError otherwise."""
    cli = pinned()[name]
    exe = bin_path(cli)
    if exe.exists():
        return exe
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise InstallError(f"{cli.package}@{cli.version}: npm and node are not on PATH"
                           " (Debian: apt-get install nodejs npm)")
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".installing-", dir=cache))
    env = {**os.environ, "npm_config_cache": str(cache / "_npm"), "npm_config_update_notifier": "false"}
    try:
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(work),
                               f"{cli.package}@{cli.version}"], capture_output=True, text=True, env=env,
                              timeout=INSTALL_TIMEOUT_S, check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            raise InstallError(f"{cli.package}@{cli.version}: npm install failed: {last}")
        if not (work / "node_modules" / ".bin" / cli.bin).exists():
            raise InstallError(f"{cli.package}@{cli.version}: npm installed no {cli.bin} executable")
        try:
            work.rename(folder(cli))
        except OSError:
            if not exe.exists():  # another run installed it first: use that one
                raise
    except subprocess.TimeoutExpired as exc:
        raise InstallError(f"{cli.package}@{cli.version}: npm install ran past {INSTALL_TIMEOUT_S} s") from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return exe


def main(argv: list[str]) -> int:
    names = argv or list(pinned())
    failed = 0
    for name in names:
        try:
            print(f"{name}: {install(name)}")
        except (InstallError, KeyError, OSError) as exc:
            print(f"{name}: not installed: {exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
