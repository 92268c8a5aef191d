"""End to end: a hosted-style candidate that silently cuts every input at its own word limit (a small proxy in
front of a real legacy server) is diagnosed by `embedswap run` as truncation with the limit found, its own usage
as evidence, and its over-long answer is named against the request (usage vs truncation)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from embedswap.paths import report_dir
from ports import free_ports
from realkit import JsonHandler, make_experiment, pooled_target, run_whole_experiment

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(name="legacy-minilm")]
# the group of the files sharing the kit's legacy server (tests/e2e/conftest.py's legacy_minilm): one worker, one start

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
def hosted(legacy_minilm: Any) -> Iterator[int]:
    """The worker's shared legacy server (MiniLM, tests/e2e/conftest.py) behind a proxy that cuts inputs at WORDS
    words; yields the proxy's port. The same server is the experiment's legacy target (kind external): the subject
    is the diagnosis of the proxy's cut, not the legacy server's start."""
    (proxy_port,) = free_ports(1)
    proxy = ThreadingHTTPServer(("127.0.0.1", proxy_port), proxy_handler(legacy_minilm.url))
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy_port
    finally:
        proxy.shutdown()
        proxy.server_close()


def test_a_word_limit_is_diagnosed_as_truncation_through_embedswap_run(tmp_path: Path, hosted: int,
                                                                      legacy_minilm: Any) -> None:
    proxy_port = hosted
    capture = ["workload", "probes"]
    folder = make_experiment(
        tmp_path, "hosted-cut", pooled_target(legacy_minilm, capture),
        {"hosted": {"kind": "external", "url": f"http://127.0.0.1:{proxy_port}/v1", "capture": capture}},
        probes=["plain", "over_long_input"])
    # issue 61, CI time: no target measures latency, so step 04 would show empty tables; the steps read are 03 (the
    # diagnosis) and 05 (the witnesses)
    done = run_whole_experiment(folder, timeout_s=900, steps="01,02,03,05")
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
