"""The experiment model: everything one run needs, loaded from ``experiment.yaml`` and validated.

A wrong key is reported as one error that names the key's full path (``targets.vllm.prot``) and, where it can,
what was probably meant. Relative paths in the file are relative to the file's own folder.
"""

from __future__ import annotations

import difflib
import re
from datetime import date  # noqa: F401  (Experiment.date's type, resolved by pydantic)
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from embedswap.config.base import CONFIG_FILENAME, ConfigError, _Strict
from embedswap.config.decisions import DecisionsConfig
from embedswap.config.index import IndexConfig
from embedswap.config.sections import (ContractConfig, LatencyConfig, MatryoshkaConfig, ModelConfig,
                                       ParityConfig, ReportConfig, SequencingConfig, WorkloadConfig)
from embedswap.config.targets import (Target, _TARGET_KINDS)



class Experiment(_Strict):
    name: str
    date: date
    description: str = ""
    model: ModelConfig = Field(default_factory=ModelConfig)
    workload: WorkloadConfig
    # "packaged" (the notebooks shipped with the kit) or a folder of your own copies, relative to this file
    notebooks: str = "packaged"
    targets: dict[str, Target]
    legacy: str = "legacy"
    candidates: list[str] = Field(..., min_length=1)
    # Variants of the legacy server measured right after it in step 01 (e.g. without its global lock), to test
    # the article's unmeasured explanation of the latency gap.
    ablations: list[str] = Field(default_factory=list)
    matryoshka: MatryoshkaConfig | None = None
    sequencing: SequencingConfig = Field(default_factory=SequencingConfig)
    latency: LatencyConfig = Field(default_factory=LatencyConfig)
    contract: ContractConfig = Field(default_factory=ContractConfig)
    parity: ParityConfig = Field(default_factory=ParityConfig)
    report: ReportConfig = Field(default_factory=ReportConfig)
    # margins the comparisons decide against (equivalence / non-inferiority): embedswap.config.decisions
    decisions: DecisionsConfig = Field(default_factory=DecisionsConfig)
    # the user's vector index, rebuilt in a real store: keep it or re-embed (embedswap.config.index)
    index: IndexConfig = Field(default_factory=IndexConfig)

    @field_validator("workload", mode="before")
    @classmethod
    def _sample_workload(cls, value: Any) -> Any:
        """`workload: sample`: the sample workload shipped with the kit (documents, queries, judgements)."""
        if value == "sample":
            return {kind: f"sample:{kind}.jsonl" for kind in ("documents", "queries", "qrels")}
        if isinstance(value, str):
            raise ValueError(f"'{value}' is not a workload: write 'sample' (the packaged one) or a mapping with "
                             "documents, queries, qrels")
        return value

    @field_validator("name")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", value):
            raise ValueError("must be a slug: lowercase letters, digits and '-'")
        return value

    @model_validator(mode="after")
    def _roles_exist(self) -> Experiment:
        roles = [("legacy", self.legacy)] + [("candidates", c) for c in self.candidates]
        if self.matryoshka:
            roles += [("matryoshka.base", self.matryoshka.base), ("matryoshka.variant", self.matryoshka.variant)]
        for role, name in roles + [("ablations", a) for a in self.ablations]:
            if name not in self.targets:
                raise ValueError(f"{role}: '{name}' is not one of targets ({', '.join(self.targets)})")
        if self.legacy in self.candidates:
            raise ValueError(f"candidates: '{self.legacy}' is the legacy target")
        return self

    @property
    def primary_candidate(self) -> str:
        return self.candidates[0]

    def target_order(self) -> list[str]:
        """The servers compared in the report (ablation variants are reported apart)."""
        return [self.legacy, *self.candidates]


def _clean_location(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """pydantic puts a discriminated union's tag in the path (targets.vllm.vllm.port): drop it."""
    if len(loc) >= 3 and loc[0] == "targets" and loc[2] in _TARGET_KINDS:
        return loc[:2] + loc[3:]
    return loc


def _known_fields(loc: tuple[Any, ...], data: Any) -> list[str]:
    """The field names allowed where ``loc`` points (used to suggest a correction for an unknown key)."""
    current: Any = Experiment
    for i, part in enumerate(loc):
        if current is None or isinstance(part, int):
            return []
        if current is Experiment and part == "targets" and i + 1 < len(loc):
            kind = ((data.get("targets") or {}).get(loc[i + 1]) or {}).get("kind") if isinstance(data, dict) else None
            if i + 2 == len(loc):
                return list(_TARGET_KINDS[kind].model_fields) if kind in _TARGET_KINDS else []
            current = _TARGET_KINDS.get(kind)
            continue
        if i > 0 and loc[i - 1] == "targets":
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return []
        annotation = field.annotation
        current = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    return list(getattr(current, "model_fields", {})) if current is not None else []


def _format_error(error: dict[str, Any], data: Any) -> str:
    loc = _clean_location(tuple(error["loc"]))
    key = ".".join(str(p) for p in loc) or "(top level)"
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(str(loc[-1]), _known_fields(loc[:-1], data), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return f"unknown key '{key}'{hint}"
    if error["type"] == "missing":
        return f"missing key '{key}'"
    message = str(error["msg"]).removeprefix("Value error, ")
    if not loc:  # a rule across keys (e.g. candidates must name targets): its message names them
        return message
    return f"key '{key}': {message}"


def parse_experiment(data: Any, source: str = CONFIG_FILENAME) -> Experiment:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of keys at the top level")
    try:
        return Experiment.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        first = _format_error(errors[0], data)
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ConfigError(f"{source}: {first}{more}") from None


def load_experiment(experiment_dir: str | Path) -> Experiment:
    path = Path(experiment_dir) / CONFIG_FILENAME
    if not path.exists():
        raise ConfigError(f"{path}: not found (create one with `embedswap new SLUG`)")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    return parse_experiment(data, source=str(path))


def resolve_path(experiment_dir: str | Path, value: str) -> Path:
    """Relative paths in experiment.yaml are relative to the folder holding it; ``sample:NAME`` is a file of the
    packaged sample workload."""
    from embedswap.paths import resolve_sample

    sample = resolve_sample(value)
    if sample is not None:
        return sample
    path = Path(value).expanduser()
    return path if path.is_absolute() else (Path(experiment_dir) / path).resolve()
