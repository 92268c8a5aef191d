"""How each server tokenizes the documents: its own token ids where it has a tokenize route, else the count its
``usage`` reports for a request of one document. The diagnosis (``embedswap.diagnosis.tokenization``) sets them
against the model's tokenizer: a server whose tokenizer splits one language differently gives other vectors for
those texts only, which no pipeline setting reproduces.

The routes tried, first answer with a list of token ids wins: llama-cpp-python's ``POST /extras/tokenize``
(``{"input"}``), vLLM's ``POST /tokenize`` (``{"model", "prompt"}``) and llama.cpp's own server's ``POST /tokenize``
(``{"content"}``, which counts no special tokens), asked of a server under ``/v1`` only. Written to ``captures/<target>/tokens.json``; at most
:data:`TOKEN_TEXTS` documents, a seeded sample stratified by language when the workload has more.
"""

from __future__ import annotations

from typing import Any

import httpx

from embedswap.captures import Attempt
from embedswap.wire.client import EmbeddingClient
from embedswap.measure.workload import Workload, stratified_sample

CAPTURE = "tokens.json"
TOKEN_TEXTS = 128  # single-text requests per server: enough for every language of a workload, bounded at scale
# (route, body for a text): the body's keys as each server names them
ROUTES: list[tuple[str, str]] = [("/extras/tokenize", "input"), ("/tokenize", "prompt"), ("/tokenize", "content")]


def _ids(response: httpx.Response) -> list[int] | None:
    """The token ids of a tokenize answer (``{"tokens": [...]}``), None for anything else."""
    if response.status_code != 200:
        return None
    try:
        tokens = response.json().get("tokens")
    except (ValueError, AttributeError):
        return None
    if isinstance(tokens, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        return [int(t) for t in tokens]
    return None


def _body(key: str, model: str, text: str) -> dict[str, Any]:
    return {"model": model, key: text}


def find_route(http: httpx.Client, model: str, text: str) -> tuple[str, str] | None:
    """The first tokenize route that answers ``text`` with token ids (None: the server has none)."""
    for route, key in ROUTES:
        try:
            if _ids(http.post(route, json=_body(key, model, text))) is not None:
                return route, key
        except httpx.HTTPError:
            continue
    return None


def chosen_rows(workload: Workload, limit: int = TOKEN_TEXTS) -> list[int]:
    """The documents asked about: all of them up to ``limit``, else a seeded sample stratified by language."""
    return stratified_sample([d.lang for d in workload.documents], limit)


def server_tokens(http: httpx.Client, client: Any, rows: list[int], texts: list[str]) -> dict[str, Any]:
    """Each text's token count (and ids) as the server sees it: through its tokenize route (``http``), else the
    ``usage`` of a one-text request (``client.embed``); a count the server did not give is None."""
    out: dict[str, Any] = {"route": None, "source": "usage", "documents": []}
    # only an OpenAI-compatible server under /v1 is asked at routes of its own: another shape (TEI, Ollama, a
    # gateway at its own paths) is sent nothing but its embeddings requests
    asks = client.api_shape == "openai" and client.embeddings_path == "/v1/embeddings"
    found = find_route(http, client.model, texts[0]) if texts and asks else None
    if found is not None:
        route, key = found
        out.update(route=route, source="tokenize")
        for row, text in zip(rows, texts):
            try:
                ids = _ids(http.post(route, json=_body(key, client.model, text)))
            except httpx.HTTPError:
                ids = None
            out["documents"].append({"row": row, "tokens": None if ids is None else len(ids), "ids": ids})
        return out
    for row, text in zip(rows, texts):
        answer = client.embed([text])
        out["documents"].append({"row": row, "tokens": answer.prompt_tokens if answer.ok else None, "ids": None})
    return out


def capture_server_tokens(client: EmbeddingClient, workload: Workload, attempt: Attempt, prefix: str,
                          headers: dict[str, str] | None = None, verify_tls: bool = True) -> dict[str, Any]:
    """:func:`server_tokens` of the chosen documents, written to ``captures/<prefix>/tokens.json``; a failure is
    written down there, never raised (the other captures of the server do not depend on it)."""
    rows = chosen_rows(workload)
    texts = [workload.documents[i].text for i in rows]
    try:
        with httpx.Client(base_url=client.base_url, timeout=60, headers=headers, verify=verify_tls) as http:
            out = server_tokens(http, client, rows, texts)
    except Exception as exc:  # noqa: BLE001 - recorded in the capture
        out = {"route": None, "source": None, "documents": [], "error": f"{type(exc).__name__}: {exc}"[:500]}
    attempt.write_json(f"{prefix}/{CAPTURE}", out)
    return out
