"""The index part's figure: the basis metric (nDCG@10, or the top-5 overlap without judgements) of the candidate's
queries against the re-embedded share of the index, exact and HNSW (where it was measured: points alone when only
some shares had it), with the (1 - 2 alpha) interval of the change from the legacy-only search. Drawn from
``decisions.index`` only; its words are the language's ``[figures.index_shares]`` (report/figure_words.py)."""

from __future__ import annotations


from matplotlib.figure import Figure

from embedswap.summary.model import Summary
from embedswap.report.figure_words import PALETTE, FigureWords, in_language


@in_language("index_shares")
def index_shares(summary: Summary, words: FigureWords) -> Figure | None:
    decided = {n: d for n, d in summary.decisions.index.items() if d.cells}
    if not decided:
        return None
    import seaborn as sns

    colours = sns.color_palette(PALETTE, n_colors=max(2, len(decided)))
    fig, (ax,) = words.figure_with_axes(7.5, 4.0)
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
                ax.plot(xs, ys, linestyle="none", marker="D", color=colour,
                        label=words("line_partial", name=name, method=words(f"methods.{method}")))
                continue
            ax.plot(xs, ys, style, marker="o", color=colour,
                    label=words("line", name=name, method=words(f"methods.{method}")))
            ax.fill_between(xs, lows, highs, color=colour, alpha=0.15 if method == "exact" else 0.08)
    ax.set_xlabel(words("xlabel"))
    ax.set_ylabel(words(f"ylabels.{basis}"))
    ax.set_title(words("title", distance=summary.index.distance or "?"))
    ax.set_xlim(-0.02, 1.02)
    ax.legend(loc="lower left", fontsize="small")
    return fig
