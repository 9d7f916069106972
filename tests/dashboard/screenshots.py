"""Make the README's dashboard screenshots: `make screenshots` (python -m tests.dashboard.screenshots).

Builds the offline demo's sample project in a temporary folder (with a temporary HOME, so the
record key and the dashboard secret are not the user's), runs three of the demo's loops with the
scripted fake harness (one completes, one is halted by drift, one by a flat score), starts a real
`automaton --dashboard` on it and saves what headless Chromium shows:

- docs/img/dashboard-loops.png: the loops view;
- docs/img/dashboard-loop.png: the page of the loop halted by the flat score.

Needs Debian's chromium and chromium-driver (see tests/dashboard/browserkit.py).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "docs" / "img"
LOOPS = (("fix-ci", "ci-triage"), ("drift-check", "ci-triage-drift"), ("stuck-agent", "ci-triage-plateau"))


def build(root: Path) -> None:
    """The demo's sample project with three loops run to their end (completed or halted)."""
    from automaton.commands import loops as loop_cmds
    from automaton.runner.demo import build_sample, write_templates
    from automaton.runner.modes import run_loop
    from automaton.store.layout import Project
    from tests.helpers import approve_first

    build_sample(root)
    project = Project(root.resolve())
    write_templates(project)
    for name, template in LOOPS:
        loop_cmds.create_loop(project, name, template)
        approve_first(root, name)  # the demo's project templates wait for a human's first approval
        run_loop(project, name, 10)


def shoot(root: Path) -> list[Path]:
    """Start the dashboard on `root`, log in with its one-time URL (as the person who started it
    would) and save the two screenshots; their paths."""
    from selenium.webdriver.common.by import By

    from tests.dashboard.browserkit import chrome, dashboard, log_in

    OUT.mkdir(parents=True, exist_ok=True)
    shots = [OUT / "dashboard-loops.png", OUT / "dashboard-loop.png"]
    with dashboard(root, approver="screenshots") as d, chrome(1440, 900) as driver:
        if d.login is None:
            raise SystemExit(f"screenshots: the dashboard printed no login URL: {d.printed}")
        log_in(driver, d)  # it ends on the loops view
        driver.find_element(By.ID, "loops")
        driver.save_screenshot(str(shots[0]))
        driver.get(d.base + "/p/0/loop/stuck-agent")
        driver.find_element(By.ID, "score-plot")
        driver.save_screenshot(str(shots[1]))
    return shots


def main() -> int:
    from tests.dashboard.browserkit import browser_missing

    missing = browser_missing()
    if missing:
        print(f"screenshots: {missing}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="automaton-shots-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        os.environ["HOME"] = str(home)  # keys and secrets of this run stay in the temp folder
        os.environ.pop("AUTOMATON_APPROVER", None)
        root = Path(tmp) / "sample"
        build(root)
        for shot in shoot(root):
            print(f"wrote {shot.relative_to(OUT.parents[1])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
