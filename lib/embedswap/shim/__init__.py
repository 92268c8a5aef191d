"""The client migration shim: what the old client must do itself once the home-made server is gone.

The article (section 4) found four requests that the legacy server and the vLLM/Dynamo embedding worker answer
differently, and its conclusion (section 7) is that the work of the swap is in the client: drop ``dimensions``,
put the query instruction in the text, cut inputs to the token limit, do not retry a 500 that is really a client
error. This module is that client-side fix, as a small library:

- ``ShimConfig``: what to rewrite. ``ShimConfig.from_probes`` derives it from a candidate's contract-probe
  captures (``captures/<target>/probes.jsonl``), optionally compared with the legacy server's:

  ============================================  ================================================================
  probe finding (candidate)                      setting
  ============================================  ================================================================
  ``dimensions_*`` answered 4xx/5xx              ``strip_dimensions``: drop the field, slice + L2-renormalise here
  ``input_type_query`` silently diverges         ``prepend_query_instruction``: drop ``input_type``/``instruction``,
                                                 put the model card's prompt in the text
  ``over_long_input`` answered 4xx/5xx           ``max_input_tokens`` (read from the error text when it states
                                                 the limit): pre-truncate with the model's own tokenizer
  ``unknown_model`` answered 4xx                 ``model_override``: send the served name (legacy ignored it)
  a client-error probe answered 5xx              ``non_retryable_statuses``: that status is a disguised client
                                                 error; never resend it
  ``empty_string`` 200 where legacy said 4xx     ``reject_empty_strings``: answer 400 here, as the legacy server
  ``encoding_base64`` answered a string          ``force_float`` (always on by default): ask for floats, and decode
                                                 base64 anyway if it comes back
  ============================================  ================================================================

- ``EmbeddingShim``: an httpx client that rewrites each ``/v1/embeddings`` request, retries only 503/429/529
  (bounded exponential backoff; never a status learned to be a disguised client error) and post-processes the
  answer. It returns ``embedswap.wire.client.EmbeddingResponse`` records, like ``EmbeddingClient``.
- ``ShimTransport``: the same as an ``httpx.BaseTransport``, so the official ``openai`` client (or any
  httpx-based client) goes through the shim without code changes::

      transport = ShimTransport(config, "http://vllm:8000")
      client = openai.OpenAI(base_url="http://vllm:8000/v1", api_key="...",
                             http_client=httpx.Client(transport=transport))
      client.embeddings.create(model="minilm", input=["..."], dimensions=256)  # works against vLLM

Why a transport (and not a proxy server, a subclass of the SDK, or a wrapper function): the SDK accepts an
``http_client`` by design, so a transport needs no monkey-patching and survives SDK upgrades; it sees the exact
body the SDK built (including the fields a caller put in ``extra_body``) and the raw answer before the SDK parses
it; it adds no process, port or network hop to deploy and watch (a sidecar proxy would be one more server to
migrate); and it works the same for every httpx-based client (``EmbeddingClient`` included). Everything the SDK
does stays as it is (auth header, timeouts, typed responses). It is an ``httpx`` transport: give it to an
``httpx.Client``, which the ``openai`` SDK accepts (releases built on ``httpx2`` still take an ``httpx.Client``).

Two details of the official client that the transport handles:

- it sends ``encoding_format="base64"`` when the caller gives none, and decodes the answer with
  ``np.frombuffer(..., dtype="float32")`` (native order: little-endian on x86 and ARM). The shim asks the server
  for floats (it has to slice and renormalise numbers), then answers in the format the caller asked for: base64
  of little-endian float32 (``<f4``) when asked for base64, arrays otherwise. A caller that asks ``"float"``
  explicitly gets arrays, as the OpenAI API specifies (the legacy server always answered arrays).
- it retries 408/409/429/5xx itself (``max_retries=2`` by default). The shim has done its bounded retries
  already, so every answer the transport returns carries ``x-should-retry: false``, which the SDK obeys: a
  disguised 500 is not resent, and retries do not multiply (3 SDK tries x 4 shim tries).

A candidate of another API shape (``api_shape``: TEI, Ollama, Cohere v2) is spoken to in its own shape at its own
route, and answered back in OpenAI's form; ``usage`` that shape does not carry is counted with the model's
tokenizer only under ``ShimConfig.usage = "counted"``, and labelled so (``shapes``).

The package's modules: ``settings`` (``ShimConfig`` and how it is derived from the probes), ``text`` (tokenizer,
truncation, re-normalising, base64), ``client`` (``EmbeddingShim``: rewrite, send with retries, post-process),
``shapes`` (another API shape upstream) and ``transport`` (``ShimTransport``). ``embedswap.shim`` re-exports them,
so every import stays as it was.
"""

from embedswap.shim.client import EmbeddingShim, Rewrite
from embedswap.shim.settings import (CLIENT_ERROR_PROBES, QUERY_FIELDS, RETRY_STATUSES, ShimConfig,
                                     ShimRequestError)
from embedswap.shim.shapes import SHIM_SHAPES, USAGE_COUNTED, USAGE_HEADER
from embedswap.shim.text import Truncator, encode_base64, l2_renormalise, load_tokenizer, model_token_limit
from embedswap.shim.transport import ShimTransport

__all__ = ["CLIENT_ERROR_PROBES", "QUERY_FIELDS", "RETRY_STATUSES", "SHIM_SHAPES", "USAGE_COUNTED", "USAGE_HEADER",
           "EmbeddingShim", "Rewrite", "ShimConfig", "ShimRequestError", "ShimTransport", "Truncator",
           "encode_base64", "l2_renormalise", "load_tokenizer", "model_token_limit"]
