"""What the model's own tokenizer counts for the workload, computed offline by the kit: the yardstick for the
token totals the servers report (`usage.prompt_tokens`), special tokens included (Qwen3's appended
``<|endoftext|>``, BERT's [CLS]/[SEP]).

Written once per attempt to ``captures/reference/tokenizer_counts.json``: documents, queries as sent plainly and
queries with the instruction prepended by the client, each truncated at ``model.max_input_tokens`` as the
servers do. It also records what in the tokenizer's files changes server behaviour: whether a chat template is
present (vLLM's ``/v2/embed`` then renders a query as a chat turn instead of prepending the prompt) and the
sentence-transformers prompts.
"""

from __future__ import annotations

from typing import Any

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.models import local_model_folder, resolve_model_path, sentence_transformers_prompts
from embedswap.measure.workload import Workload
# what the model's tokenizer counts for one request: the shim counts `usage` with it too, so it lives in the shim
from embedswap.shim.text import request_token_count

__all__ = ["TOKENIZER_COUNTS", "count_tokens", "ensure_tokenizer_counts", "probe_token_counter",
           "query_with_instruction", "request_token_count"]

TOKENIZER_COUNTS = "reference/tokenizer_counts.json"


def query_with_instruction(experiment: Experiment, query: str) -> str:
    """The query as the model card wants it, prepended by the client (the fix for servers that ignore it)."""
    return experiment.model.query_prompt_template.format(task=experiment.model.query_task, query=query)


def _counts(tokenizer: Any, texts: list[str], max_length: int | None) -> dict[str, Any]:
    encoded = tokenizer(texts, add_special_tokens=True, truncation=max_length is not None, max_length=max_length)
    per_item = [len(ids) for ids in encoded["input_ids"]]
    return {"total": sum(per_item), "per_item": per_item}


def count_tokens(experiment: Experiment, workload: Workload) -> dict[str, Any]:
    from transformers import AutoTokenizer

    model_path = resolve_model_path(experiment.model.path)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    limit = experiment.model.max_input_tokens
    queries = [q.text for q in workload.queries]
    out: dict[str, Any] = {
        "tokenizer": experiment.model.path,
        "implementation": f"transformers {type(tokenizer).__name__}",
        "add_special_tokens": True,
        "max_length": limit,
        "documents": _counts(tokenizer, [d.text for d in workload.documents], limit),
        "chat_template": bool(getattr(tokenizer, "chat_template", None)),
        "sentence_transformers_prompts": sentence_transformers_prompts(local_model_folder(model_path)),
    }
    if queries:
        out["queries_plain"] = _counts(tokenizer, queries, limit)
        out["queries_client_prefixed"] = _counts(
            tokenizer, [query_with_instruction(experiment, q) for q in queries], limit)
    return out


def ensure_tokenizer_counts(experiment: Experiment, workload: Workload, attempt: Attempt) -> dict[str, Any]:
    """The attempt's tokenizer counts, computed on first use; a failure is written down, never raised."""
    if attempt.has(TOKENIZER_COUNTS):
        return attempt.read_json(TOKENIZER_COUNTS)
    try:
        counts = count_tokens(experiment, workload)
    except Exception as exc:  # the counts are a yardstick: the steps go on without them, and the report says so
        counts = {"error": f"{type(exc).__name__}: {exc}"[:1000]}
    attempt.write_json(TOKENIZER_COUNTS, counts)
    return counts


def probe_token_counter(experiment: Experiment, model_path: str, whole: bool = False) -> Any:
    """``body -> the model tokenizer's count of its inputs`` (None where it cannot count): the yardstick of each
    probe's ``usage`` (a server that counts something else, or omits usage, says so against it). Each input is
    cut at the limit as the servers cut or refuse it; ``whole``: not cut (the tokens the input has)."""
    from embedswap.shim.text import load_tokenizer, model_token_limit

    try:
        tokenizer = load_tokenizer(model_path)
        limits = [v for v in (experiment.model.max_input_tokens, model_token_limit(model_path)) if v]
    except Exception:  # no local tokenizer: the probes are compared without the yardstick
        return lambda body: None
    limit = min(limits) if limits and not whole else None

    def count(body: dict[str, Any] | None) -> int | None:
        try:
            return request_token_count(tokenizer, body, limit)
        except Exception:  # an input the tokenizer refuses: no count, not a failed probe
            return None

    return count
