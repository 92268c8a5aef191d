"""The index part's figure: the basis metric (nDCG@10, or the top-5 overlap without judgements) of the candidate's
queries against the re-embedded share of the index, exact and HNSW (where it was measured: points alone when only
some shares had it), with the (1 - 2 alpha) interval of the change from the legacy-only search. Drawn from
``decisions.index`` only; ASCII text, as every figure of the report."""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from embedswap.summary.model import Summary
from embedswap.analysis.upgrade import read_summary

PALETTE = "colorblind"  # as report.figures (which imports this module)


def _figure(width: float, height: float) -> tuple[Figure, Any]:
    import seaborn as sns

    with sns.axes_style("whitegrid"):
        fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
        return fig, fig.add_subplot(1, 1, 1)


def index_shares(summary: Summary | dict[str, Any]) -> Figure | None:
    summary = summary if isinstance(summary, Summary) else read_summary(summary)
    decided = {n: d for n, d in summary.decisions.index.items() if d.cells}
    if not decided:
        return None
    import seaborn as sns

    colours = sns.color_palette(PALETTE, n_colors=max(2, len(decided)))
    fig, ax = _figure(7.5, 4.0)
    basis = "top5_overlap"
    for (name, decision), colour in zip(decided.items(), colours, strict=False):
        basis = decision.basis or "ndcg_at_10"
        for method, style in (("exact", "-"), ("hnsw", "--")):
            cells = sorted((c for c in decision.cells if c.queries == "candidate" and c.method == method),
                           key=lambda c: c.share)
            xs, ys, lows, highs = [], [], [], []
            for cell in cells:
                value = getattr(cell, basis)
                verdict = cell.ndcg if basis == "ndcg_at_10" else cell.overlap
                if value is None:
                    continue
                reference = value - (verdict.estimate or 0.0) if verdict is not None else value
                xs.append(cell.share)
                ys.append(value)
                lows.append(reference + verdict.low if verdict is not None and verdict.low is not None else value)
                highs.append(reference + verdict.high if verdict is not None and verdict.high is not None else value)
            if not xs:
                continue
            measured_at = {c.share for c in decision.cells if c.queries == "candidate"}
            if method == "hnsw" and len(xs) < len(measured_at):
                # HNSW measured at some shares only (index.hnsw_shares: ends): points, no line that would
                # suggest values between them
                ax.plot(xs, ys, linestyle="none", marker="D", color=colour, label=f"{name} {method} (measured shares)")
                continue
            ax.plot(xs, ys, style, marker="o", color=colour, label=f"{name} {method}")
            ax.fill_between(xs, lows, highs, color=colour, alpha=0.15 if method == "exact" else 0.08)
    ax.set_xlabel("share of the index re-embedded with the candidate")
    ax.set_ylabel("nDCG@10" if basis == "ndcg_at_10" else "top-5 overlap with legacy")
    ax.set_title(f"Candidate queries on a mixed index ({summary.index.distance if summary.index else '?'}), "
                 "band: interval of the change")
    ax.set_xlim(-0.02, 1.02)
    ax.legend(loc="lower left", fontsize="small")
    return fig
