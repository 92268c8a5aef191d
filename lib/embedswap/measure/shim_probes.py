"""The probe catalogue again, through the client migration shim, against a candidate (step 02)."""

from __future__ import annotations

from typing import Any

from tqdm import tqdm  # text bars: they show both in JupyterLab and in the papermill console log

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.measure.contract import run_context, DEFAULT_PROBE_PATH, build_request, describe_body, select_probes
from embedswap.model_limits import token_limit
from embedswap.measure.tokens import probe_token_counter
from embedswap.measure.workload import Workload

from embedswap.measure.errors import StepFailed
from embedswap.shim.shapes import SHIM_SHAPES
from embedswap.wire.api_shapes import ApiShape


def _shim_token_limit(experiment: Experiment, prefix: str, model_path: str) -> int | None:
    """The limit the shim truncates to when the server's error does not state one (Dynamo's bare 500): the
    smallest of the experiment's max_input_tokens, the model's own limit and the target's max_model_len."""
    from embedswap.shim.text import model_token_limit

    limits = [experiment.model.max_input_tokens, model_token_limit(model_path)]
    target = experiment.targets.get(prefix)
    limits.append(getattr(target, "max_model_len", None))
    known = [int(v) for v in limits if v]
    return min(known) if known else None


def capture_shim_probes(client_base_url: str, experiment: Experiment, workload: Workload, attempt: Attempt,
                        prefix: str, model_path: str, probe_records: list[dict[str, Any]] | None = None, *,
                        headers: dict[str, str] | None = None, verify_tls: bool = True,
                        embeddings_path: str | None = None, api_shape: ApiShape = "openai") -> None:
    """The probe catalogue again, through the client migration shim (``embedswap.shim``), against a candidate.

    The shim's settings come from the candidate's own probe captures (``probe_records``; None reads
    ``captures/<prefix>/probes.jsonl``) compared with the legacy server's, and are written to
    ``captures/<prefix>/shim_config.json``; the answers to ``captures/<prefix>/shim_probes.jsonl`` in the
    format of ``probes.jsonl`` (plus a ``shim`` field: what was rewritten, what went upstream, attempts, and
    ``usage: "counted"`` where the shim counted the tokens itself). The shim says each request in the candidate's
    ``api_shape`` at ``embeddings_path`` (``embedswap.shim.shapes``), so a TEI candidate is re-probed as the old
    OpenAI-style client would reach it through the shim.
    Does nothing for the legacy target or when the candidate has no probe captures. An unexpected error is
    raised as StepFailed, so the candidate's other measurements (latency) still run.
    """
    try:
        if api_shape not in SHIM_SHAPES:  # a shape the shim cannot say: nothing to put in front of it
            return
        _capture_shim_probes(client_base_url, experiment, workload, attempt, prefix, model_path, probe_records,
                             headers=headers, verify_tls=verify_tls, embeddings_path=embeddings_path,
                             api_shape=api_shape)
    except StepFailed:
        raise
    except Exception as exc:
        raise StepFailed(f"shim probes: {type(exc).__name__}: {exc}"[:2000]) from exc


def _capture_shim_probes(client_base_url: str, experiment: Experiment, workload: Workload, attempt: Attempt,
                         prefix: str, model_path: str, probe_records: list[dict[str, Any]] | None, *,
                         headers: dict[str, str] | None, verify_tls: bool,
                         embeddings_path: str | None = None, api_shape: ApiShape = "openai") -> None:
    from embedswap.shim.client import EmbeddingShim
    from embedswap.shim.settings import ShimConfig

    if prefix == experiment.legacy:
        return
    if probe_records is None:
        if not attempt.has(f"{prefix}/probes.jsonl"):
            return
        probe_records = attempt.read_jsonl(f"{prefix}/probes.jsonl")
    if not probe_records:
        return
    legacy_file = f"{experiment.legacy}/probes.jsonl"
    legacy_records = attempt.read_jsonl(legacy_file) if attempt.has(legacy_file) else None
    config = ShimConfig.from_probes(
        probe_records, legacy_records,
        served_name=experiment.model.served_name,
        tokenizer_path=model_path,
        max_input_tokens=_shim_token_limit(experiment, prefix, model_path),
        query_template=experiment.model.query_prompt_template,
        query_task=experiment.model.query_task,
        same_threshold=experiment.parity.text_threshold,
        timeout_s=experiment.latency.timeout_s,
        count_usage=getattr(experiment.targets.get(prefix), "shim_usage", "server") == "counted",
        api_shape=api_shape,
        count_limit_tokens=experiment.model.max_input_tokens,  # as the probes' yardstick (probe_token_counter)
    )
    attempt.write_json(f"{prefix}/shim_config.json", config.to_dict())
    with EmbeddingShim(client_base_url, config, experiment.model.served_name, headers=headers,
                       verify_tls=verify_tls, embeddings_path=embeddings_path, api_shape=api_shape) as shim:
        # the direct probes' context (same token limit, same window): a re-probe sends the direct probe's request
        ctx = run_context(experiment, workload, shim.embed([workload.documents[0].text]), model_path,
                          fallback_dim=config.native_dim or 0)
        records = []
        count = probe_token_counter(experiment, model_path)
        count_whole = probe_token_counter(experiment, model_path, whole=True)
        limit = token_limit(model_path)
        for spec in tqdm(select_probes(experiment.contract.probes, experiment.contract.custom),
                         desc=f"{prefix}: shim probes", leave=False, mininterval=1.0):
            if spec.path != DEFAULT_PROBE_PATH:
                continue  # the shim is a client for /v1/embeddings; other routes are probed bare only
            raw, body = build_request(spec, ctx)
            answer = shim.post_raw(raw) if body is None else shim.embed_body(body)
            info = dict(answer.extra.get("shim") or {})
            if isinstance(info.get("sent_upstream"), dict):
                info["sent_upstream"] = describe_body(info["sent_upstream"], b"")
            records.append({
                "probe": spec.name,
                "description": spec.description,
                "path": spec.path,
                "sent": describe_body(body, raw),
                **answer.record(),
                "tokenizer_tokens": count(body),  # of what the caller sent, as for the bare probes
                "input_tokens": count_whole(body),
                "token_limit": limit,
                "vector": answer.vectors[0] if answer.ok and answer.vectors else None,
                "shim": info,
            })
    attempt.write_jsonl(f"{prefix}/shim_probes.jsonl", records)
