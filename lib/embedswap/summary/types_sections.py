"""The instruction, matryoshka, restore, ranking, shim and diagnosis sections of summary.json."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from embedswap.summary.types_common import Finding, Number, Reason, Section, Strict
from embedswap.summary.types_latency import LatencyTarget
from embedswap.summary.types_vectors import ProbeRow, ProbeVerdict, ProbeReading


class CosineSpread(Strict):
    """Lowest and median cosine over the queries (None: not measured)."""
    min: Number | None = None
    median: Number | None = None


class InstructionRow(Section):
    """One server's query vectors in one variant, against the reference and its own plain queries."""
    target: str
    variant: Literal["plain", "client_prefixed", "server_instruction"] | None = None
    status: int | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    tokenizer_tokens: int | None = None
    cosine_to_reference: CosineSpread | None = None
    cosine_to_own_plain: CosineSpread | None = None
    reading: str | None = None  # instruction.reading: applied | ignored | no-instruction | differs | changed-own
    source: str | None = None


class V2EmbedRow(Strict):
    """One server's answer to the /v2/embed probe with an instruction."""
    target: str
    status: int | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    tokenizer_tokens: int | None = None
    cosine_to_reference: Number | None = None
    cosine_to_plain: Number | None = None
    reading: str | None = None
    source: str | None = None


class InstructionReference(Strict):
    """The vectors every variant is compared to: a server's queries in one variant, with the model's prompt."""
    target: str
    variant: str
    template: str | None = None
    task: str | None = None


class Instruction(Section):
    """Does each server apply the model's query instruction?"""
    reference: InstructionReference | None = None
    threshold: Number | None = None
    queries: int | None = None
    tokenizer: dict[str, int | None] = {}  # token totals per variant, from the model's own tokenizer
    chat_template: bool | None = None
    sentence_transformers_prompts: dict[str, str] | None = None  # the model's prompts by name
    rows: list[InstructionRow] = []
    v2_embed: list[V2EmbedRow] = []


class DimAnswer(Strict):
    """A server's status, dimension and error on a `dimensions` probe."""
    status: int | None = None
    dim: int | None = None
    error: str | None = None


class MatryoshkaRow(Strict):
    probe: str
    sent: dict[str, Any] | None = None  # open: the request body as sent
    legacy: DimAnswer
    without_override: DimAnswer
    with_override: DimAnswer
    cosine_to_legacy_cut: Number | None = None


class Matryoshka(Section):
    """`dimensions` probes on the base engine and on the variant with the Matryoshka override."""
    base: str | None = None
    variant: str | None = None
    override_works: bool | None = None
    rows: list[MatryoshkaRow] = []
    command: list[str] | None = None


class Restore(Section):
    """The legacy server started again after the swap: does it answer the first batch as in step 01?"""
    target: str | None = None
    start_seconds: Number | None = None
    status: int | None = None
    error: str | None = None
    cosine_to_step01_min: Number | None = None
    restored: bool | None = None
    # sequencing.restore_latency: the restored server's latency (A-B-A), and why it failed where it did
    latency: LatencyTarget | None = None
    latency_capture: str | None = None
    latency_error: str | None = None
    source: str | None = None


class QueryRanking(Strict):
    """One query's ranking figures."""
    lang: str | None = None  # the query's language (None or "und": the workload does not say)
    ndcg_at_10: Number | None = None
    recall_at_5: Number | None = None
    mrr_at_10: Number | None = None  # None: not judged, or not recorded with the run
    top1_score: Number | None = None
    top5: list[str] = []
    top10: list[str] | None = None
    top5_overlap: Number | None = None


class RankingSource(Strict):
    documents: str
    queries: str


class AgreementStat(Strict):
    """One agreement figure: its mean over queries and the 95 % bootstrap interval of that mean (None: no query)."""
    mean: Number | None = None
    low: Number | None = None
    high: Number | None = None
    n: int | None = None


class QueryAgreement(Strict):
    """One query's agreement with the legacy ranking (rbo is null when a ranking was empty)."""
    overlap_at_1: Number | None = None
    overlap_at_5: Number | None = None
    overlap_at_10: Number | None = None
    rbo: Number | None = None
    top1_changed: Number | None = None


class Agreement(Strict):
    """Judgement-free agreement of one variant's ranking with the legacy one (embedswap.ranking.agreement).

    The top-k overlaps are one field per k of ``AGREEMENT_K`` (1, 5, 10), named as the builder writes them; a new
    k needs a field here (tests/summary checks that every k has one)."""
    queries: int | None = None
    k: list[int] = []
    rbo_p: Number | None = None
    overlap_at_1: AgreementStat | None = None
    overlap_at_5: AgreementStat | None = None
    overlap_at_10: AgreementStat | None = None
    rbo: AgreementStat | None = None
    top1_changed: AgreementStat | None = None
    per_query: dict[str, QueryAgreement] = {}

    def overlap_at(self, k: int) -> AgreementStat | None:
        """The top-k overlap at one of the ``k`` the builder measured; None for a k it did not."""
        return {1: self.overlap_at_1, 5: self.overlap_at_5, 10: self.overlap_at_10}.get(k)


class RankingRun(Section):
    """One ranking (documents + queries of one server and variant) and its figures."""
    judged: bool | None = None
    agreement: Agreement | None = None
    ndcg_at_10: Number | None = None
    recall_at_5: Number | None = None
    mrr_at_10: Number | None = None  # None: not judged, or not recorded with the run
    top5_overlap: Number | None = None
    queries: int | None = None
    judged_queries: int | None = None
    per_query: dict[str, QueryRanking] = {}
    source: RankingSource | None = None


class MetricDeltas(Strict):
    """variant - legacy (None: one side not measured)."""
    ndcg_at_10: Number | None = None
    recall_at_5: Number | None = None
    mrr_at_10: Number | None = None  # None: not judged, or not recorded with the run


class CandidateRanking(Strict):
    measured: bool
    naive: RankingRun
    shim: RankingRun
    deltas: dict[str, MetricDeltas] = {}  # naive, shim

    def delta(self, kind: str) -> MetricDeltas | None:
        """One variant's (naive, shim) deltas to the legacy ranking, or None: not computed."""
        return self.deltas.get(kind)


class Ranking(Section):
    """Does the swap change what search returns (primary candidate on top, every candidate in by_candidate)?"""
    judged: bool | None = None
    judged_why: Section | None = None  # why nDCG/recall are absent (no qrels)
    legacy: RankingRun | None = None
    candidate_naive: RankingRun | None = None
    candidate_shim: RankingRun | None = None
    deltas: dict[str, MetricDeltas] = {}  # candidate_naive, candidate_shim
    by_candidate: dict[str, CandidateRanking] = {}
    definitions: dict[str, str] = {}  # each metric in words


class ShimRewrite(Strict):
    """What the shim did to one probe on its way to one candidate."""
    rewrites: list[str] | None = None
    rewrite_reasons: list[Reason] | None = None
    attempts: int | None = None
    local: bool | None = None  # answered by the shim itself, not sent upstream
    sent_upstream: dict[str, Any] | None = None  # open: the request body the shim forwarded


class ShimRow(ProbeRow):
    """One probe through the shim: each server's answer and the verdicts before (naive) and after (shim); the
    verdicts of :class:`ProbeRow` are those through the shim."""
    naive_verdicts: dict[str, ProbeReading] = {}
    shim: dict[str, ShimRewrite] = {}
    naive_verdict: ProbeVerdict | None = None

    def rewrite(self, name: str) -> ShimRewrite | None:
        """What the shim did to this probe on its way to one candidate (None: not sent through it)."""
        return self.shim.get(name)


class ShimSettings(BaseModel):
    """One candidate's shim_config.json (embedswap.shim.settings.ShimConfig.to_dict): the settings the report
    lists and why each has its value are typed; the rest stay as written (``extra="allow"``), since the shim's
    options grow with it and a reason may name a setting this model does not list."""
    model_config = ConfigDict(extra="allow")
    strip_dimensions: bool | None = None
    prepend_query_instruction: bool | None = None
    max_input_tokens: int | None = None
    model_override: str | None = None
    non_retryable_statuses: list[int] | None = None
    reject_empty_strings: bool | None = None
    force_float: bool | None = None
    renormalise: bool | None = None
    usage: str | None = None
    drop_fields: list[str] | None = None
    # why each setting has its value: the English sentence, and the same as a reason code the report words
    reasons: dict[str, str] = {}
    reason_codes: dict[str, Reason] = {}

    def value(self, key: str) -> Any:
        """One setting's value, a typed one or one kept as written (None: not recorded)."""
        return getattr(self, key, None)

    def reason_code(self, key: str) -> Reason | None:
        """Why one setting has its value, as a reason code (None: a reason given by hand, or none)."""
        return self.reason_codes.get(key)

    def reason_text(self, key: str) -> str | None:
        """Why one setting has its value, the English sentence (None: no reason recorded)."""
        return self.reasons.get(key)


class Shim(Section):
    """The contract probes sent through the shim to each candidate."""
    rows: list[ShimRow] = []
    counts: dict[str, dict[str, dict[str, int]]] = {}  # per candidate, naive/shim, verdict -> probes
    config: dict[str, ShimSettings | None] = {}  # per candidate (None: it wrote no shim_config.json)
    sources: dict[str, str] = {}

    def settings(self, name: str) -> ShimSettings | None:
        """What the shim learned for one candidate (None: no settings recorded)."""
        return self.config.get(name)


class Hypothesis(Strict):
    """The pipeline that reproduces a server's vectors (diagnosis.hypotheses.Hypothesis), and its lowest cosine."""
    pooling: str
    dense: bool
    normalize: bool
    eos: bool | None = None
    prompt: str | None = None
    max_tokens: int | None = None
    dtype: str = "float32"
    batching: str | None = None  # mask_ignored / padding_flipped: vectors that depend on batch mates
    cos_min: Number | None = None


class TruncationUsage(Strict):
    """The server's own count for the over-long probe against that input cut at the limit found."""
    prompt_tokens: int
    expected: int
    agrees: bool


class TruncationFound(Strict):
    """Where a server cuts its inputs (diagnosis.truncation): the unit and limit in which every searched document
    was cut alike, confirmed on every diagnosed document; ``found`` False: no cut reproduces its vectors."""
    found: bool
    searched: int = 0
    unit: Literal["tokens", "words", "characters"] | None = None
    limit: int | None = None
    tokens: int | None = None  # the median cut in tokens, special tokens counted
    confirmed_on: int | None = None
    cos_min: Number | None = None
    usage: TruncationUsage | None = None


class TokenizationSlice(Strict):
    """One language's documents as a server tokenized them (diagnosis.tokenization): how many it read as the model
    does (``same``), with more tokens (``context``) or other tokens (``tokens``), and their median cosines."""
    documents: int
    same: int = 0
    context: int = 0
    tokens: int = 0
    cos_median_same: Number | None = None
    cos_median_context: Number | None = None
    cos_median_tokens: Number | None = None
    cos_min: Number | None = None
    example: dict[str, int | None] | None = None  # row, the server's count, the model's
    dropped: list[str] = []  # the model's tokens the server's tokenizer leaves out, most frequent first
    script: str | None = None
    context_tokens: int | None = None  # the most tokens the server read of a document the model's pipeline cuts


class TokenizationFound(Strict):
    """How a server tokenized the documents against the model's tokenizer, and the model run on its own tokens."""
    source: str | None = None  # "tokenize" (its token ids) or "usage" (counts of one-document requests)
    route: str | None = None
    documents: int = 0
    by_language: dict[str, TokenizationSlice] = {}
    reembedded: dict[str, Any] | None = None  # documents, cos_min, reproduces, unnormalised
    error: str | None = None


class DiagnosisFinding(Strict):
    """One server's diagnosis (embedswap.diagnosis.hypotheses): the first cause's code (None: the model's own
    pipeline reproduces its vectors), every reason with its fix, the hypothesis that matched, or the diagnosis' own
    error."""
    cause: str | None = None
    reasons: list[Finding] = []
    hypothesis: Hypothesis | None = None
    error: str | None = None
    truncation: TruncationFound | None = None  # the real input limit, searched where no hypothesis matched
    tokenization: TokenizationFound | None = None  # the server's tokens against the model's, per language


class QueryDiagnosis(Section):
    """Step 03's diagnosis of every server's query vectors against the model with its query prompt."""
    prompt: str | None = None
    texts: int | None = None
    truth: dict[str, Any] | None = None  # where the model's own vectors came from (diagnosis.truth_cache)
    by_target: dict[str, DiagnosisFinding] = {}


class DiagnosisSample(Strict):
    """The documents step 03 diagnosed: the lowest cosines to legacy plus a seeded sample stratified by language."""
    documents: int
    of: int
    whole: bool
    method: str
    seed: int | None = None
    languages: dict[str, int] = {}
    lowest: int = 0


class Diagnosis(Section):
    """Step 03's diagnosis of every server's document vectors (captures/diagnosis/vectors.json)."""
    threshold: Number | None = None
    texts: int | None = None
    by_target: dict[str, DiagnosisFinding] = {}
    limits: list[int] = []
    queries: QueryDiagnosis | None = None
    sample: DiagnosisSample | None = None  # which documents (diagnosis.sample); None: before the sample, all
    seconds: Number | None = None  # the diagnosis' own wall seconds in step 03
    truth: dict[str, Any] | None = None  # where the model's own vectors came from (diagnosis.truth_cache)
    # how long step 03 still waited for it after its index part (None: it ran in the step's own thread)
    waited_s: Number | None = None
