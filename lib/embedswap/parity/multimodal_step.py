"""Step 05's multimodal part (``parity.multimodal``): a CLIP model served by vLLM, its captions and images gated
against transformers fp32, captured once per attempt in ``parity/multimodal.json``.

The measurement itself is :func:`embedswap.parity.multimodal.run` (the kit's vLLM server target, own process
group, 127.0.0.1). A server that fails to start or answer is recorded as not measured, with the error, and fails
the gate: the multimodal part was asked for and could not be judged. The images are drawn with Pillow at run time
from a fixed recipe (:mod:`embedswap.zoo.clip`), byte-identical on every machine, so ``data/`` holds no binaries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.reasons import not_measured

CAPTURE = "parity/multimodal.json"


def clip_folder(spec: str) -> Path:
    """``build:tiny-clip`` (built offline into the project cache) or a CLIP folder / cached HF id."""
    from embedswap.zoo import clip as tiny_clip

    if spec == tiny_clip.SPEC:
        return tiny_clip.ensure_tiny_clip()
    from embedswap.models import resolve_model_path

    return Path(resolve_model_path(spec))


def captured_multimodal(experiment: Experiment, attempt: Attempt, log_dir: Path) -> dict[str, Any] | None:
    """The multimodal part of ``parity/rows.json``; None when ``parity.multimodal`` is not configured."""
    spec = experiment.parity.multimodal
    if spec is None:
        return None
    if attempt.has(CAPTURE):
        return attempt.read_json(CAPTURE)
    from embedswap.parity import multimodal as parity_multimodal

    threshold, text_threshold = experiment.parity.multimodal_threshold, experiment.parity.text_threshold
    try:
        result = parity_multimodal.run(clip_folder(spec.model), Path(log_dir), threshold, text_threshold,
                                       timeout_s=spec.timeout_s, servers=tuple(spec.servers))
        result["spec"] = spec.model_dump()
    except Exception as exc:  # noqa: BLE001 - a dead server or a model that does not load is recorded, not raised
        result = {**not_measured("parity_multimodal_failed", model=spec.model, error=str(exc)[:300]),
                  "records": 0, "threshold": threshold, "rows": [], "pass": False, "spec": spec.model_dump()}
    attempt.write_json(CAPTURE, result)
    return result
