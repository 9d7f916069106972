"""One formatting rule for scores (core.scores): cut to at most 4 decimals, never rounded,
in every output that shows one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from automaton.core.scores import score_field, score_text

SRC = Path(__file__).resolve().parents[2] / "src" / "automaton"


@pytest.mark.parametrize(("score", "field", "text"), [
    (0.97949, "0.9794", "0.9794"), (0.99995, "0.9999", "0.9999"), (1.0, "1.0000", "1.00"),
    (0.5, "0.5000", "0.50"), (0.0, "0.0000", "0.00"), (None, "null", "unscored"),
])
def test_the_log_field_and_the_text_cut_alike(score: float | None, field: str, text: str) -> None:
    assert score_field(score) == field and score_text(score) == text


def test_the_prompts_tick_context_uses_the_rule(tmp_path: Path) -> None:
    from automaton.core.loopstate import Verdict
    from automaton.runner.prompts import TickContext, context_block

    ctx = TickContext(None, 2, 3, None, Verdict(0.97949, False, False, "s"), [], tmp_path)
    assert "score 0.9794: s" in context_block(ctx)


def _score_formats(tree: ast.AST) -> list[int]:
    """Lines with an f-string field giving a `…score…` name or attribute a numeric format spec."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            value = node.value
            name = value.attr if isinstance(value, ast.Attribute) else getattr(value, "id", "")
            spec = "".join(str(v.value) for v in ast.walk(node.format_spec) if isinstance(v, ast.Constant))
            numeric = "." in spec or spec[-1:] in ("f", "g", "e", "%")  # alignment alone is not a format
            if "score" in str(name) and "target" not in str(name) and numeric:
                found.append(node.lineno)
    return found


def test_no_output_formats_a_score_by_itself() -> None:
    bad = {str(p.relative_to(SRC)): lines for p in SRC.rglob("*.py")
           if (lines := _score_formats(ast.parse(p.read_text(encoding="utf-8"))))}
    assert bad == {}, "format scores with automaton.core.scores.score_text / score_field"
