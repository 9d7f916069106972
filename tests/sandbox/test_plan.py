"""plan: a policy checked and resolved, and the Landlock rules made from it (no kernel needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from automaton.core.sandbox import Policy
from automaton.sandbox import rights
from automaton.sandbox.plan import DEVICES_RW, SandboxError, landlock_rules, resolve
from tests.sandbox.conftest import Box


@pytest.mark.parametrize(("writable", "hidden", "tmpdir", "words"), [
    (("rel/path",), (), None, "not an absolute path"),
    (("/a",), ("/a/key",), None, "the hidden /a/key lies inside the writable /a"),
    (("/a/b",), ("/a",), None, "the writable /a/b lies inside the hidden /a"),
    (("/a",), ("/a",), None, "lies inside the writable"),
    (("/a",), ("/",), None, "cannot hide the root"),
    (("/a",), (), "/tmp/elsewhere", "temp dir /tmp/elsewhere is not among the writable"),
    (("/a\0b",), (), None, "cannot resolve"),
])
def test_contradictory_or_odd_policies_are_refused_in_one_line(
        writable: tuple[str, ...], hidden: tuple[str, ...], tmpdir: str | None, words: str) -> None:
    policy = Policy(tuple(Path(p) for p in writable), tuple(Path(p) for p in hidden),
                    Path(tmpdir) if tmpdir else None, "loop x\nforged")
    with pytest.raises(SandboxError) as caught:
        resolve(policy)
    assert words in caught.value.message and "\n" not in caught.value.message
    assert caught.value.code == 1


def test_paths_are_resolved_the_way_the_kernel_sees_them(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    res = resolve(Policy((tmp_path / "alias", tmp_path / "alias"), (tmp_path / "gone" / "key",),
                         tmp_path / "alias" / "tmp"))
    assert res.writable == (str(real),)  # duplicates collapse
    assert res.hidden == (str(tmp_path / "gone" / "key"),) and res.tmpdir == str(real / "tmp")


def test_rules_read_everything_but_the_way_to_the_hidden_path(box: Box) -> None:
    rules = landlock_rules(box.policy())
    by_path = {r.path: r for r in rules}
    assert rules[0].path == "/" and rules[0].access == rights.READ_DIR
    way = [str(p) for p in box.key.parent.parents]  # home/.config, home, tmp_path, …, /
    for step in [*way, str(box.key.parent), str(box.key), "/dev"]:
        assert step not in by_path or step == "/", step
    assert by_path[str(box.sibling)].access == rights.READ and not by_path[str(box.sibling)].follow
    assert by_path[str(box.outside)].access == rights.READ
    assert by_path["/usr"].access == rights.READ
    for name in os.listdir(box.root):
        if name != "home":
            assert str(box.root / name) in by_path
    assert rules[-1].path == str(box.work) and rules[-1].access == rights.WRITE
    assert by_path["/dev/null"].access == rights.DEVICE_RW and set(DEVICES_RW) <= set(by_path)


def test_dev_is_sealed_even_with_nothing_hidden(tmp_path: Path) -> None:
    rules = landlock_rules(Policy((tmp_path,)))
    paths = {r.path for r in rules}
    assert "/dev" not in paths and "/dev/null" in paths and "/usr" in paths
    assert not any(p.startswith("/dev/") and p not in ("/dev/pts",) and "null" not in p and r.access == rights.READ
                   for r in rules for p in [r.path])


def test_rights_by_abi() -> None:
    assert rights.handled(1) == (1 << 13) - 1
    assert rights.handled(2) & rights.REFER and not rights.handled(2) & rights.TRUNCATE
    assert rights.handled(3) & rights.TRUNCATE and not rights.handled(4) & rights.IOCTL_DEV
    assert rights.handled(7) == (1 << 16) - 1
    assert rights.scopes(5) == 0 and rights.scopes(6) == rights.SCOPE_SIGNAL | rights.SCOPE_ABSTRACT_UNIX_SOCKET
    # A writable folder never lets a (root) agent make device nodes nor ioctl devices there.
    assert not rights.WRITE & (rights.MAKE_CHAR | rights.MAKE_BLOCK | rights.IOCTL_DEV)
