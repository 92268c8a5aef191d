"""What made an answer unusable, by name: the kinds every count of failed requests uses.

A server that corrupts some of its answers (a vector one value short, an index twice, a NaN, a body cut off, a
long pause) is a finding of its own; counted as "other" it cannot be told from a server that refuses requests.
Every request record the kit writes (workload, queries, probes, latency) carries ``status`` and ``error``; the
kind is read from them, with the error texts the clients write (:data:`LENGTHS`, :data:`NON_FINITE`, ... are the
texts ``measure.client`` and ``measure.load`` put in ``error``), so captures of older kits classify the same way.

Kinds (most specific first; an answer with two faults counts once, under the first):

- ``wrong_length``: vectors of another length than the others in the answer, or than this server's usual one;
- ``non_finite``: NaN or infinite values;
- ``bad_index``: ``data[].index`` not a permutation of 0..n-1 (duplicated or missing positions);
- ``wrong_count``: another number of vectors than inputs sent;
- ``malformed``: a 200 whose body is not an embeddings answer (not JSON, no ``data``);
- ``cut_body``: a status line arrived, then the connection closed before the whole body did;
- ``timeout``: no complete answer within the client's timeout;
- ``stale_connection``: no answer on a kept-alive connection the server had closed (the clients write
  :data:`STALE` before the error; the probe/workload client sends such a request once more, as most clients do);
- ``connection``: no answer at all (refused, reset or closed before a status line);
- ``status``: a status other than 200 (``429`` and ``5xx`` are named apart where latency counts refusals).

The first five are corruption (:data:`CORRUPT`): the server said 200 and the answer is wrong, a finding at any
count. The rest are transport faults (:data:`TRANSPORT`), which a client sees and retries: judged by their rate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

# the error texts the clients write (measure.client.validate_vectors, parse_response; measure.load._check)
LENGTHS = "vectors of different lengths"
OTHER_LENGTH = "vectors of another length"
NON_FINITE = "non-finite values (NaN/inf) in vectors"
BAD_INDEX = "data[].index is not a permutation"
MALFORMED = "malformed 200 response"
NO_DATA = "200 without data"
# written before the error of a request that got no answer on a reused keep-alive connection
STALE = "stale keep-alive connection"

KINDS = ("wrong_length", "non_finite", "bad_index", "wrong_count", "malformed", "cut_body", "timeout",
         "stale_connection", "connection", "status")
# a 200 whose content is wrong: it would reach an index unnoticed (malformed: unnoticed by a lenient parser)
CORRUPT = frozenset({"wrong_length", "non_finite", "bad_index", "wrong_count", "malformed"})
# what a client sees fail (and may retry): judged by its rate, not by one occurrence
TRANSPORT = frozenset(KINDS) - CORRUPT

_TIMEOUT = ("TimeoutError", "ServerTimeoutError", "ReadTimeout", "ConnectTimeout", "WriteTimeout", "PoolTimeout",
            "TimeoutException")
# the texts of aiohttp and httpx (h11 underneath) when a body stops before its Content-Length or last chunk: a
# status line had arrived. h11's "Server disconnected without sending a response." and aiohttp's
# ServerDisconnectedError come before any status line: ``connection``, as in captures of older kits
_CUT = ("ClientPayloadError", "ContentLengthError", "TransferEncodingError", "IncompleteRead",
        "peer closed connection without sending complete message body", "Response payload is not completed")


def fault_kind(status: int | None, error: str | None) -> str | None:
    """The kind of one answer's fault, or None for a usable answer (and for a request never sent)."""
    text = str(error or "")
    if status == 200 and not text:
        return None
    if text.startswith("not applicable"):  # the target's API shape cannot say the request: nothing was sent
        return None
    if status == 200:
        for needle, kind in ((LENGTHS, "wrong_length"), (OTHER_LENGTH, "wrong_length"),
                             (NON_FINITE, "non_finite"), (BAD_INDEX, "bad_index")):
            if needle in text:
                return kind
        if " vectors for " in text:
            return "wrong_count"
        if any(name in text for name in _CUT):  # a 200 whose body could not be read in full
            return "cut_body"
        return "malformed"
    if status:
        return "status"
    if text.startswith(_TIMEOUT) or "timed out" in text.lower():
        return "timeout"
    if any(name in text for name in _CUT):
        return "cut_body"
    if text.startswith(STALE):
        return "stale_connection"
    return "connection"


def stale(error: str) -> str:
    """The error of a request that got no answer on a kept-alive connection the server had closed."""
    return f"{STALE}: {error}"


def other_length(dim: int, usual: int) -> str:
    """The error of an answer whose vectors are all of one length, but not this server's usual one."""
    return f"{OTHER_LENGTH} ({dim}) than this server's other answers ({usual})"


def usual_dim(dims: Iterable[int | None]) -> int | None:
    """The length most answers have (ties: the larger count first seen); None without any."""
    counts = Counter(d for d in dims if isinstance(d, int) and d > 0)
    return counts.most_common(1)[0][0] if counts else None


def count_kinds(records: Iterable[dict[str, Any]]) -> tuple[int, dict[str, int]]:
    """(answers counted, {kind: unusable answers}) over request records (``status``, ``error``)."""
    total = 0
    kinds: Counter[str] = Counter()
    for record in records:
        error = record.get("error")
        if str(error or "").startswith("not applicable"):
            continue
        total += 1
        kind = fault_kind(record.get("status"), error)
        if kind is not None:
            kinds[kind] += 1
    return total, {k: kinds[k] for k in KINDS if kinds[k]}
