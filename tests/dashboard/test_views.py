"""What the pages show: the loops view and its fragment, the loop page and its plots, a tick's
diff and logs, the task board; escaping of hostile text; 404 and 500 pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from automaton.dashboard import views
from automaton.store import loops
from automaton.store.layout import Project
from tests.commands.loopkit import add_worktree, loop_with
from tests.dashboard.kit import SCORES, client, halted, login, site
from tests.helpers import git, init_repo, seed_task, via_json

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>\u202e'


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "proj")


def _rows(page: str) -> dict[str, str]:
    found = re.finditer(r'<tr class="loop"[^>]*data-loop="([^"]+)".*?</tr>', page, re.S)
    return {m.group(1): m.group(0) for m in found}


def test_the_loops_view_has_one_row_per_loop_with_its_figures(root: Path) -> None:
    p = halted(root)
    loop_with(root, "other")
    page = client(site(p, human=False)).get("/").text
    assert '<table id="loops">' in page and '<tbody id="loops-body" data-fragment="/fragment/loops">' in page
    rows = _rows(page)
    assert set(rows) == {"demo", "other"}
    demo = rows["demo"]
    assert 'data-project="0"' in demo and 'data-status="halted"' in demo
    assert '<td class="halt-reason">iterations_exhausted</td>' in demo and "4 of 4 iterations used" in demo
    assert '<a class="loop-link" href="/p/0/loop/demo">' in demo
    assert '<td class="iterations num">4 / 4</td>' in demo and '<td class="iterations-left num">0</td>' in demo
    assert "$0.4000 / $10.0000" in demo and '<svg class="spark"' in demo and "0.75" in demo
    assert '<td class="halt-reason"></td>' in rows["other"] and 'data-status="running"' in rows["other"]


def test_the_fragment_is_the_rows_alone_and_follows_changes(root: Path) -> None:
    p = loop_with(root, "demo")
    c = client(site(p, human=False))
    first = c.get("/fragment/loops").text
    assert first.lstrip().startswith('<tr class="loop"') and "<html" not in first and 'data-status="running"' in first
    loops.update_state(p, "demo", via_json("HALT", {"reason": "verifier_failed", "detail": "x"},
                       lambda s: s.update(status="halted", halt_reason="verifier_failed", halt_detail="x")))
    assert 'data-status="halted"' in c.get("/fragment/loops").text
    assert c.get("/fragment/p/0/loop/demo").text.lstrip().startswith("<h1>demo")


def test_several_projects_are_served_with_their_index(tmp_path: Path) -> None:
    a = loop_with(init_repo(tmp_path / "a"), "alpha")
    b = loop_with(init_repo(tmp_path / "b"), "beta")
    c = client(site(a, b, human=False))
    rows = _rows(c.get("/").text)
    assert 'data-project="0"' in rows["alpha"] and 'data-project="1"' in rows["beta"]
    assert c.get("/p/1/loop/beta").status_code == 200
    assert c.get("/p/0/loop/beta").status_code == 404


def test_an_unreadable_loop_is_a_row_not_a_crash(root: Path) -> None:
    p = loop_with(root, "demo")
    loop_with(root, "broken")
    (root / ".automaton/loops/broken/.state.loop").write_text("{not json")
    rows = _rows(client(site(p, human=False)).get("/").text)
    assert 'data-status="error"' in rows["broken"] and ".state.loop" in rows["broken"]
    assert 'data-status="running"' in rows["demo"]


def test_the_loop_page_plots_one_point_per_scored_tick(root: Path) -> None:
    p = halted(root)
    page = client(site(p, human=False)).get("/p/0/loop/demo").text
    score = re.search(r'<svg id="score-plot".*?</svg>', page, re.S)
    spend = re.search(r'<svg id="spend-plot".*?</svg>', page, re.S)
    assert score is not None and spend is not None
    assert score.group(0).count('<circle class="point"') == sum(s is not None for s in SCORES)
    assert spend.group(0).count('<circle class="point"') == len(SCORES)
    ticks = page.split('<table id="ticks">', 1)[1].split("</table>", 1)[0]
    assert ticks.count('<tr class="tick"') == len(SCORES) and 'href="/p/0/loop/demo/tick/2"' in ticks
    assert '<span id="loop-status" class="status status-halted">halted</span>' in page
    halts = page.split('<table id="halts">', 1)[1].split("</table>", 1)[0]
    assert "HALT" in halts and "iterations_exhausted: 4 of 4 iterations used" in halts


def test_the_loop_page_reads_and_verifies_the_log_once(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Status and tick table come from one read of the log: never from either side of a write."""
    p = halted(root)
    real = loops.Loop.inspect
    calls: list[str] = []

    def counted(self: loops.Loop) -> loops.LoopRecord:
        calls.append(self.name)
        return real(self)

    monkeypatch.setattr(loops.Loop, "inspect", counted)
    page = views.loop_page(p, "demo")
    assert calls == ["demo"]
    assert page["tick_count"] == len(SCORES) and page["status"]["status"] == "halted"


def test_a_plot_without_scores_has_no_point(root: Path) -> None:
    page = client(site(loop_with(root, "demo"), human=False)).get("/p/0/loop/demo").text
    score = re.search(r'<svg id="score-plot".*?</svg>', page, re.S)
    assert score is not None and "<circle" not in score.group(0) and "no data yet" in score.group(0)


def test_hostile_text_is_escaped_everywhere(root: Path) -> None:
    p = loop_with(root, "demo")
    loops.update_state(p, "demo", via_json("HALT", {"reason": "human_intervention", "detail": HOSTILE},
                       lambda s: s.update(status="halted", halt_reason="human_intervention", halt_detail=HOSTILE)))
    seed_task(root, "evil-task", "research:awaiting_approval", {"SPEC.md": HOSTILE})
    s = site(p)
    c = client(s)
    login(s, c)
    for url in ("/", "/fragment/loops", "/p/0/loop/demo", "/p/0/loop/demo/approve", "/tasks"):
        page = c.get(url).text
        assert "<script>alert" not in page and "<img src=x" not in page, url
        assert "\u202e" not in page, url
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in c.get("/").text and "\\u202e" in c.get("/").text


def _tick_with_commit(p: Project, sha: str) -> Path:
    """One tick closed by a TICK line naming commit `sha` (as the runner's ledger writes it);
    returns its runs/<n>/ folder."""
    n = loops.read_state(p, "demo").iteration_count + 1
    loops.update_state(p, "demo", via_json("TICK_START", {"n": n, "reserved_usd": "2.0"},
                       lambda s: s.update(iteration_count=s["iteration_count"] + 1, spent_usd=s["spent_usd"] + 2.0)))
    loops.update_state(p, "demo", via_json("TICK", {"n": n, "score": "0.5000", "cost": "0.1000", "cost_known": True,
                                           "complete": False, "commit": sha[:12]},
                       lambda s: s.update(spent_usd=round(s["spent_usd"] - 1.9, 6)), refund_usd=1.9))
    folder = p.root / ".automaton" / "loops" / "demo" / "runs" / str(n)
    folder.mkdir(parents=True)
    return folder


def test_a_tick_page_shows_its_commit_on_the_loop_branch_and_its_logs(root: Path) -> None:
    p = loop_with(root, "demo")
    wt = add_worktree(p)
    (wt / "src").mkdir()
    (wt / "src" / "fix.py").write_text("VALUE = '<b>fixed</b>'\n")
    git(wt, "add", "-A")
    git(wt, "commit", "-q", "-m", "tick 1")
    run = _tick_with_commit(p, git(wt, "rev-parse", "HEAD").strip())
    (run / "implement.log").write_text("agent said " + HOSTILE + "\n" + "x" * 100_000)
    (run / "verdict.json").write_text('{"score": 0.5, "summary": "1/2 passed"}')
    (run / "link.log").symlink_to("/etc/passwd")
    page = client(site(p, human=False)).get("/p/0/loop/demo/tick/1").text
    assert "src/fix.py" in page and "+VALUE = &#39;&lt;b&gt;fixed&lt;/b&gt;&#39;" in page
    assert "implement.log" in page and "verdict.json" in page and "the last" in page  # cut to its end
    assert "link.log" not in page and "root:" not in page  # a link is never followed
    assert "<script>alert" not in page
    assert "1/2 passed" in client(site(p, human=False)).get("/p/0/loop/demo").text


def test_a_tick_commit_not_on_the_loop_branch_is_not_shown(root: Path) -> None:
    p = loop_with(root, "demo")
    add_worktree(p)
    (root / "other.txt").write_text("main only\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "not the loop's")
    _tick_with_commit(p, git(root, "rev-parse", "HEAD").strip())
    page = client(site(p, human=False)).get("/p/0/loop/demo/tick/1").text
    assert "is not on loop/demo" in page and "other.txt" not in page


@pytest.mark.parametrize("url", ["/p/0/loop/nope", "/p/3/loop/demo", "/p/0/loop/Bad_Name", "/p/0/loop/demo/tick/99",
                                 "/p/0/loop/nope/approve", "/p/0/loop/nope/tick/1", "/fragment/p/0/loop/nope",
                                 "/no/such/page", "/static/secret.txt", "/p/x/loop/demo"])
def test_unknown_things_are_a_404_page(root: Path, url: str) -> None:
    got = client(site(loop_with(root, "demo"), human=False)).get(url)
    assert got.status_code == 404 and "<!doctype html>" in got.text and "Traceback" not in got.text


def test_an_act_on_an_unknown_loop_or_task_is_a_404(root: Path) -> None:
    p = loop_with(root, "demo")
    s = site(p)
    c = client(s)
    login(s, c)
    csrf = s.gate.csrf(c.cookies[s.cookie].partition(".")[0])
    assert c.post("/p/0/loop/nope/pause", data={"csrf": csrf}).status_code == 404
    assert c.post("/p/0/task/nope/approve", data={"csrf": csrf}).status_code == 404
    assert c.post("/p/0/task/Bad..name/approve", data={"csrf": csrf}).status_code == 404


def test_a_bug_is_a_one_line_500_page_and_a_traceback_on_stderr(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    p = loop_with(root, "demo")

    def boom(_projects: object) -> object:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(views, "loop_rows", boom)
    got = client(site(p, human=False)).get("/")
    assert got.status_code == 500 and "internal error: RuntimeError" in got.text and "Traceback" not in got.text
    assert "Traceback" in capsys.readouterr().err


def test_the_task_board_has_a_column_per_phase_and_the_audit_findings(root: Path) -> None:
    p = loop_with(root, "demo")
    seed_task(root, "alpha", "research")
    seed_task(root, "beta", "research", {"DESIGN.md": "from the future\n"})
    (root / "tasks" / "manual").mkdir()
    page = client(site(p, human=False)).get("/tasks").text
    assert '<div id="tasks">' in page
    for phase in ("new", "research", "research:awaiting_approval", "implement", "complete", "human_intervention"):
        assert f'<section class="phase" data-phase="{phase}">' in page
    research = page.split('data-phase="research">', 1)[1].split("</section>", 1)[0]
    assert 'data-task="alpha"' in research and 'data-task="beta"' in research
    violations = page.split('id="violations"', 1)[1]
    assert "forbidden artifacts" in violations and "DESIGN.md" in violations and "manual" in violations


UNSAFE = {"\u202e": "\\u202e", "\u2066": "\\u2066", "\x1b": "\\u001b", "\x07": "\\u0007", "\x00": "\\u0000",
          "\u2028": "\\u2028", "\x9b": "\\u009b"}


def _raw_unsafe(page: str) -> list[str]:
    return [repr(c) for c in UNSAFE if c in page]


def test_control_and_bidi_characters_are_neutralised_on_the_tick_page(root: Path) -> None:
    p = loop_with(root, "demo")
    wt = add_worktree(p)
    (wt / "src").mkdir()
    # What the reviewer should read is the line as written: `if admin:` inside an isolate and an
    # override that would make it read `if not admin:`; an ESC sequence; a bell.
    hostile = "access = 'user' # \u202e\u2066 if admin: \u2069\u2066 \x1b[2Jclear \x07bell\n"
    (wt / "src" / "auth.py").write_text(hostile)
    git(wt, "add", "-A")
    git(wt, "commit", "-q", "-m", "tick \u202e 1")
    run = _tick_with_commit(p, git(wt, "rev-parse", "HEAD").strip())
    (run / "implement.log").write_text("line one\n" + "".join(UNSAFE) + "\r\nline three\n")
    (run / "verdict.json").write_text('{"score": 0.5, "summary": "ok \\u202e\\u0007\\u001b[31m"}')
    (run / "ev\u202eil.log").write_text("named\n")
    c = client(site(p, human=False))
    page = c.get("/p/0/loop/demo/tick/1").text
    assert _raw_unsafe(page) == [], page
    assert "\\u202e\\u2066 if admin: \\u2069\\u2066 \\x1b[2Jclear \\x07bell" in page  # the diff line, as written
    assert "line one\n" + "".join(UNSAFE.values()) + "\nline three" in page  # the log keeps its lines
    assert "ev\\u202eil.log" in page
    loop_page = c.get("/p/0/loop/demo").text
    assert _raw_unsafe(loop_page) == [] and "ok \\u202e\\x07\\x1b[31m" in loop_page  # the tick table's verdict


def test_every_value_of_every_template_is_neutralised(root: Path) -> None:
    # The environment's finalize runs on each `{{ }}`: a template that forgets `| shown` still
    # cannot print a raw control or bidi character.
    from automaton.dashboard.pages import environment, neutral, shown

    env = environment()
    assert env.finalize is neutral
    text = "a\u202eb\x1bc\x00d\u2066e\tf\ng\r\nh\U000e0041"
    assert neutral(text) == "a\\u202eb\\u001bc\\u0000d\\u2066e\tf\ng\nh\\U000e0041"
    assert shown(text) == "a\\u202eb\\x1bc\\x00d\\u2066e\tf\\ng\\r\\nh\\U000e0041"
    assert env.from_string("{{ x }}|{{ x | shown }}").render(x="\u202e\n") == "\\u202e\n|\\u202e\\n"
    p = loop_with(root, "demo")
    hostile = "".join(c for c in UNSAFE if c != "\x00") + "\ndetail"  # the state takes no NUL
    loops.update_state(p, "demo", via_json("HALT", {"reason": "human_intervention", "detail": hostile},
                       lambda s: s.update(status="halted", halt_reason="human_intervention", halt_detail=hostile)))
    seed_task(root, "evil-task", "research:awaiting_approval", {"SPEC.md": hostile})
    s = site(p)
    c = client(s)
    login(s, c)
    for url in ("/", "/fragment/loops", "/p/0/loop/demo", "/fragment/p/0/loop/demo", "/p/0/loop/demo/approve",
                "/tasks"):
        assert _raw_unsafe(c.get(url).text) == [], url


def test_a_project_folder_deleted_while_serving_is_an_error_row_naming_it(root: Path, tmp_path: Path) -> None:
    import shutil

    p = loop_with(root, "demo")
    other = loop_with(init_repo(tmp_path / "other"), "kept")
    c = client(site(p, other, human=False))
    assert 'data-loop="demo"' in c.get("/").text
    shutil.rmtree(root)
    page = c.get("/").text
    assert "no loops" not in page and 'data-loop="kept"' in page
    row = re.search(r'<tr class="loop" data-project="0".*?</tr>', page, re.S)
    assert row is not None and 'data-status="error"' in row.group(0)
    assert f"project folder {root} is gone" in row.group(0)
    assert f"project folder {root} is gone" in c.get("/tasks").text


def test_the_account_caps_are_shown_and_spend_is_plotted_per_day(root: Path) -> None:
    import time

    from automaton.store import account

    p = loop_with(root, "demo")
    where = account.caps_path()
    where.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    where.write_text('{"day_usd": 3}')
    now = int(time.time())
    for at, charged in ((now - 86400, 2_000_000), (now, 500_000)):
        got = account.reserve(str(root), "demo", 1_000_000, 60, at)
        assert isinstance(got, account.Reserved)
        account.settle(got.rid, charged, at)
    c = client(site(p, human=False))
    page = c.get("/").text
    assert '<p id="account-caps">account caps: day $0.50 of $3.00 ($2.50 left)' in page
    plot = re.search(r'<svg id="account-spend-plot".*?</svg>', page, re.S)
    assert plot is not None and plot.group(0).count('<rect class="bar"') == 2
    assert '<line class="cap"' in plot.group(0) and ": $2.00</title>" in plot.group(0)
    loop = c.get("/p/0/loop/demo").text
    assert '<dd id="account-caps">account caps: day $0.50 of $3.00' in loop
