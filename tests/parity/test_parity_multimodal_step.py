"""Step 05's multimodal part (parity.multimodal): the strict config key, the capture written once per attempt, a
dead server recorded with its reason (and failing the gate), the decision, and the report rows in every language.
The server itself is faked here (tests/e2e/test_end_to_end_qwen3.py runs it for real through `embedswap run`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from typed_summary import decisions_of, typed_summary

from embedswap.parity import multimodal as parity_multimodal
from embedswap.parity import multimodal_step as parity_multimodal_step
from embedswap.analysis.parity_multimodal import multimodal_finding
from embedswap.captures import new_attempt
from embedswap.config import ConfigError, ParityMultimodal, parse_experiment
from embedswap.parity.gate import TEXT, TEXT_IMAGE, gate
from embedswap.report.markdown import render_markdown
from embedswap.report.catalogue import LANGUAGES, catalogue, fill
from embedswap.report.format import esc
from embedswap.summary.model import validate_summary
from embedswap.analysis.upgrade import upgrade_summary
from typed_summary import as_typed

CONFIG = {"name": "t", "date": "2026-12-01", "workload": {"documents": "d.jsonl"},
          "targets": {"legacy": {"kind": "legacy", "port": 18801}, "vllm": {"kind": "vllm", "port": 18802}},
          "candidates": ["vllm"]}


def _experiment(multimodal: Any) -> Any:
    return parse_experiment({**CONFIG, "parity": {"multimodal": multimodal}})


def test_multimodal_key_is_strict_and_switchable() -> None:
    assert parse_experiment(CONFIG).parity.multimodal is None
    assert _experiment(True).parity.multimodal == ParityMultimodal() and _experiment(False).parity.multimodal is None
    assert _experiment({"model": "/m/clip"}).parity.multimodal.model == "/m/clip"
    with pytest.raises(ConfigError, match=r"parity\.multimodal\.image'"):
        _experiment({"image": "generated"})
    with pytest.raises(ConfigError, match=r"parity\.multimodal\.images"):
        _experiment({"images": "data/pngs"})


def _rows(text_drift: float, image_drift: float) -> list[dict[str, Any]]:
    import numpy as np

    ref = np.eye(4, dtype=np.float32)
    bent = lambda d: ref + np.float32(np.sqrt(2 * d)) * np.roll(ref, 1, axis=1)  # noqa: E731  cos ~ 1 - d
    ids = [f"img-{i}" for i in range(4)]
    rows = [gate("vllm", "float32", "cpu", TEXT, ref, bent(text_drift), ids, 0.999).as_dict(),
            gate("vllm", "float32", "cpu", TEXT_IMAGE, ref, bent(image_drift), ids, 0.995).as_dict()]
    rows[0].update(part="text", request="input")
    rows[1].update(part="image", request="messages")
    return rows


def _fake_run(text_drift: float = 1e-7, image_drift: float = 1e-3) -> Any:
    calls: list[tuple] = []

    def run(model_dir: Path, log_dir: Path, threshold: float, text_threshold: float, timeout_s: float,
            servers: tuple[str, ...]) -> dict:
        calls.append((model_dir, threshold, text_threshold, timeout_s, servers))
        rows = _rows(text_drift, image_drift)
        return {"measured": True, "model": str(model_dir), "threshold": threshold, "records": 4, "rows": rows,
                "pass": all(r["pass"] for r in rows), "mixed_request": {"status": 400, "body": "not both"}}

    run.calls = calls  # type: ignore[attr-defined]
    return run


def test_captured_once_per_attempt_with_both_thresholds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _fake_run()
    monkeypatch.setattr(parity_multimodal, "run", run)
    monkeypatch.setattr(parity_multimodal_step, "clip_folder", lambda spec: tmp_path / "clip")
    experiment = _experiment({"timeout_s": 60})
    attempt = new_attempt(tmp_path / "exp")
    first = parity_multimodal_step.captured_multimodal(experiment, attempt, tmp_path / "logs")
    again = parity_multimodal_step.captured_multimodal(experiment, attempt, tmp_path / "logs")
    assert run.calls == [(tmp_path / "clip", 0.995, 0.999, 60.0, ("vllm", "legacy"))]  # the second call reads the capture
    assert first == again and first["pass"] is True and [r["part"] for r in first["rows"]] == ["text", "image"]
    assert first["rows"][1]["cos_min"] == pytest.approx(1 - 1e-3, abs=2e-4)
    assert parity_multimodal_step.captured_multimodal(parse_experiment(CONFIG), attempt, tmp_path) is None


def test_a_dead_server_is_a_reason_and_fails_the_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def dead(*args: Any, **kwargs: Any) -> dict:
        raise RuntimeError("vllm-clip exited with status 1 before it was healthy")

    monkeypatch.setattr(parity_multimodal, "run", dead)
    monkeypatch.setattr(parity_multimodal_step, "clip_folder", lambda spec: tmp_path / "clip")
    result = parity_multimodal_step.captured_multimodal(_experiment(True), new_attempt(tmp_path / "e"), tmp_path)
    assert result["measured"] is False and result["pass"] is False
    assert result["reason"] == {"code": "parity_multimodal_failed", "params": {
        "model": "build:tiny-clip", "error": "vllm-clip exited with status 1 before it was healthy"}}


def _summary(complete: dict[str, Any], rows: list[dict[str, Any]], passed: bool) -> dict[str, Any]:
    summary = upgrade_summary(copy.deepcopy(complete))
    summary["parity"]["multimodal"] = {"measured": True, "records": 4, "threshold": 0.995, "rows": rows,
                                       "pass": passed, "spec": {"model": "build:tiny-clip"},
                                       "mixed_request": {"status": 400, "body": "not both"}}
    summary["decisions"] = decisions_of(summary)
    return summary


def test_decision_and_summary_model(complete: dict[str, Any]) -> None:
    summary = _summary(complete, _rows(1e-7, 1e-3), True)
    validate_summary(summary)
    found = summary["decisions"]["parity_multimodal"]
    assert found["code"] == "multimodal_passed" and found["mixed_status"] == 400
    assert found["worst"]["image"] == pytest.approx(1 - 1e-3, abs=2e-4)
    failed = _summary(complete, _rows(1e-7, 1e-2), False)  # images below 0.995
    assert failed["decisions"]["parity_multimodal"]["code"] == "multimodal_failed"
    assert multimodal_finding(typed_summary(complete)).code == "multimodal_not_measured"  # an old summary: not measured


@pytest.mark.parametrize("lang", LANGUAGES)
def test_report_rows_replace_the_not_measured_line(lang: str, complete: dict[str, Any]) -> None:
    words = catalogue(lang)
    before = render_markdown(as_typed(upgrade_summary(copy.deepcopy(complete))), lang)
    gaps_line = words.prose["gaps"]["multimodal_parity"].split("{{")[0]
    assert gaps_line in before
    text = render_markdown(as_typed(_summary(complete, _rows(1e-7, 1e-2), False)), lang)
    assert gaps_line not in text  # measured: no 'not measured' line for multimodal any more
    for part, request in (("mm_text", "input"), ("mm_image", "messages")):
        assert esc(fill(words.terms[part], request=request)) in text
    assert "build:tiny-clip" in text and "400" in text
    verdict = {"ko": "멀티모달 게이트 실패", "en": "Multimodal gate failed", "ja": "マルチモーダルゲート不合格",
               "zh": "多模态门槛未通过"}[lang]
    assert verdict in text  # the finding, in the report's words


def test_one_dead_server_keeps_the_others_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               complete: dict[str, Any]) -> None:
    """parity_multimodal.run: a server that does not start is a not-run entry with its reason (the gate fails);
    the other server's rows stay; the report lists it with the reason in its words."""
    from embedswap.zoo import clip as tiny_clip

    class Dead:
        base_url = "http://127.0.0.1:9"

        def __enter__(self) -> "Dead":
            raise RuntimeError("legacy-clip exited with code 1 during start-up")

        def __exit__(self, *exc: Any) -> None:
            return None

    class Alive(Dead):
        def __enter__(self) -> "Alive":
            return self

        def version(self) -> str:
            return "fake"

    def fake_embed(base_url: str, texts: list[str], pngs: list[bytes]) -> dict[str, Any]:
        text, image = reference
        return {"text": text, "image": image, "mixed": {"status": 400, "body": "not both"}}

    folder = tiny_clip.build(tmp_path / "clip")
    from PIL import Image
    import io

    items = tiny_clip.captions()
    reference = tiny_clip.reference_features(folder, [f"a {c} {s}" for _, c, s in items], [
        Image.open(io.BytesIO(tiny_clip.png_bytes(tiny_clip.draw_image(c, s)))) for _, c, s in items])
    monkeypatch.setattr(parity_multimodal, "_target", lambda server, *a: Dead() if server == "legacy" else Alive())
    monkeypatch.setattr(parity_multimodal, "embed_through_server", fake_embed)
    result = parity_multimodal.run(folder, tmp_path, 0.995, 0.999, servers=("vllm", "legacy"))
    assert [r["backend"] for r in result["rows"]] == ["vllm", "vllm"] and result["pass"] is False
    assert result["not_run"][0]["reason"]["code"] == "parity_multimodal_server_failed"
    summary = _summary(complete, result["rows"], False)
    summary["parity"]["multimodal"]["not_run"] = result["not_run"]
    text = render_markdown(as_typed(summary), "ja")
    assert "legacy はマルチモーダルモデルを提供できなかったか" in text
    with pytest.raises(RuntimeError, match="exited with code 1"):  # no server at all: the step records the error
        parity_multimodal.run(folder, tmp_path, 0.995, servers=("legacy",))


def test_the_servers_start_together_and_each_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """parity_multimodal.run starts every server before it waits for any (they used to start in turn, the legacy
    one after vLLM's start), measures each start on its own, keeps the rows in the servers' order, stops each."""
    import threading

    import numpy as np

    from embedswap.zoo import clip as tiny_clip

    both_starting = threading.Barrier(2, timeout=10)  # passes only while the two starts overlap
    events: list[str] = []

    class Server:
        base_url = "http://127.0.0.1:9"

        def __init__(self, name: str) -> None:
            self.name = name

        def __enter__(self) -> "Server":
            events.append(f"start {self.name}")
            both_starting.wait()
            return self

        def __exit__(self, *exc: Any) -> None:
            events.append(f"stop {self.name}")

        def version(self) -> str:
            return f"fake {self.name}"

    reference = np.eye(len(tiny_clip.captions()), dtype=np.float32)
    monkeypatch.setattr(parity_multimodal, "_target", lambda server, *a: Server(server))
    monkeypatch.setattr(parity_multimodal.tiny_clip, "reference_features", lambda *a: (reference, reference))
    monkeypatch.setattr(parity_multimodal, "embed_through_server", lambda *a: {
        "text": reference, "image": reference, "mixed": {"status": 400, "body": "not both"}})
    result = parity_multimodal.run(tmp_path / "clip", tmp_path, 0.995, 0.999, servers=("vllm", "legacy"))
    assert result["pass"] is True and result["not_run"] == []
    assert [r["backend"] for r in result["rows"]] == ["vllm", "vllm", "legacy", "legacy"]
    assert sorted(events[:2]) == ["start legacy", "start vllm"]  # both started before anything else happened
    assert {"stop vllm", "stop legacy"} <= set(events) and set(result["started_s"]) == {"vllm", "legacy"}
    assert result["engines"] == {"vllm": "fake vllm", "legacy": "fake legacy"}
