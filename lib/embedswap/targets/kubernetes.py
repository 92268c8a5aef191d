"""The article's Kubernetes deployment: a DynamoGraphDeployment with one Frontend and one vLLM embedding worker.

The manifest is always rendered, validated and written into the attempt (``<name>.dynamographdeployment.yaml``
in the logs folder), so the report can show exactly what would be deployed. It is applied with ``kubectl`` only
when the target says a cluster is configured (``apply: true``, a ``url`` where the frontend is reachable, and
kubectl on PATH); otherwise ``start()`` fails with "not applied: ..." and the run records Kubernetes as not
measured. Stopping deletes what was applied (the article takes the graph down before the legacy server returns).

Field names follow the public DynamoGraphDeployment CRD (apiVersion nvidia.com/v1alpha1): ``spec.services.<Name>``
with ``componentType``, ``replicas``, ``envs``, ``resources.limits.gpu`` and ``extraPodSpec.mainContainer``
(a Kubernetes container: ``image``, ``workingDir``, ``command``, ``args``).

Secrets. An ``env`` entry whose name looks secret (``HF_TOKEN``, ``*_API_KEY``, ``*PASSWORD*``: the names
``embedswap.redact`` treats as secret) is never inlined: the worker reads it from a Kubernetes Secret
(``valueFrom.secretKeyRef``, Secret ``<deployment name>-secrets``, key = the variable's name), and the manifest's
header comment gives the ``kubectl create secret`` command that makes that Secret from the caller's environment.
Whatever value ``env`` holds for it is only registered for redaction; the written manifest goes through
``redact`` as well.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from embedswap.config.targets import KubernetesTarget
from embedswap.redact import is_secret_name, redact, register_secret_env
from embedswap.targets.base import Target, TargetStartError
from embedswap.targets.k8s_secrets import create_secret_command, deployment_name, secret_name

API_VERSION = "nvidia.com/v1alpha1"
KIND = "DynamoGraphDeployment"
FRONTEND_SERVICE = "Frontend"
WORKER_SERVICE = "VllmEmbeddingWorker"
WORKER_WORKDIR = "/workspace/examples/backends/vllm"
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def worker_args(model: str, served_name: str, max_model_len: int, gpu_memory_utilization: float,
                extra_args: list[str] | None = None) -> list[str]:
    """The worker's arguments as in the article, plus the served name the kit sends as ``model``."""
    return [
        "--model", model,
        "--served-model-name", served_name,
        "--embedding-worker",
        "--runner", "pooling",
        "--max-model-len", str(max_model_len),
        "--gpu-memory-utilization", f"{gpu_memory_utilization:g}",
        *[str(a) for a in (extra_args or [])],
    ]


def render_manifest(config: KubernetesTarget, model: str, served_name: str, target_name: str) -> dict[str, Any]:
    """The DynamoGraphDeployment for one Frontend + one embedding worker (a plain dict, ready for YAML)."""
    name = config.deployment_name or deployment_name(target_name)
    register_secret_env(config.env)
    secret = secret_name(config, target_name)
    env: list[dict[str, Any]] = [{"name": "HF_HUB_OFFLINE", "value": "1"}]
    for k, v in config.env.items():
        if k == "HF_HUB_OFFLINE":
            continue
        if is_secret_name(k):
            env.append({"name": k, "valueFrom": {"secretKeyRef": {"name": secret, "key": k}}})
        else:
            env.append({"name": k, "value": str(v)})
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "namespace": config.namespace},
        "spec": {
            "backendFramework": "vllm",
            "services": {
                FRONTEND_SERVICE: {
                    "componentType": "frontend",
                    "replicas": 1,
                    "extraPodSpec": {"mainContainer": {"image": config.image}},
                },
                WORKER_SERVICE: {
                    "componentType": "worker",
                    "replicas": 1,
                    "envs": env,
                    "resources": {"limits": {"gpu": str(config.gpus)}},
                    "extraPodSpec": {
                        "mainContainer": {
                            "image": config.image,
                            "workingDir": WORKER_WORKDIR,
                            "command": ["python3", "-m", "dynamo.vllm"],
                            "args": worker_args(model, served_name, config.max_model_len,
                                                config.gpu_memory_utilization, config.extra_args),
                        }
                    },
                },
            },
        },
    }


def manifest_yaml(doc: dict[str, Any], create_secret: str | None = None) -> str:
    """The manifest as YAML, redacted; ``create_secret`` (the command that makes its Secret) as a header comment."""
    head = ""
    if create_secret:
        head = ("# Before applying: create the Secret the worker reads its secret variables from (values from your\n"
                f"# environment, never from this file):\n#   {create_secret}\n")
    return redact(head + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))


def _type_name(value: Any) -> str:
    return type(value).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _string_list(value: Any, where: str, problems: list[str]) -> list[str]:
    if not isinstance(value, list):
        problems.append(f"{where}: must be a list of strings (got {_type_name(value)})")
        return []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            problems.append(f"{where}[{i}]: must be a string (got {_type_name(item)} {item!r}; quote it)")
    return [item for item in value if isinstance(item, str)]


def _validate_service(service_name: str, service: Any, problems: list[str]) -> list[str]:
    """Checks one entry of spec.services; returns its container's command + args (for the worker checks)."""
    where = f"spec.services.{service_name}"
    if not isinstance(service, dict):
        problems.append(f"{where}: must be a mapping (got {_type_name(service)})")
        return []
    component = service.get("componentType")
    if not isinstance(component, str) or not component:
        problems.append(f"{where}.componentType: missing (frontend, worker, ...)")
    replicas = service.get("replicas")
    if replicas is not None and (not _is_int(replicas) or replicas < 0):
        problems.append(f"{where}.replicas: must be an integer >= 0 (got {replicas!r})")
    if "envs" in service:
        envs = service["envs"]
        if not isinstance(envs, list):
            problems.append(f"{where}.envs: must be a list of {{name, value}} (got {_type_name(envs)})")
        else:
            for i, item in enumerate(envs):
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    problems.append(f"{where}.envs[{i}]: must be a mapping with a string 'name'")
                elif "value" in item and not isinstance(item["value"], str):
                    problems.append(f"{where}.envs[{i}].value: must be a string (got {_type_name(item['value'])})")
                elif "value" in item and is_secret_name(item["name"]):
                    problems.append(f"{where}.envs[{i}]: {item['name']} looks secret and must come from a Secret "
                                    "(valueFrom.secretKeyRef), not an inline value")
                elif "valueFrom" in item:
                    ref = item["valueFrom"].get("secretKeyRef") if isinstance(item["valueFrom"], dict) else None
                    if not (isinstance(ref, dict) and isinstance(ref.get("name"), str) and isinstance(ref.get("key"), str)):
                        problems.append(f"{where}.envs[{i}].valueFrom: must be a secretKeyRef with a 'name' and a 'key'")
    resources = service.get("resources")
    if resources is not None:
        if not isinstance(resources, dict):
            problems.append(f"{where}.resources: must be a mapping")
        else:
            for section in ("limits", "requests"):
                block = resources.get(section)
                if block is None:
                    continue
                if not isinstance(block, dict):
                    problems.append(f"{where}.resources.{section}: must be a mapping")
                    continue
                gpu = block.get("gpu")
                if gpu is not None and not (isinstance(gpu, str) and gpu.isdigit()):
                    problems.append(f"{where}.resources.{section}.gpu: must be a quoted whole number like \"1\" "
                                    f"(got {_type_name(gpu)} {gpu!r})")
    pod = service.get("extraPodSpec")
    container = pod.get("mainContainer") if isinstance(pod, dict) else None
    if not isinstance(container, dict):
        problems.append(f"{where}.extraPodSpec.mainContainer: missing (the container's image, command, args)")
        return []
    cwhere = f"{where}.extraPodSpec.mainContainer"
    image = container.get("image")
    if not isinstance(image, str) or not image.strip():
        problems.append(f"{cwhere}.image: missing or empty")
    words: list[str] = []
    for key in ("command", "args"):
        if key in container:
            words += _string_list(container[key], f"{cwhere}.{key}", problems)
    return words


def _has_pair(words: list[str], flag: str, value: str | None = None) -> bool:
    for i, word in enumerate(words):
        if word == flag and (value is None or (i + 1 < len(words) and words[i + 1] == value)):
            return True
        if value is not None and word == f"{flag}={value}":
            return True
    return False


def validate_manifest(doc: Any) -> list[str]:
    """Problems with a DynamoGraphDeployment for an embedding graph; an empty list means it looks right.

    Checks the CRD's shape (required fields present, types right: Kubernetes wants strings in command/args,
    env values and GPU quantities) and the graph the article used: one frontend, and a worker that runs
    ``dynamo.vllm`` with ``--embedding-worker``, ``--runner pooling`` and a ``--model``.
    """
    problems: list[str] = []
    if not isinstance(doc, dict):
        return [f"manifest: must be a mapping (got {_type_name(doc)})"]
    if doc.get("apiVersion") != API_VERSION:
        problems.append(f"apiVersion: must be {API_VERSION!r} (got {doc.get('apiVersion')!r})")
    if doc.get("kind") != KIND:
        problems.append(f"kind: must be {KIND!r} (got {doc.get('kind')!r})")
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        problems.append("metadata: missing")
    else:
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            problems.append("metadata.name: missing")
        elif len(name) > 63 or not _DNS_LABEL.fullmatch(name):
            problems.append(f"metadata.name: {name!r} is not a DNS-1123 label (lowercase letters, digits, '-')")
        namespace = metadata.get("namespace")
        if namespace is not None and (not isinstance(namespace, str) or not _DNS_LABEL.fullmatch(namespace)):
            problems.append(f"metadata.namespace: {namespace!r} is not a valid namespace name")
    spec = doc.get("spec")
    services = spec.get("services") if isinstance(spec, dict) else None
    if not isinstance(services, dict) or not services:
        problems.append("spec.services: missing or empty (needs a Frontend and a worker)")
        return problems
    frontends, workers = [], []
    for service_name, service in services.items():
        words = _validate_service(str(service_name), service, problems)
        component = service.get("componentType") if isinstance(service, dict) else None
        if component == "frontend":
            frontends.append(service_name)
        elif component == "worker" or "dynamo.vllm" in words:
            workers.append((service_name, words))
    if len(frontends) != 1:
        problems.append(f"spec.services: expected one service with componentType 'frontend' (found {len(frontends)})")
    if not workers:
        problems.append("spec.services: no worker service (componentType 'worker' running dynamo.vllm)")
    for service_name, words in workers:
        where = f"spec.services.{service_name}.extraPodSpec.mainContainer"
        if "dynamo.vllm" not in words:
            problems.append(f"{where}: command/args do not run 'dynamo.vllm'")
        if not _has_pair(words, "--embedding-worker"):
            problems.append(f"{where}.args: '--embedding-worker' missing (the worker would serve generation)")
        if not _has_pair(words, "--runner", "pooling"):
            problems.append(f"{where}.args: '--runner pooling' missing")
        model_at = words.index("--model") if "--model" in words else -1
        if model_at < 0 or model_at + 1 >= len(words) or words[model_at + 1].startswith("--"):
            problems.append(f"{where}.args: '--model <name>' missing")
    return problems


class KubernetesDeploymentTarget(Target):
    kind = "kubernetes"
    config: KubernetesTarget

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.manifest_path: Path | None = None
        self.applied = False

    # --- the manifest ------------------------------------------------------------------------------------------
    def model_for_cluster(self) -> str:
        """The model as the worker pod names it: the target's ``model``, else the experiment's model.path
        (a ``package:`` model exists only on this machine, so its resolved folder is used)."""
        if self.config.model:
            return self.config.model
        spec = self.model.path
        return self.model_path if spec.startswith("package:") else spec

    def manifest(self) -> dict[str, Any]:
        return render_manifest(self.config, self.model_for_cluster(), self.served_name, self.name)

    def write_manifest(self) -> Path:
        path = self.log_dir / f"{self.name}.dynamographdeployment.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".yaml.tmp")
        tmp.write_text(manifest_yaml(self.manifest(), create_secret_command(self.config, self.name)), encoding="utf-8")
        tmp.replace(path)
        self.manifest_path = path
        return path

    # --- the target interface ---------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self.config.url:
            return self.config.url.rstrip("/").removesuffix("/v1")
        if self.config.port:
            return f"http://{self.config.host}:{self.config.port}"
        return f"kubernetes://{self.config.namespace}/{self.manifest()['metadata']['name']}"

    def health_url(self) -> str:
        return f"{self.base_url}/v1/models"

    def preflight(self) -> None:
        """Nothing local listens: the port check of the base class does not apply."""

    def launch(self) -> None:
        doc = self.manifest()
        problems = validate_manifest(doc)
        path = self.write_manifest()
        if problems:
            raise TargetStartError(
                f"target '{self.name}': the DynamoGraphDeployment is not valid ({'; '.join(problems)}); "
                f"written to {path}"
            )
        name, namespace = doc["metadata"]["name"], self.config.namespace
        create = create_secret_command(self.config, self.name)
        first = f"create its Secret ({create}), " if create else ""
        how = (f"to measure it, {first}apply it (kubectl apply -n {namespace} -f {path}), make the frontend reachable "
               f"(e.g. kubectl port-forward -n {namespace} svc/{name}-frontend 8000:8000) and set "
               f"targets.{self.name}.apply: true and url: http://127.0.0.1:8000")
        if not self.config.apply:
            raise TargetStartError(
                f"target '{self.name}': not applied: no cluster configured; manifest written to {path}. "
                f"Kubernetes not measured in this run ({how})."
            )
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            raise TargetStartError(
                f"target '{self.name}': not applied: kubectl is not on PATH; manifest written to {path}. "
                "Kubernetes not measured in this run."
            )
        self._kubectl([kubectl, "apply", "-n", namespace, "-f", str(path)], "apply")
        self.applied = True

    def _kubectl(self, command: list[str], what: str) -> str:
        log = self.log_dir / f"{self.name}.kubectl.log"
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise TargetStartError(f"target '{self.name}': kubectl {what} failed: {exc}") from exc
        output = result.stdout + result.stderr
        with log.open("a", encoding="utf-8") as handle:
            handle.write(redact(f"$ {' '.join(command)}\n{output}(exit {result.returncode})\n"))
        if result.returncode != 0:
            raise TargetStartError(
                f"target '{self.name}': kubectl {what} failed (exit {result.returncode}):\n{redact(output[-2000:])}"
            )
        return output

    def is_ready(self) -> bool:
        if not self.applied:
            return False
        response = self.health_get(self.health_url(), timeout=10)
        if response.status_code != 200:
            return False
        return any(m.get("id") == self.served_name for m in response.json().get("data") or [])

    def stop(self) -> dict[str, int | None]:
        if self.applied and self.manifest_path is not None:
            kubectl = shutil.which("kubectl")
            if kubectl:
                try:
                    self._kubectl([kubectl, "delete", "-n", self.config.namespace, "-f", str(self.manifest_path),
                                   "--ignore-not-found", "--wait=false"], "delete")
                except TargetStartError:
                    pass  # recorded in the kubectl log; stopping must not raise
            self.applied = False
        return {}

    def alive(self) -> bool:
        return self.applied

    def commands(self) -> list[str]:
        doc = self.manifest()
        container = doc["spec"]["services"][WORKER_SERVICE]["extraPodSpec"]["mainContainer"]
        worker = " ".join([*container["command"], *container["args"]])
        where = self.manifest_path or f"{self.name}.dynamographdeployment.yaml"
        create = create_secret_command(self.config, self.name)
        return [*([create] if create else []), f"kubectl apply -n {self.config.namespace} -f {where}", redact(worker)]

    def version(self) -> str | None:
        return f"{KIND} {API_VERSION}, image {self.config.image}"

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["manifest"] = str(self.manifest_path) if self.manifest_path else None
        info["applied"] = self.applied
        return info
