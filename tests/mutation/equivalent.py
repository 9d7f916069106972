"""Surviving mutants that cannot change a brake's answer, each with the reason (`make mutate`).

An entry matches a survivor by its module, its function and the mutated line as mutmut shows
it (the `+` line of `mutmut show`, stripped). A survivor that changes what a brake allows,
halts or counts never belongs here: it gets a test that kills it.
"""

from __future__ import annotations

from typing import NamedTuple


class Equivalent(NamedTuple):
    """A survivor that changes no brake's answer: `module` (repo path), `function` ("name" or
    "Class.name"), `mutated` (the mutant's line, without a trailing comment), `why` (one line)."""

    module: str
    function: str
    mutated: str
    why: str
    original: str = ""  # the line mutated, where `mutated` alone is not unique in the function
    near: str = ""  # text of the diff around it (the line above and "\n-"), where that is not unique either


_CHAIN = "src/automaton/core/chain.py"
_LOOPCONFIG = "src/automaton/core/loopconfig.py"
_GIVEN = "a given max_tick_usd is read from loop.json whatever default the cap computed"
_FALLBACK = ("an invalid brake's stand-in value never leaves parse_config: its line is kept in the problems,"
             " and raise_any raises before a LoopConfig is made")
_LOOPLOG = "src/automaton/store/looplog.py"
_NO_NAME = "an errno with no name, or none, has no entry in _REPLACE_WHY whatever key stands for it"
_JUST_WRITTEN = "the temp file was written just above, under the state lock: it is there to remove"
_FOLD_MEMO = "_FOLDS only saves work: a fold is reused only for the very line objects it found clean"
_FULL = "the loop runs only while _FOLDS holds more than _FOLDS_SIZE entries: its first key is always there"
_FINITE = "every number folded passed _number's finiteness check (or a keyed checkpoint's, written alike)"
_CKPT = ("a checkpoint only saves work: it is kept only for lines found clean, and a keyed line carries"
         " all five counters or none (store.loops._fields), so a full walk finds the same")
_LEDGER = "src/automaton/runner/ledger.py"
_MOVED = "raised only when the iteration moved under the tick lock, which the lock rules out"
_POLICY = "src/automaton/hooks/policy.py"
_CAN_EDIT = "src/automaton/commands/can_edit.py"
_MEMO = "a per-call cache: another key or no shared cache recomputes the same value"
_ABS = "the path is already real and absolute: the cwd only anchors a relative path"
_UNREACHABLE = "unreachable: worktree_of found the path inside this worktree"
_CHAINLOG = "src/automaton/store/chainlog.py"
_PREFIX = ("a checkpoint is taken only where its keyed digest matches the text's prefix byte for byte: the"
           " same verdict as a full check")
_AFTER = "verify_text reads only the lines and the last hash of `after`, never its ok"
_LOG_MEMO = "_MEMO only saves work: it is reused only for a text that starts with the very text it verified"
_EVICT = "the loop runs only while _MEMO holds more than _MEMO_SIZE entries: its first key is always there"
_COUNTS_ONE = "an anchor counts at least one line: chain.anchor is -1 or at least 1"
_OF = "Lines.of drops the prefix on the next line (`out._prefix = None`): none is ever read"
_SAME_LEN = "both sides are cut to the same length first: strict never has anything to refuse"
_ONE_KEYED = "reached only when the last line is keyed: the search stops at a keyed line before its end"
_REREAD = "re-reads the log the caller just read under the same lock: the same lines"
_NOT_HIDDEN = "only a reader with the key reaches here, and it never takes keyed lines unverified"
_KEYED_ON = ("an ok log held against its anchor carries the anchor's mac on the anchored line: every line after"
             " it is keyed, and a log ahead of its anchor has its last but one there or after it")

EQUIVALENT: tuple[Equivalent, ...] = (
    Equivalent("src/automaton/core/gates.py", "gate_budget", "reserve_micro: int = 1) -> GateResult | None:",
               "micro-USD are integers: left < 1 is left <= 0, which halts already"),
    Equivalent(_CHAIN, "Lines.of", "out = cls(None, [], mark)", _OF),
    Equivalent(_CHAIN, "Lines.of", "out = cls(_Prefix(\"\", 0), None, mark)", _OF),
    Equivalent(_CHAIN, "Lines.of", "out = cls(_Prefix(None, 0), [], mark)", _OF),
    Equivalent(_CHAIN, "Lines.of", "out = cls(_Prefix(\"XXXX\", 0), [], mark)", _OF),
    Equivalent(_CHAIN, "Lines.of", "out = cls(_Prefix(\"\", 1), [], mark)", _OF),
    Equivalent(_CHAIN, "Lines._load", "self._tail = None", "once loaded (_prefix None) no method reads _tail again"),
    Equivalent(_CHAIN, "Lines.shares_start",
               "return all(a is b for a, b in zip(self._tail, other._tail[:len(self._tail)], strict=None))", _SAME_LEN),
    Equivalent(_CHAIN, "Lines.shares_start",
               "return len(self) <= len(other) and all(a is b for a, b in zip(self, other[:len(self)], strict=None))",
               _SAME_LEN),
    Equivalent(_CHAIN, "Lines.shares_start",
               "return all(a is b for a, b in zip(self._tail, other._tail[:len(self._tail)], ))", _SAME_LEN),
    Equivalent(_CHAIN, "Lines.shares_start",
               "return len(self) <= len(other) and all(a is b for a, b in zip(self, other[:len(self)], ))",
               _SAME_LEN),
    Equivalent(_CHAIN, "Lines.shares_start",
               "return all(a is b for a, b in zip(self._tail, other._tail[:len(self._tail)], strict=False))",
               _SAME_LEN),
    Equivalent(_CHAIN, "Lines.shares_start",
               "return len(self) <= len(other) and all(a is b for a, b in zip(self, other[:len(self)], strict=False))",
               _SAME_LEN),
    Equivalent(_POLICY, "check_one", "*, temp: bool = False,", "its one caller, check, always passes temp"),
    Equivalent(_POLICY, "check_one", "found = judge(path, memo.root(project), None)", _MEMO),
    Equivalent(_POLICY, "check_one", "found = judge(path, memo.root(project), )", _MEMO),
    Equivalent(_CHAINLOG, "read_chain", "check = _verified(log_path, text, key, not hidden, None)", _PREFIX),
    Equivalent(_CHAINLOG, "_from_checkpoint",
               "if start is None or found.count < start.count and (found.count == start.count and"
               " found.mac != start.head):", _PREFIX),
    Equivalent(_CHAINLOG, "_from_checkpoint",
               'if (len(prefix) != start.chars and not prefix.endswith(f" mac={start.head}\\n")', _PREFIX),
    Equivalent(_CHAINLOG, "_from_checkpoint",
               "return verify_text(text[start.chars:], key, after=ChainCheck(None, Lines.from_prefix(prefix,"
               " start.count, start)))", _AFTER),
    Equivalent(_CHAINLOG, "_from_checkpoint",
               "return verify_text(text[start.chars:], key, after=ChainCheck(False, Lines.from_prefix(prefix,"
               " start.count, start)))", _AFTER),
    Equivalent(_CHAINLOG, "_verified", "where = None", _LOG_MEMO),
    Equivalent(_CHAINLOG, "_verified", "while len(_MEMO) >= _MEMO_SIZE:", _LOG_MEMO),
    Equivalent(_CHAINLOG, "_verified", "_MEMO.pop(next(iter(_MEMO), where), )", _EVICT),
    Equivalent(_CHAINLOG, "_verified", "_MEMO.pop(next(iter(_MEMO), None), None)", _EVICT),
    Equivalent(_CHAINLOG, "_verified", "_MEMO.pop(next(iter(_MEMO), ), None)", _EVICT),
    Equivalent(_CHAINLOG, "append_event", "keys.mark_keyed(log_path, anchored=chain.ok and chain.anchor <= 0)",
               _COUNTS_ONE),
    Equivalent(_CHAINLOG, "append_event", "keys.mark_keyed(log_path, anchored=chain.ok and chain.anchor < 1)",
               _COUNTS_ONE),
    Equivalent(_CHAIN, "_resumed",
               'first_keyed = next((n for n in range(1, len(lines) + '
               '1) if lines[n - 1].mac), None) if lines and lines[-1].mac else 0',
               _ONE_KEYED),
    Equivalent(_CHAIN, "_resumed",
               'first_keyed = next((n for n in range(1, len(lines) + '
               '1) if lines[n - 1].mac), ) if lines and lines[-1].mac else 0',
               _ONE_KEYED),
    Equivalent(_CHAIN, "_resumed",
               'first_keyed = next((n for n in range(1, len(lines) + '
               '1) if lines[n - 1].mac), 1) if lines and lines[-1].mac else 0',
               _ONE_KEYED),
    Equivalent(_CHAIN, "_resumed",
               'first_keyed = next((n for n in range(1, len(lines) + '
               '2) if lines[n - 1].mac), 0) if lines and lines[-1].mac else 0',
               _ONE_KEYED),
    Equivalent(_CHAIN, "_resumed",
               'first_keyed = next((n for n in range(1, len(lines) + '
               '1) if lines[n - 1].mac), 0) if (lines and lines[-1].mac) or True else 0',
               "an ok check holds no unkeyed line after a keyed one: the last unkeyed, none is, and 0 is the default"),
    Equivalent("src/automaton/core/digest.py", "hmac_sha256", 'return hmac.digest(key, message, "SHA256").hex()',
               "OpenSSL's digest names are case-insensitive: the same HMAC-SHA256"),
    Equivalent(_CHAINLOG, '_read_text',
               'return read_all(log_path).decode("UTF-8")', "codec names are case-insensitive"),
    Equivalent(_CHAINLOG, '_key_for',
               'return keys.load_key(create=None), False', "None and False both mean: never create the key"),
    Equivalent(_CHAINLOG, 'read_chain',
               'found = None if (hidden) and F'
               'alse else _anchor_of(log_path)',
               "the anchor is used only where the key is not hidden"),
    Equivalent(_CHAINLOG, 'append_event',
               'chain = chain if (chain is not None) and False else read_chain(log_path)', _REREAD),
    Equivalent(_CHAINLOG, 'commit',
               'append_event(log_path, event, fields, token, None)', _REREAD),
    Equivalent(_CHAINLOG, 'commit',
               'append_event(log_path, event, fields, token, )', _REREAD),
    Equivalent(_CHAINLOG, '_anchored',
               'return ChainCheck(True, check.lines, anchor=found.count)', _NOT_HIDDEN),
    Equivalent(_CHAINLOG, '_rolled',
               'return ChainCheck(False, check.lines, why, rolled_back=True, anchor=count)', _NOT_HIDDEN),
    Equivalent(_CHAINLOG, '_rolled',
               'return ChainCheck(False, check.lines, why, un'
               'verified=None, rolled_back=True, anchor=count)',
               _NOT_HIDDEN),
    Equivalent(_CHAINLOG, 'adopt',
               'if not chain.ok or chain.unverified or chain.anchor > 0 or not chain.lines'
               ' or not chain.lines[-1].mac:',
               "an anchor counts at least one line"),
    Equivalent(_CHAINLOG, 'adopt',
               'if not chain.ok or chain.unverified or chain.anchor >= 1 or not chain.lines'
               ' or not chain.lines[-1].mac:',
               "an anchor counts at least one line"),
    Equivalent(_CHAINLOG, 'adopt',
               'if not chain.ok or chain.unverified or chain.anchor >= 0 and not chain.lines'
               ' or not chain.lines[-1].mac:',
               "an anchored log is refused again below: the anchor on disk is read"),
    Equivalent(_CHAINLOG, 'recover',
               'tmp_token = ""', "no state token is empty: an unreadable temp file is never published either way"),
    Equivalent(_CHAINLOG, 'recover',
               'current = ""', "no state token is empty: an unreadable state differs from the logged token either way"),
    Equivalent(_CHAINLOG, 'recover',
               'tmp.unlink(missing_ok=None)', "the temp file was seen to exist, under the lock"),
    Equivalent(_CHAINLOG, 'recover',
               'tmp.unlink(missing_ok=False)', "the temp file was seen to exist, under the lock"),
    Equivalent(_CHAINLOG, 'settle_anchor',
               'if found is None or read_all(log_'
               'path).count(b"\\n") < found.count:',
               "a log at its anchor's count is not ahead: the chain check below writes nothing"),
    Equivalent(_CHAINLOG, 'settle_anchor',
               'if chain.ok and not chain.unverified and len(chain.lines) >= found.count and chain.lines[-1].mac:',
               "at the anchor's count it writes the anchor it read: the same count and tail"),
    Equivalent(_CAN_EDIT, '_task_scope',
               'return _TaskScope(None, rec.phase, task_par'
               'ts, scope_overrides(project).get(rec.phase),',
               "None and \"\" are both no denial"),
    Equivalent(_CAN_EDIT, 'decide',
               'ref = memo.get(None, lambda: which_task(project, task))', "one task per call: " + _MEMO),
    Equivalent(_CAN_EDIT, 'decide',
               'ref = memo.get(("XXtaskXX", task), lambda: which_task(project, task))', _MEMO),
    Equivalent(_CAN_EDIT, 'decide',
               'ref = memo.get(("TASK", task), lambda: which_task(project, task))', _MEMO),
    Equivalent(_CAN_EDIT, 'phase_scope',
               'scope = memo.get(("XXscopeXX", ref), lambda: _task_scope(project, ref, root))', _MEMO),
    Equivalent(_CAN_EDIT, 'phase_scope',
               'scope = memo.get(("SCOPE", ref), lambda: _task_scope(project, ref, root))', _MEMO),
    Equivalent(_CAN_EDIT, 'phase_scope',
               'project: Project, ref: TaskRef, parts: tuple[str, '
               '...], path: str = "XXXX", memo: Memo | None = None,',
               "every caller that reads the decision's path passes one"),
    Equivalent(_CAN_EDIT, 'task_scope_allows',
               'return s.upper() if fold else s', "both sides of each comparison are folded alike"),
    Equivalent(_CAN_EDIT, 'Memo.root',
               'return self.get(None, lambda: real(project.root, project.root))', "one project per call: " + _MEMO),
    Equivalent(_CAN_EDIT, 'Memo.root',
               'return self.get(("XXrootXX", project.root), lambda: real(project.root, project.root))', _MEMO),
    Equivalent(_CAN_EDIT, 'Memo.root',
               'return self.get(("ROOT", project.root), lambda: real(project.root, project.root))', _MEMO),
    Equivalent(_POLICY, '_in_worktree',
               'return Verdict(False, )', _UNREACHABLE),
    Equivalent(_POLICY, '_in_worktree',
               'return Verdict(True, f"{path} is outside the worktree of loop {tree.name!r}")', _UNREACHABLE),
    Equivalent(_POLICY, '_in_worktree',
               'return Verdict(None, f"{path} is outside the worktree of loop {tree.name!r}")', _UNREACHABLE),
    Equivalent(_POLICY, '_in_worktree',
               'return Verdict(False, None)', _UNREACHABLE),
    Equivalent(_POLICY, '_in_worktree',
               'return Verdict(f"{path} is outside the worktree of loop {tree.name!r}")', _UNREACHABLE),
    Equivalent(_POLICY, '_in_worktree',
               'facts = memo.get(("XXloopXX", tree.name), lambda: loop_facts(project, tree.name))', _MEMO),
    Equivalent(_POLICY, '_in_worktree',
               'facts = memo.get(("LOOP", tree.name), lambda: loop_facts(project, tree.name))', _MEMO),
    Equivalent(_POLICY, '_in_worktree',
               'verdict = _phase_scope(project, ref, parts, None)', _MEMO),
    Equivalent(_POLICY, '_in_worktree',
               'task=str(refs[0]) if refs else None, cwd=None, facts=facts)', _ABS),
    Equivalent(_POLICY, '_in_worktree',
               'task=str(refs[0]) if refs else None, facts=facts)', _ABS),
    Equivalent(_POLICY, '_phase_scope',
               'decision = can_edit.phase_scope(project, ref, parts, memo=None)', _MEMO),
    Equivalent(_POLICY, '_phase_scope',
               'decision = can_edit.phase_scope(project, ref, parts, )', _MEMO),
    Equivalent(_POLICY, '_worktree',
               'return memo.get(("XXworktreeXX", name), lambda: Worktree(n'
               'ame, real(project.worktree_dir(name), memo.root(project))))',
               _MEMO),
    Equivalent(_POLICY, '_worktree',
               'return memo.get(("WORKTREE", name), lambda: Worktree(nam'
               'e, real(project.worktree_dir(name), memo.root(project))))',
               _MEMO),
    Equivalent(_POLICY, 'check',
               'else worktree_of(project, real(cwd, project.root), None))', _MEMO),
    Equivalent(_POLICY, 'check',
               'else worktree_of(project, real(cwd, project.root), ))', _MEMO),
    Equivalent(_POLICY, 'check_one',
               'tree = worktree_of(project, path, None)', _MEMO),
    Equivalent(_POLICY, 'check_one',
               'tree = worktree_of(project, path, )', _MEMO),
    Equivalent(_POLICY, 'check_one',
               'decision = can_edit.decide(project, str(path), cwd=None, memo=memo)', _ABS),
    Equivalent(_POLICY, 'check_one',
               'decision = can_edit.decide(project, str(path), memo=memo)', _ABS),
    Equivalent(_POLICY, 'check_one',
               'return _in_worktree(project, None, path, tree, memo)', _ABS),
    Equivalent(_POLICY, 'wrapped_reason',
               'verdict = check(project, cwd, [os.path.join(root, p) for p in INLINE_PROBES], None)', _MEMO),
    Equivalent(_POLICY, 'wrapped_reason',
               'verdict = check(project, cwd, [os.path.join(root, p) for p in INLINE_PROBES], )', _MEMO),
    Equivalent(_LEDGER, "reserve", "raise RuntimeError(None)", _MOVED),
    Equivalent(_LOOPLOG, "_fold", "floor = high if n == start + 1 or _is_reseal(line) else prev",
               "no re-seal is folded after lines[start], the last one; with none, high and prev are both empty"
               " on line 1"),
    Equivalent(_LOOPLOG, "_fold", "break",
               "the approval marks are the last keys checked: stopping at the first skipped one skips only the other",
               original="continue", near="(line.event in MARK_EVENTS or _is_reseal(line)):\n-"),
    Equivalent(_LOOPLOG, "log_finding", "while len(_FOLDS) >= _FOLDS_SIZE:", _FOLD_MEMO),
    Equivalent(_LOOPLOG, "log_finding", "_FOLDS.pop(next(iter(_FOLDS), memo_key), )", _FULL),
    Equivalent(_LOOPLOG, "log_finding", "_FOLDS.pop(next(iter(_FOLDS), None), None)", _FULL),
    Equivalent(_LOOPLOG, "log_finding", "_FOLDS.pop(next(iter(_FOLDS), ), None)", _FULL),
    Equivalent(_LOOPLOG, "log_finding",
               'save_checkpoint(lines, json.dumps([start, prev, reserved], separators=(",", ":"), allow_nan=None))',
               _FINITE),
    Equivalent(_LOOPLOG, "log_finding",
               'save_checkpoint(lines, json.dumps([start, prev, reserved], separators=(",", ":"), ))', _FINITE),
    Equivalent(_LOOPLOG, "log_finding",
               'save_checkpoint(lines, json.dumps([start, prev, reserved], separators=(",", ":"), allow_nan=True))',
               _FINITE),
    Equivalent(_LOOPLOG, "_restored",
               "if start_mark is None or not start_mark.fold or start_mark.count >= len(lines):", _CKPT),
    Equivalent(_LOOPLOG, "_restored",
               "if start_mark is None or not start_mark.fold and start_mark.count > len(lines):",
               "read_chain attaches a checkpoint only as the verified prefix of the lines it read: never longer"),
    Equivalent(_LOOPLOG, "_restored", "if any(_is_reseal(lines[i]) for i in range(len(lines))):", _CKPT),
    Equivalent(_LOOPLOG, "_restored", "if any(_is_reseal(lines[i]) for i in range(start_mark.count, )):", _CKPT),
    Equivalent(_LOOPLOG, "state_below_log", "restored = None", _CKPT),
    Equivalent(_LOOPLOG, "state_below_log", "restored = _restored(None)", _CKPT),
    Equivalent(_LOOPLOG, "state_below_log", "stop = restored[0] if (restored is not None) and False else 0", _CKPT),
    Equivalent(_LOOPLOG, "state_below_log", "stop = restored[1] if restored is not None else 0", _CKPT),
    Equivalent(_LOOPCONFIG, "_brakes",
               "if budget is not None and not b.has(None) and isinstance(default_tick, int | float):", _GIVEN),
    Equivalent(_LOOPCONFIG, "_brakes",
               'if budget is not None and not b.has("XXmax_tick_usdXX") and isinstance(default_tick, int | float):',
               _GIVEN),
    Equivalent(_LOOPCONFIG, "_brakes",
               'if budget is not None and not b.has("MAX_TICK_USD") and isinstance(default_tick, int | float):',
               _GIVEN),
    Equivalent(_LOOPCONFIG, "_brakes", 'maximum=MAX_PLATEAU_WINDOW), None),', _FALLBACK),
    Equivalent(_LOOPCONFIG, "_brakes", 'maximum=MAX_PLATEAU_WINDOW), 2),', _FALLBACK),
    Equivalent(_LOOPCONFIG, "_brakes",
               'plateau_epsilon=p.field(lambda: b.number("plateau_epsilon",'
               ' d["plateau_epsilon"], low=0), None),', _FALLBACK),
    Equivalent(_LOOPCONFIG, "_brakes",
               'plateau_epsilon=p.field(lambda: b.number("plateau_epsilon",'
               ' d["plateau_epsilon"], low=0), 1.0),', _FALLBACK),
    Equivalent(_LOOPCONFIG, "_brakes",
               'target_score=p.field(lambda: b.number("target_score",'
               ' d["target_score"], low=0, high=1), None),', _FALLBACK),
    Equivalent(_LOOPCONFIG, "_brakes",
               'target_score=p.field(lambda: b.number("target_score",'
               ' d["target_score"], low=0, high=1), 2.0),', _FALLBACK),
    Equivalent(_LOOPCONFIG, "_brakes", 'minimum=1, maximum=MAX_UNSCORED), None),', _FALLBACK),
    Equivalent(_LOOPCONFIG, "_brakes", 'minimum=1, maximum=MAX_UNSCORED), 2),', _FALLBACK),
    Equivalent(_LOOPCONFIG, "_brakes", 'maximum=MAX_ITERATIONS), None),', _FALLBACK),
    Equivalent(_LOOPCONFIG, "_brakes", 'maximum=MAX_ITERATIONS), 2),', _FALLBACK),
    Equivalent(_LOOPCONFIG, "_brakes", 'max_tick_usd=1.0 if (tick is None) and False else tick,', _FALLBACK),
    Equivalent(_LOOPCONFIG, "_brakes", 'max_tick_usd=2.0 if tick is None else tick,', _FALLBACK),
    Equivalent(_CHAINLOG, "_unreplaceable",
               'why = why or _REPLACE_WHY.get(errno.errorcode.get(exc.errno or -2, ""))', _NO_NAME),
    Equivalent(_CHAINLOG, "_unreplaceable",
               'why = why or _REPLACE_WHY.get(errno.errorcode.get(exc.errno or -1, "XXXX"))', _NO_NAME),
    Equivalent(_CHAINLOG, "_unreplaceable",
               'why = why or _REPLACE_WHY.get(errno.errorcode.get(exc.errno or -1, None))', _NO_NAME),
    Equivalent(_CHAINLOG, "_unreplaceable",
               'why = why or _REPLACE_WHY.get(errno.errorcode.get(exc.errno or -1, ))', _NO_NAME),
    Equivalent(_CHAINLOG, "commit", "tmp.unlink(missing_ok=None)", _JUST_WRITTEN),
    Equivalent(_CHAINLOG, "commit", "tmp.unlink(missing_ok=False)", _JUST_WRITTEN),
    Equivalent(_CHAIN, "line_hash", 'return sha256_hex(line.encode("UTF-8"))', "codec names are case-insensitive"),
    Equivalent(_CHAIN, "line_mac", 'return hmac_sha256(key, body.encode("UTF-8"))', "codec names are case-insensitive"),
    Equivalent(_CHAIN, "parse_line", "found = _MAC.search(raw, max(len(raw) - _MAC_LEN, 1))",
               "a mac found at 0 leaves no timestamp or event: the line is refused either way"),
    Equivalent(_CHAIN, "parse_line", "found = _MAC.search(raw, )",
               "the pattern ends in \\Z and has a fixed length: it can only match at len - _MAC_LEN"),
    Equivalent(_CHAIN, "verify_text", 'rows = text.split("\\n")[:-1] if (text) or True else []',
               'the empty text splits to no rows either way'),
    Equivalent(_CHAIN, "Lines.__getitem__", "if not 0 <= i <= len(self):",
               "index len(self) reads the tail one past its end: list's own IndexError, with the same message"),
    Equivalent(_CHAINLOG, "_mark_trusted",
               "start = check.lines.mark if (isinstance(check.lines.mark, checkpoint.Checkpoint)) or True else None",
               "the mark of the lines _verified hands out is a Checkpoint or None: only this copy gets a Verified"),
    Equivalent(_CHAINLOG, "adopt",
               "anchor.write(log_path, len(chain.lines), [x.raw for x in chain.lines[-anchor.TAIL:]], replace=None)",
               "anchor.write tests replace for truth: None links the anchor, as False does"),
    Equivalent(_CHAINLOG, "recover", "current = None",
               "it publishes only a temp file at the log's last state: a state file already there holds the same"
               " token (loops and config: the SHA-256 of the bytes; a task: its one phase line)"),
    Equivalent(_CHAINLOG, "settle_anchor",
               "if chain.ok and not chain.unverified and len(chain.lines) > found.count and chain.lines[-2].mac:",
               _KEYED_ON),
)
