"""Figures of the report, drawn from summary.json only.

Each function takes the typed summary (or summary.json as a dict, read as the report reads it) and a report language
(``lang``, default "en") and returns a matplotlib ``Figure``, or ``None`` when the data it needs was not measured.
Figures are built with the object-oriented API (``matplotlib.figure.Figure``), not pyplot, so nothing is shown or
kept open: a notebook displays the returned figure once, a script saves it with ``fig.savefig``. Titles, axis labels
and legends are the language's catalogue words (``[figures.<name>]``), drawn in a font that has them
(:mod:`embedswap.report.figure_words`); the report writes one file per language.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

import matplotlib

if "ipykernel" not in sys.modules and not os.environ.get("MPLBACKEND") and not os.environ.get("DISPLAY"):
    matplotlib.use("Agg")  # headless: render to files only

import numpy as np
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib import MatplotlibDeprecationWarning  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def _show_figures_in_notebooks() -> None:
    """These figures are built without pyplot, so IPython has no PNG formatter for them unless one is registered:
    without it a notebook shows only '<Figure size ...>'."""
    try:
        from IPython import get_ipython
        from IPython.core.pylabtools import select_figure_formats
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        select_figure_formats(shell, {"png"}, bbox_inches="tight")


_show_figures_in_notebooks()

# Operating points of a latency capture, in display order: the article's two, then the concurrency sweep, a list of
# points under "sweep" (each with the fields of a point: run "sweep_c<C>", concurrency, p50_ms, p99_ms, docs_per_s,
# errors, spread, ...), as embedswap.measure.capture.capture_latency writes them.
from embedswap.analysis.latency_points import FIXED_POINTS, fixed_points_of, sweep_points_of  # noqa: E402
from embedswap.analysis.common import is_measured as _measured  # noqa: E402
from embedswap.summary.model import Summary  # noqa: E402
from embedswap.summary.types_latency import LatencyPoint, LatencyTarget  # noqa: E402
from embedswap.summary.types_post import ShownPoint  # noqa: E402
from embedswap.report.figure_words import PALETTE, FigureWords, in_language  # noqa: E402
from embedswap.report.figures_index import index_shares  # noqa: E402


def _fixed_point(entry: LatencyTarget | None, run: str) -> LatencyPoint | None:
    """One of the article's two points (sequential, concurrent) of a target's entry; None for a sweep run."""
    return getattr(entry, run) if entry is not None and run in FIXED_POINTS else None


# --- vectors ---------------------------------------------------------------------------------------------------
JITTER_SEED = 0


@in_language("cosine_by_language")
def cosine_by_language(summary: Summary, words: FigureWords) -> Figure | None:
    """Per-document cosine of each candidate against the legacy server, by language (box + points)."""
    rows = []
    for name, comparison in summary.vectors.comparisons.items():
        if not _measured(comparison):
            continue
        for doc in comparison.per_document:
            if doc.cosine is not None:
                rows.append({"candidate": name, "lang": doc.lang, "cosine": float(doc.cosine)})
    if not rows:
        return None
    frame = pd.DataFrame(rows)
    order = sorted(frame["lang"].unique())
    fig, (ax,) = words.figure_with_axes(7.5, 4.0)
    with warnings.catch_warnings():  # seaborn 0.13 passes matplotlib's deprecated `vert` to bxp
        warnings.simplefilter("ignore", MatplotlibDeprecationWarning)
        sns.boxplot(data=frame, x="lang", y="cosine", hue="candidate", order=order, ax=ax, palette=PALETTE,
                    fliersize=0, boxprops={"alpha": 0.35})
    # seaborn jitters the points with numpy's global generator: a fixed state, so one summary draws one PNG (a
    # re-render is byte-identical) and the caller's generator is left as it was
    state = np.random.get_state()
    np.random.seed(JITTER_SEED)
    try:
        sns.stripplot(data=frame, x="lang", y="cosine", hue="candidate", order=order, ax=ax, palette=PALETTE,
                      dodge=True, size=4, jitter=0.15, legend=False)
    finally:
        np.random.set_state(state)
    threshold = summary.parity.threshold("text")
    if threshold is not None:
        ax.axhline(threshold, color="crimson", linestyle="--", linewidth=1,
                   label=words("threshold", threshold=threshold))
    ax.set_title(words("title", legacy=summary.roles.legacy))
    ax.set_xlabel(words("xlabel"))
    ax.set_ylabel(words("ylabel"))
    ax.ticklabel_format(axis="y", useOffset=False)
    ax.legend(loc="lower left", fontsize="small")
    return fig


# --- latency ---------------------------------------------------------------------------------------------------
COLUMNS = ["target", "run", "point", "concurrency", "sweep", "p50_ms", "p99_ms", "docs_per_s"]


def _latency_entries(summary: Summary, ablations: bool) -> list[tuple[str, LatencyTarget]]:
    entries = list(summary.latency.by_target.items())
    if ablations:  # the lock ablation's variants of the legacy server (their legacy row is the latency one)
        legacy = summary.roles.legacy
        known = {name for name, _ in entries}
        entries += [(name, entry) for name, entry in summary.ablation.by_target.items()
                    if name != legacy and name not in known]
    return entries


def shown_point(summary: Summary, name: str, run: str) -> ShownPoint:
    """The figures of one point as the whole report shows them (``decisions.shown``: the table, the front matter
    and the prose read the same decision)."""
    return summary.decisions.shown.at(name, run) or ShownPoint()


def latency_frame(summary: Summary, ablations: bool = False) -> pd.DataFrame:
    """One row per (target, operating point) with p50_ms, p99_ms, docs_per_s; points without numbers dropped.

    ``sweep`` tells a sweep point from the article's two points; ``ablations`` adds the lock ablation's variants.
    The values are the report's one statistic (``decisions.shown``).
    """
    rows = []
    for name, entry in _latency_entries(summary, ablations):
        for sweep, points in ((False, fixed_points_of(entry)), (True, sweep_points_of(entry))):
            for run, label, point in points:
                shown = shown_point(summary, name, run)
                rows.append({"target": name, "run": run, "point": label, "concurrency": point.concurrency,
                             "sweep": sweep, "p50_ms": shown.p50_ms, "p99_ms": shown.p99_ms,
                             "docs_per_s": shown.docs_per_s})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame.dropna(subset=["p50_ms", "p99_ms", "docs_per_s"], how="all")


FIGURE_KEYS = {"p50_ms": ("p50", "p50_ms"), "p99_ms": ("p99", "p99_ms"), "docs_per_s": ("docs_per_s", "docs_per_s")}


def _spread_marks(ax: Any, summary: Summary, frame: pd.DataFrame, targets: list[str], order: list[str],
                  column: str) -> None:
    """On each bar: the stored 95 % interval (``decisions.latency.points``; none when n is too small for it) and
    the per-repeat values (``spread``) as dots, so a reader sees the spread, not only the middle."""
    decided = summary.decisions.latency
    key, spread_key = FIGURE_KEYS[column]
    entries = dict(_latency_entries(summary, False))
    for container, name in zip(ax.containers, targets):
        for bar, point in zip(container, order):
            rows = frame[(frame["target"] == name) & (frame["point"] == point)]
            if rows.empty or not np.isfinite(bar.get_height()):
                continue
            run = rows.iloc[0]["run"]
            x = bar.get_x() + bar.get_width() / 2
            intervals = decided.intervals(name, run)
            iv = getattr(intervals, key) if intervals is not None else None
            if iv is not None and iv.estimable and iv.low is not None:
                ax.plot([x, x], [iv.low, iv.high], color="black", linewidth=1.2)
            point = _fixed_point(entries.get(name), run)
            spread = point.spread if point is not None else None
            per_repeat = [v for v in (getattr(spread, spread_key) if spread is not None else []) if v is not None]
            ax.scatter([x] * len(per_repeat), per_repeat, s=9, color="black", zorder=3)


@in_language("latency_points")
def latency_points(summary: Summary, words: FigureWords) -> Figure | None:
    """p50 and p99 latency (ms) and throughput (docs/s) per target at the article's operating points (grouped
    bars; the concurrency sweep has its own figure, :func:`latency_sweep`)."""
    frame = latency_frame(summary)
    frame = frame[~frame["sweep"].astype(bool)]
    if frame.empty:
        return None
    # sequential first, then by concurrency: a sweep lines up left to right
    frame = frame.assign(_order=[(0 if r == "sequential" else 1, c or 0) for r, c in zip(frame["run"],
                                                                                    frame["concurrency"])])
    order = list(dict.fromkeys(frame.sort_values("_order")["point"]))
    targets = list(dict.fromkeys(frame["target"]))
    fig, axes = words.figure_with_axes(4.2 * 3, 4.0, ncols=3)
    for ax, column in zip(axes, ("p50_ms", "p99_ms", "docs_per_s")):
        title = words(f"titles.{column}")
        data = frame.dropna(subset=[column])
        if data.empty:
            ax.set_axis_off()
            ax.set_title(words("no_data", title=title))
            continue
        sns.barplot(data=data, x="point", y=column, hue="target", order=order, hue_order=targets, ax=ax,
                    palette=PALETTE)
        for container in ax.containers:
            ax.bar_label(container, fmt="%.1f", fontsize=7, padding=1)
        _spread_marks(ax, summary, frame, targets, order, column)
        ax.set_title(title)
        ax.set_xlabel(words("xlabel"), fontsize=8)
        ax.set_ylabel(words(f"ylabels.{column}"))
        if ax.get_legend() is not None:  # seaborn titles the legend with the column's name ("target")
            if ax is axes[0]:
                ax.get_legend().set_title(words("legend"))
            else:
                ax.get_legend().remove()
    return fig


def _bands(left: Any, right: Any, summary: Summary, name: str, data: pd.DataFrame, colour: Any) -> None:
    """Shaded 95 % intervals of p50 (left) and docs/s (right) along the sweep (``decisions.latency.points``)."""
    decided = summary.decisions.latency
    for ax, key in ((left, "p50"), (right, "docs_per_s")):
        stored = [(c, decided.intervals(name, r)) for c, r in zip(data["concurrency"], data["run"])]
        rows = [(c, getattr(s, key) if s is not None else None) for c, s in stored]
        rows = [(c, iv.low, iv.high) for c, iv in rows if iv is not None and iv.estimable and iv.low is not None]
        if len(rows) > 1:
            ax.fill_between([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], color=colour,
                            alpha=0.18, linewidth=0)


@in_language("latency_sweep")
def latency_sweep(summary: Summary, words: FigureWords) -> Figure | None:
    """The concurrency sweep: p50 (solid) and p99 (dashed) latency, and throughput, against concurrency, one line
    per target (the lock ablation's variants included)."""
    frame = latency_frame(summary, ablations=True)
    frame = frame[frame["sweep"].astype(bool) & frame["concurrency"].notna()]
    if frame.empty:
        return None
    targets = list(dict.fromkeys(frame["target"]))  # summary order: legacy, candidates, then ablation variants
    frame = frame.sort_values("concurrency", kind="stable")
    colours = dict(zip(targets, sns.color_palette(PALETTE, len(targets))))
    fig, (left, right) = words.figure_with_axes(12.0, 4.2, ncols=2)
    for name in targets:
        data = frame[frame["target"] == name]
        colour = colours[name]
        for column, style, marker in (("p50_ms", "-", "o"), ("p99_ms", "--", "v")):
            points = data.dropna(subset=[column])
            if not points.empty:
                left.plot(points["concurrency"], points[column], linestyle=style, marker=marker, color=colour,
                          label=words("line", name=name, figure=column[:3]))
        points = data.dropna(subset=["docs_per_s"])
        if not points.empty:
            right.plot(points["concurrency"], points["docs_per_s"], linestyle="-", marker="o", color=colour,
                       label=name)
        _bands(left, right, summary, name, data, colour)
    levels = sorted({int(c) for c in frame["concurrency"]})
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(levels)
        ax.set_xticklabels([str(c) for c in levels])
        ax.set_xlabel(words("xlabel"))
    left.set_title(words("left_title"))
    left.set_ylabel(words("left_ylabel"))
    left.legend(loc="upper left", fontsize="small")
    right.set_title(words("right_title"))
    right.set_ylabel(words("right_ylabel"))
    right.set_ylim(bottom=0)
    right.legend(loc="lower right", fontsize="small")
    return fig


# --- parity ----------------------------------------------------------------------------------------------------
@in_language("parity_backends")
def parity_backends(summary: Summary, words: FigureWords) -> Figure | None:
    """cos_min and cos_median of every backend against the golden reference, with the gate threshold."""
    rows = []
    thresholds = set()
    for row in summary.parity.rows:
        label = f"{row.backend}\n{row.modality} {row.dtype}".strip()
        for metric in ("cos_min", "cos_median"):
            value = getattr(row, metric)
            if value is not None:
                rows.append({"backend": label, "metric": words(f"metrics.{metric}"), "cosine": float(value)})
        thresholds.add(float(row.threshold))
    if not rows:
        return None
    frame = pd.DataFrame(rows)
    fig, (ax,) = words.figure_with_axes(max(5.0, 1.6 * frame["backend"].nunique() + 2), 4.0)
    sns.pointplot(data=frame, x="backend", y="cosine", hue="metric", ax=ax, palette=PALETTE, linestyle="none",
                  markers=["v", "o"], dodge=0.3)
    for threshold in sorted(thresholds):
        ax.axhline(threshold, color="crimson", linestyle="--", linewidth=1,
                   label=words("threshold", threshold=threshold))
    low = min([*frame["cosine"], *thresholds])
    ax.set_ylim(low - max(1e-4, (1 - low) * 0.25), 1 + max(1e-5, (1 - low) * 0.05))
    ax.ticklabel_format(axis="y", useOffset=False)
    ax.set_title(words("title"))
    ax.set_xlabel(words("xlabel"))
    ax.set_ylabel(words("ylabel"))
    ax.legend(loc="lower left", fontsize="small")
    return fig


# --- capacity --------------------------------------------------------------------------------------------------
@in_language("capacity_curve")
def capacity_curve(summary: Summary, words: FigureWords) -> Figure | None:
    """The open-loop sweep: p99 from the scheduled send against the offered rate (median of the repeats, bars: their
    min..max), the p99 target, and each server's capacity (dotted line, band: its interval over repeats); right,
    throughput and goodput against the offered rate."""
    decided = summary.decisions.capacity
    if summary.capacity is None or decided is None or not decided.servers:
        return None
    colours = dict(zip(decided.servers, sns.color_palette(PALETTE, len(decided.servers))))
    fig, (left, right) = words.figure_with_axes(12.0, 4.2, ncols=2)
    for name, server in decided.servers.items():
        colour = colours[name]
        points = [p for p in server.points if p.p99_ms is not None]
        if points:
            rates = [float(p.rate) for p in points]
            p99 = [float(p.p99_ms) for p in points]
            bars = [[v - float(p.p99_low) for v, p in zip(p99, points)],
                    [float(p.p99_high) - v for v, p in zip(p99, points)]]
            left.errorbar(rates, p99, yerr=bars, marker="o", color=colour, capsize=3, label=words("p99", name=name))
        if server.capacity is not None:
            left.axvline(float(server.capacity), color=colour, linestyle=":", linewidth=1.2,
                         label=words("capacity_above" if server.censored == "above" else "capacity", name=name,
                                     capacity=f"{float(server.capacity):.1f}"))
            if server.low is not None and server.high is not None:  # clipped to the rates tried: two repeats
                tried = [float(p.rate) for p in server.points] or [float(server.capacity)]  # give wide intervals
                left.axvspan(max(float(server.low), min(tried) / 2), min(float(server.high), max(tried) * 2),
                             color=colour, alpha=0.12, linewidth=0)
        for key, style in (("throughput", "-"), ("goodput", "--")):
            rows = [(float(p.rate), float(getattr(p, key))) for p in server.points if getattr(p, key) is not None]
            if rows:
                right.plot(*zip(*rows), linestyle=style, marker="o", color=colour, label=words(key, name=name))
        invalid = [float(r) for r in server.invalid_rates]
        if invalid:
            left.plot(invalid, [decided.slo_p99_ms or 0] * len(invalid), "x", color=colour,
                      label=words("invalid", name=name))
    if decided.slo_p99_ms is not None:
        left.axhline(float(decided.slo_p99_ms), color="crimson", linestyle="--", linewidth=1,
                     label=words("slo", slo=f"{float(decided.slo_p99_ms):g}"))
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel(words("xlabel"))
    left.set_yscale("log")
    left.set_ylabel(words("left_ylabel"))
    left.set_title(words("left_title"))
    left.legend(loc="upper left", fontsize="x-small")
    right.set_ylabel(words("right_ylabel"))
    right.set_title(words("right_title"))
    right.legend(loc="upper left", fontsize="x-small")
    return fig


FIGURES = {
    "cosine_by_language": cosine_by_language,
    "latency_points": latency_points,
    "latency_sweep": latency_sweep,
    "parity_backends": parity_backends,
    "capacity_curve": capacity_curve,
    "index_shares": index_shares,
}
