"""One module per report section; :func:`build_context` runs them in the order their references are numbered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from embedswap.analysis.article import Article
from embedswap.report.format import code, esc
from embedswap.report.sections import (article, capacity, contract, diagnosis, gaps, index as index_section,
                                       instruction, latency, long_input, parity, parity_matrix, ranking, shim, status,
                                       vectors, witnesses)
from embedswap.report.sections.context import ReportContext
from embedswap.summary.model import Summary


def build_context(summary: Summary, lang: str, figures: dict[str, bool], article_data: Article | None,
                  manifest: dict[str, Any] | None, attempt_dir: Path | None, title: str | None) -> dict[str, Any]:
    """The template values of one report language. ``summary`` is an upgraded (current-schema) summary."""
    ctx = ReportContext(summary, lang, figures, article_data, manifest, attempt_dir, title)
    # the order matters: a capture file gets its reference number where it is first cited
    parts: dict[str, Any] = {"status": status.status(ctx), "setup": status.setup(ctx), "vectors": vectors.vectors(ctx),
                             "diagnosis": diagnosis.diagnosis(ctx),
                             "ranking": ranking.ranking(ctx), "index": index_section.index(ctx),
                             "contract": contract.contract(ctx),
                             "instruction": instruction.instruction(ctx),
                             "long_input": long_input.long_input(ctx), "shim": shim.shim(ctx),
                             "latency": latency.latency(ctx), "parity": parity.parity(ctx),
                             "parity_matrix": parity_matrix.parity_matrix(ctx),
                             "witnesses": witnesses.witnesses(ctx),
                             "article": article.article(ctx),
                             "capacity": capacity.capacity(ctx)}
    parts["gaps"] = gaps.gaps(ctx, parts["status"], parts["latency"], parts["contract"], parts["parity"],
                              parts["ranking"], parts["shim"])
    ctx.ref("summary.json", always=True)
    words = ctx.words
    return {
        "lang": lang, "L": {"measured": ctx.label(True), "not_measured": ctx.label(False),
                            "unconfirmed": ctx.label(None), "not_meaningful": ctx.terms["not_meaningful"]},
        "title": title,
        "experiment": {**dict.fromkeys(("name", "date", "description", "folder", "attempt"), ""),
                       **ctx.summary.experiment.model_dump(mode="json", exclude_unset=True)},
        "generated": summary.generated,
        "legacy": ctx.legacy, "candidate": ctx.candidate, "candidates": ctx.candidates, "names": ctx.names,
        **parts,
        "references": ctx.refs, "figures": figures, "code": code, "esc": esc,
        "thresholds": parts["parity"]["thresholds"], "words": words,
    }
