"""experiment.yaml, validated: the :class:`Experiment` model and its loaders (:mod:`.experiment`), the section
models (:mod:`.sections`), one model per kind of server (:mod:`.targets`) and what they share (:mod:`.base`).

This face names the public models so that ``from embedswap.config import Experiment, load_experiment`` reads as one
place; modules inside the kit import from the module that defines a name.
"""

from embedswap.config.base import (
    CONFIG_FILENAME, ConfigError, DEFAULT_QUERY_TASK, DEFAULT_QUERY_TEMPLATE,
)
from embedswap.config.sections import (
    ContractConfig, LatencyConfig, MatryoshkaConfig, ModelConfig, ParityBackendSpec, ParityChecks, ParityConfig,
    ParityMultimodal, ProbeSpec, PublishConfig, ReportConfig, SequencingConfig, WorkloadConfig,
)
from embedswap.config.targets import (
    ALL_CAPTURES, CaptureKind, DynamoTarget, ExternalTarget, KubernetesTarget, LegacyTarget, LlamaCppTarget, Target,
    VllmTarget,
)
from embedswap.config.experiment import (
    Experiment, load_experiment, parse_experiment, resolve_path,
)

__all__ = [
    "ALL_CAPTURES", "CONFIG_FILENAME", "CaptureKind", "ConfigError", "ContractConfig", "DEFAULT_QUERY_TASK",
    "DEFAULT_QUERY_TEMPLATE", "DynamoTarget", "Experiment", "ExternalTarget", "KubernetesTarget", "LlamaCppTarget",
    "LatencyConfig", "LegacyTarget", "MatryoshkaConfig", "ModelConfig", "ParityBackendSpec", "ParityChecks",
    "ParityConfig", "ParityMultimodal", "ProbeSpec", "PublishConfig", "ReportConfig", "SequencingConfig",
    "Target", "VllmTarget", "WorkloadConfig", "load_experiment", "parse_experiment", "resolve_path",
]
