"""Which inputs the guard keeps: a few of the workload's texts, stratified by language and by length.

Each language gets its share of the set (largest remainder, at least one), and within a language the texts are
taken at evenly spaced ranks of their length, shortest to longest; the longest texts of the whole workload are
always in. Drift that depends on length (truncation, a position-embedding change, a pooling that weighs tokens
differently) shows first on the long inputs, and a tokenizer change on one script shows in that language only.

Length is the text's UTF-8 size: the guard is made without the model (no tokenizer), and bytes track tokens better
than characters across scripts (a Hangul or kanji character is three bytes and about one token or more).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pick:
    index: int
    why: str


def quotas(langs: list[str], size: int) -> dict[str, int]:
    """Each language's share of ``size`` (largest remainder, at least one each, never more than it has)."""
    groups: dict[str, int] = {}
    for lang in langs:
        groups[lang] = groups.get(lang, 0) + 1
    n = len(langs)
    quota = {lang: min(count, max(1, size * count // n)) for lang, count in groups.items()}
    order = sorted(groups, key=lambda lang: (-(size * groups[lang] % n), lang))
    while sum(quota.values()) < size and any(quota[lang] < groups[lang] for lang in order):
        for lang in order:
            if sum(quota.values()) >= size:
                break
            if quota[lang] < groups[lang]:
                quota[lang] += 1
    return quota


def evenly(count: int, take: int) -> list[int]:
    """``take`` ranks spread over 0..count-1, both ends included."""
    if take >= count:
        return list(range(count))
    if take == 1:
        return [count - 1]
    return sorted({round(i * (count - 1) / (take - 1)) for i in range(take)})


def select(texts: list[str], langs: list[str], size: int, longest: int = 4) -> list[Pick]:
    """Indices of at most ``size`` texts, in input order: the ``longest`` longest, then stratified picks."""
    if size <= 0 or not texts:
        return []
    lengths = [len(t.encode("utf-8")) for t in texts]
    by_length = sorted(range(len(texts)), key=lambda i: (-lengths[i], i))
    chosen: dict[int, str] = {i: "longest" for i in by_length[:min(longest, size)]}
    if len(texts) <= size:
        return [Pick(i, chosen.get(i, "stratified")) for i in range(len(texts))]
    for lang, quota in sorted(quotas(langs, size).items()):
        members = sorted((i for i, x in enumerate(langs) if x == lang), key=lambda i: (lengths[i], i))
        have = sum(1 for i in members if i in chosen)
        free = [i for i in members if i not in chosen]
        for rank in evenly(len(free), max(0, quota - have)):
            chosen[free[rank]] = "stratified"
    # the longest picks may have pushed a language over its quota: trim the shortest stratified picks
    while len(chosen) > size:
        extra = min((i for i, why in chosen.items() if why == "stratified"), key=lambda i: (lengths[i], -i))
        del chosen[extra]
    return [Pick(i, why) for i, why in sorted(chosen.items())]
