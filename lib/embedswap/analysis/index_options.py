"""``decisions.index_options``: per candidate, the cheapest index option within the ranking margins (issue 57).

Where the workload has judgements, an option is within the margin when its nDCG@10 is at most ``margins.ndcg_at_10``
below the re-embed's at the low end of the paired difference's interval (non-inferiority): what the user's search
gets decides, and an option may rank the judgements as well as the re-embed while returning other documents (on
5,000 docstrings MiniLM's old index answered new [CLS]-pooled queries with nDCG@10 0.661 against the re-embed's
0.624 at recall@10 0.496: docs/model-migration.md). Without judgements its recall@10 against the re-embedded index
must stay at least ``1 - margins.top_k_overlap`` at its interval's low end (the bound the kit holds a top-k overlap
to). The re-embed is the reference and always within. The options
are tried in :data:`~embedswap.summary.types_index_options.COST_ORDER`; the first within is chosen, the cheaper ones
lost ``below_margin``, the dearer ones ``costlier``. Dual-read is judged apart: whether a re-embed can serve from
both indexes while it runs.

Not decided where a fold holds no more documents than the top k: every option then returns the whole fold and the
recall says nothing. Re-score is left out (``not_measured``) where it reads at least the whole fold: it then returns
the re-embed's own ranking.
"""

from __future__ import annotations

from embedswap.config.decisions import DecisionsConfig
from embedswap.reasons import reason
from embedswap.summary.model import SummaryBody
from embedswap.summary.types_common import Reason
from embedswap.summary.types_index_options import (COST_ORDER, IndexOption, IndexOptions, IndexOptionsDecision,
                                                   OptionStanding)


def _within(option: IndexOption | None, floor: float, ndcg_margin: float) -> bool | None:
    """Judged: nDCG@10 non-inferior to the re-embed's (what the user's search gets); else recall@10 against the
    re-embed (how much of its ranking the option reproduces)."""
    if option is None or option.recall_at_10.low is None:
        return None
    if option.option == "re_embed":
        return True
    delta = option.ndcg_delta
    if delta is not None and delta.low is not None:
        return bool(delta.low >= -ndcg_margin)
    return bool(option.recall_at_10.low >= floor)


def options_decision(options: IndexOptions, config: DecisionsConfig) -> IndexOptionsDecision:
    """The decision on one candidate's measured options (see the module doc)."""
    floor, ndcg_margin = 1.0 - config.margins.top_k_overlap, config.margins.ndcg_at_10
    if options.documents_per_fold <= options.k:
        found = reason("index_options_too_few", per_fold=options.documents_per_fold, k=options.k)
        return IndexOptionsDecision(code="not_decided", reason=Reason.model_validate(found), recall_floor=floor,
                                    ndcg_margin=ndcg_margin)
    verdicts, chosen = [], None
    # re-score that reads at least the whole fold returns the re-embed's own ranking: it says nothing there
    whole_fold = options.rescore_depth is not None and options.rescore_depth >= options.documents_per_fold
    for code in COST_ORDER:
        within = None if code == "rescore" and whole_fold else _within(options.of(code), floor, ndcg_margin)
        if within is None:
            verdicts.append(OptionStanding(option=code, within=None, lost="not_measured"))
        elif chosen is None and within:
            chosen = code
            verdicts.append(OptionStanding(option=code, within=True))
        else:
            verdicts.append(OptionStanding(option=code, within=within, lost="costlier" if within else "below_margin"))
    dual = _within(options.of("dual_read"), floor, ndcg_margin)
    verdicts.append(OptionStanding(option="dual_read", within=dual, lost="not_measured" if dual is None else None))
    judged = any(o.ndcg_delta is not None and o.ndcg_delta.low is not None for o in options.options)
    return IndexOptionsDecision(code=chosen or "re_embed", basis="ndcg_at_10" if judged else "recall_at_10",
                                recall_floor=floor, ndcg_margin=ndcg_margin, verdicts=verdicts, dual_read_within=dual)


def index_options_decisions(summary: SummaryBody, config: DecisionsConfig) -> dict[str, IndexOptionsDecision]:
    """``decisions.index_options``: candidate -> decision (empty where no options were measured)."""
    index = summary.index
    if not index.measured:
        return {}
    return {name: options_decision(entry, config) for name, entry in index.options.items() if entry.measured}
