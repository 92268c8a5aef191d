"""The blog draft's front matter: title, date, language, draft flag, description, tags, slug, translation key.

Built from the typed summary (the description is the headline finding of ``publish.headline``, nothing computed
here) and the optional ``report.publish`` config (series name/part, extra tags). YAML by PyYAML's safe dumper, so
any title or model name is quoted as YAML needs; GitHub shows the block as a small table above the report.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import yaml

from embedswap.config.sections import PublishConfig
from embedswap.report.catalogue import catalogue, fill
from embedswap.report.format import fmt
from embedswap.report.report_data import Headline
from embedswap.summary.model import Summary

FENCE = "---"
_FRONT = re.compile(r"\A---\n.*?\n---\n\n?", re.S)


def slugify(text: str) -> str:
    """Lower-case ASCII letters, digits and single dashes (an experiment folder: 2026-11-30-minilm-vllm)."""
    slug = re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")
    return slug or "embedswap-report"


def slug_of(summary: Summary) -> str:
    """The post's slug, shared by every language version (so it is also the translation key)."""
    exp = summary.experiment
    # the folder is YYYY-MM-DD-SLUG: the date is the post's own field (Jekyll puts it in the file name)
    return slugify(re.sub(r"^\d{4}-\d{2}-\d{2}-", "", str(exp.folder or exp.name or "")))


def _value(value: Any, kind: str, lang: str, state: bool | None) -> str:
    return fmt(value, kind) if value is not None else catalogue(lang).label(state)


def _times(value: float, lang: str) -> str:
    """A ratio as the body writes it (1.73× in English, 1.73배 in Korean): the same words as the post's."""
    return fill(catalogue(lang).terms["post"]["times"], x=f"{value:.2f}")


def description(head: Headline, lang: str) -> str:
    """One line from the decisions the post states: every candidate against the legacy server, the lowest cosine
    at the body's precision (cos4), the parity gate, and on a GPU run the candidate's p50 with its one stored ratio
    to the legacy server's (the post tells readers not to compare a CPU run's absolute latency)."""
    words = catalogue(lang).terms["publish"]
    gate = head.parity_pass
    latency_missing = False if head.latency_state is False else None
    names = head.candidates or ([head.candidate] if head.candidate else [])
    cosine = head.cosine_min_all if head.candidates else head.cosine_min
    fields = dict(
        candidate=words["list_sep"].join(names) or "?", legacy=head.legacy or "?",
        cosine=_value(cosine, "cos4", lang, False),
        gate=words["gate_pass"] if gate is True else words["gate_fail"] if gate is False
        else catalogue(lang).label(False))
    if head.gpu is False:  # no absolute latency on a CPU run; the one stored ratio is not absolute
        ratio = (fill(words["description_cpu_ratio"], candidate=head.candidate or "?",
                      ratio=_times(head.candidate_seq_p50_ratio, lang))
                 if head.candidate_seq_p50_ratio is not None else "")
        return fill(words["description_cpu"], **fields) + ratio
    return fill(words["description"], **fields, p50=_value(head.candidate_seq_p50_ms, "ms", lang, latency_missing)
                + (" ms" if head.candidate_seq_p50_ms is not None else "")
                + (fill(words["description_ratio"],
                    ratio=_times(head.candidate_seq_p50_ratio, lang))
                   if head.candidate_seq_p50_ratio is not None else ""))


def _date(summary: Summary) -> date | str | None:
    raw = summary.experiment.date
    try:
        return date.fromisoformat(str(raw))
    except ValueError:
        return raw


def _tags(summary: Summary, config: PublishConfig) -> list[str]:
    # the candidates as experiment.yaml lists them (its config is kept as the user wrote it)
    names = [summary.roles.legacy, *summary.experiment.config.get("candidates", [])]
    targets = [summary.target(n) for n in names if n]
    kinds = [t.config.kind or t.kind for t in targets if t is not None]
    tags = ["embedswap", "embeddings", *(k for k in kinds if k and k != "external"), *config.tags]
    return list(dict.fromkeys(slugify(t) for t in tags))


def front_matter(summary: Summary, lang: str, title: str, head: Headline,
                 config: PublishConfig | None = None) -> dict[str, Any]:
    """The front matter of one language version, as a mapping (each site exporter may rename keys)."""
    config = config or PublishConfig()
    slug = slug_of(summary)
    data: dict[str, Any] = {
        "title": title, "date": _date(summary), "lang": lang, "draft": True,
        "description": description(head, lang), "tags": _tags(summary, config),
        "slug": slug, "translationKey": slug,
    }
    if config.series:
        data["series"] = [config.series]
        if config.part is not None:
            data["series_part"] = config.part
    return data


def dump(data: dict[str, Any]) -> str:
    """The YAML block between two --- lines, then a blank line."""
    body = yaml.safe_dump(data, allow_unicode=True, sort_keys=False, default_flow_style=None, width=10_000)
    return f"{FENCE}\n{body}{FENCE}\n\n"


def split(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body) of a report markdown; ({}, text) when it has none."""
    match = _FRONT.match(text)
    if not match:
        return {}, text
    block = match.group(0)
    return yaml.safe_load(block[len(FENCE) + 1:block.rindex("\n" + FENCE)]) or {}, text[match.end():]
