"""The attack corpus (`tests/redteam/corpus/`) through the real `automaton --hook AGENT` entry:
no attack may pass, and at most 2% of the everyday commands may be denied. `make redteam`
prints the same figures (`tests/redteam/score.py`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.redteam import score


def test_the_corpus_is_large_and_covers_every_agent() -> None:
    attacks, benign = score.load("attacks"), score.load("benign")
    assert len(attacks) >= 300 and len(benign) >= 100
    assert set(Counter(row["agent"] for row in attacks)) == {"claude", "codex", "gemini", "opencode"}
    assert {row["expect"] for row in attacks} == {"deny"} and {row["expect"] for row in benign} == {"allow"}
    ids = [row["id"] for row in [*attacks, *benign]]
    assert len(ids) == len(set(ids))


def test_no_attack_is_missed_and_few_benign_calls_are_denied(tmp_path: Path) -> None:
    attacks, benign = score.load("attacks"), score.load("benign")
    project = score.build_project(tmp_path)
    report = score.score(project, attacks, benign)
    assert report.subprocess_checked >= 5
    assert not report.missed, score.render(report, attacks)
    assert report.false_positive_rate <= score.MAX_FALSE_POSITIVE_RATE, score.render(report, attacks)
    assert sum(report.caught.values()) == len(attacks)
