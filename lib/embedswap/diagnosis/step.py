"""The diagnosis inside a run: step 03 diagnoses every server's captured document vectors, step 05 every row the
parity gate fails; the findings go to ``captures/diagnosis/vectors.json`` and into the parity rows.

Step 03 also diagnoses every server's *query* vectors (those asked for with ``input_type: "query"``) against the
model with its query prompt: a server that ignores the field answers 200 with another vector, the article's quiet
difference, and is found here as ``diagnosis_prompt_missing``.

The hypotheses' inputs come from the experiment and the captures: the truncation limits a server states (the
experiment's ``max_input_tokens``, a target's ``max_model_len``) or shows when probed (the limit in an over-long
probe's error text, the token count of an over-long input a server truncated silently), the kit's query template
and task. One :class:`~embedswap.diagnosis.hypotheses.Diagnoser` serves every server of an attempt (one forward
pass when every server reproduces the model; the other hypotheses are computed only when one does not, on a probe
of the texts first), and the queries' Diagnoser runs the documents' loaded model.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.diagnosis.background import Background
from embedswap.diagnosis.hypotheses import Diagnoser
from embedswap.diagnosis.prompts import template_prefix
from embedswap.diagnosis.sample import diagnosis_sample, row_cosines
from embedswap.diagnosis.tokenization import analyse, with_tokenization
from embedswap.measure.contract import long_input
from embedswap.measure.server_tokens import CAPTURE as TOKENS_FILE
from embedswap.models import resolve_model_path
from embedswap.reasons import not_measured
from embedswap.summary.model import Summary
from embedswap.summary.sections.plan import plan_of_attempt
from embedswap.summary.types_decisions import DiagnosisDecision

CAPTURE = "diagnosis/vectors.json"
QUERY_FILE = "query_vectors_server_instruction.npy"  # measure.capture_queries: input_type "query"
# The first queries diagnosed (every hypothesis is a forward pass over them): enough for a cosine gate's minimum,
# bounded at corpus scale (thousands of queries).
QUERY_SAMPLE = 256
# vLLM: "This model's maximum context length is 256 tokens. However, ..." (the shim reads the same sentence)
_STATED_LIMIT = re.compile(r"maximum (?:context|input) length is (\d+) tokens", re.IGNORECASE)
_CACHE: dict[tuple[str, tuple[str, ...], tuple[int, ...]], Diagnoser] = {}


def probed_limits(attempt: Attempt, name: str) -> list[int]:
    """Token limits a server showed in its probe answers: stated in an error, or the count of a truncated input."""
    if not attempt.has(f"{name}/probes.jsonl"):
        return []
    found: list[int] = []
    for record in attempt.read_jsonl(f"{name}/probes.jsonl"):
        found += [int(n) for n in _STATED_LIMIT.findall(json.dumps(record.get("error") or ""))]
        if record.get("probe") == "over_long_input" and record.get("status") == 200 and record.get("prompt_tokens"):
            found.append(int(record["prompt_tokens"]))  # answered: truncated at this many tokens
    return found


def stated_limits(experiment: Experiment, attempt: Attempt) -> list[int]:
    """Every limit the experiment or its servers state or show (the hypotheses of truncation)."""
    limits = [experiment.model.max_input_tokens]
    for name, target in experiment.targets.items():
        limits.append(getattr(target, "max_model_len", None))
        limits += probed_limits(attempt, name)
    return sorted({int(n) for n in limits if n})


def diagnoser(experiment: Experiment, attempt: Attempt, texts: list[str],
              batches: list[tuple[int, int]] | None = None) -> Diagnoser:
    """The attempt's Diagnoser for ``texts`` (built once per process); ``batches``: how the servers batched them."""
    path = resolve_model_path(experiment.model.path)
    limits = stated_limits(experiment, attempt)
    key = (path, tuple(texts), tuple(limits))
    if key not in _CACHE or (batches and _CACHE[key].batches != batches):
        loaded = _loaded(path)
        _CACHE.clear()  # one attempt at a time: do not keep an earlier model's vectors in memory
        _CACHE[key] = Diagnoser(path, texts, limits=limits, query_template=experiment.model.query_prompt_template,
                                embedder=loaded,
                                query_task=experiment.model.query_task, batches=batches)
    return _CACHE[key]


def _loaded(path: str) -> Any:
    """The model the documents' Diagnoser loaded for ``path``, if any (the queries' Diagnoser shares it)."""
    return next((d.embedder for key, d in _CACHE.items() if key[0] == path), None)


def workload_batches(rows: list[int], batch_size: int) -> list[tuple[int, int]] | None:
    """The workload's batches as (start, end) positions of ``rows`` (document indices in file order), where each
    batch's documents are all among them and consecutive; None otherwise (a sample: batch mates unknown)."""
    if rows != list(range(len(rows))):
        return None
    return [(start, min(start + batch_size, len(rows))) for start in range(0, len(rows), batch_size)]


def diagnose_row(experiment: Experiment, attempt: Attempt, texts: list[str], served: np.ndarray, name: str,
                 threshold: float, batches: list[tuple[int, int]] | None = None) -> dict[str, Any]:
    """One server's finding; a failure of the diagnosis itself is recorded, never raised (the gate has already
    decided)."""
    if attempt.has(CAPTURE):  # step 03 diagnosed this target's captured vectors already: the same finding
        done = attempt.read_json(CAPTURE)
        finding = (done.get("by_target") or {}).get(name)
        if finding is not None and done.get("threshold") == threshold and done.get("texts") == len(texts):
            return finding
    try:
        return diagnoser(experiment, attempt, texts, batches).diagnose(served, name, threshold,
                                                              evidence=usage_evidence(attempt, name))
    except Exception as exc:  # noqa: BLE001 - recorded as the diagnosis' own error
        return _error_finding(exc)


def usage_evidence(attempt: Attempt, name: str) -> dict[str, Any] | None:
    """The server's own count of the over-long probe it answered (its ``usage``), and that probe's input."""
    if not attempt.has(f"{name}/probes.jsonl"):
        return None
    for record in attempt.read_jsonl(f"{name}/probes.jsonl"):
        if record.get("probe") == "over_long_input" and record.get("status") == 200 and not record.get("error"):
            tokens = record.get("prompt_tokens")
            return {"prompt_tokens": tokens, "text": long_input(record.get("token_limit"))} \
                if isinstance(tokens, int) else None
    return None


def text_rows(experiment: Experiment, experiment_dir: Path, documents: list[Any]) -> list[int]:
    """Indices of the workload's text documents (an image record is not diagnosed: no backend here embeds it)."""
    from embedswap.config.experiment import resolve_path
    from embedswap.parity.gate import record_modalities

    by_id = record_modalities(resolve_path(experiment_dir, experiment.workload.documents))
    return [i for i, d in enumerate(documents) if by_id.get(d.id, "text") == "text"]


def diagnose_vectors(ctx: Any) -> dict[str, Any]:
    """Step 03: every target's captured document vectors against the model's own pipeline, written once to
    ``captures/diagnosis/vectors.json`` (a later call reads it back: captures are never overwritten). ``ctx`` is
    a :class:`embedswap.steps.StepContext`."""
    return _written(ctx, *_diagnosed(ctx))


def start_diagnosis(ctx: Any) -> Background[tuple[dict[str, Any], bool]]:
    """:func:`diagnose_vectors` started in a background thread at a lower priority
    (:mod:`embedswap.diagnosis.background`), to run beside step 03's index part; :func:`finish_diagnosis` waits."""
    return Background(lambda: _diagnosed(ctx), name="embedswap-diagnosis")


def finish_diagnosis(ctx: Any, started: Background[tuple[dict[str, Any], bool]]) -> dict[str, Any]:
    """Wait for :func:`start_diagnosis`'s diagnosis (its error is raised here) and write it, with the seconds waited."""
    (result, fresh), waited = started.result()
    return _written(ctx, result, fresh, waited_s=waited)


def _written(ctx: Any, result: dict[str, Any], fresh: bool, waited_s: float | None = None) -> dict[str, Any]:
    """``result`` written to the capture when it was computed now (``fresh``)."""
    if fresh:
        if waited_s is not None:  # the step's own wait for a diagnosis run beside its index part
            result["waited_s"] = round(waited_s, 3)
        ctx.attempt.write_json(CAPTURE, result)
    return result


def _diagnosed(ctx: Any) -> tuple[dict[str, Any], bool]:
    """The diagnosis and whether it was computed now (False: read back from the capture, or not measured)."""
    experiment, attempt = ctx.experiment, ctx.attempt
    if attempt.has(CAPTURE):
        return attempt.read_json(CAPTURE), False
    # a server of another model (issue 57) is not diagnosed against the experiment's model: no cause of that model's
    # pipeline explains another model's vectors (its decision says so: analysis.diagnosis)
    others = plan_of_attempt(experiment, attempt, ctx.workload).others()
    names = [n for n in experiment.target_order() if attempt.has(f"{n}/doc_vectors.npy") and n not in others]
    if not names:
        return not_measured("no_document_vectors_captured"), False
    started = time.monotonic()
    rows = text_rows(experiment, ctx.experiment_dir, ctx.workload.documents)
    # repeat 0 only, paged in from a memory map (the other repeats are not read)
    served = {name: np.asarray(attempt.read_array(f"{name}/doc_vectors.npy", mmap=True)[0][rows]) for name in names}
    rows, sample, served = _sampled(experiment, ctx.workload.documents, rows, served)
    texts = [ctx.workload.documents[i].text for i in rows]
    threshold = experiment.parity.text_threshold
    batches = workload_batches(rows, ctx.workload.batch_size)
    by_target = {name: tokenization_of(ctx, name, threshold,
                                       diagnose_row(experiment, attempt, texts, served[name], name, threshold, batches))
                 for name in names}
    queries = diagnose_queries(experiment, attempt, ctx.workload, threshold)
    result = {"measured": True, "threshold": threshold, "limits": stated_limits(experiment, attempt),
              "texts": len(texts), "sample": sample, "by_target": by_target,
              "truth": truth_record(next(iter(_CACHE.values()), None)),  # after the queries: they share the model
              "queries": queries}
    result["seconds"] = round(time.monotonic() - started, 3)  # the diagnosis' own wall seconds
    return result, True


def truth_record(found: Diagnoser | None) -> dict[str, Any] | None:
    """Where a Diagnoser's truth came from (computed, or read from the reference cache: diagnosis.truth_cache) and
    whether it loaded the model, as captures/reference/meta.json records the witnesses'."""
    return found.cache.record() if found is not None else None


def tokenization_of(ctx: Any, name: str, threshold: float, finding: dict[str, Any]) -> dict[str, Any]:
    """``finding`` with how the server tokenized the documents against the model's tokenizer, per language
    (:mod:`embedswap.diagnosis.tokenization`, from ``captures/<name>/tokens.json``); its cause when the tokens
    explain vectors nothing else did. A failure is recorded beside the finding, never raised."""
    experiment, attempt = ctx.experiment, ctx.attempt
    if not attempt.has(f"{name}/{TOKENS_FILE}"):
        return finding
    try:
        record = attempt.read_json(f"{name}/{TOKENS_FILE}")
        text = set(text_rows(experiment, ctx.experiment_dir, ctx.workload.documents))
        kept = [d for d in record.get("documents", []) if d.get("tokens") is not None and d["row"] in text]
        rows = [int(d["row"]) for d in kept]
        if not rows:
            return finding
        documents = [ctx.workload.documents[i] for i in rows]
        served = np.asarray(attempt.read_array(f"{name}/doc_vectors.npy", mmap=True)[0][rows])
        embedder = _embedder(experiment)
        # where the model's pipeline cuts: the configured limit or the model's own max_seq_length, the lower
        limit = embedder.limit
        found = analyse(embedder, [d.text for d in documents], [d.lang for d in documents],
                        {**record, "documents": kept}, served, threshold, limit=limit)
        return with_tokenization(finding, found, name, limit, threshold)
    except Exception as exc:  # noqa: BLE001 - recorded as the tokenization check's own error
        return {**finding, "tokenization": {"error": f"{type(exc).__name__}: {exc}"[:500]}}


def _embedder(experiment: Experiment) -> Any:
    """The model's pipeline the diagnosis loaded for this experiment (loaded now when it did not)."""
    path = resolve_model_path(experiment.model.path)
    loaded = _loaded(path)
    if loaded is not None:
        return loaded
    from embedswap.legacy.embedder import Embedder, LegacySettings

    return Embedder(LegacySettings(model=path, max_input_tokens=10**9))


def _sampled(experiment: Experiment, documents: list[Any], rows: list[int],
             served: dict[str, np.ndarray]) -> tuple[list[int], dict[str, Any], dict[str, np.ndarray]]:
    """The text rows diagnosed (a sample sized like ``parity.sample``: diagnosis.sample), its record, and each
    server's vectors of those rows."""
    legacy = served.get(experiment.legacy)
    cosines = [row_cosines(legacy, v) for n, v in served.items() if n != experiment.legacy and legacy is not None]
    chosen, record = diagnosis_sample([documents[i].lang for i in rows], cosines, experiment.parity.sample)
    return [rows[i] for i in chosen], record, {n: v[chosen] for n, v in served.items()}


def query_prompt(experiment: Experiment) -> str | None:
    """The prefix the experiment's query template puts before a query (None when text follows ``{query}``)."""
    return template_prefix(experiment.model.query_prompt_template, experiment.model.query_task)


def _error_finding(exc: Exception) -> dict[str, Any]:
    """A finding the diagnosis could not make: its own error, recorded (the step goes on)."""
    return {"cause": None, "reasons": [], "hypothesis": None, "error": f"{type(exc).__name__}: {exc}"[:500]}


def diagnose_queries(experiment: Experiment, attempt: Attempt, workload: Any, threshold: float) -> dict[str, Any]:
    """Every server's query vectors (input_type "query") against the model with its query prompt, on the first
    :data:`QUERY_SAMPLE` queries; a failure of the diagnosis is recorded, never raised."""
    if not workload.queries:
        return not_measured("no_queries")
    others = plan_of_attempt(experiment, attempt, workload).others()
    names = [n for n in experiment.target_order() if attempt.has(f"{n}/{QUERY_FILE}") and n not in others]
    if not names:
        return not_measured("diagnosis_no_query_vectors")
    prompt = query_prompt(experiment)
    if prompt is None:
        return not_measured("diagnosis_query_template_not_prefix")
    texts = [q.text for q in workload.queries[:QUERY_SAMPLE]]
    out: dict[str, Any] = {"measured": True, "prompt": prompt, "texts": len(texts), "by_target": {}}
    try:
        path = resolve_model_path(experiment.model.path)
        found = Diagnoser(path, texts, limits=stated_limits(experiment, attempt), expected_prompt=prompt,
                          query_template=experiment.model.query_prompt_template, query_task=experiment.model.query_task,
                          embedder=_loaded(path))
    except Exception as exc:  # noqa: BLE001 - recorded as the diagnosis' own error, per server
        out["by_target"] = {n: _error_finding(exc) for n in names}
        return out
    for name in names:
        served = attempt.read_array(f"{name}/{QUERY_FILE}")[: len(texts)]
        try:
            out["by_target"][name] = found.diagnose(served, name, threshold)
        except Exception as exc:  # noqa: BLE001
            out["by_target"][name] = _error_finding(exc)
    out["truth"] = truth_record(found)
    return out


def diagnosis_section(attempt: Attempt) -> dict[str, Any]:
    """The summary's ``diagnosis`` section, from the step 03 capture."""
    if not attempt.has(CAPTURE):
        return not_measured("diagnosis_not_run")
    return attempt.read_json(CAPTURE)


def _whys(decided: DiagnosisDecision | None) -> str:
    return "; ".join(r.why or "" for r in decided.reasons) if decided is not None else ""


def diagnosis_table(summary: Summary) -> Any:
    """Notebook 03's table: one row per diagnosed server (its cause, the step, the sentence with the fix)."""
    import pandas as pd

    section, decisions = summary.diagnosis, summary.decisions.diagnosis
    if (section is None or not section.measured) and not decisions:
        return pd.DataFrame([{"diagnosis": section.why if section is not None else None}])
    rows = []
    for name in dict.fromkeys([*(section.by_target if section is not None else {}), *decisions]):
        decided = decisions.get(name)
        rows.append({"server": name, "cause": decided.code if decided else None,
                     "step": decided.step if decided else None,
                     "why": _whys(decided) or "reproduces the model's own pipeline"})
    for name, decided in summary.decisions.diagnosis_queries.items():
        rows.append({"server": name, "cause": decided.code, "step": "queries", "why": _whys(decided)})
    return pd.DataFrame(rows)
