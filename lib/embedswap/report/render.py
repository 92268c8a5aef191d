"""The report: summary.json -> report.<lang>.md / .html (+ figures, report.json), and the index of all reports.

Everything in the report comes from the attempt's summary.json (and, for the reference list, the attempt's
manifest): re-rendering reads no capture and writes nothing outside the report folder, so it takes seconds.

Rules the report keeps, after the article it reruns:

- every section and table carries a label generated from the summary's ``measured`` flags: 실측 / measured,
  미실측 / not measured, 미확인 / unconfirmed (the step ran but produced no number, or the value was not reported);
- numbers are formatted by one function (:func:`fmt`), so the Korean and English reports show identical figures;
- the vocabulary used inside tables lives in :data:`TERMS`, the prose in the Jinja2 templates
  (``embedswap/templates/report.<lang>.md.j2``); the HTML page shell is ``report.html.j2``;
- a target that failed to start (``targets[name]["error"]``) is "not measured: <first line of the error>" in every
  table where it has a row or a column;
- search ranking on a random-weight model (:data:`RANDOM_WEIGHT_SPECS`) is labelled 의미 없음(무작위 가중치) /
  not meaningful (random weights), and no decision is drawn from it; otherwise a ranking counts as unchanged within
  :data:`RANK_OVERLAP_MIN` / :data:`RANK_DELTA_MAX` (stated in the report), and a difference is never called
  better or worse, only different, with its Δ;
- the lock explanation of the concurrent gap is 실측 only when the lock ablation measured a lock-free variant;
  otherwise it stays the article's estimate, 미확인. The only figures computed here (not copied from the summary)
  are ratios and the share of a candidate's concurrent throughput advantage that the lock-free server recovers.
"""

from __future__ import annotations

import base64
import importlib
import io
import json
import re
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import markdown as markdown_lib

from embedswap.captures import atomic_write_bytes, json_bytes, open_attempt
from embedswap.config import ConfigError, ReportConfig, load_experiment
from embedswap.paths import report_dir
from embedswap.report import figures as figures_mod

# the report's languages: one module each in embedswap/report/lang/ (words) and one template each in templates/
LANGUAGES = ("ko", "en", "ja", "zh")
LANG_MODULES = {lang: importlib.import_module(f"embedswap.report.lang.{lang}") for lang in LANGUAGES}
MISSING = "—"
REPORT_JSON = "report.json"
VERDICT_ORDER = ["same", "silent-divergence", "loud-failure", "retry-hazard", "format-difference"]


class ReportError(RuntimeError):
    """The report cannot be rendered (no summary.json, unknown language, ...). The message says what to do."""


# --- labels and numbers ------------------------------------------------------------------------------------------
LABELS: dict[str, dict[bool | None, str]] = {lang: LANG_MODULES[lang].LABELS for lang in LANGUAGES}
PARTLY = {lang: LANG_MODULES[lang].PARTLY for lang in LANGUAGES}


def label(measured: bool | None, lang: str) -> str:
    """실측 / 미실측 / 미확인 (ko), measured / not measured / unconfirmed (en).

    ``True``: measured; ``False``: not measured; ``None``: unconfirmed (ran, but no value came out of it).
    """
    if lang not in LABELS:
        raise ReportError(f"unknown report language '{lang}' (known: {', '.join(LABELS)})")
    return LABELS[lang][None if measured is None else bool(measured)]


def combined_label(states: Iterable[bool | None], lang: str) -> str:
    """One label for a section made of several parts: the common label, or 'partly measured' with the parts."""
    states = list(states)
    if not states:
        return label(False, lang)
    unique = list(dict.fromkeys(states))
    if len(unique) == 1:
        return label(unique[0], lang)
    parts = " · ".join(label(s, lang) for s in (True, None, False) if s in unique)
    return f"{PARTLY[lang]} ({parts})"


_FORMATS: dict[str, Callable[[float], str]] = {
    "int": lambda v: f"{int(round(v)):,}",
    "ms": lambda v: f"{v:,.1f}",
    "rate": lambda v: f"{v:,.1f}",
    "cos": lambda v: f"{v:.6f}",
    "cos4": lambda v: f"{v:.4f}",
    "norm": lambda v: f"{v:.4f}",
    "ratio": lambda v: f"{v:.2f}×",
    "gib": lambda v: f"{v:,.1f}",
    "mib": lambda v: f"{v:,.0f}",
    "s": lambda v: f"{v:,.1f}",
    "pct": lambda v: f"{v * 100:.0f}%",
    "score": lambda v: f"{v:.3f}",
    "delta": lambda v: f"{(0.0 if abs(v) < 5e-4 else v):+.3f}",
}


def fmt(value: Any, kind: str = "raw") -> str:
    """The one number formatter of the report (both languages). None -> '—'.

    kinds: int (thousands separator), ms, rate (docs/s), cos (6 decimals), cos4 (the article's precision), norm,
    ratio (×), gib, mib, s, pct, score (ranking metrics, 3 decimals), delta (signed, 3 decimals; +0.000 when it
    rounds to zero), raw (ints with separators, floats as published).
    """
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return " · ".join(fmt(v, kind) for v in value)
    if not isinstance(value, (int, float)):
        return str(value)
    if value != value:  # NaN
        return "NaN"
    if kind == "raw":
        return f"{value:,}" if isinstance(value, int) else f"{value:g}"
    return _FORMATS[kind](float(value))


# --- markdown helpers --------------------------------------------------------------------------------------------
def esc(text: Any) -> str:
    """Data text for markdown: no HTML, no table breaks, no emphasis markers, one line."""
    value = "" if text is None else str(text)
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = value.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("`", "'")
    return " ".join(value.split())


def code(text: Any) -> str:
    """An inline code span for identifiers (probe, target names)."""
    value = " ".join(str(text).split()).replace("`", "'").replace("|", "/")
    return f"`{value}`"


def md_table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> str:
    """A pipe table; cells are already formatted/escaped. align: 'l' or 'r' per column."""
    align = align or ["l"] + ["r"] * (len(header) - 1)
    rule = ["---:" if a == "r" else ":---:" if a == "c" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def fence(text: str, info: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}{info}\n{text}\n{marks}"


# --- vocabulary used inside tables and lists -------------------------------------------------------------------
TERMS: dict[str, dict[str, Any]] = {lang: LANG_MODULES[lang].TERMS for lang in LANGUAGES}

# Rules from (probe, verdict) to a client change. Evaluated per candidate; the first matching probe rule wins,
# and ``no_retry_5xx`` applies to every retry-hazard in addition. Custom probes fall back to ``review``.
_NOT_SAME = {"silent-divergence", "loud-failure", "retry-hazard", "format-difference"}
CHANGE_RULES: list[tuple[str, Callable[[str], bool], set[str]]] = [
    ("plain_differs", lambda p: p == "plain", _NOT_SAME),
    ("drop_dimensions", lambda p: p.startswith("dimensions"), _NOT_SAME),
    ("prepend_instruction", lambda p: p in ("input_type_query", "instruction_field", "v2_embed_query"), _NOT_SAME),
    ("truncate", lambda p: p == "over_long_input", _NOT_SAME),
    ("decode_encoding", lambda p: p.startswith("encoding"), _NOT_SAME),
    ("cap_batch", lambda p: p == "large_batch", {"loud-failure", "retry-hazard"}),
    ("validate_input", lambda p: p in ("empty_list", "empty_string", "wrong_type", "non_json_body"), _NOT_SAME),
    ("send_text", lambda p: p == "token_ids", _NOT_SAME),
    ("model_name", lambda p: p == "unknown_model", _NOT_SAME),
    ("strip_whitespace", lambda p: p == "whitespace_padded", _NOT_SAME),
    ("normalise_unicode", lambda p: p == "unicode_mixed", _NOT_SAME),
    ("batch_invariance", lambda p: p == "batch8_member", _NOT_SAME),
    ("review", lambda p: True, _NOT_SAME),
]
CROSS_RULES: list[tuple[str, set[str]]] = [("no_retry_5xx", {"retry-hazard"})]
# Rules that apply only when the candidate is the side that failed (status other than 200).
CANDIDATE_SIDE_RULES = {"cap_batch"}


def client_changes(summary: dict[str, Any], lang: str) -> list[dict[str, Any]]:
    """'What to change in the client before migrating', derived from the contract verdicts by rule.

    Returns items ``{key, text, probes: [(probe, candidate, verdict)]}`` in rule order (no_retry_5xx last).
    """
    contract = summary.get("contract")
    if not isinstance(contract, list):
        return []
    found: dict[str, list[tuple[str, str, str]]] = {}
    legacy_tokens: dict[str, Any] = {}
    for row in contract:
        probe = row.get("probe", "")
        legacy_tokens[probe] = (row.get("legacy") or {}).get("prompt_tokens")
        for candidate, verdict in (row.get("verdicts") or {}).items():
            v = (verdict or {}).get("verdict")
            if not v:
                continue
            status = ((row.get("by_target") or {}).get(candidate) or {}).get("status")
            for key, matches, verdicts in CHANGE_RULES:
                if matches(probe):
                    # a large batch that only the legacy server failed (the candidate answered it) changes nothing
                    if v in verdicts and not (key in CANDIDATE_SIDE_RULES and status == 200):
                        found.setdefault(key, []).append((probe, candidate, v))
                    break
            candidate_5xx = isinstance(status, int) and (status == 0 or status >= 500)
            for key, verdicts in CROSS_RULES:
                # only a hazard the candidate causes changes the client (a legacy 5xx goes away with the swap)
                if v in verdicts and candidate_5xx:
                    found.setdefault(key, []).append((probe, candidate, v))
    terms = TERMS[lang]["changes"]
    order = [k for k, _, _ in CHANGE_RULES] + [k for k, _ in CROSS_RULES]
    items = []
    batch = (summary.get("workload") or {}).get("batch_size")
    for key in order:
        if key not in found:
            continue
        hits = found[key]
        if key == "review":  # one item per reviewed probe
            for probe in dict.fromkeys(p for p, _, _ in hits):
                verdicts = ", ".join(dict.fromkeys(v for p, _, v in hits if p == probe))
                items.append({"key": key, "text": terms[key].format(probe=probe, verdict=verdicts),
                              "probes": [h for h in hits if h[0] == probe]})
            continue
        limit = ""
        if key == "truncate" and legacy_tokens.get("over_long_input"):
            limit = terms["truncate_limit"].format(n=fmt(legacy_tokens["over_long_input"], "int"))
        items.append({"key": key, "text": terms[key].format(limit=limit, batch=batch), "probes": hits})
    return items


# --- reading the summary -----------------------------------------------------------------------------------------
def _measured(section: Any) -> bool:
    return isinstance(section, dict) and bool(section.get("measured"))


def point_state(point: dict[str, Any] | None) -> bool | None:
    """True: the point has numbers; None: it ran but every request failed (unconfirmed); False: absent."""
    if not isinstance(point, dict):
        return False
    values = [point.get(k) for k in ("p50_ms", "p99_ms", "docs_per_s")]
    return True if any(v is not None for v in values) else None


def latency_state(info: dict[str, Any]) -> bool | None:
    if not _measured(info):
        return False
    states = [point_state(p) for _, _, p in figures_mod.latency_points_of(info)]
    return True if any(s is True for s in states) else None


def contract_states(summary: dict[str, Any]) -> tuple[bool | None, bool | None]:
    """(server answers, verdicts): whether the probes' answers and the legacy-vs-candidate verdicts exist."""
    contract = summary.get("contract")
    if not isinstance(contract, list):
        return False, False
    answers = any(side.get("measured") for row in contract for side in (row.get("by_target") or {}).values())
    verdicts = [v.get("verdict") for row in contract for v in (row.get("verdicts") or {}).values()]
    if all(v is not None for v in verdicts) and verdicts:
        vstate: bool | None = True
    elif any(v is not None for v in verdicts):
        vstate = None  # some candidates compared, some not: partly
    else:
        vstate = False
    return answers, vstate


def not_measured_items(summary: dict[str, Any]) -> list[dict[str, str]]:
    """Every ``{"measured": false, "why": ...}`` in the summary, with its path (role aliases skipped)."""
    items: list[dict[str, str]] = []

    def walk(node: Any, path: list[str]) -> None:
        if isinstance(node, dict):
            if node.get("measured") is False and node.get("why"):
                items.append({"section": path[0] if path else "", "path": ".".join(path[1:]), "why": str(node["why"])})
                return
            aliases = {"legacy", "candidate"} if "by_target" in node else set()
            if "by_candidate" in node:  # ranking: the primary candidate's variants are copies of by_candidate's
                aliases = {"candidate_naive", "candidate_shim"}
            for key, value in node.items():
                if key not in aliases:
                    walk(value, [*path, str(key)])
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, [*path, str(i)])

    for key in SECTION_KEYS:
        walk(summary.get(key), [key])
    return items


# The summary's sections in report order; the last three came later (a summary without them is an older one).
SECTION_KEYS = ("targets", "vectors", "ranking", "contract", "shim", "latency", "ablation", "parity")
LATER_SECTIONS = ("ranking", "shim", "ablation")
# Model specs whose weights are random (embedswap.tiny_qwen3): their vectors carry no meaning, so ranking is noise.
RANDOM_WEIGHT_SPECS = ("build:tiny-qwen3",)
# When a ranking counts as unchanged against legacy (stated in the report).
RANK_OVERLAP_MIN = 0.95
RANK_DELTA_MAX = 0.01


def random_weights(summary: dict[str, Any]) -> bool:
    """True when the experiment's model has random weights (model.spec, or the experiment config's model.path)."""
    specs = [(summary.get("model") or {}).get("spec"),
             (((summary.get("experiment") or {}).get("config") or {}).get("model") or {}).get("path")]
    return any(isinstance(spec, str) and spec.strip().startswith(RANDOM_WEIGHT_SPECS) for spec in specs)


def ranking_unchanged(variant: dict[str, Any], deltas: dict[str, Any] | None) -> bool | None:
    """Whether a ranking variant matches legacy within the stated tolerance; None when there is no number."""
    if not _measured(variant):
        return None
    overlap = variant.get("top5_overlap")
    values = [(deltas or {}).get(k) for k in ("ndcg_at_10", "recall_at_5")]
    if overlap is None and all(v is None for v in values):
        return None
    if overlap is not None and overlap < RANK_OVERLAP_MIN:
        return False
    return all(v is None or abs(v) <= RANK_DELTA_MAX for v in values)


def _languages_of(summary: dict[str, Any]) -> dict[str, int]:
    return (summary.get("workload") or {}).get("languages") or {}


def _targets(summary: dict[str, Any]) -> list[str]:
    roles = summary.get("roles") or {}
    names = [roles.get("legacy", "legacy"), *(roles.get("candidates") or [roles.get("candidate")])]
    names = [n for n in names if n]
    for extra in (summary.get("targets") or {}):
        if extra not in names:
            names.append(extra)
    return names


def _failed_status(row: dict[str, Any], name: str) -> bool:
    """Whether ``name`` answered a contract probe with a 5xx or no answer (status 0)."""
    status = ((row.get("by_target") or {}).get(name) or {}).get("status")
    return isinstance(status, int) and (status == 0 or status >= 500)


def _mib(value: Any) -> str:
    return fmt(None if value is None else value / 2**20, "mib")


# --- context for the templates -----------------------------------------------------------------------------------
class _Context:
    """Builds the template context of one language. Only formatting and rules: no figure is computed here."""

    def __init__(self, summary: dict[str, Any], lang: str, figures: dict[str, bool], article: dict[str, Any],
                 manifest: dict[str, Any] | None, attempt_dir: Path | None, title: str | None):
        if lang not in LABELS:
            raise ReportError(f"unknown report language '{lang}' (known: {', '.join(LABELS)})")
        self.s = summary
        self.lang = lang
        self.t = TERMS[lang]
        self.figures = figures
        self.article = article
        self.manifest = (manifest or {}).get("files") or {}
        self.attempt_dir = attempt_dir
        self.title = title
        roles = summary.get("roles") or {}
        self.legacy = roles.get("legacy", "legacy")
        self.candidate = roles.get("candidate")
        self.candidates = roles.get("candidates") or ([self.candidate] if self.candidate else [])
        self.names = _targets(summary)
        self.refs: list[dict[str, str]] = []

    def L(self, state: bool | None) -> str:  # noqa: N802
        return label(state, self.lang)

    # a target that failed to start: 'not measured' with the first line of its error, wherever it has a cell
    def failure(self, name: str) -> str | None:
        """The first line of a target's error (escaped, shortened), or None when it did not fail."""
        info = (self.s.get("targets") or {}).get(name) or {}
        error = str(info.get("error") or "").strip()
        if not error:
            return None
        first = error.splitlines()[0].strip()
        return esc(first if len(first) <= 160 else first[:159] + "…")

    def nm(self, name: str) -> str:
        """'not measured' for one target, with the first line of its error when it failed to start."""
        error = self.failure(name)
        return f"{self.L(False)}: {error}" if error else self.L(False)

    def later_section(self, key: str) -> dict[str, Any]:
        """A section added after the first summaries; an older summary without it reads as not measured."""
        section = self.s.get(key)
        if isinstance(section, dict):
            return section
        return {"measured": False, "why": self.t["no_section"]}

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

    # --- status and environment ----------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        states = [self.vectors_state(), *contract_states(self.s), self.parity_state()]
        states += [latency_state(self.latency_by_target().get(n, {})) for n in self.names]
        states += [_measured(self.later_section(key)) for key in LATER_SECTIONS]
        env = self.s.get("environment") or {}
        engines = []
        for name in self.names:
            info = (self.s.get("targets") or {}).get(name) or {}
            measured = bool(info.get("measured"))
            version = info.get("version")
            engines.append({"name": name, "role": self.role_of(name),
                            "kind": (info.get("config") or {}).get("kind") or info.get("kind") or MISSING,
                            "version": version or self.L(None if measured else False)})
        model = self.s.get("model") or {}
        return {
            "overall": combined_label(states, self.lang),
            "all_measured": all(s is True for s in states),
            "env": {
                "processor": env.get("processor") or self.L(None),
                "cpu_count": fmt(env.get("cpu_count"), "int"),
                "memory_gib": fmt(env.get("memory_gib"), "gib"),
                "gpu": env.get("gpu"),
                "platform": env.get("platform") or self.L(None),
                "python": env.get("python") or self.L(None),
                "embedswap": env.get("embedswap") or self.L(None),
            },
            "engines": engines,
            "model": {"spec": model.get("spec"), "served_name": model.get("served_name"),
                      "revision": model.get("revision"), "fingerprint": model.get("fingerprint") or self.L(None)},
        }

    def role_of(self, name: str) -> str:
        if name == self.legacy:
            return self.t["legacy_role"]
        return self.t["candidate_role"]

    # --- setup ---------------------------------------------------------------------------------------------------
    def setup(self) -> dict[str, Any]:
        targets = self.s.get("targets") or {}
        launches = []
        for name in self.names:
            info = targets.get(name) or {}
            config = info.get("config") or {}
            launches.append({
                "name": name, "role": self.role_of(name), "kind": config.get("kind") or info.get("kind") or MISSING,
                "state": bool(info.get("measured")), "label": self.L(bool(info.get("measured"))),
                "commands": fence("\n".join(info.get("commands") or []), "bash") if info.get("commands") else None,
                "url": config.get("url"), "note": esc(config.get("note")) if config.get("note") else None,
                "error": self.failure(name),
                "lock": config.get("lock"), "dtype": config.get("dtype"),
            })
        work = self.s.get("workload") or {}
        langs = _languages_of(self.s)
        lat = (self.s.get("latency") or {}).get("config") or {}
        resources_rows = []
        for name in self.names:
            info = targets.get(name) or {}
            if not info.get("measured"):
                resources_rows.append([code(name), self.nm(name)] + [self.L(False)] * 5)
                continue
            resources_rows.append([code(name), self.L(True), fmt(info.get("start_seconds"), "s"),
                                   _mib(info.get("rss_bytes")), self.peak_cell(name),
                                   _mib(info.get("rss_bytes_end")), fmt(info.get("measured_seconds"), "s")])
        t = self.t
        resources_table = md_table(
            [t["target"], t["label"], t["start_s"], t["rss_start"], t["rss_peak"], t["rss_end"], t["measured_s"]],
            resources_rows, ["l", "l", "r", "r", "r", "r", "r"])
        steps_rows = []
        for step, entry in (self.s.get("steps") or {}).items():
            error = str(entry.get("error") or "").strip()
            error = error.splitlines()[0] if error else ""  # a traceback stays in steps.json
            problems = "; ".join(entry.get("problems") or []) or error or entry.get("detail") or ""
            steps_rows.append([code(step), esc(entry.get("status")), esc(entry.get("updated")),
                               esc(problems) or MISSING])
        steps_table = md_table([t["step"], t["status"], t["updated"], t["problems"]], steps_rows, ["l"] * 4) \
            if steps_rows else None
        return {
            "label": combined_label([bool((targets.get(n) or {}).get("measured")) for n in self.names], self.lang),
            "launches": launches,
            "documents": fmt(work.get("documents"), "int"),
            "languages": ", ".join(f"{k} {fmt(v, 'int')}" for k, v in langs.items()) or MISSING,
            "queries": fmt(work.get("queries"), "int"),
            "batch_size": fmt(work.get("batch_size"), "int"),
            "repeats": fmt(work.get("repeats"), "int"),
            "latency": {k: fmt(lat.get(k), "raw") for k in ("sequential_requests", "concurrent_requests", "concurrency",
                                                            "repeats", "warmup_requests", "timeout_s", "sweep",
                                                            "sweep_requests", "sweep_repeats")},
            "resources_table": resources_table,
            "steps_table": steps_table,
            # which HTTP client timed the requests (captures made before it was recorded: none named)
            "latency_client": ", ".join(code(c) for c in dict.fromkeys(
                info.get("client") for info in self.latency_by_target().values() if isinstance(info, dict)
                and info.get("client"))),
            "sources": self.refs_for([f"captures/{n}/target.json" for n in self.names] +
                                     ["captures/environment.json", "steps.json"]),
        }

    # --- vectors -------------------------------------------------------------------------------------------------
    def vectors_state(self) -> bool:
        return _measured(self.s.get("vectors"))

    def vectors(self) -> dict[str, Any]:
        vectors = self.s.get("vectors") or {}
        by_target = vectors.get("by_target") or {}
        comparisons = vectors.get("comparisons") or {}
        t = self.t
        n_docs = (self.s.get("workload") or {}).get("documents")
        header = [t["item"]] + [f"{code(n)} ({self.role_of(n)}, "
                                f"{self.L(True) if _measured(by_target.get(n)) else self.nm(n)})"
                                for n in self.names]
        rows: list[list[str]] = []

        def row(title: str, cell: Callable[[str, dict[str, Any]], str]) -> None:
            cells = []
            for name in self.names:
                info = by_target.get(name) or {}
                cells.append(cell(name, info) if _measured(info) else self.L(False))
            rows.append([title, *cells])

        row(t["dimension"], lambda n, i: fmt(i.get("dimension"), "int"))
        row(t["first_l2"], lambda n, i: fmt((i.get("norm") or {}).get("first"), "norm"))
        row(t["token_total"].format(n=fmt(n_docs, "int")), lambda n, i: fmt(i.get("token_total"), "int"))
        if vectors.get("tokenizer_token_total") is not None:
            matches = {True: t["yes"], False: t["no"], None: MISSING}
            row(t["tokenizer_match"].format(n=fmt(vectors["tokenizer_token_total"], "int")),
                lambda n, i: matches[i.get("token_total_matches_tokenizer")])

        def cosine_cell(name: str, info: dict[str, Any]) -> str:
            if name == self.legacy:
                return f"{MISSING} ({t['reference']})"
            comparison = comparisons.get(name) or {}
            if not _measured(comparison):
                return self.L(False)
            c = comparison.get("cosine") or {}
            return " · ".join(fmt(c.get(k), "cos") for k in ("min", "median", "max"))

        row(t["cosine_mmm"], cosine_cell)
        row(t["repeat_min"], lambda n, i: fmt(i.get("repeat_min_cosine"), "cos"))
        row(t["index_order"], lambda n, i: t["yes"] if i.get("index_order_ok") else t["no"])
        table = md_table(header, rows)

        lang_table = None
        measured_comparisons = {n: c for n, c in comparisons.items() if _measured(c)}
        if measured_comparisons:
            langs = list(dict.fromkeys(l for c in measured_comparisons.values() for l in (c.get("by_language") or {})))
            lang_rows = []
            for lang in langs:
                cells = [code(lang)]
                count = None
                for name in self.candidates:
                    per = ((comparisons.get(name) or {}).get("by_language") or {}).get(lang)
                    if per is None:
                        cells.append(self.L(False))
                        continue
                    count = per.get("n", count)
                    cells.append(" · ".join(fmt(per.get(k), "cos") for k in ("min", "median", "max")))
                lang_rows.append([cells[0], fmt(count, "int"), *cells[1:]])
            lang_table = md_table([t["lang"], t["n"]] + [f"{code(n)}: {t['cosine_mmm']}" for n in self.candidates],
                                  lang_rows)
        worst = []
        for name in self.candidates:
            comparison = comparisons.get(name) or {}
            if _measured(comparison):
                worst.append({"name": name, "docs": ", ".join(
                    f"{code(w.get('doc_id'))} ({esc(w.get('lang'))}) {fmt(w.get('cosine'), 'cos')}"
                    for w in comparison.get("worst") or [])})
        why = [{"name": n, "why": esc(c.get("why"))} for n, c in comparisons.items() if not _measured(c)]
        why += [{"name": n, "why": esc(i.get("why"))} for n, i in by_target.items() if not _measured(i)]
        cos = vectors.get("cosine") or {}
        sources = [i.get("source") for i in by_target.values() if _measured(i) and i.get("source")]
        return {
            "state": self.vectors_state(),
            "label": self.L(self.vectors_state()),
            "table_label": combined_label([_measured(by_target.get(n)) for n in self.names], self.lang),
            "table": table,
            "lang_table": lang_table,
            "worst": worst,
            "why": why,
            "cos_min": fmt(cos.get("min"), "cos"), "cos_median": fmt(cos.get("median"), "cos"),
            "cos_max": fmt(cos.get("max"), "cos"),
            "figure": "cosine_by_language" if self.figures.get("cosine_by_language") else None,
            "sources": self.refs_for([f"captures/{n}/workload_requests.jsonl" for n in self.names], always=sources),
        }

    # --- contract ------------------------------------------------------------------------------------------------
    def side_cell(self, side: dict[str, Any] | None) -> str:
        if not side or not side.get("measured"):
            return self.L(False)
        status = side.get("status")
        if status == 0:
            return f"0 ({self.t['no_answer']})"
        if status != 200:
            return fmt(status, "raw") if isinstance(status, int) else esc(status)
        parts = ["200"]
        gap = LANG_MODULES[self.lang].UNIT_GAP  # 384차원 / 384 dims
        if side.get("dim") is not None:
            parts.append(f"{fmt(side['dim'], 'int')}{gap}{self.t['dims_unit']}")
        if side.get("prompt_tokens") is not None:
            parts.append(f"{fmt(side['prompt_tokens'], 'int')}{gap}{self.t['tokens_unit']}")
        if side.get("encoding") and side.get("encoding") != "float":
            parts.append(esc(side["encoding"]))
        return ", ".join(parts)

    def verdict_cell(self, verdict: dict[str, Any] | None) -> str:
        v = (verdict or {}).get("verdict")
        if not v:
            return self.L(False)
        cos = (verdict or {}).get("cosine")
        return f"{v} (cos {fmt(cos, 'cos4')})" if cos is not None and v != "same" else v

    def contract(self) -> dict[str, Any]:
        contract = self.s.get("contract")
        t = self.t
        answers, verdicts = contract_states(self.s)
        legend = [{"verdict": v, "text": t["verdicts"][v]} for v in VERDICT_ORDER]
        if not isinstance(contract, list):
            return {"state": False, "label": self.L(False), "why": esc((contract or {}).get("why")), "legend": legend,
                    "table": None, "details": [], "changes": [], "changes_done": "0", "changes_probed": False,
                    "counts": [], "answers_label": self.L(False),
                    "verdicts_label": self.L(False), "sources": MISSING}
        header = [t["probe"], self.column(self.legacy)]
        for name in self.candidates:
            header += [self.column(name), f"{t['verdict']} ({code(name)})"]
        rows = []
        details = []
        for row in contract:
            probe_cell = code(row.get("probe"))
            legacy_cell = self.side_cell((row.get("by_target") or {}).get(self.legacy))
            if row.get("path") and row["path"] != "/v1/embeddings":
                probe_cell += f" ({code('POST ' + row['path'])})"
            if row.get("compare_to"):  # the legacy server lacks the route: its answer to another request is used
                reference = t["compared_with"].format(probe=code(row["compare_to"]))
                legacy_cell += f"; {reference}: {self.side_cell(row.get('legacy'))}"
            cells = [probe_cell, legacy_cell]
            for name in self.candidates:
                verdict = (row.get("verdicts") or {}).get(name)
                cells += [self.side_cell((row.get("by_target") or {}).get(name)), self.verdict_cell(verdict)]
                v = (verdict or {}).get("verdict")
                if v and v != "same":
                    details.append({"probe": row.get("probe"), "description": esc(row.get("description")),
                                    "candidate": name, "verdict": v, "detail": esc((verdict or {}).get("detail"))})
            rows.append(cells)
        counts = []
        for name in self.candidates:
            found = [((r.get("verdicts") or {}).get(name) or {}).get("verdict") for r in contract]
            counted = [(v, sum(1 for f in found if f == v)) for v in VERDICT_ORDER]
            counts.append({"name": name, "total": len(found), "compared": sum(1 for f in found if f),
                           "differ": sum(1 for f in found if f and f != "same"),
                           "by_verdict": [{"verdict": v, "n": n} for v, n in counted if n],
                           "probes": {v: [r.get("probe") for r, f in zip(contract, found) if f == v
                                          # a retry loop is the candidate's doing only when it answered 5xx / nothing
                                          and (v != "retry-hazard" or _failed_status(r, name))]
                                      for v in VERDICT_ORDER}})
        not_compared = [r.get("probe") for r in contract
                        if any(not (v or {}).get("verdict") for v in (r.get("verdicts") or {}).values())]
        changes = self.changes_through_shim(client_changes(self.s, self.lang))
        return {
            "state": verdicts, "label": combined_label([answers, verdicts], self.lang),
            "answers_label": self.L(answers), "verdicts_label": self.L(verdicts),
            "why": None, "table": md_table(header, rows, ["l"] * len(header)), "legend": legend,
            "details": details, "changes": changes, "counts": counts,
            "changes_done": fmt(sum(1 for c in changes if c["shim_done"]), "int"),
            "changes_probed": any(c["shim"] is not None for c in changes),
            "not_compared": not_compared,
            "sources": self.refs_for([f"captures/{n}/probes.jsonl" for n in self.names]),
        }

    # --- the query instruction, three ways ----------------------------------------------------------------------
    def instruction(self) -> dict[str, Any]:
        section = self.s.get("instruction") or {}
        t = self.t["instruction"]
        if not _measured(section):
            return {"state": False, "label": self.L(False), "why": esc(section.get("why") or "no query captures"),
                    "table": None, "v2_table": None, "sources": MISSING}

        def cosines(spread: dict[str, Any] | None) -> str:
            spread = spread or {}
            return " · ".join(fmt(spread.get(k), "cos") for k in ("min", "median"))

        rows = []
        for row in section.get("rows") or []:
            if not row.get("measured"):
                variant = row.get("variant")
                rows.append([code(row.get("target")), t["variants"].get(variant, esc(variant)) if variant else MISSING,
                             self.L(False), MISSING, MISSING, MISSING, esc(row.get("why") or row.get("error"))])
                continue
            rows.append([code(row["target"]), t["variants"][row["variant"]], self.L(True),
                         fmt(row.get("prompt_tokens"), "int"), fmt(row.get("tokenizer_tokens"), "int"),
                         cosines(row.get("cosine_to_reference")),
                         t["readings"].get(row.get("reading") or "", MISSING)])
        n = fmt(section.get("queries"), "int")
        table = md_table([t["server"], t["request"], self.t["label"], t["tokens"].format(n=n), t["tokenizer"],
                          t["cosine"], t["reading"]], rows, ["l", "l", "l", "r", "r", "r", "l"])
        v2_rows = []
        for row in section.get("v2_embed") or []:
            status = row.get("status")
            v2_rows.append([code(row["target"]), fmt(status, "raw"),
                            fmt(row.get("prompt_tokens"), "int"), fmt(row.get("tokenizer_tokens"), "int"),
                            fmt(row.get("cosine_to_reference"), "cos"),
                            t["readings"].get(row.get("reading") or "", esc(row.get("error")) or MISSING)])
        v2_table = md_table([t["server"], t["status"], t["tokens_one"], t["tokenizer"],
                             t["cosine_one"], t["reading"]], v2_rows,
                            ["l", "r", "r", "r", "r", "l"]) if v2_rows else None
        sources = [r.get("source") for r in section.get("rows") or [] if r.get("measured")]
        sources += [r.get("source") for r in section.get("v2_embed") or []]
        reference = section.get("reference") or {}
        return {"state": True, "label": self.L(True), "why": None, "table": table, "v2_table": v2_table,
                "queries": n, "reference_target": reference.get("target"),
                "template": code((reference.get("template") or "").replace("\n", "\\n")),  # the newline, visibly
                "chat_template": section.get("chat_template"),
                "sources": self.refs_for(sources + ["captures/reference/tokenizer_counts.json"])}

    def column(self, name: str) -> str:
        """A table column header for one target: its name, with 'not measured: <error>' when it failed to start."""
        error = self.failure(name)
        return f"{code(name)} ({self.L(False)}: {error})" if error else code(name)

    # --- ranking -------------------------------------------------------------------------------------------------
    def ranking(self) -> dict[str, Any]:
        """Search ranking (nDCG@10, recall@5, top-5 overlap): legacy, address swap only, through the shim."""
        t = self.t
        section = self.later_section("ranking")
        meaningless = random_weights(self.s)
        empty = {"state": False, "meaningless": meaningless, "table": None, "findings": [], "why": [],
                 "definitions": t["ranking_defs"], "sources": MISSING, "queries": MISSING,
                 "tolerance": {"overlap": fmt(RANK_OVERLAP_MIN, "score"), "delta": fmt(RANK_DELTA_MAX, "score")}}
        if not _measured(section):
            return {**empty, "label": self.L(False), "top_why": esc(section.get("why"))}
        legacy = section.get("legacy") or {}
        by_candidate = section.get("by_candidate") or {}
        if not by_candidate and self.candidate:  # a summary with the primary candidate only
            deltas = section.get("deltas") or {}
            by_candidate = {self.candidate: {
                "measured": True, "naive": section.get("candidate_naive") or {},
                "shim": section.get("candidate_shim") or {},
                "deltas": {"naive": deltas.get("candidate_naive"), "shim": deltas.get("candidate_shim")}}}
        state_label = t["not_meaningful"] if meaningless else self.L(True)

        def cells(variant: dict[str, Any], deltas: dict[str, Any] | None, reference: bool) -> list[str]:
            if not _measured(variant):
                return [self.L(False)] * 6
            ref = f"{MISSING} ({t['reference']})"
            d = deltas or {}
            return [fmt(variant.get("ndcg_at_10"), "score"), ref if reference else fmt(d.get("ndcg_at_10"), "delta"),
                    fmt(variant.get("recall_at_5"), "score"), ref if reference else fmt(d.get("recall_at_5"), "delta"),
                    ref if reference else fmt(variant.get("top5_overlap"), "score"),
                    f"{fmt(variant.get('judged_queries'), 'int')} / {fmt(variant.get('queries'), 'int')}"]

        rows = [[esc(t["variants"]["legacy"]), code(self.legacy), t["queries_how"]["legacy"], state_label,
                 *cells(legacy, None, True)]]
        why = []
        findings = []
        for name in self.candidates:
            entry = by_candidate.get(name) or {"naive": {}, "shim": {}}
            deltas = entry.get("deltas") or {}
            for kind in ("naive", "shim"):
                variant = entry.get(kind) or {}
                measured = _measured(variant)
                if not measured:
                    reason = variant.get("why") or entry.get("why") or t["no_section"]
                    why.append({"name": name, "variant": t["variants"][kind], "why": esc(reason)})
                rows.append([esc(t["variants"][kind]), code(name), t["queries_how"][kind],
                             state_label if measured else self.nm(name), *cells(variant, deltas.get(kind), False)])
            if not meaningless:
                findings.append(self._ranking_finding(name, entry))
        header = [t["variant"], t["documents_of"], t["queries_as"], t["label"], t["ndcg"], t["d_ndcg"], t["recall"],
                  t["d_recall"], t["overlap"], t["judged"]]
        sources = []
        for variant in [legacy] + [(by_candidate.get(n) or {}).get(k) or {} for n in self.candidates
                                   for k in ("naive", "shim")]:
            if _measured(variant):
                for path in (variant.get("source") or {}).values():
                    sources.append(re.sub(r"\[\d+\]$", "", str(path)))
        measured_states = [True] + [_measured((by_candidate.get(n) or {}).get(k)) for n in self.candidates
                                    for k in ("naive", "shim")]
        label_text = t["not_meaningful"] if meaningless else combined_label(measured_states, self.lang)
        return {
            **empty, "state": True, "label": label_text, "top_why": None,
            "table": md_table(header, rows, ["l", "l", "l", "l"] + ["r"] * 6),
            "findings": findings, "why": why, "queries": fmt(legacy.get("queries"), "int"),
            "sources": self.refs_for([], always=list(dict.fromkeys(sources))),
        }

    def _ranking_finding(self, name: str, entry: dict[str, Any]) -> dict[str, Any]:
        t = self.t
        deltas = entry.get("deltas") or {}

        def line(kind: str) -> tuple[str | None, bool | None]:
            variant = entry.get(kind) or {}
            unchanged = ranking_unchanged(variant, deltas.get(kind))
            if unchanged is None:
                return None, None
            per_query = variant.get("per_query") or {}
            changed = sum(1 for q in per_query.values()
                          if isinstance(q, dict) and q.get("top5_overlap") is not None and q["top5_overlap"] < 1)
            d = deltas.get(kind) or {}
            text = t["rank_line"].format(
                state=t["rank_same"] if unchanged else t["rank_differs"],
                d_ndcg=fmt(d.get("ndcg_at_10"), "delta"), d_recall=fmt(d.get("recall_at_5"), "delta"),
                overlap=fmt(variant.get("top5_overlap"), "score"), changed=fmt(changed, "int") if per_query else MISSING,
                queries=fmt(len(per_query) or variant.get("queries"), "int"))
            short = t["rank_short"].format(state=t["rank_same"] if unchanged else t["rank_differs"],
                                           d_ndcg=fmt(d.get("ndcg_at_10"), "delta"),
                                           overlap=fmt(variant.get("top5_overlap"), "score"))
            shorts[kind] = short
            return text, unchanged

        shorts: dict[str, str] = {}
        naive, naive_same = line("naive")
        shim, shim_same = line("shim")
        decisions = t["rank_decision"]
        if shim_same is None:
            variant = entry.get("shim") or {}
            decision = decisions["shim_missing"].format(label=self.L(False),
                                                        why=esc(variant.get("why") or entry.get("why") or "—"))
        elif not shim_same:
            decision = decisions["reindex"]
        elif naive_same is False:
            decision = decisions["client"]
        elif naive_same is None:
            decision = decisions["shim_only"]
        else:
            decision = decisions["none"]
        return {"name": name, "naive": naive, "shim": shim, "decision": decision,
                "naive_short": shorts.get("naive"), "shim_short": shorts.get("shim"),
                "naive_same": naive_same, "shim_same": shim_same}

    # --- the client migration shim -------------------------------------------------------------------------------
    def shim_rows(self) -> list[dict[str, Any]]:
        section = self.s.get("shim")
        return (section.get("rows") or []) if isinstance(section, dict) else []

    def shimmed(self) -> list[str]:
        """Candidates probed through the shim (they have verdicts through it)."""
        rows = self.shim_rows()
        return [n for n in self.candidates
                if any(((r.get("verdicts") or {}).get(n) or {}).get("verdict") for r in rows)]

    def shim(self) -> dict[str, Any]:
        t = self.t
        section = self.later_section("shim")
        rows = self.shim_rows()
        shimmed = self.shimmed()
        empty = {"table": None, "per_candidate": [], "why": [], "sources": MISSING}
        if not rows or not shimmed:
            return {**empty, "state": False, "label": self.L(False),
                    "top_why": esc(section.get("why") or t["no_section"])}
        header = [t["probe"], code(self.legacy)]
        for name in self.candidates:
            header += [f"{self.column(name)}: {t['before_after']}", f"{code(name)}: {t['through_shim']}"]
        table_rows = []
        for row in rows:
            cells = [code(row.get("probe")), self.side_cell((row.get("by_target") or {}).get(self.legacy))]
            for name in self.candidates:
                if name not in shimmed:
                    cells += [self.L(False), self.L(False)]
                    continue
                before = ((row.get("naive_verdicts") or {}).get(name) or {}).get("verdict")
                after = (row.get("verdicts") or {}).get(name)
                cells += [f"{before or self.L(False)} → {self.verdict_cell(after)}",
                          self.side_cell((row.get("by_target") or {}).get(name))]
            table_rows.append(cells)
        per_candidate = []
        config = section.get("config") or {}
        for name in shimmed:
            closed, remaining, opened = [], [], []
            before_differ = after_differ = compared = 0
            for row in rows:
                probe = row.get("probe")
                before = ((row.get("naive_verdicts") or {}).get(name) or {}).get("verdict")
                after = ((row.get("verdicts") or {}).get(name) or {}).get("verdict")
                if after is None:
                    continue
                compared += 1
                before_differ += bool(before and before != "same")
                after_differ += after != "same"
                if before and before != "same" and after == "same":
                    rewrites = ((row.get("shim") or {}).get(name) or {}).get("rewrites") or []
                    closed.append({"probe": probe, "before": before, "rewrites": esc("; ".join(map(str, rewrites)))})
                elif after != "same":
                    remaining.append({"probe": probe, "verdict": after, "note": self._legacy_side(row, name)})
                    if before == "same":
                        opened.append(probe)
            settings = self._shim_settings(config.get(name))
            per_candidate.append({"name": name, "closed": closed, "remaining": remaining, "opened": opened,
                                  "before": fmt(before_differ, "int"), "after": fmt(after_differ, "int"),
                                  "compared": fmt(compared, "int"), "settings": settings})
        why = [{"name": n, "why": self.failure(n) or esc(t["not_probed"].format(name=n))}
               for n in self.candidates if n not in shimmed]
        sources = list((section.get("sources") or {}).values())
        return {
            "state": True, "top_why": None,
            "label": combined_label([n in shimmed for n in self.candidates], self.lang),
            "table": md_table(header, table_rows, ["l"] * len(header)), "per_candidate": per_candidate, "why": why,
            "sources": self.refs_for([f"captures/{n}/shim_config.json" for n in self.candidates], always=sources),
        }

    def _legacy_side(self, row: dict[str, Any], name: str) -> str | None:
        """A difference that remains because the legacy server failed the request while the candidate answered."""
        legacy = (row.get("by_target") or {}).get(self.legacy) or {}
        other = (row.get("by_target") or {}).get(name) or {}
        status = legacy.get("status")
        if isinstance(status, int) and (status == 0 or status >= 500) and other.get("status") == 200:
            return self.t["legacy_side"].format(status=fmt(status, "raw"))
        return None

    SHIM_SETTINGS = ("strip_dimensions", "prepend_query_instruction", "max_input_tokens", "model_override",
                     "non_retryable_statuses", "reject_empty_strings", "force_float", "drop_fields")

    def _shim_settings(self, config: dict[str, Any] | None) -> list[dict[str, str]]:
        """What the shim learned for one candidate (the settings with a recorded reason), reasons as captured."""
        if not isinstance(config, dict):
            return []
        reasons = config.get("reasons") or {}
        out = []
        keys = [k for k in self.SHIM_SETTINGS if k in reasons] + [k for k in reasons if k not in self.SHIM_SETTINGS]
        for key in keys:
            value = config.get(key)
            if isinstance(value, bool):
                shown = self.t["settings"]["true" if value else "false"]
            elif isinstance(value, (list, tuple)):
                shown = ", ".join(fmt(v, "raw") for v in value) or MISSING
            else:
                shown = fmt(value, "raw")
            out.append({"key": key, "value": esc(shown), "reason": esc(reasons.get(key))})
        return out

    def changes_through_shim(self, changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each client change with what the shim did about it: done (every probe of it answers 'same' through the
        shim), or what remains; None where no candidate of it was probed through the shim."""
        rows = {r.get("probe"): r for r in self.shim_rows()}
        shimmed = set(self.shimmed())
        out = []
        for change in changes:
            left = []
            probed = False
            for probe, candidate, _ in change["probes"]:
                if candidate not in shimmed:
                    continue
                after = (((rows.get(probe) or {}).get("verdicts") or {}).get(candidate) or {}).get("verdict")
                if after is None:
                    continue
                probed = True
                if after != "same":
                    note = self._legacy_side(rows[probe], candidate)
                    left.append(f"{code(probe)} → {code(candidate)}: {after}" + (f" ({note})" if note else ""))
            if not probed:
                shim_text = None
            elif left:
                shim_text = self.t["shim_left"].format(items="; ".join(left))
            else:
                shim_text = self.t["shim_done"]
            out.append({**change, "shim": shim_text, "shim_done": probed and not left})
        return out

    # --- latency -------------------------------------------------------------------------------------------------
    def latency_by_target(self) -> dict[str, Any]:
        return (self.s.get("latency") or {}).get("by_target") or {}

    def ablation_variants(self) -> dict[str, Any]:
        """The ablation's variants of the legacy server (its own row left out), by name."""
        ablation = self.s.get("ablation")
        rows = (ablation.get("by_target") or {}) if isinstance(ablation, dict) else {}
        return {n: r for n, r in rows.items() if n != self.legacy and isinstance(r, dict)}

    def concurrency(self) -> Any:
        for info in self.latency_by_target().values():
            if _measured(info) and isinstance(info.get("concurrent"), dict):
                return info["concurrent"].get("concurrency")
        return ((self.s.get("latency") or {}).get("config") or {}).get("concurrency")

    @staticmethod
    def _errors(info: dict[str, Any], sweep: bool = False) -> tuple[int, int]:
        """(failed, sent) over the article's two points, or over the sweep's points."""
        failed = total = 0
        for _, _, point in (figures_mod.sweep_points_of(info) if sweep else figures_mod.fixed_points_of(info)):
            failed += point.get("errors") or 0
            total += (point.get("requests_per_repeat") or 0) * (point.get("repeats") or 0)
        return failed, total

    def peak(self, name: str) -> tuple[int | None, str | None]:
        """(peak RSS bytes, why not) of one server during its latency runs."""
        info = self.latency_by_target().get(name) or self.ablation_variants().get(name) or {}
        if not _measured(info):
            return None, None
        value = info.get("rss_peak_bytes")
        if value:
            return int(value), None
        kind = (((self.s.get("targets") or {}).get(name) or {}).get("config") or {}).get("kind")
        if "rss_peak_bytes" not in info:
            return None, self.t["no_section"]
        return None, self.t["rss_unreadable_external" if kind == "external" else "rss_unreadable"]

    def peak_cell(self, name: str) -> str:
        value, why = self.peak(name)
        return _mib(value) if value else self.L(False)

    def _point_row(self, name: str, info: dict[str, Any], label_cell: str) -> list[str]:
        seq, conc = info.get("sequential") or {}, info.get("concurrent") or {}
        failed, total = self._errors(info)
        return [code(name), label_cell, fmt(seq.get("p50_ms"), "ms"), fmt(seq.get("p99_ms"), "ms"),
                fmt(conc.get("p50_ms"), "ms"), fmt(conc.get("p99_ms"), "ms"), fmt(conc.get("docs_per_s"), "rate"),
                fmt((conc.get("spread") or {}).get("docs_per_s"), "rate"),
                f"{fmt(failed, 'int')} / {fmt(total, 'int')}"]

    def latency(self) -> dict[str, Any]:
        t = self.t
        c = fmt(self.concurrency(), "raw")
        by_target = self.latency_by_target()
        header = [t["target"], t["label"], t["seq_p50"], t["seq_p99"], t["conc_p50"].format(c=c),
                  t["conc_p99"].format(c=c), t["conc_rate"].format(c=c), t["per_repeat"], t["errors"]]
        rows = []
        why = []
        unconfirmed = []
        for name in self.names:
            info = by_target.get(name) or {}
            state = latency_state(info)
            if state is False:
                rows.append([code(name), self.nm(name)] + [self.L(False)] * 7)
                why.append({"name": name, "why": esc(info.get("why"))})
                continue
            rows.append(self._point_row(name, info, self.L(state)))
            for run, point_name, point in figures_mod.latency_points_of(info):
                if point_state(point) is None:
                    n = (point.get("requests_per_repeat") or 0) * (point.get("repeats") or 0)
                    unconfirmed.append({"name": name, "point": point_name, "errors": fmt(point.get("errors"), "int"),
                                        "requests": fmt(n, "int"), "text": t["all_failed"].format(n=fmt(n, "int"))})
        table = md_table(header, rows, ["l", "l"] + ["r"] * 7)
        ratios = []
        legacy = by_target.get(self.legacy) or {}
        for name in self.candidates:
            info = by_target.get(name) or {}
            ratios.append(self._ratio(name, legacy, info))
        sweep = self.sweep()
        ablation = self.ablation()
        lock = self._lock(legacy, ablation)
        memory = []
        for name in self.names:
            value, reason = self.peak(name)
            if latency_state(by_target.get(name) or {}) is False:
                continue
            memory.append({"name": name, "mib": _mib(value) if value else None, "gib": fmt(value / 2**30, "gib")
                           if value else None, "why": esc(reason) if reason else None})
        sources = [i.get("source") for i in by_target.values() if _measured(i) and i.get("source")]
        states = [latency_state(by_target.get(n) or {}) for n in self.names]
        return {
            "state": states, "label": combined_label(states, self.lang),
            "table": table, "sweep": sweep, "sweep_table": sweep["table"], "why": why, "unconfirmed": unconfirmed,
            "ratios": ratios, "lock": lock, "lock_note": lock if lock and not lock["measured"] else None,
            "concurrency": c, "ablation": ablation, "memory": memory,
            "figure": "latency_points" if self.figures.get("latency_points") else None,
            "sources": self.refs_for([f"captures/{n}/latency_stats.json" for n in self.names], always=sources),
        }

    def sweep(self) -> dict[str, Any]:
        """The concurrency sweep (``by_target[name]["sweep"]``, a list of points): one row per server and point."""
        t = self.t
        rows = []
        why = []
        peaks = []
        states: list[bool | None] = []
        entries = [(n, self.latency_by_target().get(n) or {}, False) for n in self.names]
        entries += [(n, r, True) for n, r in self.ablation_variants().items()]
        for name, info, ablation in entries:
            shown = f"{code(name)} ({t['ablation_mark']})" if ablation else code(name)
            points = list(figures_mod.sweep_points_of(info))
            if not _measured(info):
                if not ablation:
                    rows.append([shown, MISSING, self.nm(name)] + [self.L(False)] * 4)
                    states.append(False)
                continue
            if info.get("sweep_note"):
                why.append({"name": name, "why": esc(t["sweep_skipped"].format(why=info["sweep_note"]))})
                rows.append([shown, MISSING, self.L(False)] + [self.L(False)] * 4)
                states.append(False)
                continue
            if points:
                states.append(True if any(point_state(p) is True for _, _, p in points) else None)
            best = None
            for _, point_name, point in sorted(points, key=lambda p: p[2].get("concurrency") or 0):
                n = (point.get("requests_per_repeat") or 0) * (point.get("repeats") or 0)
                rows.append([shown, esc(point_name), self.L(point_state(point)), fmt(point.get("p50_ms"), "ms"),
                             fmt(point.get("p99_ms"), "ms"), fmt(point.get("docs_per_s"), "rate"),
                             f"{fmt(point.get('errors'), 'int')} / {fmt(n, 'int')}"])
                rate = point.get("docs_per_s")
                if rate is not None and (best is None or rate > best[1]):
                    best = (point.get("concurrency"), rate)
            if best:
                peaks.append({"name": name, "ablation": ablation, "concurrency": fmt(best[0], "raw"),
                              "rate": fmt(best[1], "rate")})
        has_points = any(r[1] != MISSING for r in rows)
        table = md_table([t["target"], t["point"], t["label"], t["p50"], t["p99"], t["rate"], t["errors"]],
                         rows, ["l", "l", "l", "r", "r", "r", "r"]) if has_points or why else None
        if not has_points and not why:
            states = []
        return {"table": table, "why": why, "peaks": peaks,
                "label": combined_label(states, self.lang) if states else self.L(False),
                "has_points": has_points,
                "figure": "latency_sweep" if self.figures.get("latency_sweep") else None,
                "sources": self.refs_for([f"captures/{n}/latency_sweep_requests.jsonl" for n, _, _ in entries],
                                         always=[f"captures/{p['name']}/latency_stats.json" for p in peaks])}

    def ablation(self) -> dict[str, Any]:
        """The legacy server with its global lock against its variants (e.g. without it), latency only."""
        t = self.t
        section = self.later_section("ablation")
        rows_in = section.get("by_target") or {}
        if not rows_in:
            return {"state": False, "label": self.L(False), "why": esc(section.get("why")), "table": None,
                    "sources": MISSING, "row_why": []}
        c = fmt(self.concurrency(), "raw")
        header = [t["target"], t["lock"], t["label"], t["seq_p50"], t["seq_p99"], t["conc_p50"].format(c=c),
                  t["conc_p99"].format(c=c), t["conc_rate"].format(c=c), t["per_repeat"], t["errors"], t["rss_peak"]]
        rows = []
        row_why = []
        configs = (((self.s.get("experiment") or {}).get("config") or {}).get("targets") or {})
        for name, info in rows_in.items():
            lock = info.get("lock", (configs.get(name) or {}).get("lock"))
            lock_cell = MISSING if lock is None else t["on" if lock else "off"]
            state = latency_state(info)
            if state is False:
                rows.append([code(name), lock_cell, self.nm(name)] + [self.L(False)] * 8)
                row_why.append({"name": name, "why": esc(info.get("why"))})
                continue
            row = self._point_row(name, info, self.L(state))
            value = info.get("rss_peak_bytes")
            rows.append([row[0], lock_cell, *row[1:], _mib(value) if value else self.L(False)])
        states = [latency_state(r) for r in rows_in.values()]
        sources = [r.get("source") for r in rows_in.values() if _measured(r) and r.get("source")]
        return {
            "state": _measured(section), "label": combined_label(states, self.lang), "why": esc(section.get("why")),
            "table": md_table(header, rows, ["l", "l", "l"] + ["r"] * 8), "row_why": row_why,
            "sources": self.refs_for([], always=sources),
        }

    def _ratio(self, name: str, legacy: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
        def value(entry: dict[str, Any], run: str, key: str) -> float | None:
            return (entry.get(run) or {}).get(key) if _measured(entry) else None

        out: dict[str, Any] = {"name": name}
        for key, run, field in (("seq", "sequential", "p50_ms"), ("conc", "concurrent", "docs_per_s"),
                                ("conc_p50", "concurrent", "p50_ms")):
            a, b = value(legacy, run, field), value(info, run, field)
            out[f"{key}_legacy"] = fmt(a, "rate" if field == "docs_per_s" else "ms")
            out[f"{key}_candidate"] = fmt(b, "rate" if field == "docs_per_s" else "ms")
            out[f"{key}_ratio"] = fmt(b / a, "ratio") if a and b is not None else None
        out["complete"] = out["seq_ratio"] is not None and out["conc_ratio"] is not None
        return out

    def _lock(self, legacy: dict[str, Any], ablation: dict[str, Any]) -> dict[str, Any] | None:
        """The article's reading of the concurrent gap (one global lock): measured when the lock ablation ran (the
        legacy server with the lock against a variant without it), else an estimate that stays unconfirmed."""
        section = self.later_section("ablation")
        rows = section.get("by_target") or {}
        base = rows.get(self.legacy) or {}
        variants = [(n, r) for n, r in rows.items()
                    if n != self.legacy and r.get("lock") is False and latency_state(r) is True]
        if _measured(section) and base.get("lock") is True and latency_state(base) is True and variants:
            return self._lock_measured(base, variants)
        estimate = self._lock_note(legacy)
        if estimate is None:
            return None
        why = section.get("why") or next((r.get("why") for r in rows.values() if r.get("why")), None)
        return {**estimate, "measured": False, "ablation_label": ablation["label"],
                "ablation_why": esc(why) if why else None}

    def _lock_measured(self, base: dict[str, Any], variants: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        by_target = self.latency_by_target()
        lock_conc = base.get("concurrent") or {}
        lock_seq = base.get("sequential") or {}
        out = []
        for name, row in variants:
            conc = row.get("concurrent") or {}
            seq = row.get("sequential") or {}
            lock_rate, free_rate = lock_conc.get("docs_per_s"), conc.get("docs_per_s")
            shares = []
            for candidate in self.candidates:
                info = by_target.get(candidate) or {}
                rate = (info.get("concurrent") or {}).get("docs_per_s") if _measured(info) else None
                share = None
                if rate is None or lock_rate is None or free_rate is None:
                    case = "missing"
                elif rate > lock_rate:
                    share = (free_rate - lock_rate) / (rate - lock_rate)
                    case = "all" if share >= 1 else "part" if share >= 0 else "none"
                else:
                    case = "no_advantage"
                shares.append({"name": candidate, "rate": fmt(rate, "rate"), "case": case,
                               "share": fmt(share, "pct"), "rest": fmt(None if share is None else 1 - share, "pct")})
            out.append({
                "name": name,
                "lock_p50": fmt(lock_conc.get("p50_ms"), "ms"), "free_p50": fmt(conc.get("p50_ms"), "ms"),
                "lock_seq": fmt(lock_seq.get("p50_ms"), "ms"), "free_seq": fmt(seq.get("p50_ms"), "ms"),
                "lock_rate": fmt(lock_rate, "rate"), "free_rate": fmt(free_rate, "rate"),
                "rate_ratio": fmt(free_rate / lock_rate, "ratio") if lock_rate and free_rate is not None else MISSING,
                "p50_ratio": fmt(conc.get("p50_ms") / lock_conc.get("p50_ms"), "ratio")
                if lock_conc.get("p50_ms") and conc.get("p50_ms") is not None else MISSING,
                "shares": shares,
            })
        return {"measured": True, "label": self.L(True), "variants": out,
                "concurrency": fmt(lock_conc.get("concurrency"), "raw")}

    def _lock_note(self, legacy: dict[str, Any]) -> dict[str, Any] | None:
        """The article's reading of the concurrent gap (one global lock) as an estimate: 미확인 unless tested."""
        config = (((self.s.get("targets") or {}).get(self.legacy) or {}).get("config") or {})
        if config.get("kind") != "legacy" or not config.get("lock") or latency_state(legacy) is not True:
            return None
        seq = (legacy.get("sequential") or {}).get("p50_ms")
        conc = (legacy.get("concurrent") or {}).get("p50_ms")
        if not seq or conc is None:
            return None
        return {"factor": fmt(conc / seq, "ratio"), "seq": fmt(seq, "ms"), "conc": fmt(conc, "ms"),
                "label": self.L(None)}

    # --- parity --------------------------------------------------------------------------------------------------
    def parity_state(self) -> bool:
        return _measured(self.s.get("parity"))

    def parity(self) -> dict[str, Any]:
        parity = self.s.get("parity") or {}
        t = self.t

        def cos_cell(row: dict[str, Any], key: str) -> str:
            value = row.get(key)
            if value is None and row.get("non_finite"):
                return t["non_finite"].format(n=fmt(row.get("non_finite"), "int"))
            return fmt(value, "cos")

        def kind_cell(source: Any) -> str:
            if not source:
                return MISSING
            return t["kind_offline"] if str(source).startswith("captures/parity/backends/") else t["kind_server"]

        rows = []
        worst = []
        for row in parity.get("rows") or []:
            rows.append([code(row.get("backend")), kind_cell(row.get("source")), esc(row.get("dtype")),
                         esc(row.get("device")), esc(row.get("modality")), fmt(row.get("n"), "int"),
                         cos_cell(row, "cos_min"), cos_cell(row, "cos_median"), cos_cell(row, "cos_max"),
                         fmt(row.get("threshold"), "raw"), t["pass"] if row.get("pass") else t["fail"]])
            worst.append({"name": row.get("backend"), "docs": ", ".join(
                f"{code(w.get('id'))} {fmt(w.get('cosine'), 'cos')}" for w in row.get("worst") or [])})
        not_run = []
        for entry in parity.get("not_run") or []:
            name = entry.get("backend")
            error = self.failure(name) if name in self.names else None
            why = esc(entry.get("why")) + (f" ({error})" if error else "")
            not_run.append({"name": name, "why": why})
            rows.append([code(name), t["kind_server"] if name in self.names else t["kind_offline"],
                         self.nm(name) if error else self.L(False)] + [self.L(False)] * 8)
        multimodal = parity.get("multimodal") or {}
        thresholds = parity.get("thresholds") or {}
        if multimodal and not _measured(multimodal) and multimodal.get("records"):
            rows.append([esc(t["text_image"]), MISSING, MISSING, MISSING, "text+image",
                         fmt(multimodal.get("records"), "int")] + [self.L(False)] * 3
                        + [fmt(multimodal.get("threshold", thresholds.get("multimodal")), "raw"), self.L(False)])
        table = md_table([t["backend"], t["source_kind"], t["dtype"], t["device"], t["modality"], t["n"],
                          t["cos_min"], t["cos_median"], t["cos_max"], t["threshold"], t["pass"]], rows,
                         ["l", "l", "l", "l", "l", "r", "r", "r", "r", "r", "c"]) if rows else None
        gate = parity.get("pass")
        sources = [r.get("source") for r in parity.get("rows") or [] if r.get("source")]
        return {
            "state": self.parity_state(), "label": self.L(self.parity_state()), "why": esc(parity.get("why")),
            "table": table, "worst": worst,
            "gate": None if gate is None else (t["pass"] if gate else t["fail"]), "gate_passed": gate,
            "thresholds": {k: fmt(v, "raw") for k, v in thresholds.items()},
            "not_run": not_run,
            "reference": esc(parity.get("reference")) if parity.get("reference") else None,
            "multimodal": {"state": _measured(multimodal) if multimodal else False,
                           "label": self.L(_measured(multimodal) if multimodal else False),
                           "records": fmt(multimodal.get("records"), "int") if multimodal.get("records") else None,
                           "threshold": fmt(multimodal.get("threshold"), "raw")
                           if multimodal.get("threshold") is not None else None,
                           "why": esc(multimodal.get("why") or parity.get("why"))},
            "figure": "parity_backends" if self.figures.get("parity_backends") else None,
            "sources": self.refs_for(["captures/parity/rows.json"],
                                     always=(["captures/parity/rows.json"] if self.parity_state() else [])
                                     + sources),
        }

    # --- the article's figures beside this run's -----------------------------------------------------------------
    def article_comparison(self) -> dict[str, Any] | None:
        a = self.article
        if not a:
            return None
        t = self.t
        env = a.get("environment") or {}
        vectors = self.s.get("vectors") or {}
        by_target = vectors.get("by_target") or {}
        cand = self.candidate
        comparison = (vectors.get("comparisons") or {}).get(cand) or {}

        def mine(name: str, key: str, kind: str) -> str:
            info = by_target.get(name) or {}
            if not _measured(info):
                return self.L(False)
            value = (info.get("norm") or {}).get("first") if key == "first_l2" else info.get(key)
            return fmt(value, kind)

        av = a.get("vectors") or {}
        cos_run = comparison.get("cosine") or {} if _measured(comparison) else None
        vec_rows = [
            [t["dimension"], fmt(av["legacy"]["dimension"], "int"), fmt(av["candidate"]["dimension"], "int"),
             mine(self.legacy, "dimension", "int"), mine(cand, "dimension", "int")],
            [t["first_l2"], fmt(av["legacy"]["first_l2"], "norm"), fmt(av["candidate"]["first_l2"], "norm"),
             mine(self.legacy, "first_l2", "norm"), mine(cand, "first_l2", "norm")],
            [t["token_total"].format(n=f"{fmt(a['workload']['documents'], 'int')} / "
                                       f"{fmt((self.s.get('workload') or {}).get('documents'), 'int')}"),
             fmt(av["legacy"]["token_total"], "int"), fmt(av["candidate"]["token_total"], "int"),
             mine(self.legacy, "token_total", "int"), mine(cand, "token_total", "int")],
            [t["cosine_mmm"], MISSING, " · ".join(fmt(av["cosine"][k], "cos4") for k in ("min", "median", "max")),
             MISSING, " · ".join(fmt(cos_run.get(k), "cos4") for k in ("min", "median", "max"))
             if cos_run is not None else self.L(False)],
        ]
        side_header = [t["item"], t["article_legacy"], t["article_candidate"],
                       t["run_side"].format(name=code(self.legacy)), t["run_side"].format(name=code(cand))]
        vec_table = md_table(side_header, vec_rows)

        contract = self.s.get("contract") if isinstance(self.s.get("contract"), list) else []
        by_probe = {r.get("probe"): r for r in contract}
        contract_rows = []
        for entry in a.get("contract") or []:
            run = by_probe.get(entry["probe"]) or {}
            sides = run.get("by_target") or {}
            contract_rows.append([
                f"{esc(entry['request'])} ({code(entry['probe'])})", esc(entry["legacy"][self.lang]),
                esc(entry["candidate"][self.lang]),
                self.side_cell(sides.get(self.legacy)) if run else self.L(False),
                self.side_cell(sides.get(cand)) if run else self.L(False),
                self.verdict_cell((run.get("verdicts") or {}).get(cand)) if run else self.L(False),
            ])
        contract_table = md_table([t["request"], t["article_legacy"], t["article_candidate"],
                                   t["run_side"].format(name=code(self.legacy)), t["run_side"].format(name=code(cand)),
                                   f"{t['verdict']} ({t['run_side'].format(name=code(cand))})"],
                                  contract_rows, ["l"] * 6)

        al = a.get("latency") or {}
        ac = fmt(al.get("concurrency"), "raw")
        c = fmt(self.concurrency(), "raw")
        header = [t["target"], t["seq_p50"], t["seq_p99"], t["conc_p50"].format(c=f"{ac}/{c}" if ac != c else c),
                  t["conc_p99"].format(c=f"{ac}/{c}" if ac != c else c),
                  t["conc_rate"].format(c=f"{ac}/{c}" if ac != c else c), t["per_repeat"], t["errors"]]
        lat_rows = []
        for key, name in (("legacy", t["article_legacy"]), ("candidate", t["article_candidate"])):
            v = al.get(key) or {}
            lat_rows.append([name, fmt(v.get("seq_p50_ms"), "ms"), fmt(v.get("seq_p99_ms"), "ms"),
                             fmt(v.get("conc_p50_ms"), "ms"), fmt(v.get("conc_p99_ms"), "ms"),
                             fmt(v.get("conc_docs_per_s"), "rate"), fmt(v.get("docs_per_s_per_repeat"), "rate"),
                             fmt(v.get("errors"), "int")])
        by_target_lat = self.latency_by_target()
        for name in (self.legacy, cand):
            info = by_target_lat.get(name) or {}
            label_name = t["run_side"].format(name=code(name))
            if latency_state(info) is False:
                lat_rows.append([label_name] + [self.L(False)] * 7)
                continue
            seq, conc = info.get("sequential") or {}, info.get("concurrent") or {}
            failed, total = self._errors(info)
            lat_rows.append([label_name, fmt(seq.get("p50_ms"), "ms"), fmt(seq.get("p99_ms"), "ms"),
                             fmt(conc.get("p50_ms"), "ms"), fmt(conc.get("p99_ms"), "ms"),
                             fmt(conc.get("docs_per_s"), "rate"),
                             fmt((conc.get("spread") or {}).get("docs_per_s"), "rate"),
                             f"{fmt(failed, 'int')} / {fmt(total, 'int')}"])
        lat_table = md_table(header, lat_rows, ["l"] + ["r"] * 7)
        q = a.get("query_instruction") or {}
        return {
            "date": env.get("date"), "hardware": (env.get("hardware") or {}).get(self.lang), "model": env.get("model"),
            "dynamo": env.get("dynamo"), "vllm": env.get("vllm"), "kubernetes": env.get("kubernetes"),
            "image": env.get("image"), "legacy": (env.get("legacy") or {}).get(self.lang),
            "candidate_desc": (env.get("candidate") or {}).get(self.lang),
            "gpu_memory": {k: fmt(v, "raw") for k, v in (env.get("gpu_memory_gb") or {}).items()},
            "command": fence(env.get("command", ""), "bash"),
            "workload": {k: fmt(v, "raw") for k, v in (a.get("workload") or {}).items() if not isinstance(v, list)},
            "vectors_table": vec_table, "contract_table": contract_table, "latency_table": lat_table,
            "vectors_note": esc((av.get("note") or {}).get(self.lang) if isinstance(av.get("note"), dict)
                                else av.get("note")),
            "query_cos_ignored": fmt(q.get("cosine_with_instruction_ignored"), "raw"),
            "query_cos_plain": fmt(q.get("cosine_without_instruction"), "raw"),
            "ratios": {k: fmt(v, "raw") for k, v in (al.get("published_ratios") or {}).items()},
            "concurrency_differs": ac != c, "article_concurrency": ac, "concurrency": c,
            "model_differs": (self.s.get("model") or {}).get("spec") != env.get("model"),
            "memory": {role: self._gib_or_label(name) for role, name in (("legacy", self.legacy), ("candidate", cand))},
            "source": esc(a.get("source")),
        }

    def _gib_or_label(self, name: str) -> str:
        value, _ = self.peak(name)
        return f"{fmt(value / 2**30, 'gib')} GiB" if value else self.L(False)

    # --- what was not measured / unconfirmed ---------------------------------------------------------------------
    def gaps(self, latency: dict[str, Any], contract: dict[str, Any], parity: dict[str, Any],
             ranking: dict[str, Any], shim: dict[str, Any]) -> dict[str, Any]:
        sections = self.t["sections"]
        t = self.t
        not_measured = []
        for name in self.names:  # a server that failed to start first: everything else of it follows from that
            error = self.failure(name)
            if error:
                not_measured.append({"section": sections["targets"], "path": name, "why": error})
        for key in LATER_SECTIONS:
            if not isinstance(self.s.get(key), dict):
                not_measured.append({"section": sections[key], "path": "", "why": t["no_section"]})
        not_measured += [{"section": sections.get(i["section"], i["section"]), "path": i["path"], "why": esc(i["why"])}
                         for i in not_measured_items(self.s) if (i["section"], i["path"]) != ("parity", "multimodal")]
        for entry in latency["sweep"]["why"]:
            not_measured.append({"section": sections["latency"], "path": f"{entry['name']}.sweep", "why": entry["why"]})
        for entry in latency["memory"]:
            if entry["why"]:
                not_measured.append({"section": sections["latency"], "path": f"{entry['name']}.rss_peak_bytes",
                                     "why": entry["why"]})
        if shim["state"]:  # a candidate left out while another one was probed through the shim
            for entry in shim["why"]:
                not_measured.append({"section": sections["shim"], "path": entry["name"], "why": entry["why"]})
        for entry in parity["not_run"]:
            not_measured.append({"section": sections["parity"], "path": f"not_run.{entry['name']}",
                                 "why": entry["why"]})
        unconfirmed = []
        for entry in latency["unconfirmed"]:
            unconfirmed.append({"section": sections["latency"], "path": f"{entry['name']}.{entry['point']}",
                                "why": entry["text"]})
        for engine in self.status()["engines"]:
            info = (self.s.get("targets") or {}).get(engine["name"]) or {}
            if info.get("measured") and not info.get("version"):
                unconfirmed.append({"section": sections["targets"], "path": f"{engine['name']}.version",
                                    "why": LANG_MODULES[self.lang].VERSION})
        return {"not_measured": not_measured, "unconfirmed": unconfirmed,
                "not_compared": contract.get("not_compared") or [], "multimodal": parity["multimodal"],
                "ranking_meaningless": ranking["meaningless"] and ranking["state"],
                "mixed_index": ranking["state"] and not ranking["meaningless"],
                "lock_note": latency["lock_note"]}

    def build(self) -> dict[str, Any]:
        status = self.status()
        setup = self.setup()
        vectors = self.vectors()
        ranking = self.ranking()
        contract = self.contract()
        instruction = self.instruction()
        shim = self.shim()
        latency = self.latency()
        parity = self.parity()
        article = self.article_comparison()
        gaps = self.gaps(latency, contract, parity, ranking, shim)
        self.ref("summary.json", always=True)
        return {
            "lang": self.lang, "L": {"measured": self.L(True), "not_measured": self.L(False),
                                     "unconfirmed": self.L(None), "not_meaningful": self.t["not_meaningful"]},
            "title": self.title,
            "experiment": {**dict.fromkeys(("name", "date", "description", "folder", "attempt"), ""),
                           **(self.s.get("experiment") or {})},
            "generated": self.s.get("generated"),
            "legacy": self.legacy, "candidate": self.candidate, "candidates": self.candidates, "names": self.names,
            "status": status, "setup": setup, "vectors": vectors, "ranking": ranking, "contract": contract,
            "instruction": instruction, "shim": shim, "latency": latency, "parity": parity, "article": article, "gaps": gaps,
            "references": self.refs, "figures": self.figures, "code": code, "esc": esc,
            "thresholds": parity["thresholds"],
        }


# --- rendering ---------------------------------------------------------------------------------------------------
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("embedswap", "templates"),
        autoescape=lambda name: bool(name and name.endswith(".html.j2")),
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
    )
    env.filters["fmt"] = fmt
    env.filters["code"] = code
    env.filters["esc"] = esc
    return env


def load_article() -> dict[str, Any]:
    """The article's published figures (seed 000), kept as data in embedswap/data/article_000.json."""
    text = resources.files("embedswap").joinpath("data/article_000.json").read_text(encoding="utf-8")
    return json.loads(text)


def render_markdown(summary: dict[str, Any], lang: str = "ko", figures: dict[str, bool] | None = None,
                    manifest: dict[str, Any] | None = None, attempt_dir: Path | None = None,
                    title: str | None = None, article: dict[str, Any] | None = None) -> str:
    """The report of one summary in one language, as markdown (figures referenced as figures/<name>.png)."""
    if lang not in LANGUAGES:
        raise ReportError(f"no report template for language '{lang}' (known: {', '.join(LANGUAGES)})")
    figures = figures if figures is not None else {}
    context = _Context(summary, lang, figures, article if article is not None else load_article(), manifest,
                       attempt_dir, title).build()
    text = _environment().get_template(f"report.{lang}.md.j2").render(**context)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans KR","Apple SD Gothic Neo","Malgun Gothic",sans-serif;}
html:lang(ja) body{font-family:system-ui,-apple-system,"Noto Sans JP","Hiragino Sans","Yu Gothic","Meiryo",sans-serif;}
html:lang(zh) body{font-family:system-ui,-apple-system,"Noto Sans SC","PingFang SC","Microsoft YaHei",sans-serif;}
body{
max-width:1100px;margin:2rem auto;padding:0 1rem;line-height:1.6;color:#1b1b1f;background:#fff}
h1{font-size:1.7rem;margin-top:1.2rem}h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2.2rem}
table{border-collapse:collapse;margin:.8rem 0;font-size:.88rem;display:block;overflow-x:auto}
th,td{border:1px solid #ccc;padding:.3rem .55rem;vertical-align:top}th{background:#f3f4f6}
tr:nth-child(even) td{background:#fafafa}
code{background:#f3f4f6;padding:.05rem .25rem;border-radius:3px;font-size:.9em}
pre{background:#f6f8fa;padding:.8rem;overflow-x:auto;border-radius:4px;white-space:pre-wrap;word-break:break-all}
pre code{background:none;padding:0}
img{max-width:100%;height:auto;border:1px solid #eee}
blockquote{border-left:4px solid #d0d7de;margin:0;padding:.2rem 1rem;color:#444;background:#fafbfc}
nav.langs{font-size:.85rem;color:#555}nav.langs a{margin-right:.6rem}
footer{margin-top:3rem;font-size:.8rem;color:#666;border-top:1px solid #eee;padding-top:.6rem}
"""


def markdown_to_html(text: str, lang: str, title: str, images: dict[str, bytes] | None = None,
                     languages: list[str] | None = None, footer: str = "") -> str:
    """A self-contained HTML page: inline CSS, figures as base64 data URIs, no external asset."""
    body = markdown_lib.markdown(text, extensions=["tables", "fenced_code"], output_format="html")
    for name, data in (images or {}).items():
        uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        body = body.replace(f'src="figures/{name}.png"', f'src="{uri}"')
    body = re.sub(r'src="figures/[^"]*"', 'src=""', body)  # a figure that was not drawn: never a dangling link
    page = _environment().get_template("report.html.j2").render(
        lang=lang, title=title, body=body, css=CSS, languages=languages or [], footer=footer)
    return page


def _png(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    return buffer.getvalue()


def draw_figures(summary: dict[str, Any]) -> dict[str, bytes]:
    """PNG bytes of every figure that has data (a figure whose data was not measured is left out)."""
    out = {}
    for name, function in figures_mod.FIGURES.items():
        fig = function(summary)
        if fig is not None:
            out[name] = _png(fig)
    return out


def _write(path: Path, data: bytes | str) -> Path:
    atomic_write_bytes(path, data.encode("utf-8") if isinstance(data, str) else data, overwrite=True)
    path.chmod(0o644)  # a report is for reading (the atomic writer's temp file is private)
    return path


def headline(summary: dict[str, Any]) -> dict[str, Any]:
    """The numbers the index shows, copied from the summary (nothing computed)."""
    roles = summary.get("roles") or {}
    candidate = roles.get("candidate")
    vectors = summary.get("vectors") or {}
    comparison = (vectors.get("comparisons") or {}).get(candidate) or {}
    lat = ((summary.get("latency") or {}).get("by_target") or {}).get(candidate) or {}
    seq = (lat.get("sequential") or {}) if _measured(lat) else {}
    conc = (lat.get("concurrent") or {}) if _measured(lat) else {}
    parity = summary.get("parity") or {}
    return {
        "candidate": candidate,
        "legacy": roles.get("legacy"),
        "cosine_min": (comparison.get("cosine") or {}).get("min") if _measured(comparison) else None,
        "cosine_measured": _measured(comparison),
        "candidate_seq_p50_ms": seq.get("p50_ms"),
        "candidate_conc_docs_per_s": conc.get("docs_per_s"),
        "concurrency": conc.get("concurrency"),
        "latency_state": latency_state(lat),
        "parity_pass": parity.get("pass") if _measured(parity) else None,
    }


def _report_languages(experiment_dir: Path) -> tuple[list[str], str | None]:
    try:
        config = load_experiment(experiment_dir).report
    except ConfigError:
        config = ReportConfig()  # an old experiment.yaml that no longer validates still gets its report
    return list(config.languages), config.title


def render_report(experiment_dir: Path, attempt: str = "") -> dict[str, Path]:
    """Render the report of one attempt (default: the newest) from its summary.json.

    Writes into ``embedswap.paths.report_dir(experiment_dir)``: report.<lang>.md / .html for each language of
    experiment.yaml's ``report.languages``, report.md / report.html (copies of the first language), figures/*.png
    and report.json (headline numbers + the summary's path). Reads no capture; when the report folder sits in a
    ``reports/`` folder, the index there is refreshed too. Returns every written file by its name in the folder.
    """
    experiment_dir = Path(experiment_dir).resolve()
    chosen = open_attempt(experiment_dir, attempt)
    if not chosen.summary_path.exists():
        raise ReportError(f"{chosen.summary_path} does not exist: attempt {chosen.name} has no summary yet. Run a "
                          "step of the experiment (any step ends by writing summary.json), then render again.")
    summary = json.loads(chosen.summary_path.read_text(encoding="utf-8"))
    manifest_path = chosen.path / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else None
    languages, title = _report_languages(experiment_dir)
    out = report_dir(experiment_dir)
    figure_dir = out / "figures"
    figure_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}

    images = draw_figures(summary)
    for name in figures_mod.FIGURES:
        path = figure_dir / f"{name}.png"
        if name in images:
            written[f"figures/{name}.png"] = _write(path, images[name])
        elif path.exists():
            path.unlink()  # a figure of an earlier render whose data is no longer measured
    drawn = {name: name in images for name in figures_mod.FIGURES}
    article = load_article()
    for lang in languages:
        text = render_markdown(summary, lang, drawn, manifest, chosen.path, title, article)
        page_title = _page_title(text, summary)
        written[f"report.{lang}.md"] = _write(out / f"report.{lang}.md", text)
        html = markdown_to_html(text, lang, page_title, images, languages,
                                footer=f"embedswap · summary {summary.get('generated', '')} · {chosen.name}")
        written[f"report.{lang}.html"] = _write(out / f"report.{lang}.html", html)
    first = languages[0]
    for suffix in ("md", "html"):
        target = out / f"report.{suffix}"
        _write(target, (out / f"report.{first}.{suffix}").read_bytes())
        written[f"report.{suffix}"] = target
    try:
        summary_ref = str(chosen.summary_path.relative_to(out.parent.parent))
    except ValueError:
        summary_ref = str(chosen.summary_path)
    report_json = {
        "experiment": summary.get("experiment") or {},
        "model": {k: (summary.get("model") or {}).get(k) for k in ("spec", "served_name", "fingerprint", "revision")},
        "summary_path": summary_ref,
        "summary_generated": summary.get("generated"),
        "rendered": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "languages": languages,
        "headline": headline(summary),
    }
    written[REPORT_JSON] = _write(out / REPORT_JSON, json_bytes(report_json))
    if out.parent.name == "reports":
        written.update({f"../{k}": v for k, v in render_index(out.parent).items()})
    return written


def _page_title(text: str, summary: dict[str, Any]) -> str:
    match = re.search(r"^# (.+)$", text, flags=re.M)
    if match:
        return match.group(1).replace("`", "").strip()
    return f"embedswap report {(summary.get('experiment') or {}).get('folder', '')}"


def render_index(reports_root: Path) -> dict[str, Path]:
    """reports/index.md and index.html: every report folder (one with report.json) with its headline figures."""
    reports_root = Path(reports_root).resolve()
    reports_root.mkdir(parents=True, exist_ok=True)
    entries = []
    for path in sorted(reports_root.glob(f"*/{REPORT_JSON}")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        entries.append((path.parent.name, data))
    entries.sort(key=lambda e: (str((e[1].get("experiment") or {}).get("date", "")), e[0]), reverse=True)

    def cell(value: Any, kind: str, state: bool | None) -> str:
        if value is not None:
            return fmt(value, kind)
        return f"{label(state, 'en')} ({label(state, 'ko')})"

    rows = []
    for folder, data in entries:
        h = data.get("headline") or {}
        exp = data.get("experiment") or {}
        model = data.get("model") or {}
        links = " · ".join(f"[{lang}]({folder}/report.{lang}.html)" for lang in data.get("languages") or [])
        gate = h.get("parity_pass")
        rows.append([
            esc(exp.get("date")), f"{code(folder)} {links}", esc(model.get("spec")),
            f"{code(h.get('candidate'))} vs {code(h.get('legacy'))}",
            cell(h.get("cosine_min"), "cos", False),
            cell(h.get("candidate_seq_p50_ms"), "ms", False if h.get("latency_state") is False else None),
            cell(h.get("candidate_conc_docs_per_s"), "rate", False if h.get("latency_state") is False else None)
            + (f" (c{fmt(h.get('concurrency'), 'raw')})" if h.get("candidate_conc_docs_per_s") is not None else ""),
            cell(None if gate is None else ("pass" if gate else "fail"), "raw", False),
            f"{code(exp.get('attempt'))}",
        ])
    header = ["Date", "Report", "Model", "Candidate vs legacy", "Cosine min (candidate vs legacy)",
              "Candidate seq p50 (ms)", "Candidate concurrent docs/s", "Parity gate", "Attempt"]
    lines = ["# embedswap reports", "",
             "Every experiment report in this folder, newest first. Figures are copied from each attempt's "
             "summary.json (report.json in the report folder); a value the run did not produce is labelled "
             "*not measured (미실측)* or *unconfirmed (미확인)*.", ""]
    lines.append(md_table(header, rows, ["l", "l", "l", "l", "r", "r", "r", "c", "l"]) if rows
                 else "No report yet: render one with `embedswap.report.render_report(experiment_dir)`.")
    text = "\n".join(lines) + "\n"
    out = {"index.md": _write(reports_root / "index.md", text)}
    html = markdown_to_html(text, "en", "embedswap reports")
    out["index.html"] = _write(reports_root / "index.html", html)
    return out
