"""The shim in front of a server of another API shape (issue 64): the old client's OpenAI-style request, already
rewritten per ``ShimConfig``, said in the candidate's shape (``embedswap.wire.api_shapes.translate``), and the
tokens of what was sent counted with the model's tokenizer where the shape's answer carries no ``usage``.

The answer needs no code here: ``embedswap.wire.client.parse_response`` reads every shape into the same record
(vectors in input order), and the shim answers the caller from that record in OpenAI's form."""

from __future__ import annotations

from typing import Any

from embedswap.shim.settings import ShimRequestError
from embedswap.shim.text import request_token_count
from embedswap.wire.api_shapes import SHAPES, ApiShape, NotApplicable, translate

# the shapes the shim speaks upstream: every shape the kit reads (translate says each; parse_response reads each)
SHIM_SHAPES: frozenset[str] = frozenset(SHAPES)
# the header that labels a `usage` the shim counted itself (the server sent none); absent otherwise
USAGE_HEADER = "x-embedswap-usage"
USAGE_COUNTED = "counted-by-shim"


def say_in_shape(body: dict[str, Any], shape: ApiShape) -> dict[str, Any]:
    """The OpenAI-shaped ``body`` in ``shape``; raises ShimRequestError for a field the shape has no name for
    (sending the request without it would drop what the caller asked without a word)."""
    if shape == "openai":
        return body
    out = dict(body)
    # the shim answers in the encoding the caller asked for (floats, or base64 it encodes itself), so the upstream
    # is asked for floats: TEI and Ollama have no field for it, and Cohere's default set by translate is float
    out.pop("encoding_format", None)
    try:
        # served_name=None: TEI serves one model and has no field for it; the name is left out, not checked
        return translate(out, shape, served_name=None)
    except NotApplicable as exc:
        # a named field may be dropped on purpose (ShimConfig.drop_fields); token ids have no text to send instead
        remedy = "list it in drop_fields to have it removed" if exc.field.startswith("`") else "send the text"
        raise ShimRequestError(f"the {shape} API cannot express {exc.field}; the shim does not drop it silently "
                               f"({remedy})", exc.field.strip("`")) from exc


def count_tokens(tokenizer: Any, body: dict[str, Any], limit: int | None) -> int | None:
    """The model tokenizer's count of the inputs the shim sent (special tokens included, each cut at ``limit`` as
    the server cuts it): the ``usage.prompt_tokens`` a server of this model would have reported; None where the
    inputs cannot be counted (a wrong-typed input)."""
    try:
        return request_token_count(tokenizer, body, limit)
    except Exception:  # an input the tokenizer refuses: no count (null), never a guessed one
        return None
