"""The parity section of summary.json: every backend's vectors against the golden reference (step 05), the parity
matrix of article 003, and the multimodal part."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from embedswap.summary.types_common import Number, Reason, Section, Strict
from embedswap.summary.types_sections import DiagnosisFinding


class WorstDocument(Strict):
    id: str
    cosine: Number | None = None


class ParityRow(Strict):
    """One backend and dtype against the golden reference (parity.gate.ParityRow): cosine spread, gate, cause."""
    backend: str
    dtype: str
    device: str
    modality: str
    n: int
    cos_min: Number | None = None
    cos_median: Number | None = None
    cos_max: Number | None = None
    threshold: Number
    passed: bool = Field(alias="pass")
    worst: list[WorstDocument] = []
    non_finite: int = 0
    why: str | None = None  # the cause of a failure (norm or dimension mismatch)
    reason: Reason | None = None
    source: str | None = None
    part: Literal["text", "image"] | None = None  # multimodal rows: which part of the CLIP model
    request: str | None = None  # multimodal rows: the request field that carried it (input, messages)
    diagnosis: DiagnosisFinding | None = None  # a failed text row: which known pipeline mistake reproduces it


class NotRun(Strict):
    """A configured backend that could not be measured."""
    backend: str
    why: str
    reason: Reason | None = None


class ColdStartFigures(Strict):
    """A cold_start row's figures (embedswap.parity.checks): start to healthy, the first request, the steady ones
    after it (None: not recorded, e.g. a server that started but served too few requests)."""
    start_s: Number | None = None
    first_ms: Number | None = None
    steady_median_ms: Number | None = None
    steady_n: int | None = None
    first_over_steady: Number | None = None


class MatrixRow(Strict):
    """One row of article 003's parity matrix (embedswap.parity.matrix.MatrixRow): figures, or a reason code."""
    check: Literal["batch_invariance", "long_context", "tensor_parallel", "cold_start"]
    backend: str
    setting: str  # English text; the report words ``setting_code`` + ``setting_params`` (absent before round 3)
    setting_code: str | None = None
    setting_params: dict[str, Any] = {}  # open: each setting code has its own parameters
    platform: str
    n: int
    cos_min: Number | None
    cos_median: Number | None
    gate: Number | None
    passed: bool | None
    reason: Reason | None = None
    why: str | None = None
    figures: dict[str, Any] = {}  # open: each check records its own figures (parity.checks)

    @property
    def cold_start(self) -> ColdStartFigures | None:
        """The figures typed, for a cold_start row (None for other checks, whose figures stay open); a key a
        newer check adds is left out rather than failing the report."""
        if self.check != "cold_start":
            return None
        return ColdStartFigures(**{k: self.figures[k] for k in ColdStartFigures.model_fields if k in self.figures})


class ParityMatrix(Section):
    rows: list[MatrixRow] = []
    settings: dict[str, Any] = {}  # open: the matrix configuration as the user wrote it
    source: str | None = None


class MixedRequest(Strict):
    """A server's answer to the text+image request CLIP cannot embed: its status and the start of its body."""
    status: int | None = None
    body: str | None = None


class MultimodalParity(Section):
    """Step 05's multimodal part: a CLIP model's caption (``part: text``) and image (``part: image``) rows, or why
    it was not measured (embedswap.parity.multimodal_step)."""
    rows: list[ParityRow] = []
    passed: bool | None = Field(default=None, alias="pass")
    records: int = 0
    threshold: Number | None = None
    text_threshold: Number | None = None
    model: str | None = None
    not_run: list[NotRun] = []
    engine: str | None = None
    engines: dict[str, str | None] = {}
    start_s: Number | None = None
    started_s: dict[str, Number | None] = {}
    images: str | None = None
    mixed_request: MixedRequest | None = None
    mixed_requests: dict[str, MixedRequest | None] = {}
    spec: dict[str, Any] | None = None  # open: the multimodal configuration as the user wrote it


class ParitySample(Strict):
    """Which documents a sample used: its size, the corpus size, per language, how it was drawn."""
    documents: int
    of: int
    whole: bool
    method: str
    seed: int | None = None
    languages: dict[str, int] = {}


class WitnessPair(Strict):
    """Two witnesses' lowest cosine over the sample (None: not comparable)."""
    a: str
    b: str
    cos_min: Number | None = None


class WitnessLeftOut(Strict):
    """A witness outside the consensus and why (reason code witness_*)."""
    name: str
    code: str
    params: dict[str, Any] = {}  # the reason's parameters, as reasons.REASONS words them


class WitnessAgreement(Strict):
    """The reference's witnesses (parity.witnesses): pairwise agreement, consensus, who was left out, the one used."""
    witnesses: list[str] = []
    pairs: list[WitnessPair] = []
    consensus: list[str] = []
    left_out: list[WitnessLeftOut] = []
    reference: str | None = None
    threshold: Number | None = None
    all_agree: bool = False


class Parity(Section):
    """Step 05: every backend's vectors against the golden reference."""
    rows: list[ParityRow] = []
    passed: bool | None = Field(default=None, alias="pass")
    not_run: list[NotRun] = []
    not_asked: list[str] = []  # servers the experiment did not ask to gate
    # servers of another model with no local copy of it (issue 57): not measured, never a failure of the gate
    other_model: list[NotRun] = []
    thresholds: dict[str, Number] = {}  # text, multimodal
    reference: str | None = None
    sample: ParitySample | None = None
    matrix: ParityMatrix | None = None  # None: step 05's rows.json holds no matrix
    multimodal: MultimodalParity | None = None
    witnesses: WitnessAgreement | None = None  # None: no witnesses were captured (parity.witnesses)

    def threshold(self, part: str) -> Number | None:
        """The cosine gate one part (text, multimodal) was held to, or None: not stated."""
        return self.thresholds.get(part)
