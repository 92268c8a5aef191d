"""The index options of a model change (issue 57): one table per candidate (each option's recall@10 and nDCG@10
against the re-embed with their intervals, its cost) and the chosen option, for the full report and the post."""

from __future__ import annotations

from typing import Any

from embedswap.report.catalogue import fill
from embedswap.report.format import MISSING, code, fmt, md_table
from embedswap.report.sections.context import ReportContext
from embedswap.summary.types_index_options import IndexOptions, IndexOptionsDecision, OptionFigure

MIB = 2**20
MAPS = ("orthogonal", "affine", "mlp")


def _figure(ctx: ReportContext, figure: OptionFigure | None, kind: str = "score") -> str:
    if figure is None or figure.value is None:
        return ctx.label(False)
    if figure.low is None or figure.high is None:
        return fmt(figure.value, kind)
    return fill(ctx.terms["index_options"]["interval"], value=fmt(figure.value, kind), low=fmt(figure.low, kind),
                high=fmt(figure.high, kind), n=fmt(figure.n, "int"))


def _table(ctx: ReportContext, options: IndexOptions, decision: IndexOptionsDecision) -> str:
    t = ctx.terms["index_options"]
    header = [t["option"], t["recall"], t["ndcg"], t["ndcg_delta"], t["fit_s"], t["query_ms"], t["overhead_ms"],
              t["storage"], t["verdict"]]
    rows = []
    for option in options.options:
        verdict = decision.verdict(option.option)
        state = ("chosen" if option.option == decision.code else
                 (verdict.lost or ("within" if verdict.within else "below_margin")) if verdict else "not_decided")
        rows.append([t["names"][option.option], _figure(ctx, option.recall_at_10), _figure(ctx, option.ndcg_at_10),
                     _figure(ctx, option.ndcg_delta, "delta"),
                     fmt(option.fit_s, "score") if option.fit_s is not None else MISSING,
                     f"{option.query_ms:.2f}", f"{option.overhead_ms:+.2f}",
                     f"{option.storage_bytes / MIB:.2f}", t["states"][state]])
    return md_table(header, rows, ["l", "r", "r", "r", "r", "r", "r", "r", "l"])


def _cost(ctx: ReportContext, name: str, options: IndexOptions, chosen: str) -> str:
    """The chosen option's cost in words, from the stored figures: the re-embed's hours at the measured docs/s
    (``decisions.index.<name>.cost``, where ``index.corpus_size`` is set), a map's fit, query overhead and storage,
    re-score's overhead and the vectors it reads."""
    words = ctx.terms["index_options"]["costs"]
    option = options.of(chosen)
    if chosen == "re_embed":
        decided = ctx.decisions.index.get(name)
        cost = decided.cost if decided is not None else None
        if cost is None:
            return fill(words["re_embed_unsized"])
        return fill(words["re_embed"], hours=fmt(cost.hours_per_replica, "s"), replicas=fmt(cost.replicas, "int"),
                    window=fmt(cost.window_hours, "s"), rate=fmt(cost.docs_per_s, "s"),
                    corpus=fmt(cost.corpus_size, "int"))
    key = "map" if chosen in MAPS else chosen  # the maps cost alike: a fit, a map per query, its floats
    if option is None or key not in words:
        return ""
    return fill(words[key], fit=fmt(option.fit_s, "score") if option.fit_s is not None else MISSING,
                overhead=f"{option.overhead_ms:+.2f}", mib=f"{option.storage_bytes / MIB:.2f}")


def _condition(ctx: ReportContext, name: str) -> str | None:
    decided = ctx.decisions.index.get(name)
    return str(decided.condition.value) if decided is not None and decided.condition is not None else None


def option_tables(ctx: ReportContext) -> list[dict[str, Any]]:
    """Per candidate with measured options: its name, decision code, the words of the options that lost, table."""
    section = ctx.summary.index
    decided = ctx.decisions.index_options
    out = []
    for name, options in section.options.items():
        decision = decided.get(name)
        if decision is None or not options.measured:
            continue
        names = ctx.terms["index_options"]["names"]
        below = [names[v.option] for v in decision.verdicts if v.lost == "below_margin"]
        out.append({
            "name": code(name), "code": decision.code, "why": ctx.why(decision) if decision.reason else "",
            "chosen": names.get(decision.code, decision.code), "below": ctx.terms["index_options"]["list_sep"].join(below),
            "dual_read": decision.dual_read_within,
            "floor": fmt(decision.recall_floor, "score"),
            # the rule that decided, in words: nDCG@10 on the judgements, else recall@10 against the re-embed
            "rule": fill(ctx.terms["index_options"]["rules"][decision.basis or "recall_at_10"],
                         floor=fmt(decision.recall_floor, "score"), margin=fmt(decision.ndcg_margin, "score")),
            "folds": fmt(options.folds, "int"),
            "per_fold": fmt(options.documents_per_fold, "int"), "queries": fmt(options.queries, "int"),
            "depth": fmt(options.rescore_depth, "int"), "share": fmt(options.dual_read_share, "pct"),
            # whether the mlp map was fitted, and why not (too few training pairs per fold); None: not recorded
            "mlp_min": fmt(options.mlp_min_pairs, "int") if options.mlp_min_pairs is not None else None,
            "pairs": fmt(options.training_pairs, "int") if options.training_pairs is not None else None,
            "mlp_fitted": options.of("mlp") is not None,
            "cost": _cost(ctx, name, options, decision.code) if decision.code != "not_decided" else "",
            # the queries the options were searched with (decisions.index.<c>.condition): a choice holds for those
            "condition": _condition(ctx, name) if decision.code != "not_decided" else None,
            "table": _table(ctx, options, decision)})
    return out
