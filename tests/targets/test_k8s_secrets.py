"""Kubernetes targets never inline a secret: env names that look secret become secretKeyRefs to a named Secret,
the manifest says how to create it, the validator refuses an inline value; and the redaction shapes, with what
they must leave alone."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from embedswap.config import ExternalTarget, KubernetesTarget, ModelConfig
from embedswap.redact import REDACTED, is_secret_name, redact
from embedswap.targets.kubernetes import WORKER_SERVICE, KubernetesDeploymentTarget, render_manifest, validate_manifest

MODEL = ModelConfig(served_name="minilm")
TOKEN = "hf_" + "Ab3" * 12


def _envs(doc: dict) -> list[dict]:
    return doc["spec"]["services"][WORKER_SERVICE]["envs"]


def test_secret_env_becomes_a_secret_key_ref_and_the_manifest_says_which_secret(tmp_path: Path) -> None:
    config = KubernetesTarget(kind="kubernetes", namespace="embed", deployment_name="emb",
                              env={"HF_TOKEN": TOKEN, "OPENAI_API_KEY": "sk-" + "x" * 30, "TOKENIZERS_PARALLELISM": "false"})
    doc = render_manifest(config, "org/model", "minilm", "k8s")
    assert validate_manifest(doc) == []
    envs = {e["name"]: e for e in _envs(doc)}
    assert envs["HF_TOKEN"] == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "emb-secrets", "key": "HF_TOKEN"}}}
    assert envs["OPENAI_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "emb-secrets", "key": "OPENAI_API_KEY"}
    assert envs["TOKENIZERS_PARALLELISM"] == {"name": "TOKENIZERS_PARALLELISM", "value": "false"}  # not a secret

    target = KubernetesDeploymentTarget("k8s", config, MODEL, "/local/minilm", tmp_path)
    with pytest.raises(Exception, match="create its Secret") as error:
        target.start()  # no cluster: the manifest is written and the message says what to create first
    assert TOKEN not in str(error.value)
    text = (tmp_path / "k8s.dynamographdeployment.yaml").read_text()
    create = ('kubectl create secret generic emb-secrets -n embed --from-literal=HF_TOKEN="$HF_TOKEN" '
              '--from-literal=OPENAI_API_KEY="$OPENAI_API_KEY"')
    assert text.startswith("# Before applying: create the Secret") and create in text
    assert TOKEN not in text and "sk-xxx" not in text
    assert yaml.safe_load(text) == target.manifest()  # the comment aside, the manifest as rendered
    assert target.commands()[0] == create and TOKEN not in " ".join(target.commands())


def test_the_validator_refuses_an_inline_secret_and_a_broken_reference() -> None:
    doc = render_manifest(KubernetesTarget(kind="kubernetes", env={"HF_TOKEN": TOKEN}), "org/model", "m", "k8s")
    inline = copy.deepcopy(doc)
    _envs(inline)[1] = {"name": "HF_TOKEN", "value": TOKEN}
    assert any("HF_TOKEN looks secret and must come from a Secret" in p for p in validate_manifest(inline))
    broken = copy.deepcopy(doc)
    _envs(broken)[1] = {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "s"}}}
    assert any("must be a secretKeyRef with a 'name' and a 'key'" in p for p in validate_manifest(broken))


def test_config_dumps_show_no_header_value_and_no_secret_env() -> None:
    external = ExternalTarget(kind="external", url="http://127.0.0.1:1/v1", env={"HF_TOKEN": TOKEN, "LOG": "debug"},
                              headers={"X-Org": "org-1234567", "Content-Type": "application/json"})
    dumped = external.model_dump(mode="json")
    assert dumped["headers"] == {"X-Org": REDACTED, "Content-Type": "application/json"}
    assert dumped["env"] == {"HF_TOKEN": REDACTED, "LOG": "debug"}
    assert external.headers["X-Org"] == "org-1234567"  # the kit itself still sends it


@pytest.mark.parametrize(("text", "expected"), [
    ("Authorization: Basic dXNlcjpwYXNz", f"Authorization: Basic {REDACTED}"),
    ("Proxy-Authorization: Basic dXNlcjpwYXNz", f"Proxy-Authorization: Basic {REDACTED}"),
    ("x-api-key: abcd1234efgh", f"x-api-key: {REDACTED}"),
    ("X-Goog-Api-Key: AIzaSyA123", f"X-Goog-Api-Key: {REDACTED}"),
    ('{"api_key": "abcdefgh123"}', f'{{"api_key": "{REDACTED}"}}'),
    ('"{\\"client_secret\\": \\"abcdefgh\\"}"', f'"{{\\"client_secret\\": \\"{REDACTED}\\"}}"'),  # JSON-escaped
    ("run OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuv now", f"run OPENAI_API_KEY={REDACTED} now"),
    ("HF said hf_abcdefghijklmnopqrstuvwxyz0123456789 is bad", f"HF said {REDACTED} is bad"),
    ('"x\\nhf_abcdefghijklmnopqrstuvwxyz0123456789"', f'"x\\n{REDACTED}"'),
    ("key sk-abcdefghijklmnopqrstuvwxyz0", f"key {REDACTED}"),
    # left alone: prose, token counts, tokenizers' special tokens, a $VAR reference, a task id
    ("per token: 0.35 ms; Basic usage", "per token: 0.35 ms; Basic usage"),
    ('"prompt_tokens": 12, "tokenizer": "/m", "pad_token": "[PAD]"', '"prompt_tokens": 12, "tokenizer": "/m", "pad_token": "[PAD]"'),
    ("--max-num-batched-tokens=8192", "--max-num-batched-tokens=8192"),
    ('--from-literal=HF_TOKEN="$HF_TOKEN"', '--from-literal=HF_TOKEN="$HF_TOKEN"'),
    ("task-abcdefghijklmnopqrstuvwxyz", "task-abcdefghijklmnopqrstuvwxyz"),
])
def test_redaction_shapes(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_secret_names() -> None:
    assert all(map(is_secret_name, ["HF_TOKEN", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD"]))
    assert not any(map(is_secret_name, ["TOKENIZERS_PARALLELISM", "HF_HUB_OFFLINE", "VLLM_CPU_KVCACHE_SPACE"]))
