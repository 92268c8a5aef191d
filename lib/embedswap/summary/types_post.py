"""The decisions the post states (``decisions.shown`` and ``decisions.post``): which latency statistic every part
of the report shows, and the conclusion per candidate, with candidates that answered alike grouped."""

from __future__ import annotations

from typing import Literal

from embedswap.summary.types_common import Strict
from embedswap.summary.types_fact import Fact
from embedswap.summary.types_post_document import PostDocument


class ShownPoint(Strict):
    """One operating point as the report shows it (every table, figure, front matter and sentence)."""
    p50_ms: float | None = None
    p99_ms: float | None = None
    docs_per_s: float | None = None


class LatencyShown(Strict):
    """The one latency statistic of the report: ``pooled`` (every answered request of the three repeats, the
    statistic the intervals and ratios use) when per-request data exists, else ``median_of_repeats`` (the median of
    the per-repeat figures, what summaries without per-request data hold). The candidate / legacy ratios are not
    here: they are stored once, with their intervals, in ``decisions.latency.ratios`` (read them through
    :meth:`embedswap.summary.model.Summary.latency_ratio`)."""
    statistic: Literal["pooled", "median_of_repeats"] = "median_of_repeats"
    by_target: dict[str, dict[str, ShownPoint]] = {}  # server -> run (sequential, concurrent, sweep_c<n>) -> figures

    def at(self, name: str | None, run: str) -> ShownPoint | None:
        """One server's figures at one operating point (None: not measured there)."""
        return self.by_target.get(name or "", {}).get(run)


ProbeOutcome = Literal["same", "differs", "legacy_failed", "not_measured"]


class ProbeAnswer(Strict):
    """One candidate's answer to one probe, reduced to what the post compares."""
    probe: str
    status: int | None = None
    verdict: str | None = None
    outcome: ProbeOutcome = "not_measured"
    shim_verdict: str | None = None  # the verdict through the client shim (None: not probed through it)


class Separator(Strict):
    """What tells apart candidates that returned the same vectors and the same answers.

    ``error_class``: on ``probes`` the ``client_error`` server answered 4xx and the ``server_error`` one 5xx;
    ``origin`` names the server whose front adds the 5xx when that is known (a Dynamo graph over the same vLLM
    engine), else None. ``answers``: other probes the two answered differently (``client_error`` is then the first
    member, ``server_error`` the other). ``throughput``: concurrent docs/s of each member (the figures; their verdict is the pair's)."""
    kind: Literal["error_class", "answers", "throughput"]
    probes: list[str] = []
    client_error: str | None = None
    server_error: str | None = None
    origin: str | None = None
    # set only by kits before the pair verdicts (two within-run intervals that did not overlap); no reader states
    # them: decisions.latency.pairs decides which of two candidates is faster
    faster: str | None = None
    slower: str | None = None
    rates: dict[str, float | None] = {}


class CandidateGroup(Strict):
    """Candidates that returned the same vectors (``basis``: equal sha256 of the document vectors, or equal
    per-document cosines to the legacy server when no sha256 was stored); ``separators`` say what still differs."""
    members: list[str]
    basis: Literal["sha256", "cosine", "alone"] = "alone"
    separators: list[Separator] = []
    unknown: list[str] = []  # codes of what the run cannot say about the difference (reasons in the catalogues)


# another_model: the candidate serves another model (issue 57), so ranking and the index decide, not the vectors
CandidateCode = Literal["drop_in", "client_changes", "not_swappable", "another_model", "not_measured"]
VectorsCode = Literal["same", "differ", "another_model", "not_measured"]


class CandidateConclusion(Strict):
    """The decision on one candidate: whether the legacy server can be swapped for it, and on what condition."""
    name: str
    code: CandidateCode
    compared: int = 0  # contract probes compared (the legacy server's own failures left out)
    differ: int = 0
    silent: list[str] = []
    refused: list[str] = []  # 4xx where the legacy server answered
    accepted: list[str] = []  # answered (2xx) where the legacy server refused with a 4xx
    retry: list[str] = []  # 5xx or no answer where the legacy server answered
    shape: list[str] = []  # format or metadata only
    legacy_failed: list[str] = []  # the legacy server itself failed: not charged to the candidate
    shim_left: list[str] = []  # still different through the shim (legacy failures aside)
    cosine_min: float | None = None
    threshold: float | None = None
    # the vectors' verdict against the legacy server's (analysis.post.vectors_verdict): what every sentence about
    # the vectors reads
    vectors: VectorsCode = "not_measured"
    answers: list[ProbeAnswer] = []
    # the candidate's API shape where it is not the legacy server's (issue 64): the client changes with it, so it
    # is never a drop-in; ``differ`` counts the differences beyond the shape
    api_shape: str | None = None


class VersionRow(Strict):
    """One component of the article's setup against this run's (``same``: None when this run's is not known)."""
    component: str
    article: str
    run: str | None = None
    server: str | None = None
    same: bool | None = None


# how this run's stored verdict on a figure stands to the article's published ratio of that figure
ArticleRelation = Literal["same_direction", "reversed", "no_difference", "inconclusive", "not_measured"]


class ArticleFigure(Strict):
    """One of the article's published ratios (``article``) beside this run's verdict on the same figure: its code
    gives ``relation``, its direction is the only direction word the sentence may say (``direction``)."""
    figure: Literal["seq_p50", "conc_docs_per_s"]
    article: Fact
    relation: ArticleRelation
    direction: Literal["faster", "slower"] | None = None
    verdicts: list[str] = []  # the stored verdicts' paths, one per subject


class ArticleComparison(Strict):
    """This run's latency verdicts against the article's own figures, for candidates that run the article's engine
    (Dynamo, vLLM); ``why`` holds the host facts that may explain a difference (set only where a figure does not
    go the article's way): ``cpu_only`` with the host's cores, or ``other_gpu``, against the article's hardware."""
    subjects: list[str]
    figures: list[ArticleFigure]
    why: Literal["cpu_only", "other_gpu"] | None = None
    facts: list[Fact] = []


class ShimTrade(Strict):
    """What the shim trades where the address swap ranks otherwise than the legacy server (nDCG@10 verdict
    ``different``/``non_inferior``) and the shim restores the legacy ranking (its nDCG@10 verdict ``equivalent``):
    ``gives_up_better`` (the candidate's own ranking was better: the shim gives it up) or ``fixes_worse`` (it was
    worse: the shim is the fix). ``direction`` is the address swap's verdict's."""
    subjects: list[str]
    code: Literal["gives_up_better", "fixes_worse"]
    direction: Literal["better", "worse"]
    legacy: Fact
    candidate: Fact
    shim: Fact
    verdicts: list[str] = []  # the two stored verdicts' paths (address swap, shim) of the first subject


class PostDecision(Strict):
    """The post's conclusions, computed before rendering."""
    conclusions: list[CandidateConclusion] = []
    groups: list[CandidateGroup] = []
    versions: list[VersionRow] = []
    not_measured: list[str] = []  # codes: what the run did not measure, worded by the catalogues
    # issue 63: statements that read several stored decisions together (analysis/post_story.py); None: a summary
    # decided before them (the upgrade computes them)
    article: list[ArticleComparison] | None = None
    shim_trades: list[ShimTrade] | None = None
    # issue 63: the post's statements, decided last (analysis/post_document.py); None: a summary decided before it
    # (the upgrade computes it)
    document: PostDocument | None = None

    def conclusion(self, name: str) -> CandidateConclusion | None:
        return next((c for c in self.conclusions if c.name == name), None)

    def group_of(self, name: str) -> CandidateGroup | None:
        return next((g for g in self.groups if name in g.members), None)
