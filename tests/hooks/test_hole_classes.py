"""Each class of hole, closed as a kind: at least three spellings each, through the real hook.

The task `demo` is at `implement` with the focus on it, so `src/` is in scope and only the brakes
(`.git`, hook settings, `.state*`, `.automaton/`) and the task's own files are out of it. Where a
test writes to an in-scope path (`src/...`), only the mechanism under test can deny it; where
it names a protected path it avoids `.state`/`.automaton` in the text, so the line-level
"names a protected path" rule is not what denies it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.hooks.codexpatch import BadPatch, exact_paths, patch_paths
from tests.helpers import Result
from tests.hooks.conftest import assert_allowed, assert_denied

Hook = Callable[..., Result]


def bash(project: Path, command: str, cwd: str = "") -> dict[str, Any]:
    return {"cwd": str(project / cwd), "tool_name": "Bash", "tool_input": {"command": command}}


def codex_patch(project: Path, text: str) -> dict[str, Any]:
    return {"cwd": str(project), "tool_name": "apply_patch", "tool_input": {"command": text}}


# ---- 1. aliases of a path: /dev/fd, /proc/self/fd, /proc/<pid>/cwd, links into /proc --------------

@pytest.mark.parametrize("command", [
    "echo x > /proc/self/cwd/src/app.py",  # resolves into scope, yet names the hook's own cwd
    "echo x > /proc/1/cwd/src/app.py",
    "cp src/app.py /proc/self/root/tmp/x.py",
    "echo x > /dev/fd/3",
    "echo x > /proc/self/fd/4",
    "tee /proc/thread-self/fd/5 < src/app.py",
    "echo x > src/cwd-link/src/app.py",  # a symlink into /proc
])
def test_writes_through_process_paths_are_denied(task: Path, project: Path, hook: Hook, command: str) -> None:
    (project / "src/cwd-link").symlink_to("/proc/self/cwd")
    result = hook("claude", bash(project, command))
    assert_denied(result)
    assert "process or device path" in result.err or "descriptor" in result.err, result.err


@pytest.mark.parametrize("agent, tool, key", [("claude", "Write", "file_path"), ("gemini", "write_file", "file_path"),
                                              ("claude", "NotebookEdit", "notebook_path")])
def test_file_tools_through_proc_are_denied(task: Path, project: Path, hook: Hook, agent: str, tool: str,
                                            key: str) -> None:
    payload = {"cwd": str(project), "tool_name": tool, "tool_input": {key: "/proc/self/cwd/src/app.py"}}
    assert_denied(hook(agent, payload), "process or device path")


@pytest.mark.parametrize("payload_of", [
    lambda p: bash(p, "echo x > src/hard.py"),
    lambda p: bash(p, "sed -i s/a/b/ src/hard.py"),
    lambda p: {"cwd": str(p), "tool_name": "Edit", "tool_input": {"file_path": str(p / "src/hard.py")}},
])
def test_a_file_with_another_hard_link_is_an_alias(task: Path, project: Path, hook: Hook,
                                                   payload_of: Callable[[Path], dict[str, Any]]) -> None:
    """An earlier hard link (here to the task's SPEC.md) makes every write to it a write to both."""
    (project / "tasks/demo/SPEC.md").write_text("# spec\n")
    os.link(project / "tasks/demo/SPEC.md", project / "src/hard.py")
    assert_denied(hook("claude", payload_of(project)), "hard links")


def test_standard_streams_and_own_descriptors_pass(task: Path, project: Path, hook: Hook) -> None:
    assert_allowed(hook("claude", bash(project, "echo x > /dev/null 2>/dev/stderr; echo y >/dev/fd/1")))
    assert_allowed(hook("claude", bash(project, "exec 3>src/out.txt; echo x >/dev/fd/3")))
    assert_denied(hook("claude", bash(project, "exec 3>.git/x; echo x >/dev/fd/3")), ".git")


# ---- 2. programs that look read-only but write -----------------------------------------------------

@pytest.mark.parametrize("command, needle", [
    ("sed -n 'w .git/hooks/pre-commit' src/app.py", ".git"),
    ("sed 's/x/y/w tasks/demo/SPEC.md' src/app.py", "SPEC.md"),
    ("sed -n '1W .claude/settings.json' src/app.py", "hook configuration"),
    ("sed '1e id' src/app.py", "runs a command"),
    ("git diff --output=.git/hooks/pre-commit", ".git"),
    ("git log --outp=tasks/demo/SPEC.md", "SPEC.md"),
    ("git format-patch -o tasks/demo HEAD", "tasks/demo"),
    ("find src -fprint .git/x", ".git"),
    ("find src -fprintf tasks/demo/SPEC.md %p", "SPEC.md"),
    ("find src -fls .claude/settings.json", "hook configuration"),
    ("find src -exec rm {} +", "find -exec"),
    ("xxd -r dump.hex .git/hooks/pre-commit", ".git"),
    ("xxd -r -p dump.hex tasks/demo/SPEC.md", "SPEC.md"),
    ("tree -o .git/x src", ".git"),
    ("sort -o .git/x src/app.py", ".git"),
    ("sort --output=tasks/demo/SPEC.md src/app.py", "SPEC.md"),
    ("sort --outp=.claude/settings.json src/app.py", "hook configuration"),
    ("sort --zzz src/app.py", "unknown"),
    ("awk '{print > \".git/x\"}' src/app.py", ".git"),
    ("awk '{printf \"x\" >> \"tasks/demo/SPEC.md\"}' src/app.py", "SPEC.md"),
    ("awk '{print $1 | \"sh\"}' src/app.py", "command"),
    ("tar -xzf evil.tgz", ".git"),
    ("tar -xzf good.tgz -C .git", ".git"),
    ("tar -xzf good.tgz --to-command=sh", "runs a program"),
    ("unzip -o evil.zip", "hook configuration"),
    ("unzip -o good.zip -d tasks/demo", "tasks/demo"),
    ("rsync -a src/ .git/", ".git"),
    ("rsync -e ./x.sh a b", "runs a program"),
    ("rsync -a --link-dest=../tasks src/ build/", "outside"),
    ("dd if=src/app.py of=.git/x", ".git"),
    ("dd if=src/app.py of=tasks/demo/SPEC.md", "SPEC.md"),
])
def test_read_only_looking_programs_are_judged_by_what_they_write(task: Path, project: Path, hook: Hook,
                                                                  command: str, needle: str) -> None:
    import tarfile
    import zipfile

    member = project / "member"
    member.write_text("x\n")
    with tarfile.open(project / "evil.tgz", "w:gz") as tar:
        tar.add(member, arcname=".git/hooks/pre-commit")
    with tarfile.open(project / "good.tgz", "w:gz") as tar:
        tar.add(member, arcname="vendor.py")
    with zipfile.ZipFile(project / "evil.zip", "w") as zf:
        zf.writestr(".claude/settings.json", "{}")
    with zipfile.ZipFile(project / "good.zip", "w") as zf:
        zf.writestr("vendor.py", "x")
    (project / "dump.hex").write_text("00000000: 78\n")
    assert_denied(hook("claude", bash(project, command)), needle)


@pytest.mark.parametrize("command", [
    "sed -n '1,5p' src/app.py", "sed 's/x/y/' src/app.py", "sed -n 'w src/copy.py' src/app.py",
    "git diff --output=src/changes.diff", "find src -name '*.py' -exec grep -l x {} +", "sort -o src/s.txt src/app.py",
    "awk '$1 > 0 {print $1}' src/app.py", "awk '{print > \"src/out.txt\"}' src/app.py", "tree src",
])
def test_their_honest_uses_pass(task: Path, project: Path, hook: Hook, command: str) -> None:
    assert_allowed(hook("claude", bash(project, command)))


# ---- 3. hard and symbolic links write the file they link ------------------------------------------

@pytest.mark.parametrize("command", [
    "ln tasks/demo/SPEC.md src/spec.md",
    "ln -s ../tasks/demo/SPEC.md src/spec.md",
    "ln -t src tasks/demo/SPEC.md",
    "cp -l tasks/demo/SPEC.md src/spec.md",
    "cp --link tasks/demo/SPEC.md src/",
    "cp -s {project}/tasks/demo/SPEC.md src/spec.md",
    "link tasks/demo/SPEC.md src/spec.md",
])
def test_the_source_of_a_link_is_written(task: Path, project: Path, hook: Hook, command: str) -> None:
    (project / "tasks/demo/SPEC.md").write_text("# spec\n")
    assert_denied(hook("claude", bash(project, command.replace("{project}", str(project)))), "tasks/demo/SPEC.md")


def test_links_within_scope_pass(task: Path, project: Path, hook: Hook) -> None:
    assert_allowed(hook("claude", bash(project, "ln -s app.py src/alias.py && ln src/app.py src/hard.py")))
    assert_allowed(hook("claude", bash(project, "cp -l src/app.py src/copy.py")))


# ---- 4. cd under CDPATH, pushd/popd, subshells, pipelines --------------------------------------

@pytest.mark.parametrize("command", [
    "cd tasks/demo && (cd ../..) && touch SPEC.md",  # the subshell's cd ends with it
    "cd tasks/demo; $(cd ../..); touch SPEC.md",
    "cd tasks/demo && `cd ..` && touch SPEC.md",
    "cd .. | true; cd tasks/demo; touch SPEC.md",
    "cd src || cd tasks/demo; touch SPEC.md",  # either place
    "CDPATH=tasks cd demo && touch SPEC.md",
    "export CDPATH={project}/tasks; cd demo && touch SPEC.md",
    "CDPATH=:tasks cd demo; touch SPEC.md",
    "pushd tasks/demo && touch SPEC.md",
    "pushd src && pushd ../tasks/demo && popd && popd && pushd tasks/demo && touch SPEC.md",
    "pushd src; pushd; touch SPEC.md",  # swap: back where it started (not src)
    "popd && touch x.txt",  # popd past the line's own stack: unknown
    "cd - && touch x.txt",
    "cd $D && cd .. && touch x.txt",
])
def test_directory_changes_are_tracked_or_denied(task: Path, project: Path, hook: Hook, command: str) -> None:
    (project / "tasks/demo/SPEC.md").write_text("# spec\n")
    result = hook("claude", bash(project, command.replace("{project}", str(project)), cwd=""
                                 if "pushd; touch" not in command else "tasks/demo"))
    assert_denied(result)
    assert "SPEC.md" in result.err or "unknown place" in result.err, result.err


def test_a_cdpath_set_in_the_agents_environment_is_followed(task: Path, project: Path, hook: Hook,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDPATH", str(project / "tasks"))
    assert_denied(hook("claude", bash(project, "cd demo && touch SPEC.md")), "tasks/demo/SPEC.md")
    monkeypatch.delenv("CDPATH")
    rc = Path(os.environ["HOME"]) / ".bashrc"
    rc.write_text(f"alias ll='ls -l'\nexport CDPATH=\".:{project}/tasks\"\n")  # set, not exported
    assert_denied(hook("claude", bash(project, "cd demo && touch SPEC.md")), "tasks/demo/SPEC.md")
    rc.write_text("CDPATH=$(cat ~/.dirs)\n")  # known only at run time
    assert_denied(hook("claude", bash(project, "cd demo && touch SPEC.md")), "unknown place")
    assert_allowed(hook("claude", bash(project, "cd ./src && touch a.py && cd ../src && touch b.py")))


def test_ordinary_cd_still_works(task: Path, project: Path, hook: Hook) -> None:
    assert_allowed(hook("claude", bash(project, "cd src && touch a.py && (cd .. && ls) && touch b.py")))
    assert_allowed(hook("claude", bash(project, "pushd src && touch c.py && popd && ls")))


# ---- 5. Codex apply_patch, read as Codex's parser reads it -----------------------------------------

P = "*** Begin Patch\n{}*** End Patch\n"


@pytest.mark.parametrize("text", [
    P.format("  *** Add File: tasks/demo/SPEC.md\n+x\n"),  # indented header
    P.format("\t*** Update File: .git/config\n@@\n-a\n+b\n"),
    P.format("*** Add File: src/ok.py\n+x\n   *** Delete File: .claude/settings.json\n"),
    "   *** Begin Patch  \n*** Add File: .git/x\n+x\n  *** End Patch\n",  # padded markers
    "<<'EOF'\n*** Begin Patch\n*** Add File: tasks/demo/SPEC.md\n+x\n*** End Patch\nEOF\n",  # heredoc wrapper
    "*** Begin Patch\r\n*** Add File: .git/x\r\n+x\r\n*** End Patch\r\n",  # CRLF
    "\u3000*** Begin Patch\n\u00a0*** Add File: tasks/demo/SPEC.md\n+x\n*** End Patch\u2003",  # Unicode spaces
    P.format("*** Update File: src/app.py\n*** Move to: .git/x\n@@\n-x = 1\n+x = 2\n"),
    P.format("*** ADD FILE: .git/x\n+x\n"),  # a spelling Codex refuses today: denied all the same
])
def test_lenient_patch_headers_are_read(task: Path, project: Path, hook: Hook, text: str) -> None:
    assert_denied(hook("codex", codex_patch(project, text)))


def test_exact_paths_follow_the_codex_parser() -> None:
    assert exact_paths(P.format("  *** Add File: a.py\n+x\n")) == ["a.py"]
    assert exact_paths(P.format("*** Add File:  a.py\n+x\n")) == [" a.py"]  # the second space is in the path
    assert exact_paths(P.format("*** Update File: a.py\n*** Move to: b.py\n@@\n-x\n+y\n")) == ["a.py", "b.py"]
    # an indented Move to is a context line of the chunk, not a rename
    assert exact_paths(P.format("*** Update File: a.py\n  *** Move to: b.py\n-x\n+y\n")) == ["a.py"]
    assert "b.py" in patch_paths(P.format("*** Update File: a.py\n  *** Move to: b.py\n-x\n+y\n"))
    assert exact_paths("<<\"EOF\"\n*** Begin Patch\n*** Delete File: c.py\n*** End Patch\nEOF") == ["c.py"]
    for broken in ("*** Add File: a.py\n", P.format("*** Update File: a.py\n"), P.format("junk\n"),
                   P.format("*** Update File: a.py\n@@\n-x\n+y\n\tnot a chunk line\n")):
        with pytest.raises(BadPatch):
            exact_paths(broken)


def test_a_patch_codex_would_refuse_is_denied(task: Path, project: Path, hook: Hook) -> None:
    assert_denied(hook("codex", codex_patch(project, P.format("*** Update File: src/app.py\n"))), "empty")


@pytest.mark.parametrize("command", [
    "cd tasks/demo && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: SPEC.md\n+x\n*** End Patch\nEOF",
    "apply_patch '*** Begin Patch\n  *** Add File: .git/x\n+x\n*** End Patch'",
    "bash -lc \"cd tasks && applypatch <<'EOF'\n*** Begin Patch\n*** Add File: demo/SPEC.md\n+x\n*** End Patch\nEOF\"",
])
def test_a_shell_apply_patch_is_read_in_its_directory(task: Path, project: Path, hook: Hook, command: str) -> None:
    assert_denied(hook("codex", bash(project, command)))


def test_honest_patches_pass(task: Path, project: Path, hook: Hook) -> None:
    assert_allowed(hook("codex", codex_patch(project, P.format("  *** Add File: src/new.py\n+x\n"))))
    cd_patch = "cd src && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: b.py\n+x\n*** End Patch\nEOF"
    assert_allowed(hook("codex", bash(project, cd_patch)))
