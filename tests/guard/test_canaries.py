"""Which inputs a guard keeps: the longest always, each language its share, lengths spread within a language."""

from __future__ import annotations

from embedswap.guard.canaries import evenly, quotas, select


def test_quotas_give_each_language_its_share_and_at_least_one() -> None:
    langs = ["en"] * 30 + ["ko"] * 9 + ["ja"]
    assert quotas(langs, 10) == {"en": 7, "ko": 2, "ja": 1}
    assert sum(quotas(langs, 40).values()) == 40


def test_evenly_keeps_both_ends() -> None:
    assert evenly(10, 3) == [0, 4, 9] or evenly(10, 3) == [0, 5, 9]
    assert evenly(3, 5) == [0, 1, 2]
    assert evenly(7, 1) == [6]


def test_select_keeps_the_longest_and_spreads_lengths_per_language() -> None:
    texts = [("x" * (i + 1)) for i in range(20)] + [("가" * (i + 1)) for i in range(20)]
    langs = ["en"] * 20 + ["ko"] * 20
    picks = select(texts, langs, 8, longest=2)
    chosen = [p.index for p in picks]
    assert len(chosen) == 8 and chosen == sorted(chosen)
    assert {p.index for p in picks if p.why == "longest"} == {38, 39}  # Hangul: 3 bytes a character
    assert sum(1 for i in chosen if i < 20) == 4 and sum(1 for i in chosen if i >= 20) == 4
    assert 0 in chosen and 19 in chosen  # the shortest and the longest English text


def test_a_small_workload_is_kept_whole() -> None:
    assert [p.index for p in select(["a", "bb"], ["en", "en"], 64)] == [0, 1]
