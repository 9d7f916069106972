"""run_git hardening with real git: no hook, fsmonitor, filter, external diff or textconv runs;
inherited GIT_* variables and system/global config do not reach git."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from automaton.git import run_git
from automaton.git.harden import git_env, hardened_argv, probe_once
from automaton.git.worktree import commit_all, ensure_worktree
from tests.helpers import git, init_repo

HOOKS = ("pre-commit", "commit-msg", "post-commit", "reference-transaction", "post-index-change",
         "post-checkout", "pre-auto-gc")


def script(path: Path, marker: Path, tag: str, body: str = "") -> Path:
    """An executable shell script that appends `tag` to `marker`, then runs `body`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {tag} >> '{marker}'\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def plant_everything(repo: Path, marker: Path) -> None:
    """Hooks in .git/hooks and in a core.hooksPath folder, an fsmonitor program, and a filter
    driver named by a committed .gitattributes for every file."""
    for name in HOOKS:
        script(repo / ".git" / "hooks" / name, marker, f"git-hooks/{name}")
        script(repo / "evil-hooks" / name, marker, f"hookspath/{name}")
    git(repo, "config", "core.hooksPath", str(repo / "evil-hooks"))
    git(repo, "config", "core.fsmonitor", str(script(repo.parent / "fsmonitor.sh", marker, "fsmonitor", "exit 1")))
    for key in ("clean", "smudge"):
        git(repo, "config", f"filter.evil.{key}", str(script(repo.parent / f"{key}.sh", marker, key, "cat")))
    git(repo, "config", "filter.evil.required", "true")


def test_the_runner_commit_runs_no_hook_fsmonitor_or_filter(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    marker = tmp_path / "ran.txt"
    (repo / ".gitattributes").write_text("* filter=evil\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "attributes")
    wt = ensure_worktree(repo, tmp_path / "loop", "demo").path  # before the plant: a clean checkout
    plant_everything(repo, marker)
    # control: plain git runs what was planted, so the plant itself works
    (repo / "control.txt").write_text("x\n")
    git(repo, "add", "control.txt")
    git(repo, "commit", "-q", "-m", "control")
    ran = marker.read_text()
    assert "hookspath/post-commit" in ran and "fsmonitor" in ran and "clean" in ran
    marker.unlink()

    (wt / "new.py").write_text("x = 1\n")
    done = commit_all(wt, "automaton: tick 1")
    assert done.error is None and done.sha == git(repo, "rev-parse", "loop/demo").strip()
    assert not marker.exists(), marker.read_text()
    assert git(repo, "show", "loop/demo:new.py") == "x = 1\n"


def test_worktree_add_runs_no_post_checkout_hook_or_smudge_filter(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    marker = tmp_path / "ran.txt"
    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    (repo / "data.txt").write_text("raw\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "attributes")
    plant_everything(repo, marker)
    git(repo, "config", "filter.evil.smudge", str(script(tmp_path / "smudge2.sh", marker, "smudge", "echo SMUDGED")))
    res = ensure_worktree(repo, tmp_path / "loop", "demo")
    assert res.created and res.fallback is None
    assert (res.path / "data.txt").read_text() == "raw\n"
    assert not marker.exists(), marker.read_text()


def test_diff_runs_no_external_diff_or_textconv(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    marker = tmp_path / "ran.txt"
    (repo / ".gitattributes").write_text("*.md diff=conv\n")
    git(repo, "config", "diff.conv.textconv", str(script(tmp_path / "conv.sh", marker, "textconv", 'cat "$1"')))
    (repo / "README.md").write_text("changed\n")
    git(repo, "diff")  # control: plain git runs the textconv program
    assert "textconv" in marker.read_text()
    marker.unlink()
    git(repo, "config", "diff.external", str(script(tmp_path / "ext.sh", marker, "external")))
    for args in (["diff"], ["diff", "HEAD"], ["log", "-p", "-1"], ["show", "HEAD"]):
        out = run_git(repo, args)
        assert out.code == 0, out.err
    assert "changed" in run_git(repo, ["diff"]).out
    assert not marker.exists(), marker.read_text()


def test_a_filter_name_that_would_inject_a_command_is_refused(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    marker = tmp_path / "ran.txt"
    evil = script(tmp_path / "evil.sh", marker, "injected", "cat")
    # `-c filter.x.clean=<evil> #.clean=` would set driver x's command instead of emptying it
    with (repo / ".git" / "config").open("a") as f:
        f.write(f'[filter "x.clean={evil} #"]\n\tclean = true\n')
    (repo / ".gitattributes").write_text("* filter=x\n")
    out = run_git(repo, ["add", "-A"])
    assert out.code == 2 and "refusing to run git" in out.err and "filter driver" in out.err
    done = commit_all(repo, "m")
    assert done.sha is None and done.error is not None and "filter driver" in done.error
    assert not marker.exists()


def test_inherited_git_variables_do_not_reach_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path / "repo")
    other = init_repo(tmp_path / "other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "nowhere-index"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'x.param'='1'")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "x.count")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "1")
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(tmp_path / "no-objects"))
    monkeypatch.setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", str(other / ".git" / "objects"))
    monkeypatch.setenv("GIT_EXEC_PATH", str(tmp_path / "no-exec-path"))
    top = run_git(repo, ["rev-parse", "--show-toplevel"])
    assert top.code == 0 and Path(top.out.strip()).resolve() == repo.resolve()
    for key in ("x.param", "x.count"):
        assert run_git(repo, ["config", "--get", key]).code == 1
    assert run_git(repo, ["status", "--porcelain"]).code == 0
    env = git_env()
    assert not {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
                "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0", "GIT_OBJECT_DIRECTORY", "GIT_EXEC_PATH",
                "GIT_ALTERNATE_OBJECT_DIRECTORIES"} & set(env)
    assert env["GIT_NO_REPLACE_OBJECTS"] == "1" and env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_CONFIG_GLOBAL"] == os.devnull
    assert env["GIT_AUTHOR_NAME"] == "Test Author"  # the identity variables stay


def test_system_and_global_config_are_read_only_for_the_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 forbid_real_home: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (forbid_real_home / ".gitconfig").write_text("[x]\n\tglobal = 1\n")
    system = tmp_path / "system-config"
    system.write_text("[x]\n\tsystem = 1\n")
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(system))
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM")
    assert run_git(repo, ["config", "--get", "x.global"]).code == 1
    assert run_git(repo, ["config", "--get", "x.system"]).code == 1
    assert run_git(repo, ["config", "--get", "x.global"], user_config=True).out.strip() == "1"
    assert run_git(repo, ["config", "--get", "x.system"], user_config=True).out.strip() == "1"


def test_hardening_goes_after_the_callers_options_and_rev_parse_keeps_the_hooks_folder(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    argv = hardened_argv(str(repo), ["-c", "core.hooksPath=/x", "commit", "-m", "m"], git_env(), 10)
    assert argv.index("-c", argv.index("core.hooksPath=/x")) < argv.index("commit")
    assert argv[argv.index("commit") - 1] != "core.hooksPath=/x"  # ours come later and win
    assert f"core.hooksPath={os.devnull}" in argv
    diff = hardened_argv(str(repo), ["diff", "--name-only"], git_env(), 10)
    assert diff[diff.index("diff") + 1:diff.index("diff") + 3] == ["--no-ext-diff", "--no-textconv"]
    # `automaton --install-hooks git` asks where the hooks folder is: the repository's own
    hooks = run_git(repo, ["rev-parse", "--git-path", "hooks"])
    assert hooks.code == 0 and hooks.out.strip().endswith("hooks")


def test_odd_bytes_in_file_names_never_raise(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    name = os.fsdecode(b"caf\xe9.txt")
    (repo / name).write_text("x\n")
    out = run_git(repo, ["ls-files", "--others", "-z"])
    assert out.code == 0 and os.fsencode(out.out.rstrip("\0")) == b"caf\xe9.txt"


def evil_worktree(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """(repo, its loop worktree with `* filter=evil` and a new file, a second repository the
    agent may point the worktree at, the marker a driver that ran would write)."""
    repo = init_repo(tmp_path / "repo")
    wt = ensure_worktree(repo, tmp_path / "loop", "demo").path
    evil = init_repo(tmp_path / "evil")
    (wt / ".gitattributes").write_text("* filter=evil\n")
    (wt / "new.py").write_text("x = 1\n")
    return repo, wt, evil, tmp_path / "ran.txt"


def test_a_worktree_pointer_swapped_inside_a_probe_window_is_probed_anew(tmp_path: Path) -> None:
    # A daemon the agent left behind (possible where no child subreaper kills it: macOS) rewrites
    # the worktree's `.git` file to lead to a repository of its own with a filter driver, after
    # the window's first probe: the later calls of the window must empty that driver too.
    _, wt, evil, marker = evil_worktree(tmp_path)
    git(evil, "config", "filter.evil.clean", str(script(tmp_path / "clean.sh", marker, "clean", "cat")))
    git(evil, "config", "filter.evil.required", "true")
    with probe_once():
        assert run_git(wt, ["add", "-A"]).code == 0  # probes the real config: no driver there
        (wt / ".git").write_text(f"gitdir: {evil / '.git'}\n")
        (wt / "new.py").write_text("x = 2\n")
        run_git(wt, ["add", "-A"])
    assert not marker.exists()
    # control: plain git through the swapped pointer runs the driver, so the plant works
    (wt / "new.py").write_text("x = 3\n")
    git(wt, "add", "-A")
    assert "clean" in marker.read_text()


def test_a_driver_planted_behind_an_unchanged_pointer_inside_a_probe_window_is_emptied(tmp_path: Path) -> None:
    # A daemon the agent left behind points the worktree's `.git` at a git folder of its own
    # with no driver (probed: none), then plants a driver in that folder's config, keeping the
    # pointer's bytes: a window that cached worktree probes by the pointer would run it. Only a
    # window whose caller knows no agent process is alive (`pointers_settled`) caches them.
    _, wt, evil, marker = evil_worktree(tmp_path)
    with probe_once():
        assert run_git(wt, ["add", "-A"]).code == 0
        (wt / ".git").write_text(f"gitdir: {evil / '.git'}\n")
        (wt / "new.py").write_text("x = 2\n")
        run_git(wt, ["add", "-A"])  # probed anew: no driver yet
        git(evil, "config", "filter.evil.clean", str(script(tmp_path / "clean.sh", marker, "clean", "cat")))
        (wt / "new.py").write_text("x = 3\n")
        run_git(wt, ["add", "-A"])
    assert not marker.exists()
    # control: plain git through that pointer runs the driver, so the plant works
    (wt / "new.py").write_text("x = 4\n")
    git(wt, "add", "-A")
    assert "clean" in marker.read_text()


def test_a_fifo_for_a_worktree_pointer_does_not_hang_the_probe_window(tmp_path: Path) -> None:
    # The cache key reads the worktree's `.git` file; a FIFO put there by the agent would block a
    # plain open until someone writes to it. git itself refuses a `.git` that is not a file.
    repo = init_repo(tmp_path / "repo")
    wt = ensure_worktree(repo, tmp_path / "loop", "demo").path
    (wt / ".git").unlink()
    os.mkfifo(wt / ".git")
    with probe_once():
        done = run_git(wt, ["add", "-A"], timeout_s=30)
    assert done.code != 0


def test_a_filter_probe_that_fails_is_never_no_filters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A timed-out `git config` probe answered "no filter drivers", and a window cached that.
    from automaton.git import harden
    from automaton.proc import Captured
    from automaton.proc import run_capture as real

    repo = init_repo(tmp_path / "repo")

    def timing_out(argv: list[str], **kw: object) -> Captured:
        if "config" in argv and "--get-regexp" in argv:
            return Captured(124, "", "timed out")
        return real(argv, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(harden, "run_capture", timing_out)
    with probe_once():
        done = run_git(repo, ["add", "-A"])
    assert done.code == 2 and "cannot read which filter drivers" in done.err


def _probes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The repositories every filter probe is run in, from here on."""
    from automaton.git import harden

    seen: list[str] = []
    real = harden._probe

    def counting(repo: str, env: object, timeout_s: float) -> list[str]:
        seen.append(repo)
        return real(repo, env, timeout_s)  # type: ignore[arg-type]

    monkeypatch.setattr(harden, "_probe", counting)
    return seen


def test_a_worktree_of_a_trusted_git_folder_is_probed_once_per_window(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # A gate made four filter probes of the loop's worktree (one per content-reading call): its
    # pointer names a folder inside the project's `.git`, which no agent may write.
    repo = init_repo(tmp_path / "repo")
    wt = ensure_worktree(repo, tmp_path / "loop", "demo").path
    seen = _probes(monkeypatch)
    with probe_once(trusted=[repo / ".git"]):
        for _ in range(3):
            assert run_git(wt, ["status", "--porcelain"]).code == 0
    assert seen == [str(wt)]
    seen.clear()
    with probe_once():  # without the trusted folder: probed before every call, as before
        for _ in range(3):
            run_git(wt, ["status", "--porcelain"])
    assert seen == [str(wt)] * 3


def test_a_pointer_led_out_of_the_trusted_folder_is_probed_and_its_driver_emptied(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Inside a trusted window, the agent points its worktree's `.git` at a git folder of its own
    # (directly, or through a link that names the trusted folder's `worktrees/` but leads
    # elsewhere), then plants a driver there: every call is probed again and the driver emptied.
    repo, wt, evil, marker = evil_worktree(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(repo / ".git")
    real_dir = (wt / ".git").read_text().split(": ", 1)[1].strip()
    seen = _probes(monkeypatch)
    with probe_once(trusted=[repo / ".git"]):
        assert run_git(wt, ["add", "-A"]).code == 0
        (wt / ".git").write_text(f"gitdir: {link / 'worktrees' / Path(real_dir).name}\n")  # via a link: probed
        assert run_git(wt, ["status"]).code == 0
        (wt / ".git").write_text(f"gitdir: {evil / '.git'}\n")
        run_git(wt, ["add", "-A"])  # probed anew: no driver yet
        git(evil, "config", "filter.evil.clean", str(script(tmp_path / "clean.sh", marker, "clean", "cat")))
        (wt / "new.py").write_text("x = 3\n")
        run_git(wt, ["add", "-A"])
    assert not marker.exists()
    assert seen == [str(wt)] * 4
    (wt / "new.py").write_text("x = 4\n")  # control: plain git through that pointer runs the driver
    git(wt, "add", "-A")
    assert "clean" in marker.read_text()


NO_CONTENT_CALLS = (
    ["diff-tree", "-r", "--raw", "-z", "--no-renames", "--ignore-submodules=none", "HEAD", "HEAD"],
    ["diff-tree", "-r", "--name-only", "-z", "HEAD", "HEAD"],
    ["diff-index", "--cached", "--raw", "-z", "HEAD"],
    ["ls-files", "-v", "-z"],
    ["ls-files", "--others", "-z"],
    ["worktree", "list", "--porcelain"],
)
CONTENT_CALLS = (
    ["diff-index", "--raw", "-z", "HEAD"],  # the worktree's files against a tree
    ["ls-files", "-m"],  # re-hashes racily clean files through the clean filter
    ["ls-files", "-vm"],
    ["read-tree", "-u", "-m", "HEAD"],  # checks files out
    ["read-tree", "--reset", "HEAD"],  # without -i, the up-to-date check may re-hash a racily clean file
    ["diff-index", "HEAD", "--", "--cached"],  # `--cached` after `--` is a path: the worktree is compared
    ["diff-tree", "-p", "HEAD", "HEAD"],
    ["worktree", "add", "x"],
    ["status"],
    ["add", "-A"],
)


def test_commands_that_convert_no_content_skip_the_filter_probe_and_run_no_filter(tmp_path: Path) -> None:
    """The filter-driver probe runs only before commands that may convert a file's content;
    the others (comparing trees, a tree with the index, listing names) run no filter either:
    proved with real git and a planted driver on every path."""
    repo = init_repo(tmp_path / "repo")
    marker = tmp_path / "ran.txt"
    (repo / "a.txt").write_text("a\n")
    (repo / ".gitattributes").write_text("* filter=evil\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "attributes")
    plant_everything(repo, marker)
    (repo / "a.txt").write_text("changed\n")  # a file the clean filter would see
    (repo / "new.txt").write_text("new\n")
    for args in NO_CONTENT_CALLS:
        argv = hardened_argv(str(repo), args, git_env(), 10)
        assert "filter.evil.clean=" not in argv, args
        assert run_git(repo, args).code == 0, args
    assert not marker.exists(), marker.read_text()
    for args in CONTENT_CALLS:
        assert "filter.evil.clean=" in hardened_argv(str(repo), args, git_env(), 10), args
