import json
from pathlib import Path

import numpy as np
import pytest

from embedswap.captures import CaptureExistsError, new_attempt, open_attempt, verify_attempt


def test_writes_are_recorded_and_never_overwritten(tmp_path: Path) -> None:
    attempt = new_attempt(tmp_path)
    attempt.write_json("a/info.json", {"x": 1})
    attempt.write_array("a/v.npy", np.eye(3, dtype=np.float32))
    attempt.write_jsonl("a/r.jsonl", [{"i": 1}, {"i": 2}])
    with pytest.raises(CaptureExistsError):
        attempt.write_json("a/info.json", {"x": 2})
    assert attempt.read_json("a/info.json") == {"x": 1}
    assert attempt.read_jsonl("a/r.jsonl") == [{"i": 1}, {"i": 2}]
    np.testing.assert_array_equal(attempt.read_array("a/v.npy"), np.eye(3))
    assert set(attempt.manifest()["files"]) == {"captures/a/info.json", "captures/a/v.npy", "captures/a/r.jsonl"}
    assert not list(attempt.captures.rglob("*.tmp"))  # no temp files left behind


def test_verify_names_the_changed_file(tmp_path: Path) -> None:
    attempt = new_attempt(tmp_path)
    path = attempt.write_json("a/info.json", {"x": 1})
    attempt.write_json("a/other.json", {"y": 1})
    assert verify_attempt(attempt) == []
    data = bytearray(path.read_bytes())
    data[3] ^= 0x01
    path.write_bytes(bytes(data))
    assert verify_attempt(attempt) == ["changed: captures/a/info.json (sha256 differs from the manifest)"]
    path.unlink()
    assert verify_attempt(attempt) == ["missing: captures/a/info.json"]


def test_attempts_are_separate_and_latest_is_newest(tmp_path: Path) -> None:
    first = new_attempt(tmp_path)
    second = new_attempt(tmp_path)
    assert first.path != second.path
    assert open_attempt(tmp_path).path == second.path
    assert open_attempt(tmp_path, first.name).path == first.path


def test_nan_in_a_jsonl_capture_is_refused_not_written(tmp_path: Path) -> None:
    attempt = new_attempt(tmp_path)
    with pytest.raises(ValueError, match="JSON compliant"):
        attempt.write_jsonl("bad.jsonl", [{"x": 1.0}, {"latency_ms": float("nan")}])
    with pytest.raises(ValueError):
        attempt.write_jsonl("bad.jsonl", [{"v": [0.5, float("inf")]}])
    assert not attempt.has("bad.jsonl")
    attempt.write_jsonl("good.jsonl", [{"x": 1.5}])
    assert attempt.read_jsonl("good.jsonl") == [{"x": 1.5}]


def test_nan_is_refused_not_written(tmp_path: Path) -> None:
    attempt = new_attempt(tmp_path)
    with pytest.raises(ValueError):
        attempt.write_json("bad.json", {"x": float("nan")})
    assert not attempt.has("bad.json")
    assert json.loads((attempt.path / "manifest.json").read_text() if (attempt.path / "manifest.json").exists()
                      else '{"files": {}}')["files"] == {}
