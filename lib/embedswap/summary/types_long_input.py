"""summary.json's ``long_input`` section (:mod:`embedswap.summary.sections.long_input`): what each server did with
an input longer than the model takes, read from the answers to its pieces."""

from __future__ import annotations

from typing import Literal

from embedswap.summary.types_common import Number, Section, Strict

# refused: not 200; truncated: the first tokens at ``limit``; chunk_average: pieces of ``limit`` averaged;
# ambiguous: more than one hypothesis reproduces the answer; unexplained: none does; error: the capture failed
LongInputCode = Literal["refused", "truncated", "chunk_average", "ambiguous", "unexplained", "error"]


class LongInputHypothesis(Strict):
    """One way the server may have built its answer, at one limit, and the cosine of its vector to the answer."""
    name: Literal["truncated", "chunk_average"]
    limit: int
    cosine: Number | None
    pieces: int
    pieces_as: Literal["token_ids", "text"] | None = None


class LongInputFinding(Strict):
    """One server's handling of the long document: its code, the limit it worked at, the evidence."""
    target: str
    code: LongInputCode
    limit: int | None = None
    cosine: Number | None = None  # the chosen (or, unexplained, the closest) hypothesis' cosine to the answer
    status: int | None = None
    error: str | None = None
    prompt_tokens: int | None = None  # what its usage reported for the long document
    hypotheses: list[LongInputHypothesis] = []
    same_as_legacy: bool | None = None  # candidates only: the legacy server's code and limit


class LongInput(Section):
    """The long document (its tokens by the model's tokenizer), the gate a hypothesis must pass, per server."""
    document_tokens: int | None = None
    limits: list[int] = []
    threshold: Number | None = None
    by_target: dict[str, LongInputFinding] = {}

    def of(self, name: str) -> LongInputFinding | None:
        """One server's finding, or None: not captured."""
        return self.by_target.get(name)
