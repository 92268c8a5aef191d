"""Targets: the servers under test, one small class per kind behind one interface (see base.Target)."""

from __future__ import annotations

from pathlib import Path

from embedswap.config.targets import (DynamoTarget, ExternalTarget, KubernetesTarget, LegacyTarget, LlamaCppTarget,
                                      VllmTarget)
from embedswap.config.experiment import Experiment
from embedswap.models import resolve_model_path
from embedswap.targets.base import Target, TargetStartError
from embedswap.targets.dynamo import DynamoServerTarget
from embedswap.targets.external import ExternalServerTarget
from embedswap.targets.kubernetes import KubernetesDeploymentTarget
from embedswap.targets.legacy import LegacyServerTarget
from embedswap.targets.llamacpp import LlamaCppServerTarget
from embedswap.targets.vllm import VllmServerTarget

__all__ = ["Target", "TargetStartError", "build_target"]


def build_target(experiment: Experiment, name: str, log_dir: Path) -> Target:
    config = experiment.targets[name]
    # a server the kit starts loads the target's own model where one is named with a local copy (issue 57); an
    # external or Kubernetes server loads its own, and ``model`` only says which
    own = config.serves_local_copy() and not isinstance(config, (ExternalTarget, KubernetesTarget))
    model_path = resolve_model_path(config.model if own and config.model else experiment.model.path)
    kinds: dict[type, type[Target]] = {
        LegacyTarget: LegacyServerTarget,
        VllmTarget: VllmServerTarget,
        ExternalTarget: ExternalServerTarget,
        DynamoTarget: DynamoServerTarget,
        KubernetesTarget: KubernetesDeploymentTarget,
        LlamaCppTarget: LlamaCppServerTarget,
    }
    for config_type, target_type in kinds.items():
        if isinstance(config, config_type):
            return target_type(name, config, experiment.model, model_path, log_dir)
    raise ValueError(f"target '{name}': unknown kind")
