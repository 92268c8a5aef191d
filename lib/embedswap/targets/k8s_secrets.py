"""Which of a Kubernetes target's ``env`` variables go into a Secret, which Secret, and the command that makes it.

A variable whose name looks secret (``embedswap.redact.is_secret_name``: HF_TOKEN, OPENAI_API_KEY, ...) is never
written into the DynamoGraphDeployment: the worker reads it through ``valueFrom.secretKeyRef`` from the Secret
``<deployment name>-secrets`` (key: the variable's name), made from the caller's environment by
``create_secret_command`` (``--from-literal=HF_TOKEN="$HF_TOKEN"``: a reference, never the value).
"""

from __future__ import annotations

import re

from embedswap.config.targets import KubernetesTarget
from embedswap.redact import is_secret_name


def deployment_name(target_name: str) -> str:
    """A DNS-1123 name for metadata.name derived from the target's name."""
    slug = re.sub(r"[^a-z0-9-]+", "-", target_name.lower()).strip("-") or "embedding"
    return f"embedswap-{slug}"[:63].rstrip("-")


def secret_name(config: KubernetesTarget, target_name: str) -> str:
    """The Secret the worker's secret variables come from."""
    return f"{config.deployment_name or deployment_name(target_name)}-secrets"[:253]


def secret_keys(config: KubernetesTarget) -> list[str]:
    """The ``env`` names that go into the Secret instead of the manifest."""
    return [k for k in config.env if k != "HF_HUB_OFFLINE" and is_secret_name(k)]


def create_secret_command(config: KubernetesTarget, target_name: str) -> str | None:
    """``kubectl create secret generic ...`` taking each value from the caller's environment (``$NAME``)."""
    keys = secret_keys(config)
    if not keys:
        return None
    literals = " ".join(f'--from-literal={k}="${k}"' for k in keys)
    return f"kubectl create secret generic {secret_name(config, target_name)} -n {config.namespace} {literals}"
