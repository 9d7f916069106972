"""Paths written that are named inside files: patches (`patch`, `git apply`, `git am`, Codex's
`apply_patch` run from a shell) and archives (`tar -x`, `unzip`), read from the file the command
names (or its heredoc), and the targets of links (`ln`, archive link members): a link member is a
write to what it links, and may not reach a protected path.

The hook runs before the command, so the file read is the one the command will read; one that
cannot be read, or a patch or archive arriving on a pipe, raises `Unsafe`. Every file the hook
reads goes through `open_input`: a non-blocking, regular-file-only, size-bounded open (a FIFO
named as an archive, patch or script would otherwise hang the hook, and an agent lets a hook
that does not answer in time through). So do the archive
options that run programs or rename members at run time (`tar --to-command`,
`--use-compress-program`/`-I`, `--checkpoint-action`, `--transform`, `bsdtar -s`, …), and the
extractors whose member names automaton does not read (`7z x`, `unrar x`, `cpio -i`, `ar x`,
`jar x`, `pax -r`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from automaton.hooks.shellparse import Simple, Unsafe, operands, option_values

_PATCH_HEADER = re.compile(r"^(?:--- |\+\+\+ |\*\*\* |Index: |rename (?:from|to) |copy (?:from|to) )(.+)$",
                           re.MULTILINE)
_PROTECTED_DIRS = frozenset({".git", ".automaton"})
MAX_READ = 8 * 1024 * 1024  # bytes of a patch or script the hook reads; a larger one is denied
MAX_ARCHIVE = 256 * 1024 * 1024  # bytes of an archive whose member list the hook reads


def protected_link(source: str, base: Path | None) -> None:
    """Unsafe when a link to `source` (relative to `base`) would point at a protected path."""
    raw = os.path.expanduser(source)
    path = os.path.realpath(raw if os.path.isabs(raw) or base is None else os.path.join(base, raw))
    parts = [p.lower() for p in Path(path).parts] + [p.lower() for p in Path(raw).parts]
    from automaton.commands.can_edit import is_hook_config

    if (any(p in _PROTECTED_DIRS or p.startswith(".state") for p in parts)
            or any(is_hook_config(tuple(parts[i:])) for i in range(len(parts)))):
        raise Unsafe(f"a link to {source!r} would reach a path only automaton or a human writes")


_TAR_EXEC = ("--to-command", "--use-compress-program", "--checkpoint-action", "--info-script",
             "--new-volume-script", "--rsh-command", "--rmt-command", "--transform", "--xform")
_TAR_WRITES = ("--index-file", "--listed-incremental", "--volno-file")
EXTRACTORS: dict[str, re.Pattern[str]] = {  # program -> the argument shape that extracts
    "7z": re.compile(r"^[xe]$"), "7za": re.compile(r"^[xe]$"), "7zr": re.compile(r"^[xe]$"),
    "unrar": re.compile(r"^[xe]$"), "unar": re.compile(r"."), "cpio": re.compile(r"^-[a-zA-Z]*[ip]"),
    "bsdcpio": re.compile(r"^-[a-zA-Z]*[ip]"), "ar": re.compile(r"^-?[a-zA-Z]*x"), "jar": re.compile(r"^-?[a-zA-Z]*x"),
    "pax": re.compile(r"^-[a-zA-Z]*r"), "lha": re.compile(r"^-?[a-zA-Z]*[xe]"),
    "dpkg-deb": re.compile(r"^(-[xXR]|--extract|--raw-extract|--vextract)$"),
    "rpm2cpio": re.compile(r"."), "unsquashfs": re.compile(r"."),
}


def targets(name: str, args: list[str], cmd: Simple, here: Path | None) -> list[str] | None:
    """Paths written by a patch or archive program `name`, or None when `name` is neither."""
    if name == "patch":
        return patch(args, cmd, here)
    if name in ("tar", "bsdtar", "gtar"):
        return tar(args, here)
    if name == "unzip":
        return unzip(args, here)
    if name in ("apply_patch", "applypatch"):
        return apply_patch(args, cmd)
    if name in EXTRACTORS and any(EXTRACTORS[name].search(a) for a in args):
        raise Unsafe(f"{name} extracts members whose names automaton does not read: use tar or unzip")
    return None


def apply_patch(args: list[str], cmd: Simple) -> list[str]:
    """Codex's `apply_patch PATCH` or `apply_patch <<'EOF' … EOF` (Codex runs it itself,
    openai/codex apply-patch `invocation.rs`): the patch's paths, relative to the directory the
    command runs in (a `cd DIR &&` before it is the patch's working directory)."""
    from automaton.hooks.codexpatch import BadPatch, patch_paths

    text = args[0] if args else cmd.stdin
    if text is None:
        raise Unsafe("apply_patch without a patch argument or heredoc: automaton cannot tell what it writes")
    try:
        return patch_paths(text)
    except BadPatch as exc:
        raise Unsafe(f"apply_patch: {exc}") from None


def read_text(name: str, here: Path | None, who: str) -> str:
    """The text of file `name` (a script or patch a command will read); Unsafe when unreadable."""
    return _read(name, here, who)


def patch(args: list[str], cmd: Simple, here: Path | None) -> list[str]:
    """patch(1): `patch [OPTIONS] [ORIGFILE [PATCHFILE]]`, `-i PATCHFILE`, `-o OUT`, `-d DIR`."""
    values = frozenset({"-i", "--input", "-o", "--output", "-d", "--directory", "-p", "--strip", "-r",
                        "--reject-file", "-B", "--prefix", "-z", "--suffix", "-D", "--ifdef", "-F", "--fuzz",
                        "-V", "--version-control", "-Y", "--basename-prefix", "--quoting-style"})
    names = operands(args, values)
    found = names[:1] + option_values(args, ("-o", "--output", "-r", "--reject-file"))
    patches = option_values(args, ("-i", "--input")) or names[1:2]
    directory = (option_values(args, ("-d", "--directory")) or [""])[0]
    from_text = patch_texts_targets(patches, cmd, here, "patch")
    return found + [os.path.join(directory, t) if directory else t for t in from_text]


def patch_texts_targets(files: list[str], cmd: Simple, here: Path | None, who: str) -> list[str]:
    """Every path a unified/context/git diff names, with each leading-directory strip (-pN)."""
    texts = [_read(f, here, who) for f in files]
    if not files:
        if cmd.stdin is not None:
            texts.append(cmd.stdin)
        elif cmd.reads:
            texts.extend(_read(f, here, who) for f in cmd.reads)
        elif cmd.piped:
            raise Unsafe(f"{who} reads its patch from a pipe: automaton cannot tell which files it writes")
    found: list[str] = []
    for text in texts:
        for match in _PATCH_HEADER.finditer(text):
            path = _header_name(match)
            if not path or path == "/dev/null" or path.startswith("*** "):
                continue
            parts = path.split("/")
            found.extend("/".join(parts[i:]) for i in range(len(parts)) if parts[i:] != [""])
    return found


def _header_name(match: re.Match[str]) -> str:
    """The file name of a diff header line (`+++ b/NAME<TAB>date`): up to the first tab, without
    the blanks and CR that patch and git drop and without C-style quotes; Unsafe when an edge of
    it holds another white-space or invisible character, which patch, git and automaton would
    trim differently (`hooks.pathedge`)."""
    from automaton.hooks.pathedge import edge_reason  # lazy: only a command that applies a patch reaches it

    name = match.group(1).split("\t")[0].strip(" \r").strip('"')
    why = edge_reason(name, f"a {match.group(0)[:match.start(1) - match.start(0)].strip()!r} diff header")
    if why:
        raise Unsafe(why)
    return name


def _read(name: str, here: Path | None, who: str) -> str:
    fd = open_input(name, here, who, MAX_READ)
    try:
        return _read_fd(fd, name, who).decode("utf-8", "replace")
    finally:
        os.close(fd)


def _read_fd(fd: int, name: str, who: str) -> bytes:
    chunks: list[bytes] = []
    try:
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    except OSError as exc:
        raise Unsafe(f"{who}: cannot read {name!r} ({exc.strerror}) to tell which files it writes") from None
    return b"".join(chunks)


def open_input(name: str, here: Path | None, who: str, limit: int) -> int:
    """A read-only descriptor of the regular file `name` (relative to `here`) that a command
    will read, of at most `limit` bytes: `store.atomic.open_regular`, which never waits on a
    FIFO or device. Unsafe (one line naming the file) when it is missing, unreadable, not a
    regular file, or larger than `limit`. The caller closes the descriptor."""
    path = _local(name, here, who)
    from automaton.store.atomic import open_regular

    try:
        fd = open_regular(path)
    except OSError as exc:
        import errno

        if exc.errno == errno.EINVAL:
            raise Unsafe(f"{who}: {name!r} is not a regular file (a FIFO, device or socket): automaton reads"
                         " only regular files to tell which files a command writes") from None
        raise Unsafe(f"{who}: cannot read {name!r} ({exc.strerror}) to tell which files it writes") from None
    except ValueError:  # a NUL in the name
        raise Unsafe(f"{who}: cannot read {name!r} to tell which files it writes") from None
    size = os.fstat(fd).st_size
    if size > limit:
        os.close(fd)
        raise Unsafe(f"{who}: {name!r} is {size} bytes, more than the {limit} the hook reads to tell which"
                     " files it writes")
    return fd


def _local(name: str, here: Path | None, who: str) -> str:
    if name in ("", "-") or re.search(r"[$`*?\[]", name):
        raise Unsafe(f"{who}: cannot tell which file {name or 'stdin'!r} is, so not which files it writes")
    raw = os.path.expanduser(name)
    if not os.path.isabs(raw):
        if here is None:
            raise Unsafe(f"{who}: cannot tell which directory {name!r} is in after an unknown cd")
        raw = os.path.join(here, raw)
    return raw


def tar(args: list[str], here: Path | None) -> list[str]:
    """tar(1) in its three spellings (`-xzf A`, `xzf A`, `--extract --file=A`): the archive it
    creates, or the members it extracts (read from the archive) under `-C DIR`."""
    flags = ""
    written: list[str] = []
    values: dict[str, list[str]] = {"f": [], "C": []}
    words = list(args)
    if words and not words[0].startswith("-") and re.match(r"^[a-zA-Z]+$", words[0]):
        words[0] = "-" + words[0]  # old-style first cluster
    i = 0
    while i < len(words):
        arg = words[i]
        if arg.startswith("--"):
            key, _, val = arg.partition("=")
            if any(key == o or (len(key) > 4 and o.startswith(key)) for o in _TAR_EXEC):
                raise Unsafe(f"tar {key} runs a program or renames members at run time: automaton cannot"
                             " tell what it writes")
            if any(key == o for o in _TAR_WRITES):
                written.append(val or (words[i + 1] if i + 1 < len(words) else ""))
            long = {"--file": "f", "--directory": "C"}.get(key)
            if long:
                values[long].append(val or (words[i + 1] if i + 1 < len(words) else ""))
                i += 0 if val else 1
            flags += {"--extract": "x", "--get": "x", "--create": "c", "--append": "r", "--update": "u",
                      "--to-stdout": "O", "--list": "t", "--delete": "r", "--concatenate": "A"}.get(key, "")
        elif arg.startswith("-") and len(arg) > 1:
            for n, ch in enumerate(arg[1:], 1):
                if ch in "IFsg":
                    raise Unsafe(f"tar -{ch} runs a program, renames members or keeps a snapshot file:"
                                 " automaton cannot tell what it writes")
                if ch in "fC":
                    attached = arg[n + 1:]
                    values[ch].append(attached or (words[i + 1] if i + 1 < len(words) else ""))
                    i += 0 if attached else 1
                    break
                flags += ch
        i += 1
    directories = values["C"] or [""]
    directory = directories[-1]
    archives = values["f"]
    if any(c in flags for c in "crAu"):
        return written + (archives or ["-"])
    if "x" not in flags or "O" in flags or "t" in flags:
        return written
    if not archives or archives[-1] == "-":
        raise Unsafe("tar -x reads its archive from standard input: automaton cannot tell which files it writes")
    fd = open_input(archives[-1], here, "tar", MAX_ARCHIVE)
    import tarfile  # lazy: the hook path imports only what a command needs

    try:
        with os.fdopen(fd, "rb") as fh, tarfile.open(fileobj=fh) as archive:
            members = archive.getmembers()
    except (OSError, tarfile.TarError) as exc:
        raise Unsafe(f"tar: cannot read {archives[-1]!r} ({exc}) to tell which files it writes") from None
    names = [_stripped(m.name, args) for m in members]
    for member in members:
        if member.issym() or member.islnk():
            for d in directories:
                base = Path(os.path.join(here, d)) if here is not None else None
                protected_link(member.linkname, base)
                # a hard link names an archive path; a symbolic one is relative to its own folder
                link_dir = "" if member.islnk() else os.path.dirname(member.name)
                names.append([os.path.join(link_dir, member.linkname)])
    flat = [n for group in names for n in group]
    return written + [os.path.join(d, n) if d else n for d in directories for n in flat] or [directory or "."]


def _stripped(name: str, args: list[str]) -> list[str]:
    """A member's name and, under `--strip-components=N` (any N), every shorter suffix of it."""
    if not any(a.startswith("--strip") for a in args):
        return [name]
    parts = name.split("/")
    return ["/".join(parts[i:]) for i in range(len(parts)) if parts[i:] != [""]]


def unzip(args: list[str], here: Path | None) -> list[str]:
    """unzip(1): `unzip [-opts] ARCHIVE [members] [-d DIR]`; `-l`/`-t`/`-p`/`-Z` only read."""
    if any(re.match(r"^-[a-zA-Z]*[ltpvZ]", a) for a in args if not a.startswith("--")):
        return []
    names = operands(args, frozenset({"-d", "-x", "-P"}))
    if not names:
        raise Unsafe("unzip without an archive: automaton cannot tell which files it writes")
    directory = (option_values(args, ("-d",)) or [""])[0]
    junk = any(re.match(r"^-[a-zA-Z]*j", a) for a in args if not a.startswith("--"))
    fd = open_input(names[0], here, "unzip", MAX_ARCHIVE)
    found: list[str] = []
    import zipfile  # lazy: the hook path imports only what a command needs

    try:
        with os.fdopen(fd, "rb") as fh, zipfile.ZipFile(fh) as archive:
            base = Path(os.path.join(here, directory)) if here is not None else None
            for info in archive.infolist():
                member = os.path.basename(info.filename) if junk else info.filename
                found.append(member)
                if (info.external_attr >> 16) & 0o170000 == 0o120000:  # a symlink member: its target
                    link = archive.read(info).decode("utf-8", "replace")
                    protected_link(link, base)
                    found.append(os.path.join(os.path.dirname(member), link))
    except (OSError, zipfile.BadZipFile) as exc:
        raise Unsafe(f"unzip: cannot read {names[0]!r} ({exc}) to tell which files it writes") from None
    return [os.path.join(directory, n) if directory else n for n in found] or [directory or "."]
