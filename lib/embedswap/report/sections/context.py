"""What every report section needs: the summary, the language's words, and the cells shared between tables.

A section module (``report/sections/<name>.py``) is one function ``build(ctx) -> dict`` that turns its part of
the typed summary into template values; it formats, it does not decide (decisions are in the summary's
``decisions``, computed by :mod:`embedswap.analysis`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from embedswap.analysis.common import is_measured, roles, shim_rows, shimmed
from embedswap.analysis.latency_points import fixed_points_of, sweep_points_of
from embedswap.measure.contract import CATALOGUE
from embedswap.analysis.article import Article
from embedswap.report.catalogue import catalogue, fill
from embedswap.report.figure_words import figure_stem
from embedswap.report.format import MISSING, code, esc, fmt, label, mib
from embedswap.reasons import REASON_KEYS
from embedswap.summary.model import Summary
from embedswap.summary.types_common import Reason
from embedswap.summary.types_latency import LatencyPoint, LatencyTarget
from embedswap.summary.types_sections import ShimRow
from embedswap.summary.types_vectors import ProbeRow, ProbeSide, ProbeReading

# the kit's own probe descriptions (English, as the summary records them), by probe name
BUILT_IN_DESCRIPTIONS = {entry["name"]: entry["description"] for entry in CATALOGUE}


def target_names(summary: Summary) -> list[str]:
    """Legacy first, then the candidates, then any other target of the summary."""
    legacy, candidates = roles(summary)
    names = [n for n in [legacy, *candidates] if n]
    names += [extra for extra in summary.targets if extra not in names]
    return names


class ReportContext:
    """One language's view of one summary, plus the numbered references the sections collect."""

    def __init__(self, summary: Summary, lang: str, figures: dict[str, bool], article: Article | None,
                 manifest: dict[str, Any] | None, attempt_dir: Path | None, title: str | None):
        self.summary = summary
        self.lang = lang
        self.words = catalogue(lang)
        self.terms = self.words.terms
        self.figures = figures
        self.article = article
        self.manifest = (manifest or {}).get("files") or {}
        self.attempt_dir = attempt_dir
        self.title = title
        self.legacy, self.candidates = roles(summary)
        self.candidate = summary.roles.candidate
        self.names = target_names(summary)
        self.decisions = summary.decisions
        self.refs: list[dict[str, str]] = []

    def label(self, state: bool | None) -> str:
        return label(state, self.lang)

    def figure(self, name: str) -> str | None:
        """The file of figure ``name`` in this language, ``figures/<stem>.png`` (each language has its own: the
        words on it are the language's), or None when it was not drawn."""
        return figure_stem(name, self.lang) if self.figures.get(name) else None

    def why(self, entry: BaseModel | None, default: str = "", key: str = "why") -> str:
        """The reason a part was not measured (``key="detail"``: why a verdict was given; ``key="sweep_note"``: why
        the sweep was skipped), in this language and escaped: its reason code through the catalogue; a free text (a
        server's or an exception's message) as recorded. ``entry`` is any summary model with that pair of fields,
        or None."""
        if entry is None:
            return esc(default)
        return self.worded(getattr(entry, REASON_KEYS[key], None), getattr(entry, key, None), default)

    def worded(self, reason: Reason | None, text: str | None, default: str = "") -> str:
        """A reason code in this language, else the recorded text, else ``default``; escaped."""
        if reason is not None and reason.code:
            return esc(self.words.reason(reason.code, reason.params))
        return esc(text or default)

    def probe_description(self, row: ProbeRow) -> str:
        """A probe's description in this language when it is a built-in probe as the kit describes it; a custom
        probe's own description as written in experiment.yaml."""
        name, text = row.probe, row.description
        if text and BUILT_IN_DESCRIPTIONS.get(name) == text:
            return esc(self.words.probes.get(name, text))
        return esc(text)

    # a target that failed to start: 'not measured' with the first line of its error, wherever it has a cell
    def failure(self, name: str) -> str | None:
        """The first line of a target's error (escaped, shortened), or None when it did not fail."""
        info = self.summary.target(name)
        error = str(info.error or "").strip() if info is not None else ""
        if not error:
            return None
        first = error.splitlines()[0].strip()
        return esc(first if len(first) <= 160 else first[:159] + "…")

    def not_measured_cell(self, name: str) -> str:
        """'not measured' for one target, with the first line of its error when it failed to start."""
        error = self.failure(name)
        return f"{self.label(False)}: {error}" if error else self.label(False)

    def column(self, name: str) -> str:
        """A table column header for one target: its name, with 'not measured: <error>' when it failed to start."""
        error = self.failure(name)
        return f"{code(name)} ({self.label(False)}: {error})" if error else code(name)

    def role_of(self, name: str) -> str:
        return self.terms["legacy_role"] if name == self.legacy else self.terms["candidate_role"]

    # references: numbered capture files, relative to the attempt folder
    def ref(self, relative: str, always: bool = False) -> str | None:
        """The reference number of a capture file (added on first use); None if it is not in this attempt."""
        relative = relative.strip()
        path_part = relative.split(" ")[0]
        known = path_part in self.manifest or (self.attempt_dir is not None and (self.attempt_dir / path_part).exists())
        if not (known or always):
            return None
        for i, entry in enumerate(self.refs, start=1):
            if entry["path"] == relative:
                return f"[{i}]"
        sha = (self.manifest.get(path_part) or {}).get("sha256")
        self.refs.append({"path": relative, "sha256": sha[:12] if sha else ""})
        return f"[{len(self.refs)}]"

    def refs_for(self, paths: Iterable[str], always: Iterable[str] = ()) -> str:
        marks = [self.ref(p, always=True) for p in always if p] + [self.ref(p) for p in paths]
        return ", ".join(dict.fromkeys(m for m in marks if m)) or MISSING

    # cells of the contract and shim tables
    def side_cell(self, side: ProbeSide | None) -> str:
        """One server's answer to a probe: status, and for a 200 its dimension, token count and encoding."""
        if side is None or not side.measured:
            return self.label(False)
        if side.not_applicable:
            return self.terms["not_applicable_cell"]
        status = side.status
        if status == 0:
            return f"0 ({self.terms['no_answer']})"
        if status != 200:
            return fmt(status, "raw") if isinstance(status, int) else esc(status)
        if side.n_vectors is None and side.error is not None:  # a 200 that carried no embeddings (error body)
            return self.terms["no_embeddings_cell"]
        parts = ["200"]
        gap = self.words.labels["unit_gap"]  # 384차원 / 384 dims
        if side.dim is not None:
            parts.append(f"{fmt(side.dim, 'int')}{gap}{self.terms['dims_unit']}")
        if side.prompt_tokens is not None:
            parts.append(f"{fmt(side.prompt_tokens, 'int')}{gap}{self.terms['tokens_unit']}")
        if side.encoding and side.encoding != "float":
            parts.append(esc(side.encoding))
        norm = side.norm
        if isinstance(norm, float) and abs(norm - 1.0) > 1e-3:  # not unit length: say so where cosine cannot
            parts.append(f"‖v‖ {fmt(norm, 'norm')}")
        cache = side.prefix_cache
        if cache is not None:  # an alike repeat is evidence only where the cache served it
            parts.append(fill(self.terms["prefix_cache_cell"], hit=fmt(cache.hit_tokens, "int"),
                              queried=fmt(cache.query_tokens, "int")) if cache.query_tokens
                         else self.terms["prefix_cache_off"])
        return ", ".join(parts)

    def verdict_cell(self, verdict: ProbeReading | None) -> str:
        v = verdict.verdict if verdict is not None else None
        if not v:
            return self.label(False)
        cos = verdict.cosine
        return f"{v} (cos {fmt(cos, 'cos4')})" if cos is not None and v != "same" else v

    def legacy_side(self, status: int | None) -> str | None:
        """The note for a difference that only the legacy server's failure causes (it goes away with the swap)."""
        return None if status is None else fill(self.terms["legacy_side"], status=fmt(status, "raw"))

    def shim_rows(self) -> list[ShimRow]:
        return shim_rows(self.summary)

    def shimmed(self) -> list[str]:
        return shimmed(self.summary)

    # latency readers shared by the latency, sweep, ablation, setup and article sections
    def latency_by_target(self) -> dict[str, LatencyTarget]:
        return self.summary.latency.by_target

    def ablation_variants(self) -> dict[str, LatencyTarget]:
        """The ablation's variants of the legacy server (its own row left out), by name."""
        return {n: r for n, r in self.summary.ablation.by_target.items() if n != self.legacy}

    def concurrency(self) -> Any:
        for info in self.latency_by_target().values():
            if is_measured(info) and info.concurrent is not None:
                return info.concurrent.concurrency
        return self.summary.latency.config.get("concurrency")  # open: the latency configuration as written

    @staticmethod
    def errors(info: LatencyTarget | None, sweep: bool = False) -> tuple[int, int]:
        """(failed, sent) over the article's two points, or over the sweep's points."""
        failed = total = 0
        for _, _, point in (sweep_points_of(info) if sweep else fixed_points_of(info)):
            failed += point.errors or 0
            total += (point.requests_per_repeat or 0) * (point.repeats or 0)
        return failed, total

    def peak(self, name: str) -> tuple[int | None, str | None]:
        """(peak RSS bytes, why not) of one server during its latency runs."""
        info = self.summary.latency.of(name) or self.ablation_variants().get(name)
        if info is None or not is_measured(info):
            return None, None
        value = info.rss_peak_bytes
        if value:
            return int(value), None
        target = self.summary.target(name)
        kind = target.config.kind if target is not None else None
        if "rss_peak_bytes" not in info.model_fields_set:
            return None, self.terms["no_section"]
        return None, self.terms["rss_unreadable_external" if kind == "external" else "rss_unreadable"]

    def peak_cell(self, name: str) -> str:
        value, _ = self.peak(name)
        return mib(value) if value else self.label(False)

    def point_row(self, name: str, info: LatencyTarget, label_cell: str) -> list[str]:
        """One latency table row: seq p50/p99, concurrent p50/p99/docs/s (each with its 95 % interval when
        stored), n per point, per-repeat spread, errors."""
        from embedswap.report.sections.stats import n_cell, point_cell

        seq, conc = info.sequential or LatencyPoint(run="sequential", concurrency=1, repeats=0), \
            info.concurrent or LatencyPoint(run="concurrent", concurrency=0, repeats=0)
        seq_iv, conc_iv = (self.decisions.latency.intervals(name, run) for run in ("sequential", "concurrent"))
        failed, total = self.errors(info)
        t = self.terms
        return [code(name), label_cell, point_cell(t, seq_iv, "p50", seq.p50_ms, "ms"),
                point_cell(t, seq_iv, "p99", seq.p99_ms, "ms"),
                point_cell(t, conc_iv, "p50", conc.p50_ms, "ms"),
                point_cell(t, conc_iv, "p99", conc.p99_ms, "ms"),
                point_cell(t, conc_iv, "docs_per_s", conc.docs_per_s, "rate"),
                f"{n_cell(seq_iv)} / {n_cell(conc_iv)}",
                fmt(conc.spread.docs_per_s if conc.spread is not None else None, "rate"),
                f"{fmt(failed, 'int')} / {fmt(total, 'int')}"]
