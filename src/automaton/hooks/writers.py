"""Which paths a writing command writes (best effort), for the policy to judge one by one, and
which commands write nothing (`read_only`).

coreutils and friends (`cp`, `mv`, `ln`, `link`, `install`, `rsync`, `touch`, `rm`, `mkdir`,
`truncate`, `chmod`/`chown`/`chgrp`, `dd of=`, `tee`, `sort -o`/`-T`, `uniq`, `split`, `xxd`,
`tree -o`, `sponge`, `curl -o`, `wget`, `sqlite3 DB`, compressors, editors), `pip install
--target`/`npm --prefix` (`hooks.installers`), toolchains' output options
(`gcc -o`, `go build -o`, `javac -d`: `OUTPUT_OPTIONS`), `find` (`-fprint`, `-fprintf`,
`-fls`, `-delete`, and `-exec` of anything but a read-only program), `sed` (in place, and the
`w` command or flag of its script: `hooks.scripts`), `awk` (in place, and its `print > FILE`),
`perl -i`, git (`hooks.gitcmd`), `patch`, archives and Codex's `apply_patch` (`hooks.unpack`),
and PowerShell's file cmdlets (`hooks.powershell`). A link is a write to the file it links
(the source of `ln`, `link`, `cp -l`/`-s`, `rsync --link-dest`): writing the link later writes
that file. Options are read with `hooks.options`, where an unknown option of a writing program
is denied. Paths are returned as written, relative to the directory the command runs in; what
cannot be known raises `Unsafe`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from automaton.hooks import gitcmd
from automaton.hooks.shellparse import Program, Simple, Unsafe, operands, option_values

ALL_OPERANDS: dict[str, frozenset[str]] = {  # program -> options taking a separate value
    "touch": frozenset({"-d", "-t", "-r", "--date", "--reference"}),
    "rm": frozenset(), "unlink": frozenset(), "rmdir": frozenset(),
    "mkdir": frozenset({"-m", "--mode", "--context"}),
    "truncate": frozenset({"-s", "-r", "--size", "--reference"}),
    "shred": frozenset({"-n", "-s", "--iterations", "--size", "--random-source"}),
    "tee": frozenset(), "sponge": frozenset(), "mkfifo": frozenset({"-m", "--mode"}),
    "mknod": frozenset({"-m", "--mode"}), "link": frozenset(),
    "gzip": frozenset({"-S", "--suffix"}), "gunzip": frozenset({"-S", "--suffix"}), "bzip2": frozenset(),
    "bunzip2": frozenset(), "xz": frozenset(), "unxz": frozenset(), "zstd": frozenset({"-o"}),
    "vi": frozenset({"-c", "-S", "-u"}), "vim": frozenset({"-c", "-S", "-u"}), "nvim": frozenset({"-c", "-S", "-u"}),
    "ex": frozenset({"-c", "-S", "-u"}), "ed": frozenset({"-p"}), "nano": frozenset(), "emacs": frozenset(),
    "micro": frozenset(), "setfacl": frozenset({"-m", "-x", "-M", "-X"}), "chattr": frozenset(),
}
TO_LAST: dict[str, frozenset[str]] = {
    "install": frozenset({"-m", "-o", "-g", "-S", "--mode", "--owner", "--group", "--suffix"}),
    "scp": frozenset({"-c", "-F", "-i", "-J", "-l", "-o", "-P", "-S"}),
    "rsync": frozenset({"-e", "--rsh", "--exclude", "--include", "--filter", "-f", "--exclude-from",
                        "--include-from", "--files-from", "--chmod", "--chown", "--rsync-path", "--suffix",
                        "--port", "--password-file", "-B", "--block-size", "--timeout", "--bwlimit",
                        "--max-size", "--min-size", "-M", "--remote-option", "--compare-dest",
                        "--copy-dest", "--link-dest", "--backup-dir", "--log-file", "--partial-dir",
                        "--temp-dir", "-T", "--write-batch", "--only-write-batch", "--read-batch"}),
}
_CC_OUTPUTS = ("-o", "-MF")  # the output, and the dependency file of -MD/-MMD
# Toolchains whose options are whole words after one dash (`-fno-omit-frame-pointer`, `-Wl,…`),
# read without short clusters (`argv.option_values(clusters=False)`): program -> options whose
# value is a path written. A versioned or cross name (`gcc-13`, `aarch64-linux-gnu-g++`) is its
# last part (`tool_name`). What a build writes without such an option (`a.out`, Go's binary,
# `target/`, `node_modules/`) is not counted, like any other build (`make`, `cargo build`).
OUTPUT_OPTIONS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("cc", "c++", "gcc", "g++", "clang", "clang++", "tcc", "icc", "icx", "icpx", "nvcc", "zig"),
                    _CC_OUTPUTS),
    **dict.fromkeys(("ld", "ld.bfd", "ld.gold", "ld.lld", "lld", "mold", "as", "gold"), ("-o", "--output")),
    "rustc": ("-o", "--out-dir"),
    "javac": ("-d", "-s", "-h"),  # classes, generated sources, native headers
    "go": ("-o", "--o"),  # go build/test -o, go mod vendor -o (Go's flags: -o=X, --o X too)
}
_VERSION_SUFFIX = re.compile(r"-[0-9][0-9.]*$")
# Programs that write no file whatever their arguments, unless `read_only` says otherwise.
READ_ONLY = frozenset({
    "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ls", "stat", "wc",
    "diff", "cmp", "file", "sha256sum", "shasum", "md5sum", "echo", "printf", "test", "[", "true",
    "false", "pwd", "cd", "realpath", "readlink", "basename", "dirname", "jq", "tree", "automaton",
    "sort", "uniq", "cut", "tr", "column", "nl", "od", "hexdump", "xxd", "get-content", "gc", "type",
    "get-childitem", "gci", "dir", "select-string", "sls", "test-path", "resolve-path", "get-item",
    "write-output", "write-host", "which", "whoami", "id", "date", "env", "printenv", "uname", "du", "df",
    "sed", "awk", "gawk", "mawk", "nawk", "find",
})
# sqlite3(1) options with values (how many words each takes); options are spelled `-x` or `--x`.
_SQLITE_VALUES = {"-cmd": 1, "-init": 1, "-maxsize": 1, "-mmap": 1, "-newline": 1, "-nonce": 1, "-nullvalue": 1,
                  "-separator": 1, "-vfs": 1, "-lookaside": 2, "-pagecache": 2}
# What sqlite3's SQL or dot-commands write elsewhere or run (sqlite.org/cli.html): `.output F`,
# `.once F`, `.save F`, `.backup F`, `.shell`/`.system`, `.log F`, `.trace F`, `.import` into
# another `.open`ed file, `.read F` (a script not read here), `writefile()`, `ATTACH` (creates a
# database), `VACUUM INTO`.
_SQLITE_WRITES = re.compile(r"(?:^|[\s;])\.(?:output|once|save|backup|shell|system|log|trace|excel|import|open|"
                            r"archive|ar|cd|load|clone|nonce|read)\b|\b(?:writefile|load_extension|edit)\s*\(|"
                            r"\battach\b|\bvacuum\b[^;]*\binto\b", re.IGNORECASE)
_CHMOD_OPTION = re.compile(r"^-[cfvRHLP]+$")
_SAFE_RSH = re.compile(r"^ssh(\s+-[A-Za-z0-9]+(\s+[^\s;&|`$]+)?)*$")


def read_only(name: str, args: list[str]) -> bool:
    """Whether `name ARGS` writes no file (an Unsafe reading counts as writing)."""
    if name == "git":
        return gitcmd.read_only(args)
    if name not in READ_ONLY:
        return False
    try:
        return not targets(Program(name, args, [], []), Simple(), None)
    except Unsafe:
        return False


def targets(prog: Program, cmd: Simple, here: Path | None) -> list[str]:
    """Paths `prog` writes, as written (relative ones against `here`)."""
    name, args = prog.name, prog.args
    if name in ALL_OPERANDS:
        return operands(args, ALL_OPERANDS[name])
    if name in ("chmod", "chown", "chgrp"):
        return _chmod(name, args)
    if name in ("cp", "mv", "ln"):
        return _copy_move_link(name, args, here)
    if name in TO_LAST:
        return _to_last(name, args)
    if name == "sed":
        return _sed(args, here)
    if name == "perl":
        return _perl(args)
    if name in ("awk", "gawk", "mawk", "nawk"):
        return _awk(args, here)
    if name == "dd":
        return _dd(args)
    if name == "sort":
        from automaton.hooks import options

        return options.scan("sort", args).outs
    # `uniq IN OUT`, `split IN PREFIX`, `xxd [-r] IN OUT`: every operand after the input may be
    # the output (an option value read as an operand, e.g. under an abbreviated option name,
    # only adds a path to judge).
    if name == "uniq":
        return operands(args, frozenset({"-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"}))[1:]
    if name == "split":
        names = operands(args, frozenset({"-a", "-b", "-C", "-l", "-n", "-t", "--additional-suffix"}))
        return [n + "aa" for n in names[1:]] or ["xaa"]
    if name == "xxd":
        return operands(args, frozenset({"-c", "-g", "-l", "-o", "-s", "-n", "-cols", "-groupsize", "-len",
                                         "-offset", "-seek", "-name"}))[1:]
    if name == "tree":
        return option_values(args, ("-o",))
    if name == "sqlite3":
        return _sqlite(args)
    tool = tool_name(name)
    if tool in OUTPUT_OPTIONS:
        return [v for v in option_values(args, OUTPUT_OPTIONS[tool], clusters=False) if v != "-"]
    if name == "find":
        from automaton.hooks import findcmd

        return findcmd.targets(args, here, read_only)
    if name in ("curl", "wget"):
        from automaton.hooks import downloads

        return downloads.targets(name, args)
    if name == "git":
        return gitcmd.targets(args, cmd, here)
    from automaton.hooks import installers

    installed = installers.targets(prog)
    if installed is not None:
        return installed
    if re.match(r"^python[0-9.]*$", name) and args[:1] == ["-m"] and args[1:2] in (["zipfile"], ["tarfile"]):
        if any(a in ("-e", "--extract") for a in args):
            raise Unsafe(f"python -m {args[1]} -e extracts an archive: use tar or unzip, which automaton reads")
        return []
    from automaton.hooks import unpack

    found = unpack.targets(name, args, cmd, here)
    if found is not None:
        return found
    from automaton.hooks.powershell import CMDLETS, cmdlet_targets

    return cmdlet_targets(name, args, cmd) if name in CMDLETS else []


def tool_name(name: str) -> str:
    """A toolchain program's name without its version or target prefix (`gcc-13`,
    `x86_64-linux-gnu-gcc`, `clang++-17` are `gcc`, `gcc`, `clang++`)."""
    bare = _VERSION_SUFFIX.sub("", name)
    return bare if bare in OUTPUT_OPTIONS else bare.rsplit("-", 1)[-1]


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


def _copy_move_link(name: str, args: list[str], here: Path | None) -> list[str]:
    """cp(1), mv(1), ln(1): the destination is written; mv writes its sources (they vanish);
    a hard or symbolic link (`ln`, `cp -l`, `cp -s`) writes the file it links, because
    writing through the link later writes that file. A symbolic link's relative source is
    relative to the link's own directory."""
    from automaton.hooks import options, unpack

    found = options.scan(name, args)
    names, directory = found.operands, found.outs
    if directory:
        sources, written = names, list(directory)
    elif name == "ln" and len(names) == 1:
        sources, written = names, [os.path.basename(names[0].rstrip("/")) or names[0]]
    else:
        sources, written = names[:-1], names[-1:]
    if name == "mv":
        return written + sources
    symbolic = bool({"-s", "--symbolic", "--symbolic-link"} & found.seen)
    linking = name == "ln" or symbolic or bool({"-l", "--link"} & found.seen)
    if not linking:
        return written
    # The link's directory: the target directory; else, with one operand, here; else the
    # destination itself (when it is a directory) or its parent: every candidate is judged.
    if not written:
        return []  # no operand: the program only reports its usage
    if directory or len(names) == 1:
        link_dirs = {directory[0] if directory else "."}
    else:
        link_dirs = {written[0], os.path.dirname(written[0]) or "."}
    relative = bool({"-r", "--relative"} & found.seen)
    for source in sources:
        for d in sorted(link_dirs):
            unpack.protected_link(source, here if here is None or not symbolic else here / d)
        if os.path.isabs(os.path.expanduser(source)) or not symbolic or relative:
            written.append(source)
        else:
            written += [os.path.normpath(os.path.join(d, source)) for d in sorted(link_dirs)]
    return written


_DD_OPERANDS = frozenset({"if", "of", "bs", "ibs", "obs", "cbs", "count", "skip", "seek", "iseek", "oseek", "conv",
                          "iflag", "oflag", "status"})


def _dd(args: list[str]) -> list[str]:
    """dd(1): `of=FILE` is written; an operand dd does not document is denied (default deny)."""
    for arg in args:
        key = arg.split("=", 1)[0]
        if not (arg.startswith("-") or key in _DD_OPERANDS):
            raise Unsafe(f"dd {arg!r}: an operand automaton does not know on a program that writes files")
    return [a[3:] for a in args if a.startswith("of=")]


def _to_last(name: str, args: list[str]) -> list[str]:
    if name == "install":
        from automaton.hooks import options

        found = options.scan("install", args)
        if {"-d", "--directory"} & found.seen:
            return found.operands
        return found.outs or found.operands[-1:]
    directory = option_values(args, ("-t", "--target-directory"))
    names = operands(args, TO_LAST[name] | {"-t"})
    written = directory or names[-1:]
    if name == "rsync":
        for shell in option_values(args, ("-e", "--rsh")):
            if not _SAFE_RSH.match(shell.strip()):
                raise Unsafe(f"rsync -e {shell!r} runs a program of the caller's choosing")
        written += option_values(args, ("--backup-dir", "--log-file", "--partial-dir", "--temp-dir", "-T",
                                        "--write-batch", "--only-write-batch", "--link-dest"))
        # --link-dest DIR relative to the destination (rsync(1)): its files become hard links
        written += [os.path.join(names[-1], d) for d in option_values(args, ("--link-dest",)) if names]
        if "--remove-source-files" in args:
            written += names[:-1]
    return written


def _sqlite(args: list[str]) -> list[str]:
    """sqlite3(1) `[OPTIONS] [DB [SQL…]]`: DB is opened for writing and created when missing, so
    it is written unless `-readonly` (or a URI's `mode=ro`); `:memory:` and no DB are no file, a URI
    `file:PATH?…` is PATH. SQL or dot-commands on the line that write another file or run a
    program are denied unless `-safe` (which disables them), and so is `-A` (`.archive` extracts
    files). SQL read from standard input or `-init FILE` is not read (best effort)."""
    seen: set[str] = set()
    names: list[str] = []
    sql: list[str] = []  # the -cmd values, then the SQL operands after the database
    i = 0
    while i < len(args):
        arg, key = args[i], "-" + args[i].lstrip("-")
        if not arg.startswith("-") or arg == "-":
            names.append(arg)
        elif key in _SQLITE_VALUES:
            sql += args[i + 1:i + 2] if key == "-cmd" else []
            i += _SQLITE_VALUES[key]
        seen.add(key)
        i += 1
    if "-A" in seen:
        raise Unsafe("sqlite3 -A runs .archive, which writes files named in the archive: automaton cannot list them")
    db, sql = (names[0] if names else ""), sql + names[1:]
    if "-safe" not in seen and any(_SQLITE_WRITES.search(q) for q in sql):
        raise Unsafe("sqlite3 SQL that writes another file or runs a program (.output, .shell, writefile(), ATTACH,"
                     " VACUUM INTO): automaton cannot tell what it writes; run it with -safe")
    path, _, query = db.removeprefix("file:").partition("?") if db.startswith("file:") else (db, "", "")
    if "-readonly" in seen or "mode=ro" in query.split("&") or path in ("", ":memory:"):
        return []
    return [path]


def _sed(args: list[str], here: Path | None) -> list[str]:
    """sed(1): files edited in place, and the files its script writes (`w`); `-f FILE` is read."""
    from automaton.hooks import options, scripts, unpack

    found = options.scan("sed", args)
    scripts_given = [s.split("=", 1)[1] for s in sorted(found.seen) if s.startswith(("-e=", "--expression="))]
    files = [s.split("=", 1)[1] for s in sorted(found.seen) if s.startswith(("-f=", "--file="))]
    scripts_given += [unpack.read_text(f, here, "sed") for f in files]
    rest = found.operands
    if not scripts_given:
        scripts_given, rest = rest[:1], rest[1:]
    written = [] if "--sandbox" in found.seen else [w for s in scripts_given for w in scripts.sed_writes(s)]
    return written + (rest if sed_in_place(args) else [])


def _awk(args: list[str], here: Path | None) -> list[str]:
    """awk(1)/gawk(1): `-i inplace` edits the file operands; `-f FILE` holds the program."""
    if any(a == "-l" or a.startswith(("-l", "--load")) for a in args):
        raise Unsafe("gawk -l loads a compiled extension: automaton cannot read it")
    includes = option_values(args, ("-i", "--include"))
    if any(i != "inplace" for i in includes):
        raise Unsafe("awk -i loads a library program: automaton cannot read it")
    from automaton.hooks import scripts, unpack

    names = operands(args, frozenset({"-i", "-v", "-F", "-f", "--include", "-E", "--file", "--exec", "-e",
                                      "--source", "--assign", "--field-separator"}))
    files = option_values(args, ("-f", "--file", "-E", "--exec"))
    programs = [unpack.read_text(f, here, "awk") for f in files] + option_values(args, ("-e", "--source"))
    if not programs:
        programs, names = names[:1], names[1:]
    written = [w for p in programs for w in scripts.awk_writes(p)]
    return written + ([n for n in names if "=" not in n] if includes else [])


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
