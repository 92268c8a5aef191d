"""The tables the notebooks show (pandas): targets, vectors, contract, instruction, latency, parity.

Each reads the typed :class:`~embedswap.summary.model.Summary` (the decisions are already in it; a summary.json
of any version is read into it once, by :func:`~embedswap.analysis.upgrade.load_summary`). Split out of
``embedswap.steps``, which re-exports every function here.

pandas is imported inside each table function: ~0.3 s of CPU that ``import embedswap.steps`` paid in every
notebook's kernel before its first line ran (issue 61); a table's first call pays it instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from embedswap.report.format import fmt
from embedswap.steps.context import StepContext, StepError
from embedswap.summary.model import Summary
from embedswap.measure.tokens import ensure_tokenizer_counts

if TYPE_CHECKING:
    import pandas as pd


def targets_table(ctx: StepContext) -> pd.DataFrame:
    import pandas as pd  # here, not above: see the module doc (issue 61)
    rows = []
    for name, info in ctx.summary().targets.items():
        rows.append({
            "target": name,
            "kind": info.config.kind,
            "version": info.version,
            "start_s": info.start_seconds,
            "rss_MiB": round(info.rss_bytes / 2**20) if info.rss_bytes else None,
            "status": ctx.attempt.step_status(f"capture:{name}"),
            "problems": "; ".join(info.problems) or info.error,
        })
    return pd.DataFrame(rows).set_index("target")


# --- 03: vectors and contract ------------------------------------------------------------------------------------
def require_captures(ctx: StepContext) -> None:
    missing = [n for n in ctx.experiment.target_order() if not ctx.attempt.has(f"{n}/target.json")]
    if missing:
        raise StepError(f"attempt {ctx.attempt.name} has no captures for {missing}: run steps 01 and 02 first")
    ensure_tokenizer_counts(ctx.experiment, ctx.workload, ctx.attempt)  # attempts made before it was captured


def vector_table(summary: Summary) -> pd.DataFrame:
    """The article's vector table, one column per server."""
    import pandas as pd  # here, not above: see the module doc (issue 61)
    vectors = summary.vectors
    rows: dict[str, dict[str, Any]] = {}
    for name, info in vectors.by_target.items():
        if not info.measured:
            rows[name] = {"dimension": None, "first L2 norm": None, "token total": None, "note": info.why}
            continue
        first = info.norm.first if info.norm is not None else None
        rows[name] = {
            "dimension": info.dimension,
            "first L2 norm": None if first is None else round(first, 6),
            "token total": info.token_total,
            "index order ok": info.index_order_ok,
            "repeat min cosine": info.repeat_min_cosine,
            "= tokenizer's count": info.token_total_matches_tokenizer,
        }
    for name, comparison in vectors.comparisons.items():
        c = comparison.cosine
        if comparison.measured and c is not None:
            rows[name]["cosine vs legacy (min/median/max)"] = f"{c.min:.6f} / {c.median:.6f} / {c.max:.6f}"
    return pd.DataFrame(rows)


def contract_table(summary: Summary) -> pd.DataFrame:
    import pandas as pd  # here, not above: see the module doc (issue 61)
    contract = summary.contract
    if not isinstance(contract, list):  # not measured: the section says why
        return pd.DataFrame([{"contract": contract.why}])
    rows = []
    for row in contract:
        entry: dict[str, Any] = {"probe": row.probe}
        for name, side in row.by_target.items():
            entry[name] = side.status
        for name, verdict in row.verdicts.items():
            entry[f"verdict ({name})"] = verdict.verdict
            entry[f"cosine ({name})"] = None if verdict.cosine is None else round(verdict.cosine, 4)
        rows.append(entry)
    return pd.DataFrame(rows).set_index("probe")


def instruction_table(summary: Summary) -> pd.DataFrame:
    """The query instruction three ways per server (applied / ignored / another vector), then /v2/embed."""
    import pandas as pd  # here, not above: see the module doc (issue 61)
    section = summary.instruction
    if not section.measured:
        return pd.DataFrame([{"instruction": section.why}])
    rows = [{"server": row.target, "request": row.variant, "status": row.status,
             "prompt tokens": row.prompt_tokens, "tokenizer's count": row.tokenizer_tokens,
             "cosine to reference (min)": row.cosine_to_reference.min if row.cosine_to_reference else None,
             "reading": row.reading or row.error} for row in section.rows]
    rows += [{"server": row.target, "request": "/v2/embed input_type", "status": row.status,
              "prompt tokens": row.prompt_tokens, "tokenizer's count": row.tokenizer_tokens,
              "cosine to reference (min)": row.cosine_to_reference, "reading": row.reading or row.error}
             for row in section.v2_embed]  # one cosine per server there, not a spread over queries
    return pd.DataFrame(rows).set_index(["server", "request"])


def long_input_table(summary: Summary) -> pd.DataFrame:
    """Per server, what it did with an input longer than the model takes (refused, truncated, pieces averaged) and
    each hypothesis' cosine to its answer."""
    import pandas as pd  # here, not above: see the module doc (issue 61)
    section = summary.long_input
    if not section.measured:
        return pd.DataFrame([{"long input": section.why}])
    rows = []
    for name, found in section.by_target.items():
        row: dict[str, Any] = {"server": name, "handling": found.code, "limit": found.limit, "status": found.status,
                               "usage tokens": found.prompt_tokens, "same as legacy": found.same_as_legacy}
        row.update({f"{h.name} @{h.limit}": None if h.cosine is None else round(h.cosine, 6)
                    for h in found.hypotheses})
        rows.append(row)
    return pd.DataFrame(rows).set_index("server")


# --- 04: latency -------------------------------------------------------------------------------------------------
def latency_table(summary: Summary, section: str = "latency") -> pd.DataFrame:
    """One row per server with the report's figures (``decisions.shown``: pooled over the repeats when the summary
    has per-request data) and, for a candidate, its one stored ratio to the legacy server as the report prints it
    (``Summary.latency_ratio``); ``section="ablation"`` gives the legacy server against its variants."""
    import pandas as pd  # here, not above: see the module doc (issue 61)
    part = summary.latency if section == "latency" else summary.ablation
    if not part.by_target:
        return pd.DataFrame([{section: getattr(part, "why", None)}])
    shown = summary.decisions.shown
    rows: list[dict[str, Any]] = []
    for name, info in part.by_target.items():
        if not info.measured or info.sequential is None or info.concurrent is None:
            rows.append({"target": name, "note": info.why})
            continue
        c = info.concurrent.concurrency
        seq, conc = shown.at(name, "sequential"), shown.at(name, "concurrent")
        row: dict[str, Any] = {
            "target": name,
            "seq p50 ms": seq.p50_ms if seq else None, "seq p99 ms": seq.p99_ms if seq else None,
            f"c{c} p50 ms": conc.p50_ms if conc else None, f"c{c} p99 ms": conc.p99_ms if conc else None,
            f"c{c} docs/s": conc.docs_per_s if conc else None,
            "docs/s per repeat": info.concurrent.spread.docs_per_s if info.concurrent.spread else None,
            "errors": info.sequential.errors + info.concurrent.errors,
        }
        if section == "latency" and name != summary.roles.legacy:
            for label, run, figure in (("seq p50 ratio", "sequential", "p50"),
                                       (f"c{c} docs/s ratio", "concurrent", "docs_per_s")):
                entry = summary.latency_ratio(name, run, figure)
                row[label] = fmt(entry.value if entry is not None else None, "ratio")
        rows.append(row)
    return pd.DataFrame(rows).set_index("target").round(1)


def parity_table(summary: Summary) -> pd.DataFrame:
    """One line per backend and modality; backends that were not measured, and the text+image gate when it was
    not measured, are lines with a note instead of figures. A row's columns are the keys its summary.json row has
    (``exclude_unset``), without the lists a table cannot show."""
    import pandas as pd  # here, not above: see the module doc (issue 61)
    parity = summary.parity
    rows: list[dict[str, Any]] = [row.model_dump(by_alias=True, exclude_unset=True, mode="json",
                                                 exclude={"worst", "source"}) for row in parity.rows]
    for missing in parity.not_run:
        rows.append({"backend": missing.backend, "pass": False, "note": f"not measured: {missing.why}"})
    multimodal = parity.multimodal
    for row in multimodal.rows if multimodal is not None else []:  # a CLIP model's captions and images
        rows.append({**row.model_dump(by_alias=True, exclude_unset=True, mode="json",
                                      exclude={"worst", "part", "request"}),
                     "backend": f"{row.backend} (CLIP {row.part}, {row.request})"})
    if rows and multimodal is not None and not multimodal.measured:
        rows.append({"backend": "(text+image)", "modality": "text+image", "threshold": parity.threshold("multimodal"),
                     "note": f"not measured: {multimodal.why}"})
    if not rows:
        return pd.DataFrame([{"parity": parity.why}])
    return pd.DataFrame(rows).set_index("backend")
