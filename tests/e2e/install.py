"""Install a pinned agent CLI from the npm registry into a cache folder, once.

The versions are `clis.lock.json` (npm package -> exact version). The cache is
`$AUTOMATON_E2E_CACHE` (default `<repo>/.e2e-cache`); each package lives in its own prefix
`<cache>/<package with / as +>@<version>`, so two pinned versions never mix.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOCK = Path(__file__).with_name("clis.lock.json")


class Missing(Exception):
    """npm or node is not installed, or the install failed: the e2e suite cannot run here."""


def pinned(package: str) -> str:
    """The version `clis.lock.json` pins for `package`."""
    versions: dict[str, str] = json.loads(LOCK.read_text(encoding="utf-8"))
    return versions[package]


def cache_dir() -> Path:
    return Path(os.environ.get("AUTOMATON_E2E_CACHE") or REPO / ".e2e-cache")


def install(package: str, executable: str) -> Path:
    """The path of `executable` from `package` at its pinned version, installed when missing.
    Missing when npm/node is absent or `npm install` fails (its last output lines quoted)."""
    version = pinned(package)
    prefix = cache_dir() / f"{package.replace('/', '+')}@{version}"
    exe = prefix / "node_modules" / ".bin" / executable
    if exe.exists():
        return exe
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise Missing("npm and node are needed to install the agent CLIs (e.g. apt-get install nodejs npm)")
    prefix.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                           f"{package}@{version}"], capture_output=True, text=True, timeout=900)
    if done.returncode != 0 or not exe.exists():
        raise Missing(f"npm install {package}@{version} failed: {(done.stderr or done.stdout)[-500:]}")
    return exe
