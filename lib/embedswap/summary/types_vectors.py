"""The vectors and contract sections of summary.json: what the servers' document vectors and probe answers are."""

from __future__ import annotations

from typing import Any, Literal

from embedswap.summary.types_common import Number, Reason, Section, Spread, Strict

# answers.classify's verdicts
ProbeVerdict = Literal["same", "silent-divergence", "loud-failure", "retry-hazard", "format-difference",
                       "metadata-difference", "not-applicable", "empty-200", "nondeterministic",
                       "another-model"]  # answers.classify.VERDICTS (a test keeps them equal)


class LanguageSpread(Spread):
    """The cosine spread over one language's documents, and how many there are."""
    n: int


class DocumentCosine(Strict):
    """One document's cosine, candidate against legacy (None: a non-finite vector)."""
    doc_id: str
    lang: str
    cosine: Number | None = None


class NormSpread(Strict):
    """L2 lengths of one server's document vectors, and the documents not of unit length."""
    first: Number | None = None
    min: Number | None = None
    median: Number | None = None
    max: Number | None = None
    not_unit_length: list[Any] = []  # as stats.vectors.norms lists them


class NormRatio(Spread):
    """Per document, candidate / legacy L2 length, and whether any is off 1 beyond rounding."""
    differs: bool = False


class TargetVectors(Section):
    """One server's document vectors."""
    dimension: int | None = None
    norm: NormSpread | None = None
    token_total: int | None = None
    index_order_ok: bool | None = None
    repeat_min_cosine: Number | None = None
    repeats: int | None = None
    source: str | None = None
    sha256: str | None = None  # of the first repeat's vectors as float32 bytes: identical vectors, identical hash
    token_total_matches_tokenizer: bool | None = None


class Comparison(Section):
    """One candidate's document vectors against the legacy server's."""
    cosine: Spread | None = None
    by_language: dict[str, LanguageSpread] | None = None
    per_document: list[DocumentCosine] = []
    worst: list[DocumentCosine] | None = None
    non_finite: Any = None  # documents with a non-finite vector, as stats.vectors.compare records them
    norm_ratio: NormRatio | None = None


class RolePair(Strict):
    """One figure for the legacy server and the primary candidate."""
    legacy: Any = None
    candidate: Any = None


class TokenizerInfo(Strict):
    """The model's own tokenizer, offline: the yardstick of the token totals."""
    implementation: str | None = None
    max_length: int | None = None
    error: str | None = None


class Vectors(Section):
    """Document vectors per server, and each candidate against the legacy server (primary one repeated on top)."""
    dimension: RolePair | None = None
    token_total: RolePair | None = None
    norm_first: RolePair | None = None
    cosine: Spread | None = None
    by_language: dict[str, LanguageSpread] | None = None
    worst: list[DocumentCosine] | None = None
    by_target: dict[str, TargetVectors] = {}
    comparisons: dict[str, Comparison] = {}
    tokenizer_token_total: int | None = None
    tokenizer: TokenizerInfo | None = None

    def of(self, name: str | None) -> TargetVectors | None:
        """One server's vector figures (None: not in the section, or no name)."""
        return self.by_target.get(name) if name is not None else None

    def comparison(self, name: str | None) -> Comparison | None:
        """One candidate against the legacy server (None: not compared, or no name)."""
        return self.comparisons.get(name) if name is not None else None


class RepeatSpread(Strict):
    """How one server's answers to the same probe sent several times agree (measure.repeats)."""
    sent: int
    differing: int = 0  # answers unlike the most common one
    rate: Number = 0
    cosine_min: Number | None = None  # the lowest cosine between two repeats' vectors
    kinds: dict[str, int] = {}  # unusable answers among them, by fault kind (measure.answer_faults)


class PrefixCacheUse(Strict):
    """Tokens the server's prefix cache was asked for and found while one probe ran (vLLM's /metrics counters)."""
    hit_tokens: int
    query_tokens: int


class ProbeSide(Strict):
    """One server's answer to one probe (None where the server did not answer)."""
    measured: bool
    status: int | None = None
    error: str | None = None
    encoding: str | None = None
    dim: int | None = None
    n_vectors: int | None = None
    prompt_tokens: int | None = None
    latency_ms: Number | None = None
    tokenizer_tokens: int | None = None
    norm: Number | None = None  # the first vector's L2 length
    not_applicable: bool | None = None  # the target's API shape cannot say this probe: nothing was sent
    api_shape: str | None = None
    not_applicable_field: str | None = None
    model: str | None = None  # the echoed model name (None: the answer or its capture names none)
    token_limit: int | None = None  # the model's own token limit at capture time (measure.model_limits)
    repeats: RepeatSpread | None = None  # the probe sent more than once (None: its capture records one send)
    prefix_cache: PrefixCacheUse | None = None  # same_text_twice: the server's cache counters around it, if any


class ProbeReading(Strict):
    """answers.classify's reading of one candidate's answer against the legacy server's (a classification, not a
    verdict against a margin)."""
    verdict: ProbeVerdict | None = None
    detail: str
    cosine: Number | None = None
    aspects: list[str] = []  # what differs (contract.ASPECTS)
    detail_reason: Reason | None = None
    # departures from the request both servers show (request_checks aspects): a note about both, not a difference
    shared: list[str] = []
    # what the candidate's API shape cannot carry and the legacy answer had (``usage`` for TEI; issue 64): not a
    # difference of this probe, one client change for the shape (analysis.client_changes ``shape_usage``)
    shape: list[str] = []
    # the legacy answer it was read against: None = the legacy server's answer to the same request; a probe name =
    # its answer to that probe (the legacy server does not serve this probe's route and the candidate does)
    baseline: str | None = None
    # a candidate of another model: each server's answer against its own answer to `plain` (cosine), where both
    # answered both (summary.sections.contract.within_server)
    within: dict[str, Number] | None = None


class ProbeRow(Strict):
    """One probe: what was sent, each server's answer and each candidate's verdict (primary's on top)."""
    probe: str
    description: str = ""
    # open: the request body as sent, which a probe may make deliberately malformed
    sent: dict[str, Any] | None = None
    path: str | None = None
    compare_to: str | None = None
    legacy: ProbeSide | None = None
    candidate: ProbeSide | None = None
    by_target: dict[str, ProbeSide] = {}
    verdicts: dict[str, ProbeReading] = {}
    verdict: ProbeVerdict | None = None
    detail: str | None = None
    cosine: Number | None = None
    aspects: list[str] = []
    detail_reason: Reason | None = None
    # per server, the legacy one included: how its answer departs from its own request (request_checks aspects)
    conformance: dict[str, list[str]] = {}

    def baseline(self) -> str | None:
        """The probe whose legacy answer some candidate's verdict was read against instead of the legacy server's
        answer to this request (it lacks the route, the candidate serves it); None: the same request throughout."""
        return next((v.baseline for v in self.verdicts.values() if v.baseline), None)

    def side(self, name: str | None) -> ProbeSide | None:
        """One server's answer to this probe (None: it did not answer, or no name)."""
        return self.by_target.get(name) if name is not None else None

    def verdict_for(self, name: str | None) -> ProbeReading | None:
        """One candidate's verdict on this probe (None: not judged, or no name)."""
        return self.verdicts.get(name) if name is not None else None
