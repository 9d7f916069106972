"""Best-effort shell analysis: which command lines are refused and which targets are found."""

from __future__ import annotations

from pathlib import Path

import pytest

from automaton.hooks.shell import Unsafe, analyze

CWD = Path("/p")


def targets(command: str) -> list[str]:
    return [str(base / t) for t, base in analyze(command, CWD).targets]


@pytest.mark.parametrize("command, expected", [
    ("echo hi 2>/dev/null >out.txt", ["/p/out.txt"]),
    ("make 2>&1 | tee -a build.log", ["/p/build.log"]),
    ("echo a\nrm old.txt", ["/p/old.txt"]),
    ("cd sub && touch a b", ["/p/sub/a", "/p/sub/b"]),
    ("sed -i.bak 's/a/b/' f1 f2", ["/p/f1", "/p/f2"]),
    ("sed -e s/a/b/ -i f1", ["/p/f1"]),
    ("cp -r a b dest/", ["/p/dest"]),
    ("install -m 644 -t bin tool", ["/p/bin"]),
    ("mv a.txt b.txt", ["/p/a.txt", "/p/b.txt"]),
    ("dd if=/dev/zero of=disk.img bs=1", ["/p/disk.img"]),
    ("FOO=1 env -i BAR=2 sudo rm -rf build", ["/p/build"]),
    ("cat > f.txt <<'EOF'\nit's \"odd\"\nEOF\necho done", ["/p/f.txt"]),
    ("echo `touch y` z", ["/p/y"]),
    ("(ls)>listing", ["/p/listing"]),
    ("ls -la && git status && grep -r x .", []),
    ("python -m pytest -q", []),
])
def test_targets(command: str, expected: list[str]) -> None:
    assert targets(command) == expected


@pytest.mark.parametrize("command, reason", [
    ("automaton --approve --task t", "human acts"),
    ("automaton --ap --loop x", "human acts"),
    ("python3 -m automaton --focus t", "human acts"),
    ("/home/u/.automaton/scripts/status.py --approve --task t", "human acts"),
    ("export AUTOMATON_APPROVER=me", "AUTOMATON_APPROVER"),
    ("git commit --no-verify -m x", "--no-verify"),
    ("python -c \"open('tasks/t/.state','w').write('complete')\"", ".state"),
    ("git checkout -- tasks/t/.state", ".state"),
    ("python - <<EOF\nopen('.automaton/focus','w')\nEOF", ".automaton"),
    ("echo x > $TARGET", "cannot tell"),
    ("cd $DIR && touch a", "unknown cd"),
    ("echo 'unbalanced", "cannot parse"),
    ("cat <<EOF > f\nnever closed", "never closed"),
])
def test_refused(command: str, reason: str) -> None:
    with pytest.raises(Unsafe, match=reason.replace("$", r"\$")):
        analyze(command, CWD)


def test_reading_state_files_is_fine() -> None:
    assert targets("cat tasks/t/.state && automaton --phase --task t && ls .automaton/loops") == []


def test_glob_targets_include_hidden_matches(tmp_path: Path) -> None:
    (tmp_path / ".state").write_text("x")
    found = [t for t, _ in analyze("rm .st*", tmp_path).targets]
    assert found == [".st*", str(tmp_path / ".state")]
