"""What a post may say about a direction: the direction words per language, the directions its stored verdicts
have, and the prose lines that state a direction no verdict has. Used by tests/report/test_post_claims.py on every
fixture and by the end-to-end test on the demo's own post."""

from __future__ import annotations

import re

from embedswap.summary.model import Summary

ANY = frozenset({"faster", "slower", "better", "worse"})
F, S, B, W = frozenset({"faster"}), frozenset({"slower"}), frozenset({"better"}), frozenset({"worse"})
# per language, a direction word and the verdict directions that may state it
WORDS: dict[str, dict[str, frozenset[str]]] = {
    "en": {"faster": F, "slower": S, "better": B, "worse": W, "went up": ANY, "went down": ANY, "drops": ANY,
           "dropped": ANY, "rose": ANY, "raised": ANY, "improved": F | B, "degraded": S | W},
    "ko": {"빠르": F, "빠름": F, "빨라": F, "느리": S, "느림": S, "느려": S, "좋아": B, "나빠": W, "떨어": ANY,
           "올라": ANY, "늘었": ANY, "줄었": ANY},
    "ja": {"速い": F, "速く": F, "遅い": S, "遅く": S, "良い": B, "良く": B, "悪い": W, "悪く": W, "下が": ANY,
           "上が": ANY, "落ち": ANY, "向上": F | B, "低下": S | W},
    "zh": {"更快": F, "更慢": S, "更好": B, "更差": W, "下降": ANY, "上升": ANY, "降低": ANY, "提高": ANY,
           "变好": B, "变差": W},
}

def stated_directions(summary: Summary) -> set[str]:
    """The directions the stored verdicts the post reads have (latency, pairs of candidates, ranking)."""
    d = summary.decisions
    out: set[str] = set()
    for ratio in [*d.latency.ratios.values(), *(p.ratio for p in d.latency.pairs)]:
        verdicts = [ratio.verdict] + [getattr(p, f) for p in ratio.verdicts.values() for f in ("p50", "docs_per_s")]
        out |= {v.direction for v in verdicts if v is not None and v.direction
                and v.code in ("different", "non_inferior")}
    for c in d.ranking.by_candidate.values():
        shown = [c.naive.equivalence, c.shim.equivalence, *c.naive.metrics.values(), *c.shim.metrics.values()]
        out |= {v.direction for v in shown if v is not None and v.direction
                and v.code in ("different", "non_inferior")}
    return out


def overclaims(post: str, lang: str, allowed: set[str]) -> list[str]:
    """Prose lines (tables are data) that state a direction no stored verdict has."""
    found = []
    for line in post.splitlines():
        if line.startswith("|"):
            continue
        for word, directions in WORDS[lang].items():
            if re.search(rf"\b{word}\b" if lang == "en" else re.escape(word), line) and not directions & allowed:
                found.append(f"{lang}: '{word}' without a verdict in {sorted(directions)}: {line[:160]}")
    return found
