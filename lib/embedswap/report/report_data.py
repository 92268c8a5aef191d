"""report.json, the file beside every rendered report: written and read back through these models.

The field order is the order of the keys in the file (``json_bytes`` keeps insertion order), so a report
rendered before these models existed reads back, and one rendered now is the same bytes as before.
"""

from __future__ import annotations

from pathlib import Path

from embedswap.captures import json_bytes
from embedswap.summary.model import ExperimentInfo
from embedswap.summary.types_common import Number, Strict


class Headline(Strict):
    """The numbers the index, the front matter and the console show, copied from the summary."""
    candidate: str | None
    legacy: str | None
    cosine_min: Number | None
    cosine_measured: bool
    candidate_seq_p50_ms: Number | None
    candidate_conc_docs_per_s: Number | None
    concurrency: int | None
    latency_state: bool | None
    parity_pass: bool | None
    # candidate / legacy, the one stored ratio (Summary.latency_ratio); None in a report.json written without it
    candidate_seq_p50_ratio: Number | None = None
    candidate_conc_docs_per_s_ratio: Number | None = None
    # every candidate, the lowest cosine over them and whether the run had a GPU (absent in older report.json)
    candidates: list[str] = []
    cosine_min_all: Number | None = None
    gpu: bool | None = None


class ModelRef(Strict):
    """The embedding model as the summary names it (its local path is left out: the file may be published)."""
    spec: str
    served_name: str | None
    fingerprint: str | None
    revision: str | None


class ReportJson(Strict):
    experiment: ExperimentInfo  # written with only the keys the summary had set, as the summary holds them
    model: ModelRef
    summary_path: str
    summary_generated: str
    rendered: str
    languages: list[str]
    headline: Headline
    slug: str = ""  # reports rendered before posts had slugs have none

    def to_json(self) -> str:
        # exclude_unset keeps the experiment's keys as set in the summary; every other field is always given
        return json_bytes(self.model_dump(mode="json", by_alias=True, exclude_unset=True)).decode("utf-8")


def read_report_json(path: Path) -> ReportJson:
    """A report folder's report.json; a renamed or unknown key fails with its path."""
    return ReportJson.model_validate_json(Path(path).read_text(encoding="utf-8"))
