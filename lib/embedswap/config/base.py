"""What every part of experiment.yaml's model shares: the strict base, the error, the defaults."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


CONFIG_FILENAME = "experiment.yaml"
DEFAULT_QUERY_TASK = "Given a web search query, retrieve relevant passages that answer the query"
DEFAULT_QUERY_TEMPLATE = "Instruct: {task}\nQuery:{query}"


class ConfigError(ValueError):
    """experiment.yaml is missing, unreadable, or has a wrong key or value. The message names the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
