"""``embedswap guard check``: the canaries sent again, in a few requests, and compared per aspect with the guard.

Aspects, in the order a failure is named: ``contract`` (each probe's status, and every canary request answered),
``dimensions``, ``direction`` (worst canary's cosine to its reference), ``length`` (worst canary's norm against its
reference's: cosine cannot see a scaled vector, a dot-product index ranks by it), ``identity`` (what the server says
about itself, :mod:`embedswap.measure.identity`, against what it said in the attempt: a re-pulled image or a tag
moved to new weights under the same name is a drift of its own); then ``latency``, a warning that never fails a
check (the p50 of the document requests against the attempt's sequential p50).

A check ends in one of three results (exit code): ``pass`` (0), ``drift`` (1: an aspect failed) or ``could not tell``
(3: the server did not answer, or answered canaries with a status that says "not now", 429/502/503/504, and nothing
else failed): an alert on a CronJob must not read an overloaded server as a changed one, nor the reverse.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np

from embedswap.guard.guard_file import Canary, Guard
from embedswap.wire.api_shapes import EMBEDDINGS_PATHS, shaped_request
from embedswap.wire.client import EmbeddingClient, EmbeddingResponse
from embedswap.measure.identity import identity_changes, identity_parts, server_identity

ASPECTS = ("contract", "dimensions", "direction", "length", "identity", "latency")
NOT_NOW = (429, 502, 503, 504)  # statuses that say "try later", not "this is my answer"
QUERY_BATCH = 64  # queries per request: the canary queries of one kind are one request


class ServerUnreachable(ConnectionError):
    """No answer at all from the server (refused, timed out, not HTTP): the check could not tell, exit code 3."""


@dataclass
class Aspect:
    name: str
    status: str  # pass | fail | warn | skipped
    detail: str
    worst: str | None = None  # the canary (or probe) that decided it
    cosine: float | None = None  # that canary's cosine to its reference
    value: float | None = None
    tolerance: float | None = None


@dataclass
class CanaryResult:
    id: str
    status: int
    dim: int | None = None
    cosine: float | None = None
    norm_ratio: float | None = None
    error: str | None = None


@dataclass
class CheckResult:
    url: str
    guard: str
    aspects: list[Aspect]
    canaries: list[CanaryResult]
    seconds: float
    requests: int
    server: dict[str, Any] = field(default_factory=dict)
    undecided: str | None = None  # why the check could not tell, where nothing failed either

    @property
    def failed(self) -> list[Aspect]:
        return [a for a in self.aspects if a.status == "fail"]

    @property
    def result(self) -> str:
        return "drift" if self.failed else "could_not_tell" if self.undecided else "pass"

    @property
    def exit_code(self) -> int:
        return {"drift": 1, "could_not_tell": 3, "pass": 0}[self.result]


@dataclass
class _Answer:
    status: int
    vector: np.ndarray | None
    error: str | None


@dataclass
class _Spec:  # what shaped_request reads of a probe
    path: str


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64), b.astype(np.float64)
    denominator = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b / denominator) if denominator else float("nan")


def _send(client: EmbeddingClient, items: list[Canary], size: int) -> tuple[list[_Answer], list[float]]:
    answers: list[_Answer] = []
    latencies = []
    for start in range(0, len(items), size):
        chunk = items[start:start + size]
        response = client.embed([c.text for c in chunk])
        if response.status == 0 and "not applicable" not in (response.error or ""):
            raise ServerUnreachable(f"{client.base_url}: no answer ({response.error})")
        if len(chunk) == size:
            latencies.append(response.latency_ms)
        answers += _split(response, len(chunk))
    return answers, latencies


def _split(response: EmbeddingResponse, n: int) -> list[_Answer]:
    if not response.ok or response.vectors is None or len(response.vectors) != n:
        error = response.error or (f"{len(response.vectors or [])} vectors for {n} inputs" if response.ok else None)
        return [_Answer(response.status, None, error or f"status {response.status}")] * n
    return [_Answer(200, np.asarray(v, dtype=np.float32), None) for v in response.vectors]


def _describe_server(client: EmbeddingClient, guard: Guard, text: str) -> dict[str, Any]:
    """What the server says about itself now, asked as the attempt asked it (its version routes only where the
    attempt's server had one, or where the guard file predates the identity)."""
    recorded = guard.server.identity
    if recorded is None:
        return server_identity(client, text)
    asked_at = client.models_path
    client.models_path = recorded.get("models_path", asked_at)  # the route the attempt read the model list from
    try:
        return server_identity(client, text, get_routes=bool(recorded.get("routes")))
    finally:
        client.models_path = asked_at


def server_root(url: str) -> str:
    """The server's root, as the kit's external targets read a URL: it may end in ``/v1`` or not."""
    return url.rstrip("/").removesuffix("/v1")


def run_check(guard: Guard, url: str, *, api_shape: str | None = None, embeddings_path: str | None = None,
              headers: dict[str, str] | None = None, timeout_s: float = 60.0, guard_name: str = "") -> CheckResult:
    shape = api_shape or guard.server.api_shape
    path = embeddings_path or (guard.server.embeddings_path if shape == guard.server.api_shape
                               else EMBEDDINGS_PATHS[shape])
    reference = guard.vectors()
    started = time.monotonic()
    with EmbeddingClient(server_root(url), guard.server.served_name, timeout_s, headers, embeddings_path=path,
                         api_shape=shape, models_path=guard.server.models_path) as client:
        documents = [c for c in guard.canaries if c.kind == "document"]
        answers, latencies = _send(client, documents, guard.batch_size)
        requests = -(-len(documents) // guard.batch_size)
        by_id = dict(zip((c.id for c in documents), answers))
        for kind in ("query", "query_prefixed"):
            group = [c for c in guard.canaries if c.kind == kind]
            got, _ = _send(client, group, QUERY_BATCH)
            requests += -(-len(group) // QUERY_BATCH)
            by_id.update(zip((c.id for c in group), got))
        probes: dict[str, _Answer] = {}
        for probe in guard.contract:
            raw = (probe.raw_body or "").encode() if probe.body is None else json.dumps(
                probe.body, ensure_ascii=False).encode()
            sent, route, why_not = shaped_request(_Spec(probe.path), raw, probe.body, shape, path,
                                                  guard.server.served_name)
            if why_not is not None:
                continue  # this API shape cannot say the probe: not compared
            response = client.post_raw(sent, path=route)
            requests += 1
            vector = np.asarray(response.vectors[0], dtype=np.float32) if response.ok and response.vectors else None
            probes[probe.probe] = _Answer(response.status, vector, response.error)
        server = _describe_server(client, guard, documents[0].text if documents else "hello")
        requests += 1
    seconds = time.monotonic() - started
    rows = [_compare(c.id, by_id[c.id], reference["canaries"][c.row]) for c in guard.canaries]
    contract_rows = [_compare(f"probe:{p.probe}", probes[p.probe],
                              None if p.row is None else reference[f"contract_{p.row}"], expected_status=p.status)
                     for p in guard.contract if p.probe in probes]
    aspects, undecided = _aspects(guard, rows, contract_rows, latencies, server)
    return CheckResult(url=url, guard=guard_name, aspects=aspects, canaries=rows + contract_rows,
                       seconds=round(seconds, 3), requests=requests, server=server, undecided=undecided)


def _compare(name: str, answer: _Answer, ref: np.ndarray | None, expected_status: int = 200) -> CanaryResult:
    # an error beside the expected status is the expected refusal's text, except on a 200 (NaN, wrong count, ...)
    unexpected = answer.status != expected_status or answer.status == 200
    row = CanaryResult(id=name, status=answer.status, error=answer.error if unexpected else None)
    if answer.vector is None or ref is None:
        return row
    row.dim = int(answer.vector.shape[0])
    if row.dim == ref.shape[0]:
        row.cosine = _cosine(answer.vector, ref)
        ref_norm = float(np.linalg.norm(ref.astype(np.float64)))
        row.norm_ratio = float(np.linalg.norm(answer.vector.astype(np.float64))) / ref_norm if ref_norm else None
    return row


def _aspects(guard: Guard, rows: list[CanaryResult], contract: list[CanaryResult], latencies: list[float],
             server: dict[str, Any]) -> tuple[list[Aspect], str | None]:
    """The aspects in order, and why the check could not tell (None where it could)."""
    out = []
    statuses = {p.probe: p.status for p in guard.contract}
    def expected_status(row: CanaryResult) -> int:
        return statuses[row.id.removeprefix("probe:")] if row.id.startswith("probe:") else 200

    # "not now" where the attempt had an answer says nothing about the answer: neither drift nor pass
    not_now = [r for r in rows + contract if r.status in NOT_NOW and r.status != expected_status(r)]
    undecided = None
    if not_now:
        codes = sorted({r.status for r in not_now})
        undecided = (f"{len(not_now)} of {len(rows) + len(contract)} answers were {'/'.join(map(str, codes))} "
                     f"(try later), first {not_now[0].id}")
    waiting = {r.id for r in not_now}
    broken = [r for r in rows + contract if r.id not in waiting and (r.status != expected_status(r) or r.error)]
    if broken:
        first = broken[0]
        expected = expected_status(first)
        out.append(Aspect("contract", "fail", f"{len(broken)} answer(s) not as recorded: {first.id} answered "
                          f"{first.status} where the attempt's answered {expected}"
                          + (f" ({first.error[:160]})" if first.error else ""), worst=first.id))
    else:
        answered = [r for r in rows if r.id not in waiting]
        out.append(Aspect("contract", "pass", f"{len(answered)} canaries answered 200; {len(contract)} probe(s) "
                          "answered the statuses the attempt recorded"))
    measured = [r for r in rows + contract if r.dim is not None]
    expected_dim = int(guard.vectors()["canaries"].shape[1])
    recorded = {f"probe:{p.probe}": p.dim for p in guard.contract}
    wrong = [r for r in measured if r.dim != recorded.get(r.id, expected_dim)]
    if wrong:
        want = recorded.get(wrong[0].id, expected_dim)
        out.append(Aspect("dimensions", "fail", f"{wrong[0].id} has {wrong[0].dim} dimensions, the attempt's {want}",
                          worst=wrong[0].id, value=wrong[0].dim, tolerance=want))
    else:
        out.append(Aspect("dimensions", "pass" if measured else "skipped", f"{len(measured)} vectors of the recorded size"))
    compared = [r for r in measured if r.cosine is not None and np.isfinite(r.cosine)]
    tol = guard.tolerances
    if compared:
        worst = min(compared, key=lambda r: r.cosine)  # type: ignore[arg-type, return-value]
        gap = 1 - float(worst.cosine)  # type: ignore[arg-type]
        ok = gap <= tol.direction.value
        out.append(Aspect("direction", "pass" if ok else "fail",
                          f"worst 1 - cosine {gap:.2e} {'<=' if ok else '>'} tolerance {tol.direction.value:.2e} "
                          f"({len(compared)} vectors; {tol.direction.derived_from})",
                          worst=worst.id, cosine=worst.cosine, value=gap, tolerance=tol.direction.value))
        lengths = [r for r in compared if r.norm_ratio is not None]
        far = max(lengths, key=lambda r: abs(r.norm_ratio - 1))  # type: ignore[operator]
        change = abs(float(far.norm_ratio) - 1)  # type: ignore[arg-type]
        ok = change <= tol.length.value
        out.append(Aspect("length", "pass" if ok else "fail",
                          f"worst norm ratio {far.norm_ratio:.6f}: a change of {change:.2e} "
                          f"{'<=' if ok else '>'} tolerance {tol.length.value:.2e}",
                          worst=far.id, cosine=far.cosine, value=far.norm_ratio, tolerance=tol.length.value))
    else:
        for name in ("direction", "length"):
            out.append(Aspect(name, "fail" if any(r.id not in waiting for r in rows) else "skipped",
                              "no vector could be compared with its reference"))
    if guard.latency.p50_ms and latencies:
        p50 = float(np.median(latencies))  # numpy's, not measure.load's: aiohttp's import is 0.4 s of a check
        ratio = p50 / guard.latency.p50_ms
        slow = ratio > tol.latency_p50_ratio.value
        out.append(Aspect("latency", "warn" if slow else "pass",
                          f"p50 {p50:.1f} ms of {len(latencies)} requests of {guard.batch_size} documents against "
                          f"{guard.latency.p50_ms:.1f} ms recorded ({ratio:.2f}x; a warning above "
                          f"{tol.latency_p50_ratio.value:.2f}x)", value=ratio, tolerance=tol.latency_p50_ratio.value))
    else:
        out.append(Aspect("latency", "skipped", "no recorded p50, or no full request of documents"))
    out.append(_identity_aspect(guard, server))
    order = {name: i for i, name in enumerate(ASPECTS)}
    return sorted(out, key=lambda a: order[a.name]), undecided


def _identity_aspect(guard: Guard, server: dict[str, Any]) -> Aspect:
    recorded = guard.server.identity
    if recorded is None:  # a guard file made before identities were recorded: the old warnings
        notes = []
        models = server.get("served_models")
        if models is not None and guard.server.served_name not in models:
            notes.append(f"model '{guard.server.served_name}' is not in the server's model list {models[:5]}")
        version = ((server.get("routes") or {}).get("/version") or {})
        version = version.get("version") if isinstance(version, dict) else None
        if guard.server.version and version and str(version) not in guard.server.version:
            notes.append(f"version {version} (the attempt measured {guard.server.version})")
        return Aspect("identity", "warn" if notes else "skipped", "; ".join(notes) or
                      "the guard file has no recorded identity (made before identities were recorded)")
    changes = identity_changes(recorded, server)
    if changes:
        return Aspect("identity", "fail", f"the server says something else about itself: {'; '.join(changes)}",
                      worst=changes[0].split(":", 1)[0])
    said = len(identity_parts(recorded))
    return Aspect("identity", "pass" if said else "skipped",
                  f"{said} part(s) of what the server says about itself as recorded" if said
                  else "the server said nothing about itself in the attempt")

