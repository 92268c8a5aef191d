"""The reference cache (embedswap.parity.reference_cache): its key moves with everything the vectors depend on, an
entry is written whole or not at all, a damaged entry is recomputed, and a hit is the fresh computation to the bit."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from embedswap.parity import reference_cache as rc
from embedswap.parity.witnesses import WITNESSES, Witness, witness_vectors

TEXTS = ["a", "a much longer text with many words in it", "b c", "the quick brown fox jumps", "x y z"]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "reference-cache"
    monkeypatch.setenv(rc.SWITCH, str(root))
    return root


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One tiny BERT of the zoo (building the whole zoo, tiny_zoo, takes ~8 s)."""
    from embedswap.zoo.bert import ZOO, build_tiny_bert

    return str(build_tiny_bert(tmp_path_factory.mktemp("tiny") / "model", ZOO["tiny-bert-cls"]))


class Counting:
    """A stand-in for witness_vectors: fixed vectors per witness, and which witnesses it was asked for."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def __call__(self, model_path: str, texts: list[str], witnesses: list[Witness]) -> tuple[dict, dict]:
        self.asked.append([w.name for w in witnesses])
        rng = np.random.default_rng(len(texts))
        return {w.name: rng.standard_normal((len(texts), 4)).astype(np.float32) + w.batch for w in witnesses}, {}


def _model(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"hidden_size": 4}')
    (folder / "model.safetensors").write_bytes(b"weights")
    return folder


def test_the_key_moves_with_the_model_texts_witness_versions_and_code(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _model(tmp_path)
    base = rc.key_of(rc.key_material(rc.model_digest(folder), TEXTS, "transformers", 32))
    assert rc.key_of(rc.key_material(rc.model_digest(folder), list(TEXTS), "transformers", 32)) == base
    keys = {"text": rc.key_material(rc.model_digest(folder), TEXTS[:-1] + ["x y Z"], "transformers", 32),
            "order": rc.key_material(rc.model_digest(folder), TEXTS[::-1], "transformers", 32),
            "implementation": rc.key_material(rc.model_digest(folder), TEXTS, "sentence-transformers", 32),
            "batch": rc.key_material(rc.model_digest(folder), TEXTS, "transformers", 1),
            "dtype": rc.key_material(rc.model_digest(folder), TEXTS, "transformers", 32, dtype="bfloat16")}
    (folder / "model.safetensors").write_bytes(b"weightz")  # same size: the content, not the stat, is hashed
    keys["model file"] = rc.key_material(rc.model_digest(folder), TEXTS, "transformers", 32)
    (folder / "model.safetensors").write_bytes(b"weights")
    assert rc.key_of(rc.key_material(rc.model_digest(folder), TEXTS, "transformers", 32)) == base
    real = rc._version
    monkeypatch.setattr(rc, "_version", lambda name: "9.9" if name == "transformers" else real(name))
    keys["transformers version"] = rc.key_material(rc.model_digest(folder), TEXTS, "transformers", 32)
    monkeypatch.setattr(rc, "_version", real)
    monkeypatch.setattr(rc, "_code", lambda: "another pooling")
    keys["kit code"] = rc.key_material(rc.model_digest(folder), TEXTS, "transformers", 32)
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    keys["threads"] = rc.key_material(rc.model_digest(folder), TEXTS, "transformers", 32)
    found = {name: rc.key_of(material) for name, material in keys.items()}
    assert base not in found.values()
    assert len(set(found.values())) == len(found), found


def test_a_hit_skips_the_computation_and_the_meta_says_where_it_came_from(tmp_path: Path, cache: Path) -> None:
    folder = _model(tmp_path)
    compute = Counting()
    first, errors, origin = rc.cached_witness_vectors(str(folder), TEXTS, WITNESSES, "exp/attempt-1", compute)
    assert errors == {} and compute.asked == [[w.name for w in WITNESSES]]
    assert {o["computed"] for o in origin.values()} == {"in this attempt"}
    again, _, origin = rc.cached_witness_vectors(str(folder), TEXTS, WITNESSES, "exp/attempt-2", compute)
    assert len(compute.asked) == 1  # nothing computed the second time
    assert list(again) == list(first) and all(np.array_equal(again[n], first[n]) for n in first)
    hit = origin["transformers alone"]
    assert hit["computed"] == "read from the reference cache" and hit["first_computed_by"].endswith("exp/attempt-1")
    assert rc.entry_path(cache, hit["cache_key"]).is_file()
    rc.cached_witness_vectors(str(folder), TEXTS[:2], WITNESSES, "exp/attempt-3", compute)  # other texts: a miss
    assert len(compute.asked) == 2


def test_the_switch_turns_the_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(rc.SWITCH, "off")
    assert rc.cache_root() is None
    folder, compute = _model(tmp_path), Counting()
    for attempt in ("exp/a", "exp/b"):
        _, _, origin = rc.cached_witness_vectors(str(folder), TEXTS, WITNESSES, attempt, compute)
    assert len(compute.asked) == 2
    assert origin["transformers batch"]["not_cached"] == "the reference cache is off"
    monkeypatch.delenv(rc.SWITCH)
    monkeypatch.setenv("EMBEDSWAP_CACHE", str(tmp_path / "kit-cache"))
    assert rc.cache_root() == tmp_path / "kit-cache" / "reference"
    monkeypatch.delenv("EMBEDSWAP_CACHE")
    assert rc.cache_root() == Path.home() / ".cache" / "embedswap" / "reference"


def _resaved(entry: Path, vectors: np.ndarray) -> bytes:
    """The entry with other vectors under its stored meta (and so its stored sha256)."""
    with np.load(entry, allow_pickle=False) as stored:
        meta = np.array(stored["meta"])
    buffer = io.BytesIO()
    np.savez(buffer, vectors=vectors, meta=meta)
    return buffer.getvalue()


def test_a_damaged_entry_is_recomputed_and_replaced(tmp_path: Path, cache: Path) -> None:
    folder = _model(tmp_path)
    compute = Counting()
    (witness,) = WITNESSES[:1]
    stored, _, origin = rc.cached_witness_vectors(str(folder), TEXTS, [witness], "exp/a", compute)
    key = origin[witness.name]["cache_key"]
    entry = rc.entry_path(cache, key)
    good = entry.read_bytes()
    at = good.index(stored[witness.name].tobytes())
    damages = {"truncated": (good[: len(good) // 2], "unreadable"),
               "a bit flipped": (good[:at] + bytes([good[at] ^ 1]) + good[at + 1:], "unreadable"),
               "other vectors": (_resaved(entry, stored[witness.name] * 2), "its vectors do not match their sha256")}
    for name, (damage, why) in damages.items():
        entry.write_bytes(damage)
        assert rc.load(cache, key)[0] is None, name
        vectors, _, again = rc.cached_witness_vectors(str(folder), TEXTS, [witness], "exp/b", compute)
        assert again[witness.name]["computed"] == "in this attempt", name
        assert again[witness.name]["cache_entry_recomputed"].startswith(why), name
        assert np.array_equal(vectors[witness.name], stored[witness.name])
        assert entry.read_bytes() != damage and rc.load(cache, key)[0] is not None, name
    assert len(compute.asked) == 1 + len(damages)


def test_an_entry_is_written_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "cache"
    key = "ab" + "0" * 62
    vectors = np.ones((3, 4), dtype=np.float32)
    rc.store(root, key, {"m": 1}, vectors, "exp/a")
    before = rc.entry_path(root, key).read_bytes()

    def interrupted(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", interrupted)  # the write stops after the temp file, before the rename
    with pytest.raises(OSError):
        rc.store(root, key, {"m": 1}, vectors * 2, "exp/b")
    assert rc.entry_path(root, key).read_bytes() == before  # the old entry whole, no temp file left beside it
    assert sorted(p.name for p in rc.entry_path(root, key).parent.iterdir()) == [f"{key}.npz"]


def test_a_cache_that_cannot_be_written_does_not_fail_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv(rc.SWITCH, str(blocker))
    vectors, _, origin = rc.cached_witness_vectors(str(_model(tmp_path)), TEXTS, WITNESSES[:1], "exp/a", Counting())
    assert list(vectors) == [WITNESSES[0].name]
    assert "not_stored" in origin[WITNESSES[0].name]


def test_a_hit_is_the_fresh_computation_to_the_bit(tiny_model: str, cache: Path) -> None:
    """On a real (tiny) model: sentence-transformers and the transformers backend, alone and batched."""
    model = tiny_model
    fresh, errors = witness_vectors(model, TEXTS)
    assert errors == {}
    stored, _, first = rc.cached_witness_vectors(model, TEXTS, WITNESSES, "exp/a", witness_vectors)

    def refuse(*args: Any) -> Any:
        raise AssertionError("a hit computes nothing")

    read, _, origin = rc.cached_witness_vectors(model, TEXTS, WITNESSES, "exp/b", refuse)
    assert {o["computed"] for o in first.values()} == {"in this attempt"}
    assert {o["computed"] for o in origin.values()} == {"read from the reference cache"}
    for name, vectors in fresh.items():
        assert read[name].dtype == vectors.dtype and read[name].tobytes() == vectors.tobytes(), name
        assert stored[name].tobytes() == vectors.tobytes(), name
    shutil.rmtree(cache)


def test_step_05_of_a_second_attempt_reads_the_first_ones_witnesses(tmp_path: Path, cache: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    tiny_model: str) -> None:
    """Two attempts of one experiment: the second's reference is the first's to the byte, read from the cache, and
    its reference/meta.json names the entry and the attempt that computed it."""
    from synthetic_experiment import write_experiment

    from embedswap import steps

    monkeypatch.setenv("EMBEDSWAP_ENGINE_PYTHON", str(tmp_path / "no-engine" / "python"))
    model = tiny_model
    documents = [{"id": f"d{i}", "lang": "en", "text": text} for i, text in enumerate(TEXTS)]
    config = {"name": "t", "date": "2026-12-03", "model": {"path": model}, "workload": {"documents": "d.jsonl"},
              "targets": {"legacy": {"kind": "legacy", "port": 18801}, "next": {"kind": "legacy", "port": 18802}},
              "candidates": ["next"]}
    folder = write_experiment(tmp_path / "exp", config, documents)
    served = witness_vectors(model, TEXTS, WITNESSES[:1])[0]["sentence-transformers batch"]
    attempts = []
    for _ in range(2):
        ctx = steps.open_step(folder, "new")
        for name in ("legacy", "next"):
            ctx.attempt.write_array(f"{name}/doc_vectors.npy", served[None])
        steps.run_parity(ctx)
        attempts.append(ctx.attempt)
    first, second = (a.read_json("reference/meta.json")["witness_origin"] for a in attempts)
    assert first != second  # two attempts, not one read twice
    assert {o["computed"] for o in first.values()} == {"in this attempt"}
    assert {o["computed"] for o in second.values()} == {"read from the reference cache"}
    assert {o["cache_key"] for o in second.values()} == {o["cache_key"] for o in first.values()}
    assert all(o["first_computed_by"].endswith(f"exp/{attempts[0].name}") for o in second.values())
    assert attempts[0].read_json("reference/witnesses.json") == attempts[1].read_json("reference/witnesses.json")
    paths = [a.captures / "reference" / "doc_vectors.npy" for a in attempts]
    assert paths[0].read_bytes() == paths[1].read_bytes()
