"""Commands that would let a later process escape the agent's process tree or drop its marks.

A human act (`--approve`, `--focus`) is refused in any process whose ancestry or session holds
an agent (`commands.human`). A process started so that it outlives the agent's shell in a new
session, under a scheduler, or with the agent's marker variables removed would carry none of
those signs, so the hook denies every such form, whatever it runs (often a script the hook never
reads):

- new sessions and orphans: `setsid`, `nohup`, `disown`, `daemonize`, `start-stop-daemon`,
  `systemd-run` (any unit, user or system), `at`/`batch` (atd), `loginctl enable-linger`;
- a login back into this machine: `ssh`/`mosh`/`telnet` to `localhost`, `127.*`, `::1` or this
  host's own name, and `su`/`runuser`/`machinectl`/`sudo -i`/`sudo -s`, which start a fresh
  login environment;
- a cleared or trimmed environment: `env -i` / `env -` / `--ignore-environment`, `env -u` or
  `unset` of a marker variable, or assigning one.
"""

from __future__ import annotations

import re

from automaton.hooks.shellparse import Program, Unsafe

MARKERS = ("CLAUDECODE", "GEMINI_CLI", "CODEX_SANDBOX", "AUTOMATON_LOOP", "AUTOMATON_LOOP_DIR")
DETACHERS = frozenset({"setsid", "nohup", "disown", "daemonize", "start-stop-daemon", "systemd-run", "at",
                       "batch", "su", "runuser", "sg", "newgrp", "machinectl", "systemd-nspawn", "unshare",
                       "nsenter", "chroot", "dtach"})
LOGINS = frozenset({"ssh", "mosh", "telnet", "rsh", "rlogin", "autossh"})
_LOCAL_HOST = re.compile(r"^(?:[^@]*@)?(localhost|127(?:\.\d+){3}|::1|\[::1\]|0\.0\.0\.0|0)(?::\d+)?$",
                         re.IGNORECASE)
_SSH_VALUE = frozenset("bcDEeFIiJLlmOopQRSWw")
_MARKER_WORD = re.compile(r"\b(" + "|".join(MARKERS) + r")\b")


def check(prog: Program | None, words: list[str]) -> None:
    """Raise Unsafe for a detaching form, a login back into this machine, or marker removal.
    `words` are the simple command's own words (assignments included); `prog` is None when the
    words hold only assignments and wrappers (`sudo -i`, a bare `nohup`)."""
    bases = [w.rsplit("/", 1)[-1].lower() for w in words]
    if "sudo" in bases:
        after = words[bases.index("sudo") + 1:]
        for arg in after:
            if not arg.startswith("-"):
                break
            if arg in ("--login", "--shell") or (not arg.startswith("--") and re.search(r"[is]", arg[1:])):
                raise Unsafe("sudo -i/-s starts a fresh login shell outside the agent's environment")
    if prog is None:
        if any(b in DETACHERS for b in bases):
            raise Unsafe("a detaching wrapper starts a process outside the agent's session: automaton denies it")
        return
    name = prog.name
    if name in DETACHERS or any(v in DETACHERS for v in prog.via):
        shown = name if name in DETACHERS else next(v for v in prog.via if v in DETACHERS)
        raise Unsafe(f"{shown} starts a process outside the agent's session or login: a human act run that way"
                     " would not be seen as the agent's, so automaton denies it")
    if name == "loginctl" and any(a.startswith("enable-linger") for a in prog.args):
        raise Unsafe("loginctl enable-linger keeps an agent's services running after it logs out")
    if name in LOGINS and _local_login(prog.args):
        raise Unsafe(f"{name} back into this machine starts a fresh login outside the agent's session")
    if "env" in prog.via and any(w in ("-i", "-", "--ignore-environment") or re.match(r"^-[a-zA-Z]*i", w)
                                 for w in words if w.startswith("-")):
        raise Unsafe("env -i clears the environment that marks an agent's shell")
    for word in words:
        found = _MARKER_WORD.search(word)
        if found and (name in ("unset", "export", "declare", "typeset", "readonly", "local") or "=" in word
                      or "env" in prog.via):
            raise Unsafe(f"{found.group(1)} marks an agent's shell: an agent may not unset or change it")


def _local_login(args: list[str]) -> bool:
    """The first operand of ssh(1)-like args (options with values skipped) names this machine."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-") and len(arg) > 1:
            if arg[-1] in _SSH_VALUE and len(arg) == 2:
                i += 1
            i += 1
            continue
        host = arg
        return bool(_LOCAL_HOST.match(host)) or _own_name(host.split("@")[-1])
    return False


def _own_name(host: str) -> bool:
    import socket  # lazy: rarely needed

    try:  # no getfqdn(): it may wait on DNS
        own = socket.gethostname().lower()
    except OSError:
        return False
    return host.lower() in (own, own.split(".")[0])
