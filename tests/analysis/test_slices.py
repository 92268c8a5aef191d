"""Language slices: each ranking and vector comparison per language, Holm-corrected across the languages; one worse
language makes the candidate not equivalent and is named (analysis/slices over analysis/equivalence)."""
from __future__ import annotations

from typed_summary import summary_body

from embedswap.analysis import decide
from embedswap.analysis import ranking_verdict as rv
from embedswap.summary.types_decisions import RankingDecision
from embedswap.analysis import decisions_config

N = 20  # queries per language



def _ranking(body):
    return rv.ranking_verdicts(body, decisions_config(body))

def _rows(deltas: dict[str, list[float]], overlap: dict[str, list[float]] | None = None) -> dict:
    rows = {}
    for lang, values in deltas.items():
        for i, d in enumerate(values):
            o = overlap[lang][i] if overlap else 1.0
            rows[f"{lang}{i}"] = {"lang": lang, "ndcg_at_10": 0.5 + d, "recall_at_5": 0.5 + d, "top5_overlap": o}
    return rows


def _summary(deltas: dict[str, list[float]], overlap: dict[str, list[float]] | None = None) -> dict:
    legacy = {"measured": True, "per_query": _rows({k: [0.0] * len(v) for k, v in deltas.items()})}
    variant = {"measured": True, "per_query": _rows(deltas, overlap)}
    return {"roles": {"legacy": "legacy", "candidates": ["vllm"]},
            "ranking": {"measured": True, "legacy": legacy,
                        "by_candidate": {"vllm": {"measured": True, "naive": variant, "shim": variant,
                                                  "deltas": {}}}}}


def test_one_worse_language_makes_the_candidate_not_equivalent_and_is_named() -> None:
    # ko unchanged on every query; en loses 0.2 nDCG@10 and recall@5 on every query (no noise: significant)
    out = _ranking(summary_body(_summary({"ko": [0.0] * N, "en": [-0.2] * N})))
    RankingDecision.model_validate(out)
    shim = out.by_candidate["vllm"].shim
    sliced = shim.slices["ndcg_at_10"]
    assert sliced.by_slice["ko"].code == "equivalent"
    assert sliced.by_slice["en"].code == "different" and sliced.by_slice["en"].direction == "worse"
    assert sliced.overall.code == "different" and sliced.overall.slices == ["en"]
    # the pooled mean (-0.1) would be "different" too; the point: the combined verdict names the language
    assert shim.metrics["ndcg_at_10"].slices == ["en"]
    assert shim.equivalence.code == "different"
    assert out.by_candidate["vllm"].decision == "reindex"


def test_a_worse_language_is_not_hidden_by_a_better_one() -> None:
    # pooled mean 0: en +0.1 on every query, ko -0.1: a pooled verdict alone would see no change on average
    out = _ranking(summary_body(_summary({"ko": [-0.1] * N, "en": [0.1] * N})))
    shim = out.by_candidate["vllm"].shim
    assert shim.slices["ndcg_at_10"].overall.code == "different"
    assert shim.slices["ndcg_at_10"].overall.direction == "worse"
    assert shim.slices["ndcg_at_10"].overall.slices == ["ko"]
    assert shim.unchanged is False


def test_a_noisy_difference_in_one_language_needs_to_survive_holm() -> None:
    # en: deltas with mean -0.05 and sd ~0.1 at n 20 (t ~ -2.2, p ~ 0.04 alone): Holm across two languages
    # doubles the smaller p (0.08 > 0.05), so en is not "different" but inconclusive
    noisy = [-0.05 + 0.1 * (1 if i % 2 else -1) for i in range(N)]
    noisy[0] -= 0.02
    noisy[1] += 0.02
    out = _ranking(summary_body(_summary({"ko": [0.0] * N, "en": noisy})))
    en = out.by_candidate["vllm"].shim.slices["ndcg_at_10"].by_slice["en"]
    assert en.code == "inconclusive" and en.reason == "not_significant_after_holm"


def test_document_cosine_per_language() -> None:
    per_document = ([{"doc_id": f"k{i}", "lang": "ko", "cosine": 0.99999} for i in range(N)]
                    + [{"doc_id": f"e{i}", "lang": "en", "cosine": 0.98 + 0.001 * (i % 3)} for i in range(N)])
    body = summary_body({"roles": {"legacy": "legacy", "candidates": ["vllm"]},
                         "vectors": {"measured": True, "by_target": {},
                                     "comparisons": {"vllm": {"measured": True, "per_document": per_document}}}})
    found = decide(body).vectors["vllm"]
    assert found.by_slice["ko"].code == "equivalent"
    assert found.by_slice["en"].code == "different" and found.by_slice["en"].direction == "worse"
    assert found.overall.code == "different" and found.worse() == ["en"]
