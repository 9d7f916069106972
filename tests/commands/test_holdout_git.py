"""A loop's holdout tests and git (SECURITY.md S50): `git add -A` leaves them out; a commit that
holds them anyway halts the next tick before the agent runs (nothing charged) and `--doctor`
names it; rotated tests let the loop go on."""

from __future__ import annotations

from pathlib import Path

from automaton.commands import holdout_git
from automaton.commands.doctor import doctor_loop
from automaton.commands.loops import approve_loop, review_loop
from automaton.runner.tick import tick
from automaton.store import loops as store
from automaton.store.layout import Project
from tests.helpers import git
from tests.runner.test_pytest_verify import halted, loop

SECRET = {"test_secret_holdout.py": "def test_secret():\n    assert 'HOLDOUT-SECRET-4242'\n"}
HOLDOUT = ".automaton/loops/demo/holdout"
LEAK = "import pathlib\npathlib.Path('src/leak.txt').write_text('agent ran')\n"


def exclude_file(root: Path) -> Path:
    return Path(git(root, "rev-parse", "--path-format=absolute", "--git-path", "info/exclude").strip())


def holdout_loop(project: Path) -> Project:
    return loop(project, [], protected=[], holdout=SECRET, agent=LEAK)


def commit_all(root: Path, *extra: str) -> None:
    git(root, "add", "-A", *extra)
    git(root, "commit", "-q", "-m", "add the loop")


def test_create_loop_keeps_the_holdout_out_of_git_add_all(project: Path) -> None:
    proj = holdout_loop(project)
    assert f"/{HOLDOUT}/" in exclude_file(project).read_text().splitlines()
    commit_all(project)
    assert git(project, "ls-files", ".automaton/loops/demo/loop.json").strip()  # the loop itself is committed
    assert git(project, "ls-files", HOLDOUT) == ""  # its holdout is not
    found = holdout_git.exposed(store.Loop.resolve(proj, "demo"), store.read_config(proj, "demo"),
                                store.read_state(proj, "demo"))
    assert found == holdout_git.Exposure()


def test_an_existing_loop_gets_the_exclude_on_its_next_tick(project: Path) -> None:
    proj = holdout_loop(project)
    ex = exclude_file(project)
    ex.write_text("".join(line + "\n" for line in ex.read_text().splitlines() if "holdout" not in line))
    out = tick(proj, "demo")
    assert out.data is not None and out.data["ran"], out.lines
    assert f"/{HOLDOUT}/" in ex.read_text().splitlines()


def test_glob_characters_in_the_holdout_path_are_escaped(project: Path) -> None:
    proj = holdout_loop(project)
    assert holdout_git.holdout_pattern(store.Loop.resolve(proj, "demo"), "h[1]*/x y") == \
        r".automaton/loops/demo/h\[1]\*/x\ y/"


def test_a_committed_holdout_halts_the_next_tick_before_the_agent_runs(project: Path) -> None:
    proj = holdout_loop(project)
    commit_all(project, "-f")  # on purpose, past info/exclude
    assert git(project, "ls-files", HOLDOUT).strip() == f"{HOLDOUT}/test_secret_holdout.py"
    before = store.read_state(proj, "demo")
    out = tick(proj, "demo")
    assert not out.ok and out.data is not None and out.data["reason"] == "holdout_committed", out.lines
    reason, detail = halted(proj)
    assert reason == "human_intervention"
    assert detail.startswith(f"holdout_committed: git tracks the holdout tests {HOLDOUT}/test_secret_holdout.py"
                             " (base commit "), detail
    assert f"git rm -r --cached {HOLDOUT} and commit" in detail
    after = store.read_state(proj, "demo")
    assert (after.iteration_count, after.spent_usd) == (before.iteration_count, before.spent_usd)  # nothing charged
    loop_dir = proj.loop_dir(store.require_tracked(proj, "demo"))
    assert not (loop_dir / "runs" / "1").exists() and not (loop_dir / "worktree").exists()  # no agent, no worktree
    assert not (project / "src" / "leak.txt").exists()


def test_doctor_names_a_committed_holdout(project: Path) -> None:
    proj = holdout_loop(project)
    name = store.require_tracked(proj, "demo")
    clean = [f for f in doctor_loop(proj, name) if f.check == "holdout"]
    assert [f.level for f in clean] == ["ok"], clean
    commit_all(project, "-f")
    found = [f for f in doctor_loop(proj, name) if f.check == "holdout"]
    assert [f.level for f in found] == ["problem"], found
    assert f"{HOLDOUT}/test_secret_holdout.py" in found[0].message and "holdout_committed" in found[0].message
    assert found[0].fix is not None and found[0].fix.startswith(f"git rm -r --cached {HOLDOUT}")


def test_the_loop_branch_holding_it_halts_too(project: Path) -> None:
    proj = holdout_loop(project)
    commit_all(project)
    git(project, "branch", "loop/demo")  # a branch the agent's worktree is made from
    git(project, "checkout", "-q", "loop/demo")
    git(project, "add", "-f", HOLDOUT)
    git(project, "commit", "-q", "-m", "holdout on the loop branch")
    git(project, "checkout", "-q", "main")  # which takes the files away from the loop folder: put them back
    folder = proj.loop_dir(store.require_tracked(proj, "demo")) / "holdout"
    folder.mkdir(exist_ok=True)
    for rel, text in SECRET.items():
        (folder / rel).write_text(text)
    found = holdout_git.exposed(store.Loop.resolve(proj, "demo"), store.read_config(proj, "demo"),
                                store.read_state(proj, "demo"))
    assert found.paths == (f"{HOLDOUT}/test_secret_holdout.py",) and found.where[0].startswith("loop/demo "), found


def test_rotated_holdout_tests_let_the_approved_loop_tick_again(project: Path, approver: str) -> None:
    proj = holdout_loop(project)
    first = tick(proj, "demo")  # freezes the test set with the holdout's digest
    assert first.data is not None and first.data["ran"] and first.data["verdict"]["summary"] == "2/3 passed", first.data
    commit_all(project, "-f")
    tick(proj, "demo")
    assert halted(proj)[1].startswith("holdout_committed: ")
    assert "(HEAD " in halted(proj)[1]  # the recorded base commit predates it; HEAD holds it
    git(project, "rm", "-r", "-q", "--cached", HOLDOUT)
    git(project, "commit", "-q", "-m", "holdout out of git")
    # git rm alone is not enough while an old commit the loop reads (HEAD~1 is history only
    # here) holds them: the human writes new tests, which no commit holds.
    secret = proj.loop_dir(store.require_tracked(proj, "demo")) / "holdout" / "test_secret_holdout.py"
    secret.write_text("def test_secret():\n    assert 'ROTATED-4243'\n")
    review = review_loop(proj, "demo")
    assert any("accepts the holdout tests as they are now" in line for line in review.lines), review.lines
    out = approve_loop(proj, "demo", review)
    assert out.ok, out.lines
    out = tick(proj, "demo")  # the approval dropped the frozen set: no holdout_changed halt on the new tests
    assert out.data is not None and out.data["ran"], out.lines
    assert store.read_state(proj, "demo").status == "running", store.read_state(proj, "demo")
    assert git(project, "ls-tree", "-r", "--name-only", "loop/demo", "--", HOLDOUT) == ""
