"""Option tables of the writing programs whose flags decide what they write, read the way their
own parsers read them: short options clustered (`-fo OUT`), a value attached or in the next word,
GNU long options by any unambiguous prefix (`--out=F` is `--output=F`, getopt_long(3)), and
`--` ending the options.

Every option has a role: `flag`, `value` (its value is not a path written), `optional` (a value
only with `=`), `attached` (a short option whose optional value is the rest of its word, like
`sed -i.bak`), `out` (its value is a path written), `exec` (it runs a program). An option the
table does not know is denied: on a program that can write, an unknown flag may be the one that
does (default deny). Tables follow the GNU coreutils manual and the BSD man pages of each program;
only options common to both or documented by either are listed.
"""

from __future__ import annotations

from automaton.core.record import field, record  # not dataclasses: on the hook path
from automaton.hooks.shellparse import Unsafe


@record(frozen=True)
class Spec:
    """A program's options: `short` letter -> role, `long` name (without `--`) -> role."""

    short: dict[str, str]
    long: dict[str, str] = field(default_factory=dict)


@record
class Scan:
    """What the options say: `outs` (paths written), `operands`, and the options seen (names)."""

    outs: list[str] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)


def _short(flags: str, values: str = "", outs: str = "", execs: str = "", attached: str = "") -> dict[str, str]:
    table = {c: "flag" for c in flags}
    table.update({c: "attached" for c in attached})
    table.update({c: "value" for c in values})
    table.update({c: "out" for c in outs})
    table.update({c: "exec" for c in execs})
    return table


def _long(flags: str = "", values: str = "", optional: str = "", outs: str = "", execs: str = "") -> dict[str, str]:
    table: dict[str, str] = {}
    for role, names in (("flag", flags), ("value", values), ("optional", optional), ("out", outs),
                        ("exec", execs)):
        table.update({n: role for n in names.split()})
    return table


_COMMON = "help version verbose debug"
SPECS: dict[str, Spec] = {
    "sort": Spec(_short("bdfgiMhnRrVcCmsuz", "kSt", "oT"),
                 _long(f"{_COMMON} ignore-leading-blanks dictionary-order ignore-case general-numeric-sort "
                       "ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort reverse "
                       "version-sort merge stable unique zero-terminated",
                       "random-source sort batch-size files0-from key buffer-size field-separator parallel",
                       "check", "output temporary-directory", "compress-program")),
    "cp": Spec(_short("abdfHilLnPpRrsTuvxZcXNg", "S", "t"),
               _long(f"{_COMMON} archive attributes-only copy-contents dereference force interactive link "
                     "no-dereference no-clobber parents recursive remove-destination strip-trailing-slashes "
                     "symbolic-link no-target-directory one-file-system keep-directory-symlink",
                     "no-preserve sparse suffix", "backup preserve reflink update context",
                     "target-directory")),
    "mv": Spec(_short("bfinTuvZh", "S", "t"),
               _long(f"{_COMMON} exchange force interactive no-clobber no-copy strip-trailing-slashes "
                     "no-target-directory", "suffix", "backup update context", "target-directory")),
    "ln": Spec(_short("bdFfhiLnPrsTvw", "S", "t"),
               _long(f"{_COMMON} directory force interactive logical no-dereference physical relative symbolic "
                     "no-target-directory", "suffix", "backup", "target-directory")),
    "install": Spec(_short("bcCdDpsTv", "gmoSZ", "t"),
                    _long(f"{_COMMON} compare directory preserve-timestamps strip no-target-directory "
                          "preserve-context", "group mode owner suffix", "backup context", "target-directory",
                          "strip-program")),
    "sed": Spec(_short("nErsuza", "efl", attached="iI"),
                _long(f"{_COMMON} quiet silent follow-symlinks null-data zero-terminated regexp-extended separate "
                      "sandbox unbuffered posix binary", "expression file line-length", "in-place")),
}


def scan(name: str, args: list[str], spec: Spec | None = None) -> Scan:
    """Read `args` of program `name` against its table; Unsafe for an unknown or ambiguous
    option, or one that runs a program. Values of `value` options are kept under their long
    name in `seen` as `name=value` too (e.g. `expression=s/a/b/`)."""
    spec = spec or SPECS[name]
    out = Scan()
    i = 0
    while i < len(args):
        arg = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if arg == "--":
            out.operands += args[i + 1:]
            break
        if arg.startswith("--"):
            key, eq, value = arg[2:].partition("=")
            full = _resolve(name, key, spec)
            role = spec.long[full]
            if role in ("value", "out", "exec") and not eq:
                if nxt is None:
                    raise Unsafe(f"{name} --{full} without its value: automaton denies what it cannot read")
                value, i = nxt, i + 1
            _take(name, "--" + full, role, value if (eq or role in ("value", "out", "exec")) else None, out)
        elif arg.startswith("-") and arg != "-":
            for n, ch in enumerate(arg[1:], 1):
                short = spec.short.get(ch)
                if short is None:
                    raise Unsafe(f"{name} -{ch}: an option automaton does not know on a program that writes files")
                role = short
                if role == "flag":
                    out.seen.add("-" + ch)
                    continue
                value = arg[n + 1:]
                if role == "attached":  # `-i.bak`: an optional value, only in the same word
                    _take(name, "-" + ch, "value", value, out)
                    break
                if not value:
                    if nxt is None:
                        raise Unsafe(f"{name} -{ch} without its value: automaton denies what it cannot read")
                    value, i = nxt, i + 1
                _take(name, "-" + ch, role, value, out)
                break
        else:
            out.operands.append(arg)
        i += 1
    return out


def _resolve(name: str, key: str, spec: Spec) -> str:
    if key in spec.long:
        return key
    hits = [k for k in spec.long if k.startswith(key)] if key else []
    if len(hits) != 1:
        what = "ambiguous" if hits else "unknown"
        raise Unsafe(f"{name} --{key}: an {what} option on a program that writes files (automaton denies it)")
    return hits[0]


def _take(name: str, option: str, role: str, value: str | None, out: Scan) -> None:
    if role == "exec":
        raise Unsafe(f"{name} {option} runs {value!r}: automaton cannot read what it runs")
    out.seen.add(option)
    if value is not None:
        out.seen.add(f"{option}={value}")
    if role == "out" and value is not None:
        out.outs.append(value)
