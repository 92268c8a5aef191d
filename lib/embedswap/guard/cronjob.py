"""A Kubernetes CronJob that runs ``embedswap guard check`` on a schedule, with the guard file in a ConfigMap.

Rendered, then validated here the way the kit validates its DynamoGraphDeployment (``targets.kubernetes``): the
fields Kubernetes requires, their types, and that no secret is inlined. An API key is read by reference
(``valueFrom.secretKeyRef`` of a Secret the cluster already has), never written into the manifests. A drift makes
the Job's pod exit 1, so the Job fails and the cluster's usual alerting on failed Jobs sees it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from embedswap.guard.guard_file import load_guard

CONFIGMAP_LIMIT = 1_048_576  # Kubernetes refuses a ConfigMap over 1 MiB
KEY_ENV = "EMBEDSWAP_GUARD_API_KEY"
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_CRON_FIELD = re.compile(r"[0-9*/,\-A-Za-z?]+")


def render_manifests(guard_path: Path, *, url: str, schedule: str, name: str, namespace: str, image: str,
                     api_key_secret: str | None = None) -> list[dict[str, Any]]:
    guard = load_guard(guard_path)  # a file that would fail in the cluster fails here first
    text = guard_path.read_text(encoding="utf-8")
    if len(text.encode()) > CONFIGMAP_LIMIT - 4096:
        raise ValueError(f"{guard_path}: {len(text.encode()):,} bytes do not fit a ConfigMap (1 MiB); make the guard "
                         "with fewer canaries (--documents, --queries)")
    command = ["embedswap", "guard", "check", "/etc/embedswap-guard/guard.json", "--url", url]
    env: list[dict[str, Any]] = []
    if api_key_secret:
        secret, _, key = api_key_secret.partition("/")
        if not secret or not key:
            raise ValueError(f"--api-key-secret {api_key_secret!r}: write SECRET/KEY (a Secret and its key)")
        env.append({"name": KEY_ENV, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}})
        command += ["--api-key-env", KEY_ENV]
    labels = {"app.kubernetes.io/name": "embedswap-guard", "app.kubernetes.io/instance": name}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": f"{name}-file", "namespace": namespace, "labels": labels,
                              "annotations": {"embedswap/guard-sha256": guard.sha256,
                                              "embedswap/attempt": guard.source.attempt}},
                 "data": {"guard.json": text}}
    container = {"name": "guard", "image": image, "command": command,
                 "volumeMounts": [{"name": "guard", "mountPath": "/etc/embedswap-guard", "readOnly": True}],
                 "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}}}
    if env:
        container["env"] = env
    cronjob = {"apiVersion": "batch/v1", "kind": "CronJob",
               "metadata": {"name": name, "namespace": namespace, "labels": labels},
               "spec": {"schedule": schedule, "concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 3,
                        "failedJobsHistoryLimit": 5,
                        "jobTemplate": {"spec": {"backoffLimit": 0, "activeDeadlineSeconds": 300, "template": {
                            "metadata": {"labels": labels},
                            "spec": {"restartPolicy": "Never", "containers": [container],
                                     "volumes": [{"name": "guard", "configMap": {"name": f"{name}-file"}}]}}}}}}
    docs = [configmap, cronjob]
    problems = [p for doc in docs for p in validate(doc)]
    if problems:
        raise ValueError("; ".join(problems))
    return docs


def render_cronjob(guard_path: Path, **options: Any) -> str:
    docs = render_manifests(guard_path, **options)
    header = ("# embedswap guard: a CronJob that runs `embedswap guard check` against the server; exit 1 (drift)\n"
              "# fails the Job. The image must have embedswap installed. Apply: kubectl apply -f THIS_FILE\n")
    return header + yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True)


def validate(doc: Any) -> list[str]:
    """Problems with one rendered document (ConfigMap or CronJob); empty when it looks right."""
    if not isinstance(doc, dict):
        return ["manifest: must be a mapping"]
    kind = doc.get("kind")
    problems = []
    meta = doc.get("metadata") or {}
    for field in ("name", "namespace"):
        value = meta.get(field)
        if not isinstance(value, str) or len(value) > 63 or not _DNS_LABEL.fullmatch(value):
            problems.append(f"{kind}.metadata.{field}: {value!r} is not a DNS-1123 label")
    if kind == "ConfigMap":
        if doc.get("apiVersion") != "v1" or not all(isinstance(v, str) for v in (doc.get("data") or {}).values()):
            problems.append("ConfigMap: apiVersion v1 and string data values required")
        return problems
    if kind != "CronJob" or doc.get("apiVersion") != "batch/v1":
        return problems + [f"{kind}: expected a batch/v1 CronJob"]
    spec = doc.get("spec") or {}
    fields = str(spec.get("schedule", "")).split()
    if not (len(fields) == 5 and all(_CRON_FIELD.fullmatch(f) for f in fields)) and \
            not str(spec.get("schedule", "")).startswith("@"):
        problems.append(f"CronJob.spec.schedule: {spec.get('schedule')!r} is not a cron schedule (5 fields)")
    pod = (((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
    if pod.get("restartPolicy") not in ("Never", "OnFailure"):
        problems.append("CronJob pod: restartPolicy must be Never or OnFailure")
    containers = pod.get("containers") or []
    if not containers:
        problems.append("CronJob pod: no container")
    for container in containers:
        if not isinstance(container.get("image"), str) or not container["image"]:
            problems.append("CronJob container: image missing")
        if not all(isinstance(w, str) for w in container.get("command", [])):
            problems.append("CronJob container: command must be strings")
        for entry in container.get("env", []):
            if "value" in entry:  # every variable of this job that may hold a secret comes by reference
                problems.append(f"CronJob container env {entry.get('name')}: inline value (use secretKeyRef)")
    return problems
