"""Which paths a known writing command writes (best effort), for the policy to judge one by one.

coreutils and friends (`cp`, `mv`, `ln`, `install`, `rsync`, `touch`, `rm`, `mkdir`, `rmdir`,
`truncate`, `chmod`/`chown`/`chgrp`, `dd of=`, `tee`, `sed -i`, `perl -i`, `sort -o`, `sponge`,
`curl -o`, `wget -O`, compressors, editors), git (`rm`, `mv`, `clean`, `worktree add/remove/move`,
`checkout -- FILE`, `restore`, `config`, `apply`, `am`), `patch` and archives (`hooks.unpack`
reads the names inside), and PowerShell's file cmdlets (`hooks.powershell`). A link is also
judged by what it points to. Paths are returned as written, relative to the directory the
command runs in; what cannot be known raises `Unsafe`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from automaton.hooks import unpack
from automaton.hooks.shellparse import Program, Simple, Unsafe, git_subcommand, operands, option_values

ALL_OPERANDS: dict[str, frozenset[str]] = {  # program -> options taking a separate value
    "touch": frozenset({"-d", "-t", "-r", "--date", "--reference"}),
    "rm": frozenset(), "unlink": frozenset(), "rmdir": frozenset(),
    "mkdir": frozenset({"-m", "--mode", "--context"}),
    "truncate": frozenset({"-s", "-r", "--size", "--reference"}),
    "shred": frozenset({"-n", "-s", "--iterations", "--size", "--random-source"}),
    "tee": frozenset(), "sponge": frozenset(), "mkfifo": frozenset({"-m", "--mode"}),
    "gzip": frozenset({"-S", "--suffix"}), "gunzip": frozenset({"-S", "--suffix"}), "bzip2": frozenset(),
    "bunzip2": frozenset(), "xz": frozenset(), "unxz": frozenset(), "zstd": frozenset({"-o"}),
    "vi": frozenset({"-c", "-S", "-u"}), "vim": frozenset({"-c", "-S", "-u"}), "nvim": frozenset({"-c", "-S", "-u"}),
    "ex": frozenset({"-c", "-S", "-u"}), "ed": frozenset({"-p"}), "nano": frozenset(), "emacs": frozenset(),
    "micro": frozenset(), "setfacl": frozenset({"-m", "-x", "-M", "-X"}), "chattr": frozenset(),
}
TO_LAST: dict[str, frozenset[str]] = {
    "cp": frozenset({"-S", "--suffix"}),
    "install": frozenset({"-m", "-o", "-g", "-S", "--mode", "--owner", "--group", "--suffix"}),
    "scp": frozenset({"-c", "-F", "-i", "-J", "-l", "-o", "-P", "-S"}),
    "rsync": frozenset({"-e", "--rsh", "--exclude", "--include", "--filter", "-f", "--exclude-from",
                        "--include-from", "--files-from", "--chmod", "--chown", "--rsync-path", "--suffix",
                        "--port", "--password-file", "-B", "--block-size", "--timeout", "--bwlimit",
                        "--max-size", "--min-size", "-M", "--remote-option", "--compare-dest",
                        "--copy-dest", "--link-dest", "--backup-dir", "--log-file", "--partial-dir",
                        "--temp-dir", "-T"}),
}
_CHMOD_OPTION = re.compile(r"^-[cfvRHLP]+$")


def targets(prog: Program, cmd: Simple, here: Path | None) -> list[str]:
    """Paths `prog` writes, as written (relative ones against `here`)."""
    name, args = prog.name, prog.args
    if name in ALL_OPERANDS:
        return operands(args, ALL_OPERANDS[name])
    if name in ("chmod", "chown", "chgrp"):
        return _chmod(name, args)
    if name == "mv":
        return operands(args, frozenset({"-S", "--suffix", "-t"})) + option_values(args, ("-t", "--target-directory"))
    if name == "ln":
        return _ln(args, here)
    if name in TO_LAST:
        return _to_last(name, args)
    if name == "sed" and sed_in_place(args):
        return _sed(args)
    if name == "perl":
        return _perl(args)
    if name in ("awk", "gawk") and ("inplace" in args or "--include=inplace" in args):
        rest = [a for a in operands(args, frozenset({"-i", "-v", "-F", "-f", "--include"})) if a != "inplace"]
        return rest if any(a == "-f" or a.startswith("--file") for a in args) else rest[1:]
    if name == "dd":
        return [a[3:] for a in args if a.startswith("of=")]
    if name == "sort":
        return option_values(args, ("-o", "--output"))
    if name == "uniq":
        return operands(args, frozenset({"-f", "-s", "-w", "--skip-fields", "--skip-chars",
                                         "--check-chars"}))[1:2]
    if name == "curl":
        return option_values(args, ("-o", "--output")) + _curl_remote_names(args)
    if name == "wget":
        named = option_values(args, ("-O", "--output-document", "-P", "--directory-prefix", "-o",
                                     "--output-file", "-a", "--append-output"))
        return [n for n in named if n != "-"] or _remote_names(args)
    if name == "git":
        return _git(args, cmd, here)
    if name == "patch":
        return unpack.patch(args, cmd, here)
    if name in ("tar", "bsdtar", "gtar"):
        return unpack.tar(args, here)
    if name == "unzip":
        return unpack.unzip(args, here)
    if name == "find" and any(a in ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint") for a in args):
        return [a for a in args if not a.startswith(("-", "(", "!", ")"))][:1] or ["."]
    from automaton.hooks.powershell import CMDLETS, cmdlet_targets

    if name in CMDLETS:
        return cmdlet_targets(name, args, cmd)
    return []


def sed_in_place(args: list[str]) -> bool:
    return any(a == "--in-place" or a.startswith("--in-place=") or re.match(r"^-[a-zA-Z]*i", a) for a in args)


def _chmod(name: str, args: list[str]) -> list[str]:
    """chmod(1): a mode may look like an option (`-x`, `-rw`); chown/chgrp: the owner/group
    comes first. With `--reference=RFILE` every operand is a target."""
    found: list[str] = []
    reference = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            found.extend(args[i + 1:])
            break
        if arg.startswith("--"):
            reference = reference or arg.startswith("--reference")
            i += 1 if arg in ("--reference", "--from") else 0  # their value is not a target
        elif not (arg.startswith("-") and (name != "chmod" or _CHMOD_OPTION.match(arg))):
            found.append(arg)
        i += 1
    return found if reference else found[1:]


def _ln(args: list[str], here: Path | None) -> list[str]:
    """ln(1): the link name is written; the link's target may not be a protected path."""
    values = frozenset({"-S", "--suffix", "-t"})
    names = operands(args, values)
    directory = option_values(args, ("-t", "--target-directory"))
    if directory:
        sources, written = names, directory
    elif len(names) == 1:
        sources, written = names, [os.path.basename(names[0].rstrip("/")) or names[0]]
    else:
        sources, written = names[:-1], names[-1:]
    link_dir = os.path.dirname(written[0]) if written else "."
    for source in sources:
        for base in (here, (here / link_dir) if here is not None else None):
            unpack.protected_link(source, base)
    return written


def _to_last(name: str, args: list[str]) -> list[str]:
    directory = option_values(args, ("-t", "--target-directory"))
    names = operands(args, TO_LAST[name] | {"-t"})
    if name == "install" and ("-d" in args or "--directory" in args):
        return names
    written = directory or names[-1:]
    if name == "rsync":
        written += option_values(args, ("--backup-dir", "--log-file", "--partial-dir", "--temp-dir", "-T"))
        if "--remove-source-files" in args:
            written += names[:-1]
    return written


def _sed(args: list[str]) -> list[str]:
    script_flags = ("-e", "-f", "--expression", "--file")
    if not any(a in script_flags for a in args):
        return operands(args)[1:]  # the first operand is the script
    values = {i + 1 for i, a in enumerate(args) if a in script_flags}
    return [a for i, a in enumerate(args) if i not in values and (not a.startswith("-") or a == "-")]


def _perl(args: list[str]) -> list[str]:
    """perl(1) -i edits its file operands in place; -e/-E give the code, else the first operand is it."""
    in_place = code = False
    plain: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg.startswith("-") and not arg.startswith("--") and arg != "-":
            for ch in arg[1:]:
                if ch == "i":
                    in_place = True
                    break
                if ch in "eE":
                    code = skip = True
                    break
                if ch in "MmIxdDC":
                    break
        else:
            plain.append(arg)
    if not in_place:
        return []
    return plain if code else plain[1:]


def _curl_remote_names(args: list[str]) -> list[str]:
    if not any(a in ("-O", "--remote-name", "--remote-name-all") or re.match(r"^-[a-zA-Z]*O", a) for a in args):
        return []
    return _remote_names(args)


def _remote_names(args: list[str]) -> list[str]:
    """The local names a download keeps from its URLs (`curl -O`, plain `wget URL`)."""
    urls = [a for a in args if "://" in a]
    return [os.path.basename(u.split("?")[0].rstrip("/")) or "." for u in urls] or ["."]


def _git(args: list[str], cmd: Simple, here: Path | None) -> list[str]:
    """Paths git subcommands write (git-rm(1), git-mv(1), git-clean(1), git-worktree(1),
    git-checkout(1) / git-restore(1) with paths, git-config(1), git-apply(1), git-am(1)).
    Paths are relative to every `-C DIR` given before the subcommand."""
    sub = git_subcommand(args)
    if sub is None:
        return []
    prefix = os.path.join(*option_values(args[:sub], ("-C",))) if "-C" in args[:sub] else ""
    verb, rest_args = args[sub], args[sub + 1:]
    rest = operands(rest_args, frozenset({"-b", "-B", "--orphan", "-s", "--source", "-m", "--conflict"}))
    found: list[str] = []
    if verb == "worktree":
        found = _worktree(rest_args, rest)
    elif verb in ("rm", "mv"):
        found = rest
    elif verb == "clean":
        found = rest or ["."]
    elif verb == "restore":
        found = rest
    elif verb == "checkout":
        found = _checkout(rest_args, rest, here, prefix)
    elif verb == "config":
        found = _git_config(rest_args)
    elif verb in ("apply", "am") and not any(a in ("--check", "--stat", "--numstat", "--summary", "--cached")
                                            for a in rest_args):
        found = unpack.patch_texts_targets(rest, cmd, here, verb)
    if any(a.startswith("--pathspec-from-file") for a in rest_args):
        raise Unsafe(f"git {verb} --pathspec-from-file: automaton cannot tell which paths it writes")
    return [os.path.join(prefix, t) if prefix and not os.path.isabs(t) else t for t in found]


def _worktree(rest_args: list[str], rest: list[str]) -> list[str]:
    """git-worktree(1): `remove`/`move` write their paths; `add [-f] [--detach] [--lock
    [--reason R]] [--orphan] [(-b|-B) BRANCH] PATH [COMMIT]` creates PATH (a write target: a
    worktree outside the project is a write outside it)."""
    if rest[:1] in (["remove"], ["move"]):
        return rest[1:]
    if rest[:1] == ["add"]:
        after = rest_args[rest_args.index("add") + 1:]
        return operands(after, frozenset({"-b", "-B", "--reason"}))[:1]
    return []


def _checkout(rest_args: list[str], rest: list[str], here: Path | None, prefix: str) -> list[str]:
    if "--" in rest_args:
        after = rest_args[rest_args.index("--") + 1:]
        return after
    if not rest:
        return []
    first = rest[0]
    exists = here is not None and os.path.lexists(os.path.join(here, prefix, first))
    return rest if exists else rest[1:]  # `git checkout REF path…`: the first operand is the ref


def _git_config(args: list[str]) -> list[str]:
    reads = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "get", "list",
             "--get-color", "--get-colorbool"}
    writes = {"--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section",
              "-e", "--edit", "set", "unset", "rename-section", "remove-section", "edit"}
    if any(a in reads for a in args) and not any(a in writes for a in args):
        return []
    names = operands(args, frozenset({"-f", "--file", "--blob", "--type", "--default", "--comment"}))
    if len(names) < 2 and not any(a in writes for a in args):
        return []  # `git config KEY` reads
    if "--global" in args:
        return ["~/.gitconfig"]
    if "--system" in args:
        return ["/etc/gitconfig"]
    return option_values(args, ("-f", "--file")) or [".git/config"]


