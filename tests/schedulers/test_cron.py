"""cron: interval -> fields, % escaping, exact-tag blocks, and installs through a fake crontab."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from automaton.core.errors import BadInput, Refused
from automaton.core.names import LoopName
from automaton.schedulers import Job, cron
from tests.helpers import calls
from tests.schedulers.fakes import install_crontab

FOREIGN = (
    "# my jobs\nMAILTO=me@example.com\n0 3 * * * /usr/bin/backup --all  \n\n"
    "# automaton-loop:demo2\n*/5 * * * * '/elsewhere/run-tick.sh'\n"
)


def job(root: Path, name: str = "demo", interval: int = 900) -> Job:
    return Job(LoopName.of(name), root, root / ".automaton" / "loops" / name, interval,
               "/usr/bin/python3", Path("/opt/fw/scripts/loop-runner.py"), "/usr/local/bin:/usr/bin:/bin")


@pytest.mark.parametrize(("seconds", "spec"), [
    (60, "* * * * *"), (300, "*/5 * * * *"), (900, "*/15 * * * *"), (1800, "*/30 * * * *"),
    (3600, "0 * * * *"), (7200, "0 */2 * * *"), (6 * 3600, "0 */6 * * *"), (12 * 3600, "0 */12 * * *"),
    (86400, "0 0 * * *"),
])
def test_intervals_map_to_exact_cron_fields(seconds: int, spec: str) -> None:
    assert cron.cron_spec(seconds) == spec


@pytest.mark.parametrize("seconds", [45, 90, 7 * 60, 90 * 60, 5 * 3600, 7 * 3600, 2 * 86400, 0, -60])
def test_intervals_cron_cannot_fire_exactly_are_refused_with_the_valid_ones(seconds: int) -> None:
    with pytest.raises(BadInput) as info:
        cron.cron_spec(seconds)
    assert "*/5" not in info.value.message and "86400" in info.value.message  # says what works
    assert "*/90" not in info.value.message


def test_percent_in_paths_is_escaped_in_the_job_line(tmp_path: Path) -> None:
    line = cron.job_line(job(tmp_path / "100% done"))
    assert "100\\% done" in line
    assert "%" not in line.replace("\\%", "")


def test_job_line_quotes_the_script_and_appends_to_the_loop_log(tmp_path: Path) -> None:
    root = tmp_path / "my proj"
    line = cron.job_line(job(root))
    loop = root / ".automaton" / "loops" / "demo"
    assert line == f"*/15 * * * * '{loop}/run-tick.sh' >> '{loop}/schedule.log' 2>&1"


def test_a_line_break_in_a_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="line break"):
        cron.job_line(job(tmp_path / "a\nb"))


def test_strip_removes_only_the_exact_tag_and_keeps_other_bytes(tmp_path: Path) -> None:
    mine = cron.add_block(FOREIGN, job(tmp_path))
    assert mine.startswith(FOREIGN)
    assert cron.strip_block(mine, job(tmp_path)) == cron.Stripped(FOREIGN, 1, [], [])
    # demo2's block is not demo's: nothing to strip for demo in the foreign table
    assert cron.strip_block(FOREIGN, job(tmp_path)) == cron.Stripped(FOREIGN, 0, [], [])


def test_a_same_tag_block_of_another_project_is_kept_and_reported(tmp_path: Path) -> None:
    other = cron.add_block("", job(tmp_path / "other"))
    got = cron.strip_block(other, job(tmp_path / "mine"))
    assert got.table == other and got.removed == 0 and got.stray == []
    assert got.foreign and str(tmp_path / "other") in got.foreign[0]


# A hand edit left our tag above the user's own jobs (CRLF, `%`, trailing blanks, an env line).
USERS_OWN = ["0 3 * * * /usr/bin/backup --date=$(date +\\%F)  \r\n", "MAILTO=me@example.com\n",
             "*/5 * * * * '/home/me/run-tick.sh'\n"]


@pytest.mark.parametrize("users_line", USERS_OWN)
def test_a_users_line_under_our_tag_keeps_its_bytes_and_loses_only_the_tag(tmp_path: Path, users_line: str) -> None:
    table = f"# mine\n# automaton-loop:demo\n{users_line}# automaton-loop:demo2\n"
    got = cron.strip_block(table, job(tmp_path))
    assert got.table == f"# mine\n{users_line}# automaton-loop:demo2\n"
    assert (got.removed, got.foreign, got.stray) == (0, [], [users_line.rstrip("\r\n")])


def test_automaton_commands_are_recognised_for_any_project(tmp_path: Path) -> None:
    for root in (tmp_path / "a", tmp_path / "with space", tmp_path / "100% done"):
        assert cron.is_automaton_command(cron.job_line(job(root, "nightly", 3600)))
    for line in ("0 3 * * * /usr/bin/backup", "*/5 * * * * '/elsewhere/run-tick.sh'", "MAILTO=x",
                 "*/5 * * * * '/a/run-tick.sh' >> '/b/schedule.log' 2>&1", "* * * * * 'unbalanced >> x 2>&1",
                 "*/5 * * * * 'run-tick.sh' >> 'schedule.log' 2>&1"):
        assert not cron.is_automaton_command(line), line


def test_add_block_terminates_a_last_line_without_newline(tmp_path: Path) -> None:
    text = cron.add_block("0 1 * * * true", job(tmp_path))
    assert text.startswith("0 1 * * * true\n# automaton-loop:demo\n") and text.endswith("\n")


@pytest.fixture
def table(fake_bin: Callable[[str, str], Path], tmp_path: Path) -> Path:
    path = tmp_path / "crontab.txt"
    install_crontab(fake_bin, path)
    return path


def test_install_on_a_user_without_crontab_creates_the_block(table: Path, tmp_path: Path) -> None:
    lines = cron.SCHEDULER.install(job(tmp_path))
    assert table.read_text() == f"# automaton-loop:demo\n{cron.job_line(job(tmp_path))}\n"
    assert "added" in lines[0]


def test_install_reinstall_pause_resume_uninstall_keep_foreign_lines_byte_identical(
        table: Path, tmp_path: Path, fake_bin: Callable[[str, str], Path]) -> None:
    table.write_text(FOREIGN)
    sched = cron.SCHEDULER
    sched.install(job(tmp_path, interval=900))
    sched.install(job(tmp_path, interval=1800))  # reinstall replaces the block
    text = table.read_text()
    assert text == FOREIGN + f"# automaton-loop:demo\n{cron.job_line(job(tmp_path, interval=1800))}\n"
    assert text.count("# automaton-loop:demo\n") == 1 and "*/15" not in text
    sched.disable(job(tmp_path, interval=1800))
    assert table.read_text() == FOREIGN
    sched.enable(job(tmp_path, interval=1800))
    assert table.read_text() == text
    sched.uninstall(job(tmp_path))
    assert table.read_text() == FOREIGN
    argv = calls(fake_bin.dir, "crontab")  # type: ignore[attr-defined]
    assert set(map(tuple, argv)) == {("-l",), ("-",)}


def test_removing_a_block_that_is_not_there_does_not_rewrite_the_table(table: Path, tmp_path: Path,
                                                                       fake_bin: Callable[[str, str], Path]) -> None:
    table.write_text(FOREIGN)
    lines = cron.SCHEDULER.uninstall(job(tmp_path))
    assert "no '# automaton-loop:demo' block" in lines[-1]
    assert ["-"] not in calls(fake_bin.dir, "crontab")  # type: ignore[attr-defined]
    assert table.read_text() == FOREIGN


def test_install_refuses_to_take_over_another_projects_block(table: Path, tmp_path: Path) -> None:
    cron.SCHEDULER.install(job(tmp_path / "other"))
    before = table.read_text()
    with pytest.raises(Refused, match="another project"):
        cron.SCHEDULER.install(job(tmp_path / "mine"))
    cron.SCHEDULER.disable(job(tmp_path / "mine"))
    assert table.read_text() == before


def test_a_failing_crontab_l_is_an_error_and_nothing_is_written(fake_bin: Callable[[str, str], Path],
                                                               tmp_path: Path) -> None:
    fake_bin("crontab", 'sys.stderr.write("crontab: cannot open /var/spool: Permission denied\\n")\nsys.exit(1)\n')
    with pytest.raises(BadInput, match="Permission denied"):
        cron.SCHEDULER.install(job(tmp_path))
    assert ["-"] not in calls(fake_bin.dir, "crontab")  # type: ignore[attr-defined]


def test_missing_crontab_tool_is_bad_input(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(BadInput, match="crontab not found"):
        cron.SCHEDULER.install(job(tmp_path))


def test_install_and_uninstall_keep_a_users_line_under_our_tag_byte_identical(
        table: Path, tmp_path: Path, fake_bin: Callable[[str, str], Path]) -> None:
    users = b"0 3 * * * /usr/bin/backup --date=$(date +\\%F)  \r\n"
    table.write_bytes(b"# automaton-loop:demo\n" + users)
    lines = cron.SCHEDULER.install(job(tmp_path))
    ours = f"# automaton-loop:demo\n{cron.job_line(job(tmp_path))}\n".encode()
    assert table.read_bytes() == users + ours
    assert "kept unchanged" in lines[0] and "/usr/bin/backup" in lines[0] and "added block" in lines[-1]
    lines = cron.SCHEDULER.uninstall(job(tmp_path))
    assert table.read_bytes() == users
    assert lines == ["crontab: removed '# automaton-loop:demo'"]


def test_uninstall_with_only_a_stray_tag_repairs_it_and_keeps_the_users_line(table: Path, tmp_path: Path) -> None:
    table.write_text("# automaton-loop:demo\n15 2 * * * /usr/bin/nightly\n")
    lines = cron.SCHEDULER.disable(job(tmp_path))
    assert table.read_text() == "15 2 * * * /usr/bin/nightly\n"
    assert "kept unchanged: 15 2 * * * /usr/bin/nightly" in lines[0]
    assert lines[-1] == "crontab: no '# automaton-loop:demo' block to remove"


def test_the_refusal_for_another_projects_block_only_names_automatons_own_lines(table: Path, tmp_path: Path) -> None:
    cron.SCHEDULER.install(job(tmp_path / "other"))
    with pytest.raises(Refused) as info:
        cron.SCHEDULER.install(job(tmp_path / "mine"))
    message = info.value.message
    assert "--uninstall-schedule" in message and str(tmp_path / "other") in message
    assert "automaton tick line" in message  # what may be deleted by hand: automaton's own lines only
