"""The open-loop sweep as a KubeRay RayJob: the kit's steps 01/02 run as the job's entrypoint on a Ray cluster whose
worker pods are the senders (``latency.open_loop.workers``, ``ray_address: auto``).

``embedswap rayjob`` renders it next to the experiment (``rayjob.yaml``), checked by :func:`validate_rayjob` like
the DynamoGraphDeployment (:mod:`embedswap.targets.kubernetes`): the shape KubeRay's ``ray.io/v1`` CRD wants
(string ``rayStartParams``, containers with images, worker groups with replica counts) and no secret inline. The
experiment folder comes from a PersistentVolumeClaim mounted at the same path in every pod, so the captures the
entrypoint writes stay after the cluster is gone. Every key the experiment reads from the environment (each
target's ``api_key_env``, ``HF_TOKEN``) comes from a Secret by reference (``secretKeyRef``), made with the
``kubectl create secret`` command in the file's header from the caller's environment, never from the file.

Field names follow KubeRay's RayJob (apiVersion ray.io/v1): ``spec.entrypoint``, ``spec.rayClusterSpec`` with
``headGroupSpec`` and ``workerGroupSpecs`` (``groupName``, ``replicas``, ``rayStartParams``, a pod ``template``).
"""

from __future__ import annotations

import math
import re
import shlex
from typing import Any

from embedswap.config.experiment import Experiment
from embedswap.redact import is_secret_name
from embedswap.targets.kubernetes import manifest_yaml

API_VERSION = "ray.io/v1"
KIND = "RayJob"
MOUNT = "/experiments"
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def secret_env(experiment: Experiment) -> list[str]:
    """The environment variables the run reads keys from: each target's ``api_key_env``, and HF_TOKEN."""
    names = {"HF_TOKEN"}
    for target in experiment.targets.values():
        name = getattr(target, "api_key_env", None)
        if name:
            names.add(str(name))
    return sorted(names)


def job_name(slug: str) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", f"embedswap-sweep-{slug}".lower()).strip("-")
    return name[:63].rstrip("-")


def secret_name(slug: str) -> str:
    return f"{job_name(slug)}-secrets"[:253]


def create_secret_command(experiment: Experiment, slug: str, namespace: str) -> str:
    """``kubectl create secret generic ...`` taking each value from the caller's environment (``$NAME``)."""
    literals = " ".join(f'--from-literal={k}="${k}"' for k in secret_env(experiment))
    return f"kubectl create secret generic {secret_name(slug)} -n {namespace} {literals}"


def _container(name: str, image: str, env: list[dict[str, Any]], cpus: int) -> dict[str, Any]:
    return {"name": name, "image": image, "env": env,
            "resources": {"requests": {"cpu": str(cpus)}, "limits": {"cpu": str(cpus)}},
            "volumeMounts": [{"name": "experiments", "mountPath": MOUNT}]}


def render_rayjob(experiment: Experiment, slug: str, *, image: str, claim: str, namespace: str = "default",
                  cpus_per_pod: int = 1, steps: str = "01,02") -> dict[str, Any]:
    """The RayJob for the sweep of ``experiments/<slug>`` (a plain dict, ready for YAML)."""
    ol = experiment.latency.open_loop
    if ol is None:
        raise ValueError("latency.open_loop is not set: there is no sweep to run on a cluster")
    if ol.ray_address != "auto":
        raise ValueError("latency.open_loop.ray_address must be 'auto' for a RayJob (the entrypoint joins the "
                         "job's own cluster)")
    secret = secret_name(slug)
    env: list[dict[str, Any]] = [{"name": "HF_HUB_OFFLINE", "value": "1"}]
    env += [{"name": k, "valueFrom": {"secretKeyRef": {"name": secret, "key": k, "optional": True}}}
            for k in secret_env(experiment)]
    replicas = max(1, math.ceil(ol.workers / cpus_per_pod))
    pod = {"volumes": [{"name": "experiments", "persistentVolumeClaim": {"claimName": claim}}]}
    entrypoint = shlex.join(["embedswap", "run", f"{MOUNT}/{slug}", "--steps", steps, "--no-report"])
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": job_name(slug), "namespace": namespace},
        "spec": {
            "entrypoint": entrypoint,
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": 600,
            "rayClusterSpec": {
                "headGroupSpec": {
                    # the head sends nothing: every sender is a worker pod's CPU
                    "rayStartParams": {"num-cpus": "0"},
                    "template": {"spec": {**pod, "containers": [_container("ray-head", image, env, 1)]}},
                },
                "workerGroupSpecs": [{
                    "groupName": "senders",
                    "replicas": replicas, "minReplicas": replicas, "maxReplicas": replicas,
                    "rayStartParams": {"num-cpus": str(cpus_per_pod)},
                    "template": {"spec": {**pod, "containers": [_container("ray-worker", image, env, cpus_per_pod)]}},
                }],
            },
        },
    }


def rayjob_yaml(doc: dict[str, Any], create_secret: str) -> str:
    """The manifest as YAML, redacted, with the command that makes its Secret as a header comment."""
    return manifest_yaml(doc, create_secret)


def _check_env(where: str, env: Any, problems: list[str]) -> None:
    if not isinstance(env, list):
        problems.append(f"{where}.env: must be a list of {{name, value}} (got {type(env).__name__})")
        return
    for i, item in enumerate(env):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str):
            problems.append(f"{where}.env[{i}]: must be a mapping with a string 'name'")
        elif "value" in item and not isinstance(item["value"], str):
            problems.append(f"{where}.env[{i}].value: must be a string (got {type(item['value']).__name__})")
        elif "value" in item and is_secret_name(name):
            problems.append(f"{where}.env[{i}]: {name} looks secret and must come from a Secret "
                            "(valueFrom.secretKeyRef), not an inline value")
        elif "valueFrom" in item:
            ref = item["valueFrom"].get("secretKeyRef") if isinstance(item["valueFrom"], dict) else None
            if not (isinstance(ref, dict) and isinstance(ref.get("name"), str) and isinstance(ref.get("key"), str)):
                problems.append(f"{where}.env[{i}].valueFrom: must be a secretKeyRef with a 'name' and a 'key'")


def _check_group(where: str, group: Any, problems: list[str]) -> None:
    if not isinstance(group, dict):
        problems.append(f"{where}: must be a mapping")
        return
    params = group.get("rayStartParams", {})
    if not isinstance(params, dict):
        problems.append(f"{where}.rayStartParams: must be a mapping")
    else:
        for key, value in params.items():
            if not isinstance(value, str):
                problems.append(f"{where}.rayStartParams.{key}: must be a string (got {type(value).__name__} "
                                f"{value!r}; quote it)")
    spec = group.get("template", {}).get("spec") if isinstance(group.get("template"), dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list) or not containers:
        problems.append(f"{where}.template.spec.containers: missing or empty")
        return
    volumes = {v.get("name") for v in spec.get("volumes", []) if isinstance(v, dict)}
    for i, container in enumerate(containers):
        cwhere = f"{where}.template.spec.containers[{i}]"
        if not isinstance(container, dict):
            problems.append(f"{cwhere}: must be a mapping")
            continue
        if not isinstance(container.get("image"), str) or not container["image"].strip():
            problems.append(f"{cwhere}.image: missing or empty")
        if "env" in container:
            _check_env(cwhere, container["env"], problems)
        for mount in container.get("volumeMounts", []):
            if isinstance(mount, dict) and mount.get("name") not in volumes:
                problems.append(f"{cwhere}.volumeMounts: {mount.get('name')!r} is not a volume of the pod")


def validate_rayjob(doc: Any) -> list[str]:
    """Problems with a RayJob for the sweep; an empty list means it looks right."""
    if not isinstance(doc, dict):
        return [f"manifest: must be a mapping (got {type(doc).__name__})"]
    problems: list[str] = []
    if doc.get("apiVersion") != API_VERSION:
        problems.append(f"apiVersion: must be {API_VERSION!r} (got {doc.get('apiVersion')!r})")
    if doc.get("kind") != KIND:
        problems.append(f"kind: must be {KIND!r} (got {doc.get('kind')!r})")
    metadata = doc.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or len(name) > 63 or not _DNS_LABEL.fullmatch(name):
        problems.append(f"metadata.name: {name!r} is not a DNS-1123 label (lowercase letters, digits, '-')")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return problems + ["spec: missing"]
    entrypoint = spec.get("entrypoint")
    if not isinstance(entrypoint, str) or "embedswap run" not in entrypoint:
        problems.append("spec.entrypoint: must run 'embedswap run <experiment>'")
    cluster = spec.get("rayClusterSpec")
    if not isinstance(cluster, dict):
        return problems + ["spec.rayClusterSpec: missing (the cluster the job creates)"]
    _check_group("spec.rayClusterSpec.headGroupSpec", cluster.get("headGroupSpec"), problems)
    groups = cluster.get("workerGroupSpecs")
    if not isinstance(groups, list) or not groups:
        problems.append("spec.rayClusterSpec.workerGroupSpecs: missing or empty (the senders)")
        return problems
    for i, group in enumerate(groups):
        where = f"spec.rayClusterSpec.workerGroupSpecs[{i}]"
        _check_group(where, group, problems)
        if isinstance(group, dict):
            if not isinstance(group.get("groupName"), str) or not group["groupName"]:
                problems.append(f"{where}.groupName: missing")
            replicas = group.get("replicas")
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
                problems.append(f"{where}.replicas: must be an integer >= 1 (got {replicas!r})")
    return problems
