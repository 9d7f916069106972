"""Best-effort shell analysis: which command lines are refused and which targets are found."""

from __future__ import annotations

from pathlib import Path

import pytest

from automaton.hooks.shell import Unsafe, analyze

CWD = Path("/p")


def targets(command: str) -> list[str]:
    return [str(base / t) for t, base in analyze(command, CWD).targets]


@pytest.mark.parametrize("command, expected", [
    ("echo hi 2>/dev/null >out.txt", ["/p/out.txt"]),
    ("make 2>&1 | tee -a build.log", ["/p/build.log"]),
    ("echo a\nrm old.txt", ["/p/old.txt"]),
    ("cd sub && touch a b", ["/p/sub/a", "/p/sub/b"]),
    ("sed -i.bak 's/a/b/' f1 f2", ["/p/f1", "/p/f2"]),
    ("sed -e s/a/b/ -i f1", ["/p/f1"]),
    ("cp -r a b dest/", ["/p/dest"]),
    ("install -m 644 -t bin tool", ["/p/bin"]),
    ("mv a.txt b.txt", ["/p/b.txt", "/p/a.txt"]),
    ("dd if=/dev/zero of=disk.img bs=1", ["/p/disk.img"]),
    ("FOO=1 env BAR=2 sudo rm -rf build", ["/p/build"]),
    ("cat > f.txt <<'EOF'\nit's \"odd\"\nEOF\necho done", ["/p/f.txt"]),
    ("echo `touch y` z", ["/p/y"]),
    ("(ls)>listing", ["/p/listing"]),
    ("ls -la && git status && grep -r x .", []),
    ("python -m pytest -q", []),
])
def test_targets(command: str, expected: list[str]) -> None:
    assert targets(command) == expected


@pytest.mark.parametrize("command, reason", [
    ("automaton --approve --task t", "human acts"),
    ("automaton --ap --loop x", "human acts"),
    ("python3 -m automaton --focus t", "human acts"),
    ("/home/u/.automaton/scripts/status.py --approve --task t", "human acts"),
    ("automaton --accept-rollback --task t --yes", "is a human act"),
    ("export AUTOMATON_APPROVER=me", "AUTOMATON_APPROVER"),
    ("git commit --no-verify -m x", "--no-verify"),
    ("python -c \"open('tasks/t/.state','w').write('complete')\"", ".state"),
    ("git checkout -- tasks/t/.state", ".state"),
    ("python - <<EOF\nopen('.automaton/focus','w')\nEOF", ".automaton"),
    ("echo x > $TARGET", "cannot tell"),
    ("cd $DIR && touch a", "unknown place"),
    ("echo 'unbalanced", "cannot parse"),
    ("cat <<EOF > f\nnever closed", "never closed"),
])
def test_refused(command: str, reason: str) -> None:
    with pytest.raises(Unsafe, match=reason.replace("$", r"\$")):
        analyze(command, CWD)


def test_reading_state_files_is_fine() -> None:
    assert targets("cat tasks/t/.state && automaton --phase --task t && ls .automaton/loops") == []


def test_glob_targets_include_hidden_matches(tmp_path: Path) -> None:
    (tmp_path / ".state").write_text("x")
    found = [t for t, _ in analyze("rm .st*", tmp_path).targets]
    assert found == [".st*", str(tmp_path / ".state")]


# ---- dynamic constructs next to automaton: the hook cannot know what runs ----------------------

@pytest.mark.parametrize("command", [
    "automaton --$'\\x61'pprove --task t",
    "automaton $(printf -- \"--%s\" approve) --task t",
    "automaton `printf -- --%s approve` --task t",
    "env $(cat approver.env) automaton --phase --task t",
    "eval \"$CMD\"; automaton --phase --task t",
    "X='automaton --phase'; bash -c \"$X\"",
    "F=--app; automaton $F --task t",
    "automaton ${FLAG} --task t",
    "set -- --approve; automaton \"$@\" --task t",
    "python -c 'import subprocess; subprocess.run([\"autom\" + \"aton\", \"--phase\"])'",
    "perl -e 'system(\"automaton\", \"--\" . \"app\" . \"rove\")'",
    "node -e 'require(\"child_process\").execSync(\"automaton --phase\")'",
    "echo automaton | xargs -I{} {} --phase",
    "printf 'automaton --phase' | sh",
    "source ./approve.sh; automaton --phase --task t",
    ". ./x.sh && automaton --phase",
    "find . -name status.py -exec python {} --phase \\;",
    "AUTOMATON_X=1 $CMD",
    "python3 - <<'EOF'\nimport subprocess\nsubprocess.run(['automaton', '--phase'])\nEOF",
    "cat <<EOF | sh\nautomaton --phase $T\nEOF",
    "$RUN --approve --task t",
    "Invoke-Expression 'automaton --phase'",
    "watch -n 5 'automaton --phase --task t'",
])
def test_dynamic_construct_next_to_automaton_is_refused(command: str) -> None:
    with pytest.raises(Unsafe, match=r"sign-offs|cannot know what it runs"):
        analyze(command, CWD)


@pytest.mark.parametrize("command", [
    "automaton --ap --task t", "automaton --appr --task t", "automaton --approv --loop x",
    "automaton --fo", "automaton --foc other", "automaton --focu x", "AUTOMATON --APPROVE --task t",
    "autom\\aton --app\\rove --task t", "printf '\\x61utomaton --approve --task t' | sh",
    "python3 -m automaton --approve --task t", "loop-runner.py --approve --loop x",
])
def test_every_spelling_of_a_human_act_is_refused(command: str) -> None:
    with pytest.raises(Unsafe, match="human acts"):
        analyze(command, CWD)


def test_the_cli_accepts_no_abbreviation() -> None:
    """allow_abbrev=False: only the exact `--approve`/`--focus` exist, which the hook denies by name."""
    from automaton.cli import parser

    for argv in (["--ap", "--task", "t"], ["--appro", "--task", "t"], ["--foc", "x"]):
        with pytest.raises(parser.UsageError, match="unrecognized"):
            parser.build().parse_args(argv)


# ---- pseudo-terminals and typing into terminals ---------------------------------------------------

@pytest.mark.parametrize("command", [
    "script -qec 'automaton -\\-approve --task t' /dev/null",
    "script -q /dev/null ./approve.sh",
    "unbuffer ./run.sh",
    "expect -c 'spawn ./run.sh; interact'",
    "socat - EXEC:./run.sh,pty,setsid,ctty",
    "python3 -c 'import pty; pty.spawn([\"./run.sh\"])'",
    "python3 - <<'EOF'\nimport os\nos.openpty()\nEOF",
    "perl -MIO::Pty -e 1",
    "ssh -t localhost ./run.sh",
    "ssh -qtt localhost ./run.sh",
    "ssh -o RequestTTY=force localhost ./run.sh",
    "tmux new-session -d ./run.sh",
    "tmux send-keys -t 0 ./run.sh Enter",
    "tmux send -t 0 ls Enter",
    "tmux ls \\; send-keys x Enter",
    "tmux -L other new-window ./run.sh",
    "screen -S s -X stuff './run.sh\\n'",
    "screen -dmS s ./run.sh",
    "xdotool type ./run.sh",
    "osascript -e 'tell application \"Terminal\" to do script \"./run.sh\"'",
    "systemd-run --user --pty ./run.sh",
])
def test_pseudo_terminals_and_typing_are_refused(command: str) -> None:
    with pytest.raises(Unsafe, match=r"terminal|human acts"):
        analyze(command, CWD)


# ---- write forms: every target is returned for the policy ----------------------------------------

@pytest.mark.parametrize("command, expected", [
    ("chmod -x .git/hooks/pre-commit", ["/p/.git/hooks/pre-commit"]),
    ("chmod -R u+w,go-w src lib", ["/p/src", "/p/lib"]),
    ("chmod --reference=a b c", ["/p/b", "/p/c"]),
    ("chown -R me:staff .git", ["/p/.git"]),
    ("chgrp staff .claude/settings.json", ["/p/.claude/settings.json"]),
    ("ln -sf /tmp/x .git/hooks/pre-commit", ["/p/.git/hooks/pre-commit", "/tmp/x"]),
    ("ln -s ../lib/util.py", ["/p/util.py", "/p/../lib/util.py"]),
    ("ln -t bin a b", ["/p/bin", "/p/a", "/p/b"]),
    ("git mv src/a.py .git/x", ["/p/src/a.py", "/p/.git/x"]),
    ("git checkout -- .git/hooks/pre-commit", ["/p/.git/hooks/pre-commit"]),
    ("git checkout HEAD~1 -- a b", ["/p/a", "/p/b"]),
    ("git restore --source=HEAD .claude/settings.json", ["/p/.claude/settings.json"]),
    ("git -C sub restore x", ["/p/sub/x"]),
    ("git config core.editor vim", ["/p/.git/config"]),
    ("perl -pi -e s/a/b/ .git/config", ["/p/.git/config"]),
    ("perl -i.bak -pe s/a/b/ x y", ["/p/x", "/p/y"]),
    ("perl -pie s/a/b/ x", ["/p/x"]),
    ("truncate -s 0 .git/index", ["/p/.git/index"]),
    ("mkdir -m 700 .git/hooks/x", ["/p/.git/hooks/x"]),
    ("rmdir .git/refs", ["/p/.git/refs"]),
    ("dd if=/dev/zero of=.git/index", ["/p/.git/index"]),
    ("curl -sSo .git/hooks/pre-commit https://x/y", ["/p/.git/hooks/pre-commit"]),
    ("curl -O https://x/pkg.tgz", ["/p/pkg.tgz"]),
    ("wget https://x/pkg.tgz", ["/p/pkg.tgz"]),
    ("sort -o .git/x in.txt", ["/p/.git/x"]),
    ("gcc -o src/a x.c", ["/p/src/a"]),
    ("gcc-13 -O2 -fno-omit-frame-pointer -Wno-unused -c x.c -osrc/x.o", ["/p/src/x.o"]),
    ("aarch64-linux-gnu-g++ -MMD -MF deps.d -o a.out x.cc", ["/p/deps.d", "/p/a.out"]),
    ("clang++ x.cc -o .git/b", ["/p/.git/b"]),
    ("go build -o=bin/app ./cmd", ["/p/=bin/app", "/p/bin/app"]),
    ("rustc --out-dir build x.rs", ["/p/build"]),
    ("javac -d classes X.java", ["/p/classes"]),
    ("ld.lld --output=a x.o", ["/p/a"]),
    ("sqlite3 src/db 'select 1'", ["/p/src/db"]),
    ("pip install -t src foo", ["/p/src"]),
    ("pip3.12 install -qt src foo && pip3 install --tar=lib foo", ["/p/src", "/p/lib"]),
    ("python3 -I -X utf8 -m pip install --prefix src foo", ["/p/src"]),
    ("uv pip install --root out foo && pip download -d dl foo && pip wheel -w wh .", ["/p/out", "/p/dl", "/p/wh"]),
    ("PIP_TARGET=vendor pip install foo", ["/p/vendor"]),
    ("npm install --prefix src", ["/p/src"]),
    ("npm i --prefix=web left-pad && npm ci -C app && npm --prefi ui install", ["/p/web", "/p/app", "/p/ui"]),
    ("npm_config_prefix=src npm install", ["/p/src"]),
    ("sqlite3 -batch --separator , 'file:data/x.db?cache=shared' 'insert into t values (1)'", ["/p/data/x.db"]),
    ("sudo -u root rm .git/index", ["/p/.git/index"]),
    ("env -C .git rm index", ["/p/.git/index"]),
    ("sudo --u root rm a", ["/p/a"]),  # a wrapper's long option by a GNU abbreviation takes its value
    ("timeout --sig KILL 5 touch a", ["/p/a"]),
    ("flock /tmp/l tee src/calc.py", ["/p/src/calc.py"]),
    ("flock -n --wai 3 /tmp/l touch a", ["/p/a"]),
    ("flock -w 3 /tmp/l -c 'echo x > .git/x'", ["/p/.git/x"]),
    ("flock /tmp/l --command 'cd sub && rm b'", ["/p/sub/b"]),
    ("watch -n1 touch a", ["/p/a"]),
    ("watch --int 1 -d 'echo x >> a'", ["/p/a"]),
    ("watch echo x '>a'", ["/p/a"]),  # joined by spaces, then read by `sh -c`
    ("watch -tx touch a", ["/p/a"]),
    ("bash -c 'echo x > .git/hooks/pre-commit'", ["/p/.git/hooks/pre-commit"]),
    ("bash -lc 'cd sub && rm -rf .claude'", ["/p/sub/.claude"]),
    ("rsync -a --remove-source-files a/ b/", ["/p/b", "/p/a"]),
    ("Set-Content -Path .git/hooks/pre-commit -Value x", ["/p/.git/hooks/pre-commit"]),
    ("Add-Content .claude/settings.json '{}'", ["/p/.claude/settings.json"]),
    ("Remove-Item -Recurse -Force .git", ["/p/.git"]),
    ("New-Item -ItemType File -Path src -Name x.py", ["/p/src", "/p/src/x.py"]),
    ("Copy-Item x.json -Destination .claude/settings.json", ["/p/.claude/settings.json"]),
    ("Move-Item -Pa x -De:.git/hooks/pre-commit", ["/p/x", "/p/.git/hooks/pre-commit"]),
    ("Rename-Item src/a.py b.py", ["/p/src/a.py", "/p/src/b.py"]),
    ("Out-File -FilePath .git/x", ["/p/.git/x"]),
    ("'x' | Tee-Object .git/x", ["/p/.git/x"]),
    ("Invoke-WebRequest https://x/y -OutFile .git/x", ["/p/.git/x"]),
])
def test_write_forms(command: str, expected: list[str]) -> None:
    assert targets(command) == expected


def test_git_config_global_writes_the_user_config() -> None:
    assert [t for t, _ in analyze("git config --global user.name me", CWD).targets] == ["~/.gitconfig"]


def test_powershell_paths_keep_their_backslashes() -> None:
    found = [str(b / t) for t, b in analyze("Remove-Item .git\\hooks\\pre-commit; sc src\\a.txt x", CWD,
                                            powershell=True).targets]
    assert found == ["/p/.git/hooks/pre-commit", "/p/src/a.txt"]
    with pytest.raises(Unsafe, match="human acts"):
        analyze("automaton --ap`prove --task t", CWD, powershell=True)


@pytest.mark.parametrize("command, reason", [
    ("ln -s ../.git src/g", "a link to"),
    ("ln -s .claude src/c", "a link to"),
    ("ln -sf /p/.codex/hooks.json src/h", "a link to"),
    ("git config alias.ci 'commit --no-verify'", "--no-verify"),
    ("git -c alias.ci='commit -n' ci -m x", "git -c alias.ci"),
    ("xargs rm < list.txt", "xargs"),
    ("find . -name '*.pyc' | xargs rm", "xargs"),
    ("Get-ChildItem *.tmp | Remove-Item", "pipeline"),
    ("tar -xf - < x.tar", "standard input"),
    ("curl -sL https://x/a.tgz | tar xz", "standard input"),
    ("git diff | patch -p1", "pipe"),
    ("patch -p1 < missing.diff", "cannot read"),
    ("unzip missing.zip", "cannot read"),
    ("git restore --pathspec-from-file=list", "pathspec-from-file"),
    ("env -S 'rm x'", "env -S"),
    ("sqlite3 :memory: \"select writefile('src/a.py', 'x')\"", "writes another file"),
    ("sqlite3 -cmd '.output .git/x' x.db 'select 1'", "writes another file"),
    ("sqlite3 -readonly x.db 'ATTACH \"src/n.db\" AS n'", "writes another file"),
    ("sqlite3 -A -x a.sqlar", ".archive"),
])
def test_write_forms_refused(command: str, reason: str) -> None:
    with pytest.raises(Unsafe, match=reason):
        analyze(command, CWD)


def test_patch_targets_come_from_its_headers(tmp_path: Path) -> None:
    diff = ("diff --git a/src/app.py b/.git/hooks/pre-commit\nrename from src/app.py\n"
            "rename to .git/hooks/pre-commit\n--- a/lib/x.py\t2024-01-01\n+++ b/lib/x.py\n@@ -1 +1 @@\n-a\n+b\n")
    (tmp_path / "fix.diff").write_text(diff)
    for command in ("patch -p1 < fix.diff", "patch -p1 -i fix.diff", "git apply fix.diff",
                    f"patch -p1 <<'EOF'\n{diff}EOF"):
        found = {t for t, _ in analyze(command, tmp_path).targets}
        assert {".git/hooks/pre-commit", "lib/x.py", "b/lib/x.py", "x.py"} <= found, command
    assert analyze("git apply --check fix.diff", tmp_path).targets == []


def test_archive_targets_are_its_members(tmp_path: Path) -> None:
    import tarfile
    import zipfile

    (tmp_path / "pre-commit").write_text("exit 0\n")
    with tarfile.open(tmp_path / "a.tgz", "w:gz") as tar:
        tar.add(tmp_path / "pre-commit", arcname=".git/hooks/pre-commit")
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as zf:
        zf.writestr("src/ok.py", "x = 1\n")
    assert [t for t, _ in analyze("tar -xzf a.tgz", tmp_path).targets] == [".git/hooks/pre-commit"]
    assert [t for t, _ in analyze("tar xzf a.tgz -C out", tmp_path).targets] == ["out/.git/hooks/pre-commit"]
    assert [t for t, _ in analyze("tar --extract --file=a.tgz", tmp_path).targets] == [".git/hooks/pre-commit"]
    assert [t for t, _ in analyze("tar czf new.tgz src", tmp_path).targets] == ["new.tgz"]
    assert analyze("tar tzf a.tgz", tmp_path).targets == []
    assert [t for t, _ in analyze("unzip -o a.zip -d lib", tmp_path).targets] == ["lib/src/ok.py"]
    assert analyze("unzip -l a.zip", tmp_path).targets == []
    link = tarfile.TarInfo("st")
    link.type, link.linkname = tarfile.SYMTYPE, "tasks/t/.state"
    with tarfile.open(tmp_path / "l.tar", "w") as tar:
        tar.addfile(link)
    with pytest.raises(Unsafe, match="a link to"):
        analyze("tar xf l.tar", tmp_path)


# ---- ordinary developer work stays possible -------------------------------------------------------

@pytest.mark.parametrize("command", [
    "ls -la && git status && git diff && git log --oneline -5",
    "cat README.md | grep -n foo",
    "python -m pytest -q tests/ && pytest -x -k test_x",
    "python scripts/gen.py --out build/gen.txt",
    ".venv/bin/ruff check src && .venv/bin/mypy --strict src",
    "npm test && npm run build && make -j4 && cargo test && go test ./...",
    "echo $HOME && echo $?",
    "for f in src/*.py; do wc -l $f; done",
    "git commit -m \"$(cat msg.txt)\"",
    "git checkout -b feature/x && git checkout main && git stash list",
    "git config user.name && git config --get user.email",
    "python -c 'print(1 + 1)' && node -e 'console.log(1)' && bash -c 'ls src'",
    "bash scripts/test.sh",
    "tmux ls && screen -ls",
    "automaton --phase --task demo --json; echo done",
    "cat tasks/demo/.state && ls .automaton/loops",
    "find . -name '*.py' -newer setup.py",
    "curl -sS https://example.com/api | jq .",
    "export PATH=\"$HOME/.local/bin:$PATH\"",
    "docker build -t app . && pip install -e .",
    "grep -rn 'empty pty keystroke' src",
    "flock /tmp/build.lock make -j4 && flock -n 9 && watch -n 2 'git status; ls src'",
    "gcc -Wall -O2 -fno-omit-frame-pointer -c x.c && cc x.c && gcc -E x.c -o - && go build ./...",
    "sqlite3 -readonly data.db 'select count(*) from t' && sqlite3 'file:data.db?mode=ro' .tables",
    "sqlite3 -safe :memory: \"select writefile('x', 'y')\" && sqlite3 --version",
    "pip install foo && pip install --pre -e . && python -m pip install -r req.txt && pip list --local",
    "pip install --root-user-action=ignore foo && npm install && npm --prefix web run build && npm -C web test",
])
def test_ordinary_commands_write_nothing(command: str) -> None:
    assert targets(command) == []
