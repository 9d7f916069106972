"""The files `curl` and `wget` write (curl(1) "OPTIONS", GNU Wget manual "Invoking").

Besides the document (`curl -o FILE`, `-O` and `--output-dir DIR`; `wget -O FILE`, `-P DIR`, the
URL's name), both write side files a caller may not think of: curl `-D/--dump-header`,
`-c/--cookie-jar`, `--trace`, `--trace-ascii`, `--stderr`, `--libcurl`, `--etag-save`, `--hsts`,
`--alt-svc`; wget `-o`/`-a` logs, `--save-cookies`, `--warc-file`, `--rejected-log`. A
configuration file or command that could name further outputs (`curl -K`, `wget -e`/`--config`)
and a recursive download (names known only at run time) raise `Unsafe`.
"""

from __future__ import annotations

import os
import re

from automaton.hooks.argv import option_values
from automaton.hooks.shellparse import Unsafe

_CURL_FILES = ("-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii",
               "--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc")
_WGET_FILES = ("-O", "--output-document", "-o", "--output-file", "-a", "--append-output", "--save-cookies",
               "--rejected-log")


def targets(name: str, args: list[str]) -> list[str]:
    """Paths `curl ARGS` or `wget ARGS` writes (`-` = standard output is left out)."""
    if name == "curl":
        if any(a in ("-K", "--config") or a.startswith(("--config=", "-K")) for a in args):
            raise Unsafe("curl -K reads options from a file: automaton cannot tell what it writes")
        found = option_values(args, _CURL_FILES)
        directory = (option_values(args, ("--output-dir",)) or [""])[-1]
        if any(a in ("-O", "--remote-name", "--remote-name-all") or re.match(r"^-[a-zA-Z]*O", a) for a in args):
            found += [os.path.join(directory, n) if directory else n for n in remote_names(args)]
        elif directory:
            found = [os.path.join(directory, f) if not os.path.isabs(f) else f for f in found]
        return [f for f in found if f != "-"]
    if any(a in ("-e", "--execute", "--config") or a.startswith(("--execute=", "--config=")) for a in args):
        raise Unsafe("wget -e/--config runs wgetrc commands: automaton cannot tell what it writes")
    prefix = (option_values(args, ("-P", "--directory-prefix")) or [""])[-1]
    if any(a in ("-r", "--recursive", "-m", "--mirror") or re.match(r"^-[a-zA-Z]*[rm]", a) for a in args):
        if not prefix:
            raise Unsafe("wget -r writes files named at run time: give it a folder with -P")
        return [prefix]
    found = option_values(args, _WGET_FILES) + option_values(args, ("--warc-file",))
    if not option_values(args, ("-O", "--output-document")):
        found += [os.path.join(prefix, n) if prefix else n for n in remote_names(args)]
    return [f for f in found if f != "-"]


def remote_names(args: list[str]) -> list[str]:
    """The local names a download keeps from its URLs (`curl -O`, plain `wget URL`)."""
    urls = [a for a in args if "://" in a]
    return [os.path.basename(u.split("?")[0].rstrip("/")) or "." for u in urls] or ["."]
