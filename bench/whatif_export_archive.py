"""What-if (no figure, not in `make bench`): the verifier's export read through `git archive`
instead of the object database.

Reads the blobs of a 2,000-file tree three ways, writing nothing (the writes are the same for
every way): the export's own (`ls-tree` + `cat-file --batch-check` for the sizes + `cat-file
--batch`, `git/export.py`), `git archive --format=tar` parsed with Python's `tarfile` (what
automaton could use: it never runs a tar program from the agent's PATH), and `git archive |
tar -t` (native tar, for reference). Interleaved, medians with their interquartile range.

`git archive` would also apply the commit's own `.gitattributes` (`export-ignore` hides a file,
`export-subst` rewrites one), which the agent writes: using it would need a fallback for every
tree with attributes. It is not used because it is not faster here (BENCHMARKS.md).
Run: .venv/bin/python bench/whatif_export_archive.py [--quick] [--reps N]
"""

from __future__ import annotations

import subprocess
import tarfile
import time

import _common as c


def main() -> int:
    ns = c.args(__doc__)
    files, reps = (200, 3) if ns.quick else (2_000, ns.reps or 15)
    from automaton.git.export import _list_names, _sizes
    from automaton.git.tree import read_blobs

    with c.workspace("archive", ns.keep) as tmp:
        repo = c.init_repo(tmp / "proj", files=files)
        tip = c.git(repo, "rev-parse", "HEAD").strip()

        def object_database() -> None:
            plan = _list_names(repo, tip)
            sizes = _sizes(repo, {e.oid for e in plan.values()})
            oids = sorted(sizes)
            for _ in read_blobs(repo, oids, [sizes[o] for o in oids]):
                pass

        def archive_tarfile() -> None:
            proc = subprocess.Popen(["git", "-C", str(repo), "archive", "--format=tar", tip],
                                    stdout=subprocess.PIPE, env=c.bench_env())
            assert proc.stdout is not None
            with tarfile.open(fileobj=proc.stdout, mode="r|") as archive:
                for member in archive:
                    if member.isfile():
                        got = archive.extractfile(member)
                        if got is not None:
                            got.read()
            proc.wait()

        def archive_native() -> None:
            c.run(["sh", "-c", f"git -C '{repo}' archive --format=tar {tip} | tar -t >/dev/null"])

        cases = {"object database (the export's way)": object_database, "git archive + tarfile": archive_tarfile,
                 "git archive | tar -t": archive_native}
        timed = {name: (lambda work=work: c.measure(work)) for name, work in cases.items()}
        times = c.interleave(timed, reps)
    for name, xs in times.items():
        print(f"  {name:36} {c.spread(xs)}")
    ours = c.wall(times["object database (the export's way)"])
    print(f"WHAT-IF export via git archive + tarfile: {c.wall(times['git archive + tarfile']) / ours:.2f}x the"
          f" export's way ({files} files; native tar {c.wall(times['git archive | tar -t']) / ours:.2f}x);"
          f" medians of {reps} interleaved runs; {time.strftime('%Y-%m-%d')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
