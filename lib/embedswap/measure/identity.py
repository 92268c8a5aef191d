"""What a server says about itself, recorded per target: the model names it serves and echoes, the
``system_fingerprint`` of its answers, the headers that name its software or build, and what its version routes
answer. A server whose identity changes under the same name (an image re-pulled, a tag moved to new weights) is a
finding of its own; two runs can only be told apart on it if each recorded it.

Every question is asked once, with a short timeout, and a route that does not exist is simply absent: servers
answer these differently (vLLM ``/version``, TEI ``/info``, llama.cpp ``/props``), and none is required.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from embedswap.measure.api_shapes import request_body
from embedswap.measure.client import EmbeddingClient

VERSION_ROUTES = ("/version", "/info", "/props")
# headers that name the software, its version or its build (lower case; matched as substrings)
HEADER_WORDS = ("server", "version", "fingerprint", "revision", "build", "powered-by")
TEXT_LIMIT = 400
TIMEOUT_S = 5.0


def _headers(response: httpx.Response) -> dict[str, str]:
    return {k.lower(): v[:TEXT_LIMIT] for k, v in response.headers.items()
            if any(word in k.lower() for word in HEADER_WORDS)}


def _route(client: EmbeddingClient, path: str) -> Any:
    """A version route's JSON answer (long values cut), or None where it has none."""
    try:
        response = client.raw("GET", path, timeout_s=TIMEOUT_S)
        if response.status_code != 200:
            return None
        body = response.json()
    except (httpx.HTTPError, ValueError):
        return None
    if isinstance(body, dict):
        return {k: (v if isinstance(v, (int, float, bool)) or v is None else str(v)[:TEXT_LIMIT])
                for k, v in list(body.items())[:40]}
    return str(body)[:TEXT_LIMIT]


def server_identity(client: EmbeddingClient, text: str, get_routes: bool = True) -> dict[str, Any]:
    """What the server says about itself while it answers ``text`` (one embeddings request, the models route and
    the version routes). ``get_routes`` false (a target with ``health_check: false``, whose server has no GET
    routes) sends the embeddings request only."""
    out: dict[str, Any] = {"served_models": None, "model": None, "system_fingerprint": None, "headers": {},
                           "routes": {}}
    try:
        out["served_models"] = client.models() if client.models_path is not None else None
    except (httpx.HTTPError, ValueError, KeyError, TypeError, RuntimeError):
        pass
    body = json.dumps(request_body(client.api_shape, client.model, [text]), ensure_ascii=False).encode()
    try:
        response = client.raw("POST", client.embeddings_path, content=body)
        out["headers"] = _headers(response)
        answer = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        answer = None
    if isinstance(answer, dict):
        for key in ("model", "system_fingerprint"):
            value = answer.get(key)
            out[key] = str(value)[:TEXT_LIMIT] if value is not None else None
    for path in VERSION_ROUTES if get_routes else ():
        found = _route(client, path)
        if found is not None:
            out["routes"][path] = found
    return out
