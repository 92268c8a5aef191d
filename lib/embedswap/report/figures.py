"""Figures of the report, drawn from summary.json only.

Each function takes the typed summary (or summary.json as a dict, read as the report reads it) and returns a matplotlib ``Figure``, or ``None`` when the data it needs was
not measured. Figures are built with the object-oriented API (``matplotlib.figure.Figure``), not pyplot, so
nothing is shown or kept open: a notebook displays the returned figure once, a script saves it with
``fig.savefig``. Text on the figures is ASCII only (target names, language codes), so one figure serves every
report language and needs no CJK font.
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

STYLE = "whitegrid"
PALETTE = "colorblind"


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
from embedswap.analysis.upgrade import read_summary  # noqa: E402
from embedswap.report.figures_index import index_shares  # noqa: E402


def _typed(summary: Summary | dict[str, Any]) -> Summary:
    """The typed summary; a dict (a notebook's summary.json) is upgraded and validated as the report reads it."""
    return summary if isinstance(summary, Summary) else read_summary(summary)


def _fixed_point(entry: LatencyTarget | None, run: str) -> LatencyPoint | None:
    """One of the article's two points (sequential, concurrent) of a target's entry; None for a sweep run."""
    return getattr(entry, run) if entry is not None and run in FIXED_POINTS else None


def _figure(width: float, height: float, ncols: int = 1) -> tuple[Figure, list[Any]]:
    with sns.axes_style(STYLE):
        fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
        axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


# --- vectors ---------------------------------------------------------------------------------------------------
def cosine_by_language(summary: Summary | dict[str, Any]) -> Figure | None:
    """Per-document cosine of each candidate against the legacy server, by language (box + points)."""
    summary = _typed(summary)
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
    fig, (ax,) = _figure(7.5, 4.0)
    with warnings.catch_warnings():  # seaborn 0.13 passes matplotlib's deprecated `vert` to bxp
        warnings.simplefilter("ignore", MatplotlibDeprecationWarning)
        sns.boxplot(data=frame, x="lang", y="cosine", hue="candidate", order=order, ax=ax, palette=PALETTE,
                    fliersize=0, boxprops={"alpha": 0.35})
    sns.stripplot(data=frame, x="lang", y="cosine", hue="candidate", order=order, ax=ax, palette=PALETTE,
                  dodge=True, size=4, jitter=0.15, legend=False)
    threshold = summary.parity.threshold("text")
    if threshold is not None:
        ax.axhline(threshold, color="crimson", linestyle="--", linewidth=1, label=f"parity threshold {threshold}")
    legacy = summary.roles.legacy
    ax.set_title(f"Per-document cosine vs '{legacy}' (first repeat), by language")
    ax.set_xlabel("document language")
    ax.set_ylabel("cosine")
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


def latency_frame(summary: Summary | dict[str, Any], ablations: bool = False) -> pd.DataFrame:
    """One row per (target, operating point) with p50_ms, p99_ms, docs_per_s; points without numbers dropped.

    ``sweep`` tells a sweep point from the article's two points; ``ablations`` adds the lock ablation's variants.
    The values are the report's one statistic (``decisions.shown``).
    """
    summary = _typed(summary)
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


def latency_points(summary: Summary | dict[str, Any]) -> Figure | None:
    """p50 and p99 latency (ms) and throughput (docs/s) per target at the article's operating points (grouped
    bars; the concurrency sweep has its own figure, :func:`latency_sweep`)."""
    summary = _typed(summary)
    frame = latency_frame(summary)
    frame = frame[~frame["sweep"].astype(bool)]
    if frame.empty:
        return None
    # sequential first, then by concurrency: a sweep lines up left to right
    frame = frame.assign(_order=[(0 if r == "sequential" else 1, c or 0) for r, c in zip(frame["run"],
                                                                                    frame["concurrency"])])
    order = list(dict.fromkeys(frame.sort_values("_order")["point"]))
    targets = list(dict.fromkeys(frame["target"]))
    fig, axes = _figure(4.2 * 3, 4.0, ncols=3)
    panels = [("p50_ms", "p50 latency (ms)"), ("p99_ms", "p99 latency (ms)"), ("docs_per_s", "throughput (docs/s)")]
    for ax, (column, title) in zip(axes, panels):
        data = frame.dropna(subset=[column])
        if data.empty:
            ax.set_axis_off()
            ax.set_title(f"{title}: no data")
            continue
        sns.barplot(data=data, x="point", y=column, hue="target", order=order, hue_order=targets, ax=ax,
                    palette=PALETTE)
        for container in ax.containers:
            ax.bar_label(container, fmt="%.1f", fontsize=7, padding=1)
        _spread_marks(ax, summary, frame, targets, order, column)
        ax.set_title(title)
        ax.set_xlabel("point · line: 95 % interval · dots: repeats", fontsize=8)
        ax.set_ylabel(column.replace("_", " "))
        if ax is not axes[0] and ax.get_legend() is not None:
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


def latency_sweep(summary: Summary | dict[str, Any]) -> Figure | None:
    """The concurrency sweep: p50 (solid) and p99 (dashed) latency, and throughput, against concurrency, one line
    per target (the lock ablation's variants included)."""
    summary = _typed(summary)
    frame = latency_frame(summary, ablations=True)
    frame = frame[frame["sweep"].astype(bool) & frame["concurrency"].notna()]
    if frame.empty:
        return None
    targets = list(dict.fromkeys(frame["target"]))  # summary order: legacy, candidates, then ablation variants
    frame = frame.sort_values("concurrency", kind="stable")
    colours = dict(zip(targets, sns.color_palette(PALETTE, len(targets))))
    fig, (left, right) = _figure(12.0, 4.2, ncols=2)
    for name in targets:
        data = frame[frame["target"] == name]
        colour = colours[name]
        for column, style, marker in (("p50_ms", "-", "o"), ("p99_ms", "--", "v")):
            points = data.dropna(subset=[column])
            if not points.empty:
                left.plot(points["concurrency"], points[column], linestyle=style, marker=marker, color=colour,
                          label=f"{name} {column[:3]}")
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
        ax.set_xlabel("concurrency (closed loop, requests of one batch)")
    left.set_title("latency vs concurrency (p50 solid, p99 dashed; band: p50 95 % interval)")
    left.set_ylabel("ms")
    left.legend(loc="upper left", fontsize="small")
    right.set_title("throughput vs concurrency (band: 95 % interval)")
    right.set_ylabel("docs/s")
    right.set_ylim(bottom=0)
    right.legend(loc="lower right", fontsize="small")
    return fig


# --- parity ----------------------------------------------------------------------------------------------------
def parity_backends(summary: Summary | dict[str, Any]) -> Figure | None:
    """cos_min and cos_median of every backend against the golden reference, with the gate threshold."""
    summary = _typed(summary)
    rows = []
    thresholds = set()
    for row in summary.parity.rows:
        label = f"{row.backend}\n{row.modality} {row.dtype}".strip()
        for metric in ("cos_min", "cos_median"):
            value = getattr(row, metric)
            if value is not None:
                rows.append({"backend": label, "metric": metric, "cosine": float(value)})
        thresholds.add(float(row.threshold))
    if not rows:
        return None
    frame = pd.DataFrame(rows)
    fig, (ax,) = _figure(max(5.0, 1.6 * frame["backend"].nunique() + 2), 4.0)
    sns.pointplot(data=frame, x="backend", y="cosine", hue="metric", ax=ax, palette=PALETTE, linestyle="none",
                  markers=["v", "o"], dodge=0.3)
    for threshold in sorted(thresholds):
        ax.axhline(threshold, color="crimson", linestyle="--", linewidth=1, label=f"threshold {threshold}")
    low = min([*frame["cosine"], *thresholds])
    ax.set_ylim(low - max(1e-4, (1 - low) * 0.25), 1 + max(1e-5, (1 - low) * 0.05))
    ax.ticklabel_format(axis="y", useOffset=False)
    ax.set_title("Parity against the fp32 reference (gate: cos_min >= threshold)")
    ax.set_xlabel("backend")
    ax.set_ylabel("cosine to reference")
    ax.legend(loc="lower left", fontsize="small")
    return fig


# --- capacity --------------------------------------------------------------------------------------------------
def capacity_curve(summary: Summary | dict[str, Any]) -> Figure | None:
    """The open-loop sweep: p99 from the scheduled send against the offered rate (median of the repeats, bars: their
    min..max), the p99 target, and each server's capacity (dotted line, band: its interval over repeats); right,
    throughput and goodput against the offered rate."""
    summary = _typed(summary)
    decided = summary.decisions.capacity
    if summary.capacity is None or decided is None or not decided.servers:
        return None
    colours = dict(zip(decided.servers, sns.color_palette(PALETTE, len(decided.servers))))
    fig, (left, right) = _figure(12.0, 4.2, ncols=2)
    for name, server in decided.servers.items():
        colour = colours[name]
        points = [p for p in server.points if p.p99_ms is not None]
        if points:
            rates = [float(p.rate) for p in points]
            p99 = [float(p.p99_ms) for p in points]
            bars = [[v - float(p.p99_low) for v, p in zip(p99, points)],
                    [float(p.p99_high) - v for v, p in zip(p99, points)]]
            left.errorbar(rates, p99, yerr=bars, marker="o", color=colour, capsize=3, label=f"{name} p99")
        if server.capacity is not None:
            left.axvline(float(server.capacity), color=colour, linestyle=":", linewidth=1.2,
                         label=f"{name} capacity {'>= ' if server.censored == 'above' else ''}"
                               f"{float(server.capacity):.1f}/s")
            if server.low is not None and server.high is not None:  # clipped to the rates tried: two repeats
                tried = [float(p.rate) for p in server.points] or [float(server.capacity)]  # give wide intervals
                left.axvspan(max(float(server.low), min(tried) / 2), min(float(server.high), max(tried) * 2),
                             color=colour, alpha=0.12, linewidth=0)
        for key, style in (("throughput", "-"), ("goodput", "--")):
            rows = [(float(p.rate), float(getattr(p, key))) for p in server.points if getattr(p, key) is not None]
            if rows:
                right.plot(*zip(*rows), linestyle=style, marker="o", color=colour, label=f"{name} {key}")
        invalid = [float(r) for r in server.invalid_rates]
        if invalid:
            left.plot(invalid, [decided.slo_p99_ms or 0] * len(invalid), "x", color=colour,
                      label=f"{name} invalid (client lag)")
    if decided.slo_p99_ms is not None:
        left.axhline(float(decided.slo_p99_ms), color="crimson", linestyle="--", linewidth=1,
                     label=f"p99 target {float(decided.slo_p99_ms):g} ms")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("offered rate (requests/s, open loop)")
    left.set_yscale("log")
    left.set_ylabel("p99 from scheduled send (ms)")
    left.set_title("p99 vs offered rate (bars: min..max over repeats)")
    left.legend(loc="upper left", fontsize="x-small")
    right.set_ylabel("requests/s")
    right.set_title("throughput (solid) and correctness-gated goodput (dashed)")
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
