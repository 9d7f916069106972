"""Submodules filled from the repository's own objects: in a new loop worktree and in the
verifier's export, each submodule folder (a gitlink of the commit) gets the files of the
commit it records, read from the superproject's `modules/<name>` git folder.

Without this both are empty folders (git leaves a submodule unchecked-out, and the export
writes a gitlink as an empty folder), so a project whose code or tests live in a submodule
scores 0 on an honest fix. No `git submodule update`: that clones from `.gitmodules` URLs (the
network, or a path the agent names) and leaves a nested `.git` in the worktree, which the
runner's nested-repository walk halts on (git/nested.py), and whose config the runner's
hardened git never reads. Here only objects are read, with the hardened `ls-tree` and
`cat-file` of git/export.py, from a folder inside the common git folder (read-only to every
agent), and the files are written without a `.git`: the superproject's git keeps seeing an
uninitialised submodule (no status, never added), and a gitlink the agent changes is halted
by the drift gate before any export.

A submodule's own submodules are filled the same way from its `modules/` folder. A submodule
whose commit is in no local `modules/` folder (never fetched in the main checkout) stays
empty and is named, for the caller to say so. The writing is git/export.py's
`fill_submodules`.
"""

from __future__ import annotations

import os
from pathlib import Path

from automaton.git import run_git
from automaton.git.tree import GITLINK, Entry


def _common_dir(repo: Path) -> Path | None:
    found = run_git(repo, ["rev-parse", "--path-format=absolute", "--git-common-dir"])
    return Path(os.path.realpath(found.out.strip())) if found.code == 0 and found.out.strip() else None


def _names(repo: Path, commit: str) -> dict[str, str]:
    """{path: submodule name} from the commit's `.gitmodules` (read as a blob: nothing runs)."""
    found = run_git(repo, ["config", "--blob", f"{commit}:.gitmodules", "-z", "--get-regexp",
                           r"^submodule\..*\.path$"])
    names: dict[str, str] = {}
    if found.code != 0:
        return names
    for record in found.out.split("\0"):
        key, _, value = record.partition("\n")
        if key.startswith("submodule.") and key.endswith(".path") and value:
            names[value.strip("/")] = key[len("submodule."):-len(".path")]
    return names


def _store(modules: Path, names: list[str], commit: str) -> Path | None:
    """The first folder `modules/<name>` (inside `modules`, links resolved) holding `commit`."""
    for name in names:
        if not name or name.startswith("/") or ".." in name.split("/"):
            continue
        folder = Path(os.path.realpath(modules / name))
        if not str(folder).startswith(str(modules) + os.sep) or not (folder / "HEAD").is_file():
            continue
        probe = run_git(folder, ["cat-file", "-t", commit])
        if probe.code == 0 and probe.out.strip() == "commit":
            return folder
    return None


def locate(repo: Path, commit: str, gitlinks: list[Entry]) -> tuple[list[tuple[Entry, Path]], list[str]]:
    """For each submodule entry of `gitlinks` (entries of `commit`'s tree, mode 160000): the
    local git folder holding its commit (`<common git folder>/modules/<name>`, the name from
    the commit's `.gitmodules`, else the path), as (entry, folder) pairs; and the paths of
    those no local folder holds (never fetched in the main checkout)."""
    links = sorted((e for e in gitlinks if e.mode == GITLINK), key=lambda e: e.path)
    if not links:
        return [], []
    common = _common_dir(repo)
    modules = Path(os.path.realpath(common / "modules")) if common is not None else None
    names = _names(repo, commit)
    found: list[tuple[Entry, Path]] = []
    missing: list[str] = []
    for entry in links:
        store = None if modules is None else _store(modules, [names.get(entry.path, ""), entry.path], entry.oid)
        if store is None:
            missing.append(entry.path)
        else:
            found.append((entry, store))
    return found, missing
