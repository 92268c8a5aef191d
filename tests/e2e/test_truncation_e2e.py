"""End to end: a hosted-style candidate that silently cuts every input at its own word limit (a small proxy in
front of a real legacy server) is diagnosed by `embedswap run` as truncation with the limit found, its own usage
as evidence, and its over-long answer is named against the request (usage vs truncation)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from embedswap.paths import report_dir
from ports import free_ports
from realkit import JsonHandler, kill_tree, legacy_target, make_experiment, run_whole_experiment

pytestmark = pytest.mark.e2e

WORDS = 64  # the English documents have 88-104 words, the Korean ones 32-48: only English ones are cut


def _cut(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split()[:WORDS])
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [_cut(v) for v in value]
    return value


def proxy_handler(upstream: str) -> type[JsonHandler]:
    class Proxy(JsonHandler):
        def do_GET(self) -> None:  # noqa: N802
            answer = httpx.get(upstream + self.path, timeout=60)
            self.answer(answer.status_code, answer.json())

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw)
            except json.JSONDecodeError:
                body = None
            if isinstance(body, dict) and "input" in body:
                body["input"] = _cut(body["input"])  # silently, as the hosted service did
                raw = json.dumps(body).encode()
            answer = httpx.post(upstream + self.path, content=raw, timeout=120,
                                headers={"Content-Type": "application/json"})
            self.answer(answer.status_code, answer.json())

    return Proxy


@pytest.fixture()
def hosted(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """A real legacy server (MiniLM) behind a proxy that cuts inputs at WORDS words; yields the proxy's port and
    a free port for the experiment's own legacy target (taken together, so that they differ)."""
    from embedswap.models import EMBEDDED_DEFAULT, resolve_model_path

    upstream_port, proxy_port, legacy_port = free_ports(3)
    env = {**os.environ, "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "lib")}
    log = (tmp_path / "upstream.log").open("wb")
    server = subprocess.Popen([sys.executable, "-m", "embedswap.legacy_server", "--host", "127.0.0.1", "--port",
                               str(upstream_port), "--served-model-name", "minilm",
                               "--model", resolve_model_path(EMBEDDED_DEFAULT)], env=env,
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    proxy = ThreadingHTTPServer(("127.0.0.1", proxy_port), proxy_handler(f"http://127.0.0.1:{upstream_port}"))
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{upstream_port}/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline or server.poll() is not None:
                    tail = (tmp_path / "upstream.log").read_text()[-2000:]
                    pytest.fail(f"the upstream legacy server did not start: {tail}")
                time.sleep(1)
        yield proxy_port, legacy_port
    finally:
        proxy.shutdown()
        kill_tree(server.pid)


def test_a_word_limit_is_diagnosed_as_truncation_through_embedswap_run(tmp_path: Path,
                                                                      hosted: tuple[int, int]) -> None:
    proxy_port, legacy_port = hosted
    capture = ["workload", "probes"]
    folder = make_experiment(
        tmp_path, "hosted-cut", legacy_target(legacy_port, capture=capture),
        {"hosted": {"kind": "external", "url": f"http://127.0.0.1:{proxy_port}/v1", "capture": capture}},
        probes=["plain", "over_long_input"])
    done = run_whole_experiment(folder, timeout_s=900)
    attempt = sorted((folder / "attempts").iterdir())[-1]
    summary = json.loads((attempt / "summary.json").read_text(encoding="utf-8"))
    decided = summary["decisions"]["diagnosis"]["hosted"]
    assert decided["code"] == "diagnosis_truncation_words", (decided, done.stdout[-2000:])
    finding = summary["diagnosis"]["by_target"]["hosted"]
    assert finding["truncation"]["unit"] == "words" and finding["truncation"]["limit"] == WORDS
    # its own usage: 66 prompt tokens for the over-long probe (64 words + [CLS] and [SEP])
    assert finding["truncation"]["usage"] == {"prompt_tokens": WORDS + 2, "expected": WORDS + 2, "agrees": True}
    assert decided["codes"] == ["diagnosis_truncation_words", "diagnosis_truncation_usage"]
    over_long = next(r for r in summary["contract"] if r["probe"] == "over_long_input")
    assert "usage_truncation" in over_long["verdicts"]["hosted"]["aspects"]
    assert summary["diagnosis"]["sample"]["whole"] is True  # 40 documents: fewer than parity.sample
    report = (report_dir(folder) / "report.en.md").read_text(encoding="utf-8")
    assert f"'hosted' cuts its inputs at about {WORDS} words" in report
    # step 05's witnesses on MiniLM (the demo's model): every one agrees, and the report says so
    witnesses = summary["parity"]["witnesses"]
    assert witnesses["all_agree"] is True and witnesses["left_out"] == [], witnesses
    assert "Every witness agrees at the gate's threshold" in report
