"""The article's published figures (embedswap/data/article_000.json) as typed objects, read once per process.

The file is hand-written; a renamed or misspelt key fails at load with its path instead of printing an empty
cell in every report. Numbers keep ``int | float`` so a stored 84 prints as 84, not 84.0. It lives in the analysis
layer because the post document's statements cite its figures (``article:<path>`` sources) before anything is
rendered; the renderers and the checks read the same typed load.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from embedswap.summary.types_common import Number, Strict

ARTICLE_FILE = "data/article_000.json"


class Localized(Strict):
    """A text the article gives in each report language."""
    ko: str
    en: str
    ja: str
    zh: str

    def in_lang(self, lang: str) -> str:
        return getattr(self, lang)


def in_lang(value: str | Localized, lang: str) -> str:
    """A text in one language: a plain string (a request line, a command) is the same in every language."""
    return value.in_lang(lang) if isinstance(value, Localized) else value


class GpuMemory(Strict):
    legacy: Number
    candidate: Number


class Environment(Strict):
    date: str
    hardware: Localized
    gpu: str
    model: str
    kubernetes: str
    dynamo: str
    image: str
    vllm: str
    legacy: Localized
    candidate: Localized
    gpu_memory_gb: GpuMemory
    command: str


class Workload(Strict):
    documents: int
    languages: list[str]
    mean_tokens_per_document: Number
    batch_size: int
    sequential_requests: int
    concurrent_requests: int
    concurrency: int
    repeats: int
    statistic: str


class VectorSide(Strict):
    dimension: int
    first_l2: Number
    token_total: int


class CosineSpread(Strict):
    min: Number
    median: Number
    max: Number


class Vectors(Strict):
    legacy: VectorSide
    candidate: VectorSide
    cosine: CosineSpread
    note: Localized


class QueryInstruction(Strict):
    cosine_with_instruction_ignored: Number
    cosine_without_instruction: Number
    legacy_prompt_tokens: int
    candidate_prompt_tokens: int


class ContractSide(Localized):
    """One server's answer as the article reports it: the status, and the cell text in each language."""
    status: int
    prompt_tokens: int | None = None


class ContractEntry(Strict):
    probe: str
    request: str | Localized
    legacy: ContractSide
    candidate: ContractSide


class LatencySide(Strict):
    seq_p50_ms: Number
    seq_p99_ms: Number
    conc_p50_ms: Number
    conc_p99_ms: Number
    conc_docs_per_s: Number
    docs_per_s_per_repeat: list[Number]
    errors: int


class PublishedRatios(Strict):
    seq_p50: Number
    conc_docs_per_s: Number


class Latency(Strict):
    legacy: LatencySide
    candidate: LatencySide
    concurrency: int
    published_ratios: PublishedRatios


class Article(Strict):
    """data/article_000.json: where the figures come from and the figures themselves."""
    source: Localized
    status: str
    # the Korean original's length as counted on 2026-12-05 (words outside its tables); kept for older readers:
    # the length check now counts the article's text itself (report/length.py, data/article_000.ko.md)
    prose_words: int | None = None
    environment: Environment
    workload: Workload
    vectors: Vectors
    query_instruction: QueryInstruction
    contract: list[ContractEntry]
    latency: Latency


@cache
def load_article() -> Article:
    """The article's published figures (seed 000), validated; one load per process (callers do not mutate it)."""
    text = resources.files("embedswap").joinpath(ARTICLE_FILE).read_text(encoding="utf-8")
    return Article.model_validate_json(text)


def article_value(path: str) -> Any:
    """The article's figure at a dotted path of its file (``vectors.cosine.min``), from the typed load; None where
    the path names nothing (the attributes are the file's keys: no aliases)."""
    data: Any = load_article()
    for part in path.split("."):
        data = getattr(data, part, None)
    return data
