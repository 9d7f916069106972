"""Fake crontab / launchctl / schtasks keeping real state in files, with the real tools' messages.

crontab: cronie `crontab -l` with no table -> "no crontab for <user>" on stderr, exit 1;
`crontab -` installs stdin. launchctl: bootout of a job not loaded -> "Boot-out failed: 3: No
such process", exit 3; bootstrap of a loaded job -> "Bootstrap failed: 5: Input/output error".
schtasks: an unknown /tn -> "ERROR: The system cannot find the file specified.", exit 1.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

CRONTAB = """\
import pathlib
table = pathlib.Path({table!r})
args = sys.argv[1:]
if args == ["-l"]:
    if not table.exists():
        sys.stderr.write("no crontab for tester\\n")
        sys.exit(1)
    sys.stdout.buffer.write(table.read_bytes())  # a real crontab -l prints the bytes as stored
    sys.exit(0)
if args == ["-"]:
    table.write_bytes(sys.stdin.buffer.read())
    sys.exit(0)
sys.stderr.write("usage: crontab [-l|-] (fake)\\n")
sys.exit(2)
"""

LAUNCHCTL = """\
import pathlib, plistlib
state = pathlib.Path({state!r})
loaded = set(json.loads(state.read_text())) if state.exists() else set()
args = sys.argv[1:]
if args[0] == "bootout":
    label = args[1].split("/", 2)[2]
    if label not in loaded:
        sys.stderr.write("Boot-out failed: 3: No such process\\n")
        sys.exit(3)
    loaded.discard(label)
elif args[0] == "bootstrap":
    label = plistlib.loads(pathlib.Path(args[2]).read_bytes())["Label"]
    if label in loaded:
        sys.stderr.write("Bootstrap failed: 5: Input/output error\\n")
        sys.exit(5)
    loaded.add(label)
else:
    sys.exit(64)
state.write_text(json.dumps(sorted(loaded)))
"""

SCHTASKS = """\
import pathlib
state = pathlib.Path({state!r})
tasks = json.loads(state.read_text()) if state.exists() else {{}}
args = sys.argv[1:]
tn = args[args.index("/tn") + 1]
if args[0] == "/create":
    if tn in tasks and "/f" not in args:
        sys.exit(1)
    tasks[tn] = {{"argv": args, "enabled": True}}
    print(f'SUCCESS: The scheduled task "{{tn}}" has successfully been created.')
elif tn not in tasks:
    sys.stderr.write("ERROR: The system cannot find the file specified.\\n")
    sys.exit(1)
elif args[0] == "/change":
    tasks[tn]["enabled"] = "/enable" in args
elif args[0] == "/delete":
    del tasks[tn]
state.write_text(json.dumps(tasks))
"""


def install_crontab(fake_bin: Callable[[str, str], Path], table: Path) -> Path:
    """A fake `crontab` whose table lives in `table` (absent = the user has no crontab)."""
    return fake_bin("crontab", CRONTAB.format(table=str(table)))


def install_launchctl(fake_bin: Callable[[str, str], Path], state: Path) -> Path:
    """A fake `launchctl` tracking loaded labels in `state` (JSON list)."""
    return fake_bin("launchctl", LAUNCHCTL.format(state=str(state)))


def install_schtasks(fake_bin: Callable[[str, str], Path], state: Path) -> Path:
    """A fake `schtasks` tracking tasks in `state` (JSON {name: {argv, enabled}})."""
    return fake_bin("schtasks", SCHTASKS.format(state=str(state)))


def loaded(state: Path) -> list[str]:
    return json.loads(state.read_text()) if state.exists() else []


def tasks(state: Path) -> dict[str, dict[str, object]]:
    return json.loads(state.read_text()) if state.exists() else {}


PYTHON = sys.executable
