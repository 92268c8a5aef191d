"""An input longer than the model takes, and the evidence of what the server did with it.

A server may refuse it, cut it to its first tokens (sentence-transformers, most home-made servers), or split it into
pieces, embed each piece and average them (vLLM's pooler option ``enable_chunked_processing``: the prompt's token ids
cut into pieces of ``max_model_len``, each embedded, averaged weighted by its length, normalised). All three may answer
200 with one vector, so the answer alone does not tell them apart. While the server is up, the capture asks it for
each hypothesis' pieces as token ids (the reference tokenizer's, special tokens included, so its own tokenizer is not
involved twice), for every limit the model's files state: the first tokens (the first ``L - 1`` and the last, as a
tokenizer truncates, and the plain first ``L``) and the consecutive pieces of ``L``. The reading
(:mod:`embedswap.answers.long_input`) sets each against the answer.

The document is varied text, the workload's English documents in order (all documents where there are none),
repeated to :data:`LENGTH_FACTOR` times the largest stated limit: one repeated word, as the ``over_long_input``
probe sends, makes every piece alike, and then the average of the pieces and the first piece are the same vector.

Written to ``captures/<target>/long_input.json``; a server that refuses token ids is asked the decoded pieces as
text (``pieces_as``: ``text``), a looser test since it adds its own special tokens to each piece. Captured with the
contract probes when ``over_long_input`` is among them.
"""

from __future__ import annotations

from typing import Any

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.measure.workload import Workload
from embedswap.model_limits import model_limits
from embedswap.shim.text import load_tokenizer
from embedswap.wire.client import EmbeddingClient, EmbeddingResponse

CAPTURE = "long_input.json"
LENGTH_FACTOR = 3  # the document spans three pieces of the largest limit, at least six of the smallest
PROBE = "over_long_input"  # the catalogue probe whose presence turns this capture on


def probed(experiment: Experiment) -> bool:
    """Whether the experiment asks the long-input question: its contract probes include :data:`PROBE`."""
    probes = experiment.contract.probes
    return probes == "all" or PROBE in probes


def long_document(workload: Workload, tokens_wanted: int, count: Any) -> str:
    """The workload's English documents (else all of them) in order, repeated until ``count(text)`` reaches
    ``tokens_wanted``."""
    english = [d.text for d in workload.documents if d.lang == "en"]
    texts = english or [d.text for d in workload.documents]
    parts: list[str] = []
    while texts and count(" ".join(parts)) < tokens_wanted:
        parts.extend(texts)
    return " ".join(parts)


def stated_limits(model_path: str) -> list[int]:
    """Every token limit the model's files state (positions, tokenizer, sentence-transformers), ascending."""
    return model_limits(model_path).stated


def hypothesis_inputs(ids: list[int], limit: int) -> dict[str, list[list[int]]]:
    """The token-id inputs each hypothesis needs at one limit: ``head`` (what a tokenizer's truncation keeps: the
    first ``limit - 1`` ids and the final special token), ``head_plain`` (the first ``limit`` ids) and ``pieces``
    (consecutive ``limit``-id pieces, the last one shorter)."""
    return {"head": [ids[:limit - 1] + ids[-1:]], "head_plain": [ids[:limit]],
            "pieces": [ids[i:i + limit] for i in range(0, len(ids), limit)]}


def _answer(response: EmbeddingResponse) -> dict[str, Any]:
    record = {"status": response.status, "error": response.error, "prompt_tokens": response.prompt_tokens}
    return {**record, "vectors": [list(map(float, v)) for v in response.vectors] if response.ok else []}


def _ask(client: EmbeddingClient, tokenizer: Any, inputs: list[list[int]]) -> dict[str, Any]:
    """The server's vectors for token-id inputs; as decoded text where it refuses token ids."""
    answer = client.embed(inputs)
    if answer.ok and len(answer.vectors) == len(inputs):
        return {"as": "token_ids", **_answer(answer)}
    texts = [tokenizer.decode(piece, skip_special_tokens=True) for piece in inputs]
    return {"as": "text", "token_ids_status": answer.status, **_answer(client.embed(texts))}


def long_input_evidence(client: EmbeddingClient, workload: Workload, model_path: str) -> dict[str, Any]:
    """The long document's answer and, for every stated limit below its length, the hypotheses' answers."""
    tokenizer = load_tokenizer(model_path)
    limits = stated_limits(model_path)
    if not limits:
        return {"document_tokens": None, "limits": [], "answer": None, "hypotheses": {},
                "error": "the model's files state no token limit"}

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=True)["input_ids"])

    text = long_document(workload, LENGTH_FACTOR * max(limits), count)
    ids = list(tokenizer(text, add_special_tokens=True)["input_ids"])
    out: dict[str, Any] = {"document_tokens": len(ids), "document_chars": len(text), "limits": limits,
                           "answer": _answer(client.embed([text])), "hypotheses": {}}
    if out["answer"]["status"] != 200:
        return out  # refused: nothing to explain
    for limit in limits:
        if limit >= len(ids):
            continue
        inputs = hypothesis_inputs(ids, limit)
        out["hypotheses"][str(limit)] = {
            "piece_tokens": [len(p) for p in inputs["pieces"]],
            **{name: _ask(client, tokenizer, batch) for name, batch in inputs.items()}}
    return out


def capture_long_input(client: EmbeddingClient, workload: Workload, attempt: Attempt, prefix: str,
                       model_path: str) -> dict[str, Any]:
    """:func:`long_input_evidence`, written to ``captures/<prefix>/long_input.json``; a failure is written down
    there, never raised (no other capture depends on it)."""
    try:
        out = long_input_evidence(client, workload, model_path)
    except Exception as exc:  # noqa: BLE001 - recorded in the capture
        out = {"document_tokens": None, "limits": [], "answer": None, "hypotheses": {},
               "error": f"{type(exc).__name__}: {exc}"[:500]}
    attempt.write_json(f"{prefix}/{CAPTURE}", out)
    return out
