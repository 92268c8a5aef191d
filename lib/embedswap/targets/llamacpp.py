"""llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``, its own environment: ``make llamacpp``)
serving the model converted to GGUF by llama.cpp's own converter.

The converter (``convert_hf_to_gguf.py`` with its ``gguf-py``) ships in llama-cpp-python's source distribution;
``scripts/install-llamacpp.sh`` copies it to ``<environment>/share/llama.cpp``. It runs in the kit's interpreter
(it needs torch and transformers, which the kit has and the server's environment does not). The GGUF is cached
under the project's cache, one folder per model and type, complete or absent (:func:`embedswap.zoo.build.ensure_built`).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from embedswap.config.targets import LlamaCppTarget
from embedswap.paths import cache_dir, llamacpp_python
from embedswap.targets.base import ManagedProcess, Target, TargetStartError, server_env
from embedswap.zoo.build import ensure_built, write_marker

GGUF = "model.gguf"
CONVERT_TIMEOUT_S = 900


def converter_dir(python: str) -> Path:
    """Where the environment of ``python`` keeps llama.cpp's converter (scripts/install-llamacpp.sh)."""
    return Path(python).parent.parent / "share" / "llama.cpp"


def installed_version(python: str) -> str | None:
    """llama-cpp-python's version in the environment of ``python``, read from its metadata (no import)."""
    found = sorted(Path(python).parent.parent.glob("lib/python*/site-packages/llama_cpp_python-*.dist-info"))
    return found[-1].name.removeprefix("llama_cpp_python-").removesuffix(".dist-info") if found else None


def gguf_folder(model_path: str, gguf_type: str, converter: Path) -> Path:
    """The cache folder of ``model_path`` at ``gguf_type``: keyed by the model folder and the converter's bytes."""
    script = converter / "convert_hf_to_gguf.py"
    key = hashlib.sha256(f"{Path(model_path).resolve()}\0{gguf_type}\0".encode() + script.read_bytes())
    return cache_dir() / "gguf" / f"{Path(model_path).name}-{gguf_type}-{key.hexdigest()[:12]}"


def convert(model_path: str, gguf_type: str, python: str) -> Path:
    """The model as GGUF at ``gguf_type`` (converted now unless a complete conversion is cached)."""
    converter = converter_dir(python)
    if not (converter / "convert_hf_to_gguf.py").exists():
        raise TargetStartError(f"llama.cpp's converter is missing from {converter}: build the environment with "
                               "`make llamacpp` (scripts/install-llamacpp.sh puts it there)")
    name = f"{Path(model_path).name} {gguf_type}"

    def build_into(out: Path) -> None:
        command = [sys.executable, str(converter / "convert_hf_to_gguf.py"), model_path,
                   "--outtype", gguf_type, "--outfile", str(out / GGUF)]
        env = server_env({"PYTHONPATH": str(converter / "gguf-py"), "NO_LOCAL_GGUF": ""})
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=CONVERT_TIMEOUT_S)
        if done.returncode != 0 or not (out / GGUF).exists():
            raise TargetStartError(f"llama.cpp's converter failed on {model_path} ({gguf_type}), exit code "
                                   f"{done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}")
        write_marker(out, {"name": name, "model": model_path, "gguf_type": gguf_type})

    return ensure_built(gguf_folder(model_path, gguf_type, converter), name, build_into) / GGUF


class LlamaCppServerTarget(Target):
    kind = "llamacpp"
    config: LlamaCppTarget
    gguf: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.config.host}:{self.config.port}"

    def python(self) -> str:
        return self.config.python or llamacpp_python()

    def command(self) -> list[str]:
        cfg = self.config
        if self.gguf is None:
            raise TargetStartError(f"target '{self.name}': the model is not converted yet")
        command = [self.python(), "-m", "llama_cpp.server", "--model", str(self.gguf), "--embedding", "true",
                   "--host", cfg.host, "--port", str(cfg.port), "--model_alias", self.served_name]
        if cfg.n_ctx:
            command += ["--n_ctx", str(cfg.n_ctx)]
        return command + list(cfg.extra_args)

    def launch(self) -> None:
        if not Path(self.python()).exists():
            raise TargetStartError(
                f"target '{self.name}': llama.cpp's interpreter {self.python()} does not exist. Build it with "
                f"`make llamacpp`, or point targets.{self.name}.python / $EMBEDSWAP_LLAMACPP_PYTHON at a Python "
                "that has llama-cpp-python[server]."
            )
        self.gguf = convert(self.model_path, self.config.gguf_type, self.python())
        process = ManagedProcess(self.name, self.command(), server_env(self.config.env),
                                 self.log_dir / f"{self.name}.log")
        self.processes.append(process)
        process.start()

    def health_url(self) -> str:
        return f"{self.base_url}/v1/models"

    def version(self) -> str | None:
        found = installed_version(self.python())
        return f"llama-cpp-python {found}" if found else None

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "gguf_type": self.config.gguf_type,
                "gguf": str(self.gguf) if self.gguf else None}
