"""The prompts a server may put before a text, as hypotheses of the diagnosis (apart from
:mod:`embedswap.diagnosis.hypotheses` to keep that module under the project's size)."""

from __future__ import annotations

from pathlib import Path


def known_prompts(folder: Path | None, query_template: str | None, query_task: str | None) -> list[str]:
    """The prefixes a server may put before a text: the model's sentence-transformers prompts, the kit's query
    template with its task (everything before ``{query}``)."""
    from embedswap.config.base import DEFAULT_QUERY_TASK, DEFAULT_QUERY_TEMPLATE
    from embedswap.models import sentence_transformers_prompts

    prompts = [p for p in (sentence_transformers_prompts(folder) if folder else {}).values() if p]
    prefix = template_prefix(query_template or DEFAULT_QUERY_TEMPLATE, query_task or DEFAULT_QUERY_TASK)
    if prefix is not None:
        prompts.append(prefix)
    return list(dict.fromkeys(prompts))


def template_prefix(template: str, task: str) -> str | None:
    """What a query template puts before the query (None when text follows ``{query}``: not a prefix)."""
    if not template.endswith("{query}"):
        return None
    return template[: -len("{query}")].format(task=task)
