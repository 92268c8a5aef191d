"""The query instruction, three ways: the summary section that says, per server, what became of it.

Every server embedded the workload's queries three times in step 01/02 (``captures/<target>/query_vectors_*.npy``):

- ``server_instruction``: the bare query with ``input_type: "query"``; the server is asked to add the prompt;
- ``client_prefixed``: the client wrote the model card's prompt into the text (``model.query_prompt_template``);
- ``plain``: the bare query, no instruction at all.

The reference is the legacy server's ``client_prefixed`` answer: the model card's format, computed by the fp32
legacy server from a text the kit wrote itself, so it does not depend on any server's handling of the field.
A server's ``server_instruction`` answer then reads as ``applied`` (it matches the reference), ``ignored`` (it
matches the same server's plain answer) or ``differs`` (neither: some other prompt, e.g. a chat turn).

vLLM's Cohere-style ``/v2/embed`` with ``input_type`` is a fourth way, probed once per server by the contract
step (probe ``v2_embed_query``, the first query); it is compared with the same reference's first row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embedswap.captures import Attempt
from embedswap.summary.types_plan import Plan
from embedswap.config.experiment import Experiment
from embedswap.reasons import not_measured
from embedswap.measure.tokens import TOKENIZER_COUNTS
from embedswap.stats.vectors import rowwise_cosine

VARIANTS = ("server_instruction", "client_prefixed", "plain")
V2_PROBE = "v2_embed_query"
# the tokenizer count each variant's token total is checked against (the model card format, if applied)
TOKENIZER_KEY = {"server_instruction": "queries_client_prefixed", "client_prefixed": "queries_client_prefixed",
                 "plain": "queries_plain"}


def _vectors(attempt: Attempt, name: str, variant: str) -> np.ndarray | None:
    relative = f"{name}/query_vectors_{variant}.npy"
    return attempt.read_array(relative) if attempt.has(relative) else None


def _cosines(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None or b is None or a.shape != b.shape:
        return None
    return rowwise_cosine(a, b)


def _spread(values: np.ndarray | None) -> dict[str, float | None]:
    if values is None or not len(values):
        return {"min": None, "median": None}
    return {"min": float(np.min(values)), "median": float(np.median(values))}


def reading(variant: str, to_reference: float | None, to_own_plain: float | None, threshold: float) -> str | None:
    """What the numbers say the server did with the instruction; None when nothing can be said."""
    if to_reference is None:
        return None
    if to_reference >= threshold:
        return "applied" if variant != "plain" else "no-instruction-equals-reference"
    if variant == "plain":
        return "no-instruction"
    if variant == "server_instruction" and to_own_plain is not None and to_own_plain >= threshold:
        return "ignored"
    return "differs"


def own_reading(variant: str, to_own_plain: float | None, threshold: float) -> str | None:
    """A server of another model (issue 57): the reference is the legacy model's, so its answers are read against
    its own plain answer only: ``input_type`` ignored (the same vector) or ``changed-own`` (the field changed its
    vector: a prompt of its own model's, which the reference cannot judge); None for the other variants."""
    if variant != "server_instruction" or to_own_plain is None:
        return None
    return "ignored" if to_own_plain >= threshold else "changed-own"


def instruction_section(experiment: Experiment, attempt: Attempt, plan: Plan | None = None) -> dict[str, Any]:
    """The rows per server and variant; a candidate whose ``plan`` reads it against its own answers (another model)
    is read against its own plain answer (:func:`own_reading`), never against the legacy model's reference."""
    own = {name for name in experiment.candidates if (plan or Plan(measured=False)).probes_against(name) == "own"}
    legacy = experiment.legacy
    reference = _vectors(attempt, legacy, "client_prefixed")
    if reference is None:
        return not_measured("no_client_prefixed_queries", name=legacy,
                            path=f"{legacy}/query_vectors_client_prefixed.npy")
    threshold = experiment.parity.text_threshold
    counts = attempt.read_json(TOKENIZER_COUNTS) if attempt.has(TOKENIZER_COUNTS) else {}
    rows: list[dict[str, Any]] = []
    for name in [legacy, *experiment.candidates]:
        if not attempt.has(f"{name}/query_requests.jsonl"):
            rows.append({"target": name, **not_measured("no_query_captures", name=name)})
            continue
        records = {r["variant"]: r for r in attempt.read_jsonl(f"{name}/query_requests.jsonl")}
        own_plain = _vectors(attempt, name, "plain")
        other = name in own
        for variant in VARIANTS:
            record = records.get(variant) or {}
            vectors = _vectors(attempt, name, variant)
            to_reference = None if other else _cosines(reference, vectors)
            to_plain = _cosines(own_plain, vectors) if variant == "server_instruction" else None
            spread, plain_spread = _spread(to_reference), _spread(to_plain)
            expected = (counts.get(TOKENIZER_KEY[variant]) or {}).get("total") if variant in TOKENIZER_KEY else None
            rows.append({
                "target": name, "variant": variant, "measured": vectors is not None,
                "status": record.get("status"), "error": record.get("error"),
                "prompt_tokens": record.get("prompt_tokens"), "tokenizer_tokens": expected,
                "cosine_to_reference": spread, "cosine_to_own_plain": plain_spread,
                "reading": (own_reading(variant, plain_spread["min"], threshold) if other
                            else reading(variant, spread["min"], plain_spread["min"], threshold)),
                "source": f"captures/{name}/query_vectors_{variant}.npy",
            })
    return {
        "measured": True,
        "reference": {"target": legacy, "variant": "client_prefixed",
                      "template": experiment.model.query_prompt_template, "task": experiment.model.query_task},
        "threshold": threshold,
        "queries": int(reference.shape[0]),
        "tokenizer": {k: (counts.get(v) or {}).get("total") for k, v in TOKENIZER_KEY.items()},
        "chat_template": counts.get("chat_template"),
        "sentence_transformers_prompts": counts.get("sentence_transformers_prompts"),
        "rows": rows,
        "v2_embed": _v2_rows(experiment, attempt, reference, threshold,
                             ((counts.get("queries_client_prefixed") or {}).get("per_item") or [None])[0],
                             own),
    }


def _v2_rows(experiment: Experiment, attempt: Attempt, reference: np.ndarray, threshold: float,
             expected_tokens: int | None, own: set[str]) -> list[dict[str, Any]]:
    """vLLM's /v2/embed with input_type, per server that was probed (the first query against the reference; a server
    of another model has no reading: the reference and the plain answer are the legacy model's)."""
    legacy_plain = _vectors(attempt, experiment.legacy, "plain")
    rows = []
    for name in [experiment.legacy, *experiment.candidates]:
        if not attempt.has(f"{name}/probes.jsonl"):
            continue
        record = next((r for r in attempt.read_jsonl(f"{name}/probes.jsonl") if r.get("probe") == V2_PROBE), None)
        if record is None:
            continue
        vector = record.get("vector")
        to_reference = to_plain = None
        if vector is not None and len(vector) == reference.shape[1] and name not in own:
            to_reference = float(rowwise_cosine(reference[:1], np.asarray([vector]))[0])
            if legacy_plain is not None:
                to_plain = float(rowwise_cosine(legacy_plain[:1], np.asarray([vector]))[0])
        rows.append({
            "target": name, "status": record.get("status"), "error": record.get("error"),
            "prompt_tokens": record.get("prompt_tokens"),
            "tokenizer_tokens": expected_tokens,  # the first query in the model card's format
            "cosine_to_reference": to_reference, "cosine_to_plain": to_plain,
            "reading": reading("server_instruction", to_reference, to_plain, threshold),
            "source": f"captures/{name}/probes.jsonl",
        })
    return rows
