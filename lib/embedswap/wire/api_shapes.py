"""The request shapes of the embedding APIs the kit can measure, and how an OpenAI-style request is said in each.

====================  ======================  =============================================================
shape                 route (default)         request -> answer
====================  ======================  =============================================================
``openai``            ``POST /v1/embeddings``  ``{model, input}`` -> ``{data: [{index, embedding}], usage}``
``cohere-v2``         ``POST /v2/embed``       ``{model, texts, input_type, embedding_types}`` ->
                                               ``{embeddings: {float: [[...]]}, meta.billed_units}``
``tei``               ``POST /embed``          ``{inputs}`` -> ``[[...]]`` (Hugging Face text-embeddings-inference)
``ollama``            ``POST /api/embed``      ``{model, input}`` -> ``{embeddings: [[...]], prompt_eval_count}``
====================  ======================  =============================================================

The probe catalogue is written in the OpenAI shape (the legacy server's). :func:`translate` says each probe in a
target's shape where that shape can express it, and returns why not where it cannot (e.g. ``instruction`` or token
ids for Cohere, ``encoding_format`` for TEI): such a probe is *not applicable* to that target, never a failure.
``client.parse_response`` reads the answers of every shape.
"""

from __future__ import annotations

import json
from typing import Any, Literal

ApiShape = Literal["openai", "cohere-v2", "tei", "ollama"]
SHAPES: tuple[str, ...] = ("openai", "cohere-v2", "tei", "ollama")
EMBEDDINGS_PATHS = {"openai": "/v1/embeddings", "cohere-v2": "/v2/embed", "tei": "/embed", "ollama": "/api/embed"}
# the route that says the server is up (a GET answering 200)
HEALTH_PATHS = {"openai": "/v1/models", "cohere-v2": "/v1/models", "tei": "/health", "ollama": "/api/tags"}
# where a server of each shape states the model it serves (issue 64): OpenAI-style servers list it at their models
# route (``data[].id``, read by ``EmbeddingClient.models``), TEI at ``GET /info`` (``model_id``), Ollama at
# ``GET /api/tags`` (``models[].name``); the echoed ``model`` of an answer is read beside these
MODEL_ROUTES = {"tei": "/info", "ollama": "/api/tags"}
# what an answer of each shape cannot carry (issue 64): TEI's ``[[...]]`` has no ``usage``. A candidate of such a
# shape lacks it against a legacy server whose answers carry it once, as a property of the shape (one client change,
# analysis.client_changes), not as a difference on every probe (answers.classify)
ANSWER_LACKS: dict[str, frozenset[str]] = {"tei": frozenset({"usage"})}
# where each shape takes the inputs
INPUT_KEYS = {"openai": "input", "cohere-v2": "texts", "tei": "inputs", "ollama": "input"}
# Cohere's names for the roles of a text
COHERE_INPUT_TYPES = {"query": "search_query", "document": "search_document", "passage": "search_document"}


class NotApplicable(ValueError):
    """A request the shape cannot express; ``field`` names what it lacks."""

    def __init__(self, shape: str, field: str) -> None:
        super().__init__(f"the {shape} API cannot express {field}")
        self.shape = shape
        self.field = field


def _token_ids(value: Any) -> bool:
    def ids(v: Any) -> bool:
        return isinstance(v, list) and bool(v) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)

    return ids(value) or (isinstance(value, list) and bool(value) and all(ids(v) for v in value))


def translate(body: dict[str, Any], shape: str, served_name: str | None = None) -> dict[str, Any]:
    """An OpenAI-shaped request body in ``shape``; raises :class:`NotApplicable` where the shape cannot say it.

    Each field keeps its value under the shape's name for it (a wrong-typed ``input`` stays wrong-typed, so the
    probe asks the same question); what the shape has no name for makes the probe not applicable.
    """
    if shape == "openai":
        return dict(body)
    if shape not in SHAPES:
        raise ValueError(f"unknown API shape {shape!r}; known: {', '.join(SHAPES)}")
    out: dict[str, Any] = {}
    for key, value in body.items():
        if key == "model":
            if shape == "tei":  # TEI serves one model and has no field to name it
                if served_name is not None and value != served_name:
                    raise NotApplicable(shape, "`model`")
                continue
            out["model"] = value
        elif key == "input":
            if shape in ("cohere-v2", "ollama") and _token_ids(value):
                raise NotApplicable(shape, "token ids")
            out[INPUT_KEYS[shape]] = value
        elif key == "dimensions":
            out["output_dimension" if shape == "cohere-v2" else "dimensions"] = value
        elif key == "encoding_format":
            if shape != "cohere-v2":
                raise NotApplicable(shape, "`encoding_format`")
            out["embedding_types"] = [value]
        elif key == "input_type":
            if shape == "cohere-v2":
                out["input_type"] = COHERE_INPUT_TYPES.get(value, value)
            elif shape == "tei" and value == "query":
                out["prompt_name"] = "query"  # the sentence-transformers prompt of that name, applied by TEI
            else:
                raise NotApplicable(shape, "`input_type`")
        else:  # instruction, and any field of a custom probe
            raise NotApplicable(shape, f"`{key}`")
    if shape == "cohere-v2":
        out.setdefault("embedding_types", ["float"])
    return out


def request_body(shape: str, model: str, inputs: Any, **fields: Any) -> dict[str, Any]:
    """The body that embeds ``inputs`` in ``shape`` (fields in OpenAI's names; NotApplicable where not sayable)."""
    return translate({"model": model, "input": inputs, **fields}, shape, served_name=model)


def shaped_request(spec: Any, raw: bytes, body: dict[str, Any] | None, shape: str, embeddings_path: str,
                   served_name: str) -> tuple[bytes, str, str | None]:
    """(bytes to send, route, None) for one probe in the target's API shape (``embedswap.wire.api_shapes``), or
    (b"", "", what the shape cannot express). A probe of the kit's default route goes to the target's embeddings
    route; a probe of another route (vLLM's ``/v2/embed``) is sent as written to an OpenAI-shaped target only."""
    if spec.path != EMBEDDINGS_PATHS["openai"]:
        return (raw, spec.path, None) if shape == "openai" else (b"", "", f"`POST {spec.path}`")
    if body is None or shape == "openai":
        return raw, embeddings_path, None
    try:
        shaped = translate(body, shape, served_name)
    except NotApplicable as exc:
        return b"", "", exc.field
    return json.dumps(shaped, ensure_ascii=False).encode(), embeddings_path, None


def stated_models(shape: str, answer: Any) -> list[str]:
    """The model names a ``GET MODEL_ROUTES[shape]`` answer states (empty where it states none)."""
    if not isinstance(answer, dict):
        return []
    if shape == "tei":
        found = [answer.get("model_id")]
    elif shape == "ollama":
        found = [m.get("name") or m.get("model") for m in answer.get("models") or [] if isinstance(m, dict)]
    else:
        found = [m.get("id") for m in answer.get("data") or [] if isinstance(m, dict)]
    return [str(name) for name in found if isinstance(name, str) and name.strip()]
