"""Each confined run gets a temp dir of its own (`runner.confine.scratch`), and the runner reads
back what a run left there without following a link: nothing an agent leaves in its TMPDIR
reaches the verifier, a later role, or a file outside the sandbox.

The three attacks (each made the tick score the agent's bytecode, copy the record key where
the next agent reads it, or delete and write a folder outside the sandbox, while one temp dir
served every role of a tick): bytecode planted where the verifier's PYTHONPYCACHEPREFIX was; the
verifier's JUnit file swapped for a link to a secret; the agent's configuration folder swapped
for a link where the runner seeds the next role's configuration.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from automaton.runner import confine
from automaton.runner.tick import tick
from automaton.store import loops as store
from automaton.store.layout import kept_export_of
from tests.runner.loopkit import make_loop
from tests.runner.test_agentconfig import fake_cli, user_claude
from tests.runner.test_pytest_verify import FIXED, loop

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the tick sandbox needs Landlock")
PY = sys.executable


def test_scratch_makes_a_new_private_folder_for_every_run(tmp_path: Path) -> None:
    one, two = confine.scratch(tmp_path, "verify"), confine.scratch(tmp_path, "verify")
    assert one != two and one.parent == two.parent == tmp_path
    assert one.is_dir() and list(one.iterdir()) == [] and one.stat().st_mode & 0o777 == 0o700


def planting_agent(export: Path) -> str:
    """Agent code: leaves src/calc.py's bug in place (a comment only) and plants bytecode of
    the fixed module where a verifier whose PYTHONPYCACHEPREFIX were `$TMPDIR/pycache` would
    load it for the export's src/calc.py (an unchecked hash: Python never compares it to the
    source)."""
    return textwrap.dedent(f"""
        import os, pathlib, py_compile, sys, tempfile
        with open("src/calc.py", "a") as fh:
            fh.write("# still the bug\\n")
        good = pathlib.Path(tempfile.mkdtemp()) / "calc.py"
        good.write_text({FIXED!r})
        for where in {{{str(export)!r}, os.path.realpath({str(export)!r})}}:
            cfile = os.environ["TMPDIR"] + "/pycache" + where + f"/src/calc.{{sys.implementation.cache_tag}}.pyc"
            py_compile.compile(str(good), cfile=cfile, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        """)


@linux_only
def test_bytecode_the_agent_leaves_in_its_temp_dir_never_reaches_the_verifier(project: Path) -> None:
    """Fails on the old code: the verifier's bytecode cache was `<the tick's temp dir>/pycache`,
    the agent's own TMPDIR, and the tick scored the planted fix 1.0 and completed the loop."""
    proj = loop(project, [], agent=planting_agent(kept_export_of(project.resolve(), "demo")))
    out = tick(proj, "demo")
    assert out.data is not None and out.data["verdict"]["score"] == 0.5, out.data  # the bug, judged from source
    assert store.read_state(proj, "demo").status == "running"


SWAP_JUNIT = textwrap.dedent("""
    import os, sys
    path = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml="))
    with open(path, "w") as fh:
        fh.write('<testsuite tests="1" failures="0"><testcase name="t"/></testsuite>')
    os.unlink(path)
    os.symlink(sys.argv[1], path)  # what code under test can do at exit, after pytest wrote it
    print("1 passed")
    """)


@linux_only
def test_a_junit_file_swapped_for_a_link_is_never_followed(project: Path, tmp_path: Path) -> None:
    """Fails on the old code: the runner followed the link and copied the secret to
    `runs/<n>/junit.xml`, which every later agent reads."""
    secret = tmp_path / "secret"
    secret.write_text("TOP-SECRET-KEY\n")
    roles = {"implement": {"prompt": "implement.md"},
             "verify": {"command": [PY, "-c", SWAP_JUNIT, str(secret)], "score": "junit"},
             "orchestrate": {"builtin": True}}
    proj = make_loop(project, harness={"name": "command", "command": [PY, "-c", "pass"], "args": []}, roles=roles)
    tick(proj, "demo")
    run = proj.loop_dir(store.require_tracked(proj, "demo")) / "runs" / "1"
    assert (run / "verify.log").is_file()  # the verifier ran
    kept = run / "junit.xml"
    assert not kept.exists() or "TOP-SECRET" not in kept.read_text()


# A fake `claude` (the shape of a Claude Code run with `--output-format json`): as the implement
# role it swaps its configuration folder (`$TMPDIR/agent-config` while one temp dir served the
# whole tick) for a link to a folder outside the sandbox; as the verifier it scores 0.5.
SWAP_CONFIG = """
import json, os, pathlib, sys
prompt = sys.stdin.read()
tmp = pathlib.Path(os.environ["TMPDIR"])
config = tmp / "agent-config"
if "Score" not in prompt and config.exists() and not config.is_symlink():
    config.rename(tmp / "moved")
    config.symlink_to(os.environ["VICTIM"])
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": '{"score": 0.5}',
                  "total_cost_usd": 0.01, "usage": {}}))
"""


@linux_only
def test_a_link_the_agent_leaves_for_the_next_roles_configuration_is_never_followed(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forbid_real_home: Path) -> None:
    """Fails on the old code: the runner seeded the verifier's configuration at
    `<tick temp dir>/agent-config/verify` through the agent's link, deleting the folder there
    and writing the user's Claude settings into it."""
    user_claude(forbid_real_home)
    victim = tmp_path / "victim"
    (victim / "verify").mkdir(parents=True)
    (victim / "verify" / "important.txt").write_text("precious\n")
    monkeypatch.setenv("VICTIM", str(victim))
    fake_cli(tmp_path, monkeypatch, "claude", SWAP_CONFIG)
    roles = {"implement": {"prompt": "implement.md"}, "verify": {"prompt": "verify.md", "score": "agent"},
             "orchestrate": {"builtin": True}}
    proj = make_loop(project, harness={"name": "claude", "args": []}, roles=roles,
                     template_files={"verify.md": "Score the work.\n"})
    out = tick(proj, "demo")
    assert out.data is not None and out.data["verdict"]["score"] == 0.5, (out.lines, out.data)
    assert (victim / "verify" / "important.txt").read_text() == "precious\n"
    assert sorted(p.name for p in victim.rglob("*")) == ["important.txt", "verify"]
    assert json.loads((forbid_real_home / ".claude.json").read_text())["userID"] == "u-1"
