"""Print the README's "Tested with" table (Markdown) from `clis.lock.json`.

`python -m tests.e2e.tested_with`
"""

from __future__ import annotations

from tests.e2e.install import pinned


def table() -> str:
    rows = ["| CLI | npm package | version | what the e2e suite covers |", "|---|---|---|---|"]
    for cli in pinned().values():
        rows.append(f"| `{cli.bin}` | `{cli.package}` | {cli.version} | {cli.covers or 'installed only'} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
