"""The post's statements that read several stored decisions together (issue 63), decided before rendering and
stored in ``decisions.post``:

- ``article``: this run's latency verdicts against the article's own published ratios (same direction, reversed,
  no difference, inconclusive, not measured), with the host facts that may explain a difference;
- ``shim_trades``: where the address swap ranks otherwise than the legacy server and the shim restores the legacy
  ranking, what the shim trades (a better ranking given up, or a worse one fixed).

Candidates whose statements are equal share one (``subjects`` names all of them): the post then says it once."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from embedswap.analysis.article import load_article
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_decisions import LatencyDecisions, RankingDecision
from embedswap.summary.types_equivalence import Verdict
from embedswap.summary.types_post import ArticleComparison, ArticleFigure, ArticleRelation, Fact, ShimTrade
from embedswap.summary.types_post_document import Statement

# the article's published ratios (latency.published_ratios: candidate over legacy, median of 3 repeats, batches of
# 8 on one GPU) -> this run's stored verdict on the same figure, and whether a ratio above 1 is the faster side
ARTICLE_FIGURES: dict[str, tuple[str, str, bool]] = {"seq_p50": ("sequential", "p50", False),
                                                      "conc_docs_per_s": ("concurrent", "docs_per_s", True)}
S = TypeVar("S", ArticleComparison, ShimTrade)


@dataclass(frozen=True)
class Published:
    """What the comparison reads of the article's data: its published ratios and the GPU it measured on."""
    ratios: dict[str, float]
    gpu: str


def _published() -> Published:
    article = load_article()
    return Published(ratios={k: float(v) for k, v in article.latency.published_ratios.model_dump().items()},
                     gpu=article.environment.gpu)


def _relation(verdict: Verdict | None, article_direction: str) -> tuple[ArticleRelation, Literal["faster", "slower"] | None]:
    """How a stored verdict stands to the article's direction: only a verdict with a direction goes either way."""
    return relation_of(verdict.code if verdict is not None else None,
                       verdict.direction if verdict is not None else None, article_direction)


def relation_of(code: str | None, direction: str | None,
                article_direction: str) -> tuple[ArticleRelation, Literal["faster", "slower"] | None]:
    """A verdict's code and direction as the article comparison words them (what it prints, and what candidates
    sharing one sentence must agree on): equivalent and non-inferior without a direction read alike."""
    if code is None or code in ("failed", "not_measured"):
        return "not_measured", None
    moved = direction if code in ("different", "non_inferior") else None
    if moved == "faster" or moved == "slower":
        return ("same_direction" if moved == article_direction else "reversed"), moved
    if code == "inconclusive":
        return "inconclusive", None
    return "no_difference", None  # equivalent, or non-inferior without a direction: not the article's difference


def _why(summary: SummaryBody) -> tuple[Literal["cpu_only", "other_gpu"] | None, list[Fact]]:
    """The host facts that may explain a difference from the article's figures (measured on one laptop GPU)."""
    env = summary.environment
    if env is None:
        return None, []
    article = Fact(key="article_hardware", value=_published().gpu, source="article:environment.gpu")
    if not env.gpu:
        return "cpu_only", [Fact(key="host_gpu", value=None, source="environment.gpu"),
                            Fact(key="host_cores", value=env.cpu_count, source="environment.cpu_count"), article]
    return "other_gpu", [Fact(key="host_gpu", value=str(env.gpu), source="environment.gpu"), article]


def _merge(statements: Sequence[S], key: Callable[[S], Any]) -> list[S]:
    """Statements whose ``key`` is equal said once, their subjects joined (no twin sentences)."""
    out: list[S] = []
    for s in statements:
        same = next((o for o in out if key(o) == key(s)), None)
        if same is None:
            out.append(s.model_copy(deep=True))
        else:
            same.subjects = [*same.subjects, *s.subjects]
    return out


def article_comparisons(summary: SummaryBody, latency: LatencyDecisions, names: list[str],
                        corrupt: set[str]) -> list[ArticleComparison]:
    """``names``: the candidates that run the article's engine; ``corrupt``: the servers ``decisions.faults`` found
    corrupting. None stated when every figure is unmeasured or the legacy server's answers were corrupt (no latency
    comparison stands then)."""
    legacy = summary.roles.legacy
    if legacy in corrupt:
        return []
    ratios = _published().ratios
    why, facts = _why(summary)
    out = []
    for name in names:
        ratio = latency.ratios.get(name)
        if name in corrupt or ratio is None:
            continue
        figures = []
        for figure, (run, key, higher_faster) in ARTICLE_FIGURES.items():
            value = ratios[figure]
            article_direction = "faster" if (value > 1) == higher_faster else "slower"
            verdicts = ratio.verdicts_at(run)
            relation, direction = _relation(getattr(verdicts, key) if verdicts else None, article_direction)
            figures.append(ArticleFigure(
                figure=figure,  # type: ignore[arg-type]
                article=Fact(key=figure, value=value, source=f"article:latency.published_ratios.{figure}"),
                relation=relation, direction=direction,
                verdicts=[f"decisions.latency.ratios.{name}.verdicts.{run}.{key}"]))
        if all(f.relation == "not_measured" for f in figures):
            continue
        differs = any(f.relation in ("reversed", "no_difference", "inconclusive") for f in figures)
        out.append(ArticleComparison(subjects=[name], figures=figures, why=why if differs else None,
                                     facts=facts if differs else []))
    merged = _merge(out, lambda c: ([(f.figure, f.relation, f.direction) for f in c.figures], c.why))
    for c in merged:  # each figure cites every subject's verdict
        for f in c.figures:
            f.verdicts = [f"decisions.latency.ratios.{n}.verdicts.{'.'.join(ARTICLE_FIGURES[f.figure][:2])}"
                          for n in c.subjects]
    return merged


def shim_trades(summary: SummaryBody, ranking: RankingDecision | None) -> list[ShimTrade]:
    """Per candidate serving the same model, on the judgements (nDCG@10): the address swap's verdict has a
    direction and the shim's is ``equivalent`` (it restores the legacy ranking); the figures from summary.ranking."""
    section = summary.ranking
    if ranking is None or section is None or not section.measured or section.legacy is None:
        return []
    legacy_ndcg = section.legacy.ndcg_at_10
    out = []
    for name, decided in ranking.by_candidate.items():
        runs = section.by_candidate.get(name)
        if summary.plan.another_model(name) or runs is None or legacy_ndcg is None:
            continue
        naive, shim = decided.naive.metrics.get("ndcg_at_10"), decided.shim.metrics.get("ndcg_at_10")
        if naive is None or shim is None or shim.code != "equivalent" or naive.code not in ("different", "non_inferior"):
            continue
        if naive.direction not in ("better", "worse"):
            continue
        own, restored = runs.naive.ndcg_at_10 if runs.naive else None, runs.shim.ndcg_at_10 if runs.shim else None
        if own is None or restored is None:
            continue
        path = f"decisions.ranking.by_candidate.{name}"
        out.append(ShimTrade(
            subjects=[name], code="gives_up_better" if naive.direction == "better" else "fixes_worse",
            direction=naive.direction,  # type: ignore[arg-type]
            legacy=Fact(key="ndcg_at_10", value=legacy_ndcg, source="ranking.legacy.ndcg_at_10"),
            candidate=Fact(key="ndcg_at_10", value=own, source=f"ranking.by_candidate.{name}.naive.ndcg_at_10"),
            shim=Fact(key="ndcg_at_10", value=restored, source=f"ranking.by_candidate.{name}.shim.ndcg_at_10"),
            verdicts=[f"{path}.naive.metrics.ndcg_at_10", f"{path}.shim.metrics.ndcg_at_10"]))
    # equal when the printed figures are (3 decimals, the ranking's precision)
    return _merge(out, lambda t: (t.code, *(round(float(f.value or 0), 3) for f in (t.legacy, t.candidate, t.shim))))


CONCURRENCY = "post.concurrency_gains"  # keyed by the gain's code: post.concurrency_gains.no_gain ...


def concurrency_code(facts: list[Fact]) -> str:
    """A concurrency statement's code from the facts it cites, its servers' codes: theirs where they share one
    (servers with different codes are said in statements of their own, so ``mixed`` is never a statement's)."""
    found = list(dict.fromkeys(f.value for f in facts if f.key.endswith(".code")))
    return str(found[0]) if len(found) == 1 else "mixed"


def concurrency_statements(summary: SummaryBody, latency: LatencyDecisions) -> list[Statement]:
    """What concurrency gained each server (``decisions.latency.concurrency``), one statement per code: all the
    servers in one note where they say the same, per code otherwise. Each cites its servers' gains with their
    intervals and codes, the margin, the concurrency and this host's CPU count, each with its source. The article's
    figures are the conclusion's (``post.c_article``): said once, not again beside the note."""
    said = {name: g for name, g in latency.concurrency.items() if g.code != "not_measured" and g.gain is not None}
    out = []
    for code in dict.fromkeys(g.code for g in said.values()):
        names = [n for n, g in said.items() if g.code == code]
        facts = []
        for name in names:
            base = f"decisions.latency.concurrency.{name}"
            gain = said[name].gain
            assert gain is not None
            facts += [Fact(key=f"{name}.gain", value=gain.value, source=f"{base}.gain.value"),
                      Fact(key=f"{name}.gain_low", value=gain.low, source=f"{base}.gain.low"),
                      Fact(key=f"{name}.gain_high", value=gain.high, source=f"{base}.gain.high"),
                      Fact(key=f"{name}.code", value=code, source=f"{base}.code")]
        base = f"decisions.latency.concurrency.{names[0]}"
        env = summary.environment
        facts += [Fact(key="gain_margin", value=said[names[0]].margin, source=f"{base}.margin"),
                  Fact(key="concurrency", value=said[names[0]].concurrency, source=f"{base}.concurrency"),
                  Fact(key="cpu_count", value=env.cpu_count if env else None, source="environment.cpu_count")]
        out.append(Statement(key=f"{CONCURRENCY}.{code}", subjects=names, facts=facts))
    return out

