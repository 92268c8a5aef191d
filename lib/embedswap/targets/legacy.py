"""The reference home-made server (embedswap.legacy.server) as a target."""

from __future__ import annotations

import sys
from pathlib import Path

import embedswap

from embedswap.config.targets import LegacyTarget
from embedswap.targets.base import ManagedProcess, Target, server_env


class LegacyServerTarget(Target):
    kind = "legacy"
    config: LegacyTarget

    @property
    def base_url(self) -> str:
        return f"http://{self.config.host}:{self.config.port}"

    def command(self) -> list[str]:
        cfg, model = self.config, self.model
        command = [
            cfg.python or sys.executable, "-m", "embedswap.legacy_server",
            "--model", self.model_path,
            "--served-model-name", self.served_name,
            "--host", cfg.host, "--port", str(cfg.port),
            "--dtype", cfg.dtype,
            "--max-input-tokens", str(model.max_input_tokens),
            "--query-task", model.query_task,
            "--query-prompt-template", model.query_prompt_template,
        ]
        if not cfg.lock:
            command.append("--no-lock")
        return command + list(cfg.extra_args)

    def launch(self) -> None:
        env = server_env(self.config.env)
        if not self.config.python:
            # the same interpreter serves the same embedswap the kit imported (a checkout on PYTHONPATH, a
            # worktree): server_env drops PYTHONPATH, which made such a server run another copy's code
            env["PYTHONPATH"] = str(Path(embedswap.__file__).resolve().parents[1])
        process = ManagedProcess(self.name, self.command(), env, self.log_dir / f"{self.name}.log")
        self.processes.append(process)
        process.start()

    def version(self) -> str | None:
        from embedswap import __version__

        return f"embedswap.legacy.server {__version__}"
