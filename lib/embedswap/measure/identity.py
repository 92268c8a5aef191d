"""What a server says about itself, recorded per target: the model names it serves and echoes, the
``system_fingerprint`` of its answers, the headers that name its software or build, and what its version routes
answer. A server whose identity changes under the same name (an image re-pulled, a tag moved to new weights) is a
finding of its own; two runs can only be told apart on it if each recorded it.

Every question is asked once, with a short timeout, and a route that does not exist is simply absent: servers
answer these differently (vLLM ``/version``, TEI ``/info``, llama.cpp ``/props``, Infinity only the ``info`` of its
OpenAPI document ``/openapi.json``), and none is required.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import httpx

from embedswap.wire.api_shapes import MODEL_ROUTES, request_body, stated_models
from embedswap.wire.client import EmbeddingClient

VERSION_ROUTES = ("/version", "/info", "/props")
# a FastAPI server states its title and version in its OpenAPI document (Infinity says its version nowhere else);
# only the document's ``info`` is kept, and not FastAPI's defaults, which say nothing about the server
OPENAPI_ROUTE = "/openapi.json"
OPENAPI_DEFAULTS = {"title": "FastAPI", "version": "0.1.0"}
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


def _openapi_info(client: EmbeddingClient) -> dict[str, str] | None:
    """The title and version the server's OpenAPI document states, or None where it has none (or only FastAPI's
    defaults)."""
    try:
        response = client.raw("GET", OPENAPI_ROUTE, timeout_s=TIMEOUT_S)
        info = response.json().get("info") if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    if not isinstance(info, dict):
        return None
    said = {k: str(info[k])[:TEXT_LIMIT] for k in ("title", "version") if info.get(k) is not None}
    return None if not said or said.items() <= OPENAPI_DEFAULTS.items() else said


def served_models(client: EmbeddingClient) -> list[str] | None:
    """The models the server lists on its own shape's route (``api_shapes.MODEL_ROUTES``: TEI ``/info``, Ollama
    ``/api/tags``; OpenAI-style servers their models route), None where it has none or was not asked (a target
    whose server has no GET routes: ``models_path`` None)."""
    if client.models_path is None:
        return None
    route = MODEL_ROUTES.get(client.api_shape)
    try:
        if route is None:
            return client.models()
        response = client.raw("GET", route, timeout_s=TIMEOUT_S)
        if response.status_code != 200:
            return None
        return stated_models(client.api_shape, response.json()) or None
    except (httpx.HTTPError, ValueError, KeyError, TypeError, RuntimeError):
        return None


def server_identity(client: EmbeddingClient, text: str, get_routes: bool = True) -> dict[str, Any]:
    """What the server says about itself while it answers ``text`` (one embeddings request, the models route and
    the version routes). ``get_routes`` false (a target with ``health_check: false``, whose server has no GET
    routes) sends the embeddings request only."""
    # models_path and status say how it was asked and whether the embeddings request was answered (not identity)
    out: dict[str, Any] = {"served_models": None, "model": None, "system_fingerprint": None, "headers": {},
                           "routes": {}, "models_path": client.models_path, "status": None}
    out["served_models"] = served_models(client)
    body = json.dumps(request_body(client.api_shape, client.model, [text]), ensure_ascii=False).encode()
    try:
        response = client.raw("POST", client.embeddings_path, content=body)
        out["status"] = response.status_code
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
    stated = _openapi_info(client) if get_routes else None
    if stated is not None:
        out["routes"][OPENAPI_ROUTE] = stated
    return out


# keys of a version route's answer that name the software, model or build (the rest: slots, limits, counters)
ROUTE_KEY_WORDS = ("version", "build", "model", "commit", "revision", "fingerprint", "sha")


def identity_parts(identity: dict[str, Any], answered: bool = True) -> dict[str, Any]:
    """The parts of an identity that name what is served, flattened to ``{field: value}``: the served model list,
    the model and fingerprint an answer echoes, the naming headers, and the naming keys of each version route.
    ``answered`` false leaves out what only an answered embeddings request says (model, fingerprint, headers)."""
    out: dict[str, Any] = {}
    if identity.get("served_models"):
        out["served models"] = sorted(str(m) for m in identity["served_models"])
    for key in ("model", "system_fingerprint") if answered else ():
        if identity.get(key):
            out[key] = identity[key]
    for name, value in (identity.get("headers") or {}).items() if answered else ():
        out[f"header {name}"] = value
    for path, answer in (identity.get("routes") or {}).items():
        if isinstance(answer, dict):
            for key, value in answer.items():
                if any(word in key.lower() for word in ROUTE_KEY_WORDS):
                    out[f"{path} {key}"] = value
        elif answer:
            out[path] = answer
    return out


def identity_changes(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Each part of the ``recorded`` identity the server now says differently or no longer says, as
    ``"<field>: <then> -> <now>"``; parts it says now and did not say then are not a change (a route added by an
    upgrade shows up as the version that changed with it). Where the embeddings request was not answered now (a
    status other than 200 recorded in ``now``), only the model list and the version routes are compared."""
    answered = now.get("status") in (None, 200)
    then, current = identity_parts(recorded, answered), identity_parts(now, answered)
    return [f"{field}: {value} -> {current.get(field, 'not said')}"
            for field, value in then.items() if current.get(field) != value]


# where a server states its version, most telling first: a version key of a version route (vLLM ``/version``, TEI
# ``/info``), a build key (llama.cpp ``/props`` ``build_info``), a header naming a version, then a header naming the
# software (``server: llama.cpp``); generic web servers say nothing about the engine behind them
_GENERIC_SERVERS = ("uvicorn", "hypercorn", "gunicorn", "nginx", "envoy", "istio-envoy", "apache", "caddy",
                    "werkzeug", "basehttp", "cloudflare", "openresty", "granian", "daphne", "axum", "hyper")
# what a naming header's value looks like when it is a version or a build, not a name alone
_VERSIONISH = re.compile(r"\d+(?:\.\d+)+|\bb\d{3,}\b|\bv\d+\b")


@dataclass(frozen=True)
class StatedVersion:
    """What a server states about its version, read from its recorded identity as the guard reads it
    (:func:`identity_parts`).

    ``version``: the version it states (``0.32.0``, ``b6000-abc``, ``llama.cpp``), None where it states none.
    ``where``: the part it came from (``/version``, ``/props build_info``, ``header server``).
    ``said``: a short description of what it said about itself (``/version 0.32.0``), its version where it stated
    one, else its most telling other part (a fingerprint, a served model); None where it said nothing at all.
    ``parts``: every naming part, as text (the guard's fields)."""
    version: str | None = None
    where: str | None = None
    said: str | None = None
    parts: dict[str, str] = field(default_factory=dict)


def _text(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _where(part: str) -> str:
    """A part's short place: the route alone where its key is ``version`` (``/version``), else the part's name."""
    route, _, key = part.partition(" ")
    return route if route.startswith("/") and key == "version" else part


def _version_part(parts: dict[str, str]) -> str | None:
    """The part that states the version, most telling first (see ``_GENERIC_SERVERS``' comment)."""
    routes = [p for p in parts if p.startswith("/")]
    headers = [p for p in parts if p.startswith("header ")]
    ranked = ([p for p in routes if p.endswith(" version")], [p for p in routes if "version" in p.split(" ", 1)[-1]],
              [p for p in routes if " " not in p], [p for p in routes if "build" in p],
              [p for p in headers if "version" in p or "build" in p or "revision" in p],
              [p for p in headers if _VERSIONISH.search(parts[p])],
              [p for p in headers if p in ("header server", "header x-powered-by", "header powered-by")
               and not parts[p].lower().startswith(_GENERIC_SERVERS)])
    return next((group[0] for group in ranked if group), None)


def stated_version(identity: dict[str, Any] | None) -> StatedVersion:
    """The version a server states about itself in a recorded identity (:func:`server_identity`'s dict); an
    identity whose embeddings request was not answered is read as the guard reads it (routes and models only)."""
    if not identity:
        return StatedVersion()
    found = identity_parts(identity, answered=identity.get("status") in (None, 200))
    parts = {name: _text(value)[:TEXT_LIMIT] for name, value in found.items()
             if value is not None and _text(value).strip()}
    part = _version_part(parts)
    if part is not None:
        where = _where(part)
        return StatedVersion(version=parts[part], where=where, said=f"{where} {parts[part]}", parts=parts)
    # no version: the part that tells most about what is served (a fingerprint before an echoed model name)
    order = ("system_fingerprint", *(p for p in parts if p.startswith("/")),
             *(p for p in parts if p.startswith("header ") and not parts[p].lower().startswith(_GENERIC_SERVERS)),
             "model", "served models")
    other = next((p for p in order if p in parts), None)
    return StatedVersion(said=f"{other} {parts[other]}" if other else None, parts=parts)
