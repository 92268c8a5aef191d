"""The margins are validated once: ``decide()`` takes the experiment's typed ``DecisionsConfig`` (or validates the
block a summary carries, in ``embedswap.analysis.decisions_config``) and passes it down; no other module of the kit
validates a ``decisions`` block again or writes a margin's default a second time."""

from __future__ import annotations

import re
from pathlib import Path

import embedswap
from embedswap.config.decisions import Margins

LIB = Path(embedswap.__file__).parent
ONE_PLACE = {Path("analysis/__init__.py"), Path("config/decisions.py")}
# validating the block again, reading a margin from a dict, or a margin's name beside a number (a default)
AGAIN = [re.compile(r"DecisionsConfig\.model_validate|Margins\.model_validate"),
         re.compile(r"""get\(\s*["']margins["']|config\.get\(\s*["']decisions["']"""),
         re.compile(r"""["'](?:%s)["']\s*,\s*\d""" % "|".join(Margins.model_fields))]


def test_no_module_validates_or_defaults_a_margin_again() -> None:
    found = []
    for path in sorted(LIB.rglob("*.py")):
        if path.relative_to(LIB) in ONE_PLACE:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if any(p.search(line) for p in AGAIN):
                found.append(f"{path.relative_to(LIB)}:{number}: {line.strip()}")
    assert found == []


def test_the_check_finds_what_it_looks_for() -> None:
    assert any(p.search('margin = float((config.get("margins") or {}).get("throughput_ratio", 1.10))') for p in AGAIN)
    assert any(p.search("DecisionsConfig.model_validate(configured)") for p in AGAIN)
    assert any(p.search('configured = summary.experiment.config.get("decisions")') for p in AGAIN)
    assert not any(p.search('decided = (summary.get("decisions") or {}).get("capacity")') for p in AGAIN)
