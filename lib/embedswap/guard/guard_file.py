"""The guard file: one JSON document with its reference vectors embedded (a compressed ``.npz``, base64) and a
sha256 over everything, so a file changed by hand fails to load instead of guarding against edited references.

Decision: one file rather than a JSON beside an ``.npz``: it is committed beside a deployment and copied into a
ConfigMap, where two files that must travel together are one more way to check against the wrong references.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

FORMAT = "embedswap-guard"
VERSION = 1


class GuardFileError(ValueError):
    """A guard file that cannot be used: unreadable, of another format, or changed after it was made."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Source(_Strict):
    """Where the references come from: the attempt they were read from, never measured again."""

    experiment: str
    attempt: str
    target: str
    manifest_sha256: str  # the attempt's manifest.json as it was when the guard was made
    kit_version: str
    created: str


class Canary(_Strict):
    """One input of the canary set; ``row`` is its reference vector's row in the ``canaries`` array."""

    id: str
    kind: Literal["document", "query", "query_prefixed"]
    lang: str
    text: str
    utf8_bytes: int
    why: str  # "stratified", "longest", ...
    row: int


class ContractCanary(_Strict):
    """One probe of the attempt, resent as it was sent then: the status, size and length it answered with."""

    probe: str
    why: str
    path: str
    body: dict[str, Any] | None = None  # the request in OpenAI's shape (translated at check time)
    raw_body: str | None = None
    status: int
    dim: int | None = None
    norm: float | None = None
    row: int | None = None  # its first vector is the array ``contract_<row>`` (200 answers only)


class Tolerance(_Strict):
    value: float
    derived_from: str  # how the value was reached, in words (shown with a failure)


class Tolerances(_Strict):
    # worst canary's 1 - cosine to its reference
    direction: Tolerance
    # worst canary's |norm / reference norm - 1|
    length: Tolerance
    # the check's p50 over the recorded p50 above which a warning is given (never a failure)
    latency_p50_ratio: Tolerance


class Server(_Strict):
    """What the server said about itself when the attempt measured it, and how to reach its routes."""

    kind: str
    version: str | None = None
    served_name: str
    api_shape: str = "openai"
    embeddings_path: str
    models_path: str | None = None
    # what the server said about itself in the attempt (measure.identity); None in guard files made before it was
    # recorded, which the check then reads as before (model list and version route, warnings only)
    identity: dict[str, Any] | None = None


class Latency(_Strict):
    p50_ms: float | None = None
    requests_of: int  # documents per request, the same as the check's document requests
    source: str


class Guard(_Strict):
    format: Literal["embedswap-guard"] = FORMAT
    version: Literal[1] = VERSION
    source: Source
    server: Server
    tolerances: Tolerances
    latency: Latency
    batch_size: int = Field(gt=0)
    canaries: list[Canary]
    contract: list[ContractCanary]
    arrays: str  # base64 of a compressed .npz, float32: "canaries" (n, dim) and "contract_<row>" (dim of its probe)
    sha256: str = ""

    def vectors(self) -> dict[str, np.ndarray]:
        with np.load(io.BytesIO(base64.b64decode(self.arrays)), allow_pickle=False) as npz:
            return {name: np.asarray(npz[name], dtype=np.float32) for name in npz.files}


def pack_arrays(**arrays: np.ndarray) -> str:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def digest(content: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of everything but the digest itself."""
    body = {k: v for k, v in content.items() if k != "sha256"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def sealed(guard: Guard) -> Guard:
    content = guard.model_dump(mode="json")
    return guard.model_copy(update={"sha256": digest(content)})


def write_guard(guard: Guard, path: Path, overwrite: bool = False) -> Path:
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} already exists (--force replaces it)")
    content = sealed(guard).model_dump(mode="json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, ensure_ascii=False, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    return path


def load_guard(path: Path) -> Guard:
    """The guard of ``path``; GuardFileError names what is wrong (not found, not a guard, changed by hand)."""
    try:
        content = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GuardFileError(f"{path}: no such guard file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GuardFileError(f"{path}: not a guard file ({type(exc).__name__}: {exc})") from None
    if not isinstance(content, dict) or content.get("format") != FORMAT:
        raise GuardFileError(f"{path}: not a guard file (no \"format\": \"{FORMAT}\")")
    if content.get("version") != VERSION:
        raise GuardFileError(f"{path}: guard format version {content.get('version')!r}; this kit reads {VERSION}")
    expected = content.get("sha256")
    actual = digest(content)
    if expected != actual:
        raise GuardFileError(f"{path}: sha256 mismatch: the file was changed after `embedswap guard init` "
                             f"(recorded {str(expected)[:12]}..., computed {actual[:12]}...); make it again")
    try:
        guard = Guard.model_validate(content)
        arrays = guard.vectors()
    except (ValidationError, ValueError, OSError) as exc:
        raise GuardFileError(f"{path}: not a valid guard file: {' '.join(str(exc).split())[:300]}") from None
    rows = arrays.get("canaries")
    if rows is None or rows.shape[0] != len(guard.canaries):
        raise GuardFileError(f"{path}: the embedded vectors do not match the canaries")
    return guard
