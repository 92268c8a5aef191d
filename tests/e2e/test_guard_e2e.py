"""End to end: a guard made from a real capture (the legacy server and vLLM, captured by the kit) passes against
the same vLLM server and fails, naming the aspect, against vLLM with another pooling (``--pooler-config``), with
another dtype (bf16), and behind a proxy that scales the vectors.

The same servers fill an embedded PostgreSQL table where one row in ten holds the CLS server's vector: `guard index`
finds exactly those rows.

Cost: the demo's attempt takes ~15 minutes to make, so the guard is made from a lean real capture in a
module-scoped fixture (the legacy server and vLLM fp32, 2 repeats, five probes, the small latency runs). The fp32
server is the worker's shared one (``vllm_fp32_minilm`` of tests/e2e/conftest.py, also test_aa_vllm_e2e.py's); the
two other vLLM servers (fp32 CLS, bf16 mean) start side by side with ``--enforce-eager`` (beside the shared one too
when this file is the first of its group to run: one start's wall time instead of three), each in its own process
group, stopped at the end whatever happens.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from embedswap.captures import new_attempt
from embedswap.config.experiment import load_experiment
from embedswap.measure.capture import measure_target
from embedswap.wire.client import EmbeddingClient
from embedswap.measure.workload import load_documents, load_queries
from embedswap.paths import engine_python
from embedswap.targets import build_target
from ports import free_ports
from realkit import (
    DATA,
    EMBEDSWAP,
    SMALL_LATENCY,
    legacy_target,
    make_experiment,
    wait_no_processes,
)
from vector_proxy import vector_proxy

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900), pytest.mark.xdist_group(name="vllm-fp32-minilm")]
# the group of the files sharing the vLLM fp32 server (tests/e2e/conftest.py): one worker, one start
PROBES = ["plain", "input_type_query", "dimensions_reduced", "over_long_input", "batch8_member"]
CAPTURE = ["workload", "queries", "probes", "latency"]
VARIANTS = {  # the same vLLM, configured three ways; fp32 (`--dtype float32`) is the shared server of conftest.py
    "cls": ["--dtype", "float32", "--pooler-config", json.dumps({"pooling_type": "CLS"})],
    "bf16": ["--dtype", "bfloat16"],
}


def _vllm(port: int, args: list[str]) -> dict:
    return {"kind": "vllm", "port": port, "startup_timeout_s": 420, "extra_args": ["--enforce-eager", *args]}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):
    if not Path(engine_python()).exists():
        pytest.fail(f"engine environment missing ({engine_python()}): run `make engine` (make test does)")
    root = tmp_path_factory.mktemp("guard-e2e")
    ports = free_ports(1 + len(VARIANTS))  # the legacy server's and the variants' (the shared fp32 has its own)
    vllm_ports = dict(zip(VARIANTS, ports[1:]))
    # the measured candidate is the fp32 server itself (kind external), so the check reaches the very server the
    # attempt measured; the variants are targets of the same experiment the kit starts, but never measures. Its URL
    # is written once the shared server answers (below), so that the variants start beside it if it starts now.
    folder = make_experiment(root, "guard", legacy_target(ports[0], capture=CAPTURE),
                             {"vllm": {"kind": "external", "url": "http://127.0.0.1:1", "capture": CAPTURE}},
                             latency={**SMALL_LATENCY, "concurrent_requests": 4}, probes=PROBES, repeats=2)
    path = folder / "experiment.yaml"
    config = yaml.safe_load(path.read_text())
    config["targets"].update({f"vllm-{name}": _vllm(vllm_ports[name], args) for name, args in VARIANTS.items()})
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    experiment = load_experiment(folder)
    logs = root / "logs"
    logs.mkdir()
    started = [build_target(experiment, f"vllm-{name}", logs) for name in VARIANTS]
    try:
        for target in started:
            target.preflight()
            target.launch()
        fp32 = request.getfixturevalue("vllm_fp32_minilm")  # started (and waited for) here unless already up
        urls = {"fp32": fp32.url, **{n: f"http://127.0.0.1:{p}" for n, p in vllm_ports.items()}}
        config["targets"]["vllm"]["url"] = urls["fp32"]
        path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
        experiment = load_experiment(folder)
        for target in started:
            target.wait_healthy(target.config.startup_timeout_s)
        attempt = new_attempt(folder)
        for name in ("legacy", "vllm"):
            measure_target(experiment, folder, attempt, name, f"capture:{name}")
        guard = root / "guard-vllm.json"
        made = subprocess.run([EMBEDSWAP, "guard", "init", str(folder), "--out", str(guard)],
                              check=False, capture_output=True, text=True,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert made.returncode == 0, made.stdout + made.stderr
        print(made.stdout)
        yield {"guard": guard, "urls": urls}
    finally:
        for target in started:
            target.stop()
        assert wait_no_processes(ports) == []  # the shared fp32 server runs on: its fixture stops it


def _check(guard: Path, url: str, tmp_path: Path) -> tuple[int, dict, float]:
    junit = tmp_path / "junit.xml"
    began = time.monotonic()
    done = subprocess.run([EMBEDSWAP, "guard", "check", str(guard), "--url", url, "--json", "--junit", str(junit)],
                          check=False, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    seconds = time.monotonic() - began
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert junit.exists()
    return done.returncode, json.loads(done.stdout), seconds


def test_the_same_server_passes(servers, tmp_path) -> None:
    code, result, seconds = _check(servers["guard"], servers["urls"]["fp32"], tmp_path)
    print(f"check of the same server: {seconds:.1f} s wall, {result['seconds']:.2f} s sending; {result['summary']}; "
          f"guard file {servers['guard'].stat().st_size} bytes")
    assert code == 0, result["summary"]
    aspects = {a["name"]: a for a in result["aspects"]}
    assert aspects["direction"]["status"] == "pass" and aspects["length"]["status"] == "pass"
    assert aspects["contract"]["status"] == "pass" and aspects["dimensions"]["status"] == "pass"
    assert aspects["direction"]["cosine"] > 0.99999


@pytest.mark.parametrize(("variant", "aspect"), [("cls", "direction"), ("bf16", "direction"), ("scaled", "length")])
def test_a_changed_server_fails_naming_the_aspect(servers, tmp_path, variant, aspect) -> None:
    if variant == "scaled":
        with vector_proxy(servers["urls"]["fp32"], lambda v: [x * 1.05 for x in v]) as url:
            code, result, _ = _check(servers["guard"], url, tmp_path)
    else:
        code, result, _ = _check(servers["guard"], servers["urls"][variant], tmp_path)
    print(f"{variant}: {result['summary']}")
    assert code == 1
    assert result["summary"].startswith(f"drift: {aspect}: worst canary ")
    first = next(a for a in result["aspects"] if a["status"] == "fail")
    assert first["name"] == aspect and first["worst"] and first["cosine"] is not None


def test_an_index_with_a_tenth_of_rows_from_another_pooling(servers, tmp_path) -> None:
    import numpy as np
    import psycopg
    from embedswap.vectorstore.server import EmbeddedPostgres
    from pgvector.psycopg import register_vector

    texts = [d.text for d in load_documents(DATA / "documents.jsonl")] + \
        [q.text for q in load_queries(DATA / "queries.jsonl")][:20]
    vectors = {}
    for name in ("fp32", "cls"):
        with EmbeddingClient(servers["urls"][name], "minilm") as client:
            answer = client.embed(texts)
        assert answer.ok, answer.error
        vectors[name] = answer.as_array()
    other = {f"row-{i:02d}" for i in range(0, len(texts), 10)}  # 6 of 60 rows: CLS pooling
    with EmbeddedPostgres(tmp_path / "pg", port=free_ports(1)[0]) as pg:
        with psycopg.connect(pg.dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(conn)
            conn.execute("CREATE TABLE chunks (id text PRIMARY KEY, content text, embedding vector(384))")
            for i, text in enumerate(texts):
                row = f"row-{i:02d}"
                vector = vectors["cls" if row in other else "fp32"][i]
                conn.execute("INSERT INTO chunks VALUES (%s, %s, %s)", (row, text, np.asarray(vector, np.float32)))
        done = subprocess.run([EMBEDSWAP, "guard", "index", str(servers["guard"]), "--url", servers["urls"]["fp32"],
                               "--dsn-env", "INDEX_DSN", "--table", "chunks", "--id-column", "id",
                               "--vector-column", "embedding", "--text-column", "content", "--json"],
                              check=False, capture_output=True, text=True, env={**os.environ, "INDEX_DSN": pg.dsn})
    assert done.returncode == 1, done.stdout + done.stderr
    result = json.loads(done.stdout)
    print(result["summary"])
    assert result["sampled"] == 60 and result["share"] == 0.1
    assert set(result["mixed_ids"]) == other and result["by_aspect"] == {"direction": 6}
