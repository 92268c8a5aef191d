"""The same request sent more than once: whether a server answers identical requests identically.

A probe answered once cannot tell a server that always answers 383 values from one that answers 383 values one
time in ten: both look like "384 vs 383 dimensions". Sent ``contract.repeats`` times, the answers are compared
with each other before the server is compared with another one. Answers that differ between identical requests
(another status, an unusable body, another length, a cosine between them below the gate) make the probe's verdict
``nondeterministic``, with the share of answers that differ from the most common one and the lowest cosine between
the repeats' vectors; a difference every repeat shows is systematic and compared as before.

Each probe record keeps its first answer at the top (as the capture always wrote it) and the others in
``repeats`` (``status``, ``error``, ``dim``, ``n_vectors``, ``vector``): captures of older kits have none, and
their probes are read as sent once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from embedswap.config.sections import ContractConfig, ProbeSpec
from embedswap.stats.vectors import pair_cosine
from embedswap.wire.answer_faults import fault_kind

# what a repeat keeps of its answer (the first vector is what the probe verdicts compare)
REPEAT_KEYS = ("status", "error", "dim", "n_vectors", "prompt_tokens", "encoding", "model", "indices", "index_order_ok",
               "stale_retry", "vector")


@dataclass
class Spread:
    """How a server's answers to identical requests agree."""

    sent: int  # answers compared (the first one and its repeats)
    differing: int  # answers unlike the most common one
    cosine_min: float | None  # the lowest cosine between two repeats' vectors of one length (None: fewer than two)
    kinds: dict[str, int] = field(default_factory=dict)  # unusable answers among them, by fault kind
    majority: dict[str, Any] | None = None  # the most common answer (its first occurrence)

    @property
    def rate(self) -> float:
        return self.differing / self.sent if self.sent else 0.0

    def record(self) -> dict[str, Any]:
        """As the summary stores it beside the probe's answer."""
        return {"sent": self.sent, "differing": self.differing, "rate": round(self.rate, 4),
                "cosine_min": None if self.cosine_min is None else round(self.cosine_min, 6), "kinds": self.kinds}


def probe_times(spec: ProbeSpec, contract: ContractConfig) -> int:
    """How many times a probe is sent: its own ``repeats`` (``same_text_twice``: 2), else once for the probes in
    ``contract.not_repeated`` (long to answer), else ``contract.repeats``."""
    if spec.repeats is not None:
        return spec.repeats
    return 1 if spec.name in contract.not_repeated else contract.repeats


def repeat_answer(record: dict[str, Any], vector: Any) -> dict[str, Any]:
    """What a repeat keeps of an answer record (``EmbeddingResponse.record()``) and its first vector."""
    return {**{k: record.get(k) for k in REPEAT_KEYS if k != "vector"}, "vector": vector}


def spread(record: dict[str, Any], same_threshold: float) -> Spread | None:
    """How the probe's answers (``record`` and its ``repeats``) agree; None for a probe sent once."""
    repeats = record.get("repeats")
    if not isinstance(repeats, list) or not repeats:
        return None
    answers = [record, *repeats]
    kinds = Counter(k for k in (fault_kind(a.get("status"), a.get("error")) for a in answers) if k is not None)
    # answers alike: same status, same fault (or none), same shape; their vectors within the gate of each other
    shapes = [(a.get("status"), fault_kind(a.get("status"), a.get("error")), a.get("dim"), a.get("n_vectors"))
              for a in answers]
    common, _ = Counter(shapes).most_common(1)[0]
    first = shapes.index(common)
    reference = answers[first].get("vector")
    differing = 0
    for shape, answer in zip(shapes, answers, strict=True):
        if shape != common:
            differing += 1
        elif reference is not None and answer.get("vector") is not None:
            cos = pair_cosine(reference, answer["vector"])
            differing += cos is None or cos < same_threshold
    vectors = [a.get("vector") for a in answers if a.get("vector") is not None]
    pairs = [pair_cosine(a, b) for i, a in enumerate(vectors) for b in vectors[i + 1:]]
    values = [c for c in pairs if c is not None]
    return Spread(sent=len(answers), differing=differing, cosine_min=min(values) if values else None,
                  kinds=dict(kinds), majority=answers[first])


def representative(record: dict[str, Any], same_threshold: float) -> dict[str, Any]:
    """The answer a comparison reads: the most common of the repeats (the record itself when sent once), with the
    probe's own fields (``sent``, ``tokenizer_tokens``, ...) kept."""
    found = spread(record, same_threshold)
    if found is None or found.majority is None or found.majority is record:
        return record
    return {**record, **{k: found.majority.get(k) for k in REPEAT_KEYS}}
