"""vLLM's OpenAI-compatible server with the pooling runner, in the engine environment."""

from __future__ import annotations

from pathlib import Path

import httpx

from embedswap.config.targets import VllmTarget
from embedswap.paths import cache_dir, engine_python
from embedswap.targets.base import ManagedProcess, Target, TargetStartError, server_env


class VllmServerTarget(Target):
    kind = "vllm"
    config: VllmTarget

    @property
    def base_url(self) -> str:
        return f"http://{self.config.host}:{self.config.port}"

    def python(self) -> str:
        return self.config.python or engine_python()

    def command(self) -> list[str]:
        cfg = self.config
        command = [
            self.python(), "-m", "vllm.entrypoints.openai.api_server",
            "--model", self.model_path,
            "--runner", "pooling",
            "--served-model-name", self.served_name,
            "--host", cfg.host, "--port", str(cfg.port),
        ]
        if cfg.dtype:
            command += ["--dtype", cfg.dtype]
        if cfg.max_model_len:
            command += ["--max-model-len", str(cfg.max_model_len)]
        return command + list(cfg.extra_args)

    def launch(self) -> None:
        if not Path(self.python()).exists():
            raise TargetStartError(
                f"target '{self.name}': the engine interpreter {self.python()} does not exist. "
                "Build the engine environment with `make engine` (CPU) or point targets."
                f"{self.name}.python / $EMBEDSWAP_ENGINE_PYTHON at a Python that has vLLM."
            )
        cache = cache_dir()
        env = server_env(
            {
                # a small KV cache: pooling models need none to speak of, and the default wants GBs
                "VLLM_CPU_KVCACHE_SPACE": "1",
                "VLLM_CACHE_ROOT": str(cache / "vllm"),
                "XDG_CACHE_HOME": str(cache / "xdg"),
                **self.config.env,
            }
        )
        process = ManagedProcess(self.name, self.command(), env, self.log_dir / f"{self.name}.log")
        self.processes.append(process)
        process.start()

    def is_ready(self) -> bool:
        # /health answers before the model is registered on some versions: wait for /v1/models too
        health = self.health_get(self.health_url(), timeout=5)
        if health.status_code != 200:
            return False
        models = self.health_get(f"{self.base_url}/v1/models", timeout=5)
        return models.status_code == 200 and any(m.get("id") == self.served_name for m in models.json()["data"])

    def version(self) -> str | None:
        try:
            response = httpx.get(f"{self.base_url}/version", timeout=5)
            return f"vllm {response.json().get('version')}" if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
