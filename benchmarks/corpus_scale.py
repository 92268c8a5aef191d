"""Corpus-scale benchmark (issue 20): the whole kit against two fast fake servers at 1k, 10k and 100k documents.

Run:  HF_HUB_OFFLINE=1 .venvs/kit/bin/python benchmarks/corpus_scale.py [--sizes 1000,10000,100000]
      (``--index-only``: only the index part, on synthetic vectors: the embedded PostgreSQL, HNSW, the grid;
      ``--hnsw-shares auto|all|ends`` as ``index.hnsw_shares``)
(about 15 minutes for the three sizes on the shared 2-core machine; exit 0 always: a benchmark prints, it does not
gate).

Set-up. A generated corpus (ko/en/ja/zh, 60/25/10/5 %), ``min(2000, max(50, N // 50))`` queries without relevance
judgements, ``batch_size: 64``, ``repeats: 1``, ``latency.sample: 2048``, ``parity.sample: 128`` (step 05's cost is per sampled document, the same at every
corpus size; the default 512 made step 05 ~7 min at load 8, most of it issue 24's diagnosis of the fake vectors), the article's
latency protocol otherwise (30 + 40 requests, 3 repeats, the default sweep). The legacy and candidate targets are
``kind: external`` servers started here (``benchmarks/fake_embedding_server.py``: answers from a bank of
pre-encoded vectors, so their own time is small and is measured: ``busy_s``). The five notebooks run through
``embedswap.runner.run_experiment`` one at a time (papermill, as ``embedswap run`` does), then the report is
rendered. Printed per size: wall seconds per step, the servers' busy seconds in it, the kit's own seconds (wall minus
busy) and share, a separate ``build_summary`` timing, and the peak resident memory of the kit's processes (this
one and the notebook kernels; the fake servers are not counted), largest single process and sum.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
import yaml

HERE = Path(__file__).resolve().parent
LANGS = [("ko", 60), ("en", 25), ("ja", 10), ("zh", 5)]
WORDS = {"ko": "임베딩 서버 배치 지연 메모리 모델 검색 문서", "en": "embedding server batch latency memory model search",
         "ja": "埋め込み サーバー バッチ 遅延 メモリ モデル 検索", "zh": "嵌入 服务器 批处理 延迟 内存 模型 检索"}
PARITY_SAMPLE = 128  # the fp32 reference (and the diagnosis of a failed row) costs O(sample), not O(corpus)
NOTEBOOKS = ["01_legacy_capture", "02_swap_deploy", "03_vector_contract_diff", "04_latency", "05_parity"]


def corpus(folder: Path, n: int, queries: int) -> None:
    langs = [lang for lang, share in LANGS for _ in range(share)]
    with (folder / "documents.jsonl").open("w", encoding="utf-8") as out:
        for i in range(n):
            lang = langs[i % 100]
            words = WORDS[lang].split()
            text = " ".join(words[(i * k) % len(words)] for k in range(1, 25)) + f" #{i}"
            out.write(json.dumps({"id": f"d{i}", "lang": lang, "text": text}, ensure_ascii=False) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as out:
        for i in range(queries):
            lang = langs[i % 100]
            out.write(json.dumps({"id": f"q{i}", "lang": lang, "text": f"{WORDS[lang]} {i}"}, ensure_ascii=False) + "\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """The fake server gets SIGTERM when this process dies, however it dies (Linux prctl PR_SET_PDEATHSIG)."""
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


def start_server(flavour: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(HERE / "fake_embedding_server.py"), "--port", str(port),
                             "--flavour", flavour], start_new_session=True, stdout=subprocess.DEVNULL,
                            preexec_fn=_die_with_parent)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if httpx.get(url + "/v1/models", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    stop(proc)
    raise RuntimeError(f"fake {flavour} server did not start on {url}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass


def busy(url: str) -> float:
    return float(httpx.get(url + "/stats", timeout=5).json()["busy_s"])


class RssPeak:
    """Peak resident memory of this process and its descendants, minus ``exclude`` (the fake servers), every 0.2 s."""

    def __init__(self, exclude: set[int]) -> None:
        self.exclude = exclude
        self.largest = 0
        self.total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.2):
            sizes = []
            for proc in [me, *me.children(recursive=True)]:
                if proc.pid in self.exclude:
                    continue
                try:
                    sizes.append(proc.memory_info().rss)
                except psutil.Error:
                    pass
            self.largest = max(self.largest, max(sizes, default=0))
            self.total = max(self.total, sum(sizes))

    def __enter__(self) -> RssPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def experiment(root: Path, n: int, legacy: str, candidate: str) -> Path:
    from embedswap.scaffold import new_experiment

    folder = new_experiment(f"scale-{n}", root / "experiments", legacy_url=legacy, candidate_urls=[candidate])
    config = yaml.safe_load((folder / "experiment.yaml").read_text(encoding="utf-8"))
    config["workload"] = {"documents": str(root / "documents.jsonl"), "queries": str(root / "queries.jsonl"),
                          "batch_size": 64, "repeats": 1}
    config.setdefault("latency", {})["sample"] = 2048
    config.setdefault("parity", {})["sample"] = PARITY_SAMPLE
    config["parity"]["backends"] = []
    (folder / "experiment.yaml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False),
                                            encoding="utf-8")
    return folder


def one_size(n: int, keep: Path | None) -> dict[str, Any]:
    from embedswap.runner import run_experiment
    from embedswap.steps import open_step
    from embedswap.pipeline.build import build_summary

    root = Path(tempfile.mkdtemp(prefix=f"scale-{n}-", dir=keep))
    queries = min(2000, max(50, n // 50))
    corpus(root, n, queries)
    servers = [start_server("legacy"), start_server("candidate")]
    urls = [url for _, url in servers]
    steps: list[dict[str, Any]] = []
    try:
        folder = experiment(root, n, *urls)
        with RssPeak({p.pid for p, _ in servers}) as rss:
            attempt = "new"
            for name in NOTEBOOKS:
                before = sum(busy(u) for u in urls)
                started = time.monotonic()
                result = run_experiment(folder, attempt, only=[name], render=name == NOTEBOOKS[-1],
                                        log_output=False)
                wall = time.monotonic() - started
                attempt = result.attempt.name
                server_s = sum(busy(u) for u in urls) - before
                steps.append({"step": name, "wall_s": round(wall, 1), "server_busy_s": round(server_s, 1),
                              "kit_s": round(wall - server_s, 1), "status": result.notebooks.get(name)})
            ctx = open_step(folder, attempt)
            diagnosis = (ctx.attempt.read_json("diagnosis/vectors.json")
                         if ctx.attempt.has("diagnosis/vectors.json") else {})
            searches = (ctx.attempt.read_json("index/searches.json")
                        if ctx.attempt.has("index/searches.json") else {})
            started = time.monotonic()
            build_summary(ctx.experiment, ctx.experiment_dir, ctx.attempt, ctx.workload)
            summary_s = time.monotonic() - started
    finally:
        for proc, _ in servers:
            stop(proc)
    wall = sum(s["wall_s"] for s in steps)
    kit = sum(s["kit_s"] for s in steps)
    return {"documents": n, "queries": queries, "steps": steps, "wall_s": round(wall, 1), "kit_s": round(kit, 1),
            "kit_share": round(kit / wall, 3) if wall else None, "build_summary_s": round(summary_s, 1),
            "peak_rss_largest_mib": round(rss.largest / 2**20), "peak_rss_total_mib": round(rss.total / 2**20),
            "report": bool(result.report), "folder": str(root), "load_average": os.getloadavg(),
            # the diagnosis' own seconds inside step 03 and the documents it diagnosed (diagnosis.sample)
            "diagnosis_s": diagnosis.get("seconds"), "diagnosis_sample": diagnosis.get("sample"),
            "diagnosis_causes": {n: f.get("cause") for n, f in (diagnosis.get("by_target") or {}).items()},
            # the diagnosis runs beside the index part: how long step 03 still waited for it
            "diagnosis_waited_s": diagnosis.get("waited_s"),
            "index_seconds": {n: e.get("seconds") for n, e in (searches.get("by_candidate") or {}).items()}}


def index_part(n: int, queries: int, dim: int, keep: Path | None, hnsw_shares: str = "auto") -> dict[str, Any]:
    """The index part alone (step 03's searches on the embedded PostgreSQL, then their scoring and the adapter in
    the summary) at ``n`` documents of synthetic vectors: a candidate that is the legacy vectors plus a little noise
    (the demo's case, where nothing decides early). Wall seconds per phase and peak RSS of this process with the
    server's processes (postgres runs as this process's child). ``hnsw_shares``: ``index.hnsw_shares`` (auto: every
    share up to ``index.hnsw_auto_max_documents`` documents, shares 0 and 1 above)."""
    import numpy as np

    from embedswap.config.index import IndexConfig
    from embedswap.index.searches import run_searches
    from embedswap.summary.sections.index import score_candidate

    rng = np.random.default_rng(0)
    legacy = rng.normal(size=(n, dim)).astype(np.float32)
    legacy /= np.linalg.norm(legacy, axis=1, keepdims=True)
    candidate = legacy + rng.normal(scale=1e-3, size=legacy.shape).astype(np.float32)
    source = rng.choice(n, size=queries, replace=False)
    query_vectors = legacy[source] + rng.normal(scale=0.05, size=(queries, dim)).astype(np.float32)
    relevance = np.zeros((queries, n), dtype=np.float32)
    relevance[np.arange(queries), source] = 2
    config = IndexConfig(hnsw_shares=hnsw_shares)
    folder = Path(tempfile.mkdtemp(prefix=f"scale-index-{n}-", dir=keep))
    with RssPeak(set()) as rss:
        started = time.monotonic()
        capture = run_searches({"legacy": {"docs": legacy, "queries": query_vectors},
                                "candidate": {"docs": candidate, "queries": query_vectors}},
                               "legacy", ["candidate"], config, folder)
        searches_s = time.monotonic() - started
        started = time.monotonic()
        score_candidate(capture["by_candidate"]["candidate"], {"legacy": legacy, "candidate": candidate},
                        {"legacy": query_vectors, "candidate": query_vectors}, config, relevance)
        summary_s = time.monotonic() - started
    return {"documents": n, "queries": queries, "dim": dim, "shares": len(config.shares),
            "hnsw_plan": capture.get("hnsw_plan"), "exact": capture["by_candidate"]["candidate"].get("exact"),
            "searches_s": round(searches_s, 1), "phases_s": capture["by_candidate"]["candidate"].get("seconds"),
            "score_and_adapter_s": round(summary_s, 1), "peak_rss_largest_mib": round(rss.largest / 2**20),
            "peak_rss_total_mib": round(rss.total / 2**20), "load_average": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="embedswap at corpus scale against fast fake servers")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--keep", type=Path, default=None, help="folder for the generated corpora and attempts")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--index-only", action="store_true",
                        help="measure only the index part (the embedded PostgreSQL, HNSW, the grid's searches)")
    parser.add_argument("--queries", type=int, default=500, help="--index-only: queries (index.max_queries)")
    parser.add_argument("--hnsw-shares", default="auto", choices=["auto", "all", "ends"],
                        help="--index-only: index.hnsw_shares (which shares get an HNSW build)")
    args = parser.parse_args(argv)
    if args.index_only:
        found = []
        for n in [int(s) for s in args.sizes.split(",")]:
            found.append(index_part(n, args.queries, 384, args.keep, args.hnsw_shares))
            print(json.dumps(found[-1]), flush=True)
        if args.json:
            args.json.write_text(json.dumps(found, indent=2) + "\n")
        return 0
    results = []
    for n in [int(s) for s in args.sizes.split(",")]:
        print(f"--- {n:,} documents", flush=True)
        result = one_size(n, args.keep)
        results.append(result)
        for s in result["steps"]:
            print(f"  {s['step']:<26} wall {s['wall_s']:>7.1f} s  servers {s['server_busy_s']:>6.1f} s  "
                  f"kit {s['kit_s']:>7.1f} s  {s['status']}", flush=True)
        print(f"  total wall {result['wall_s']} s, kit {result['kit_s']} s ({result['kit_share']:.0%}), "
              f"kit per 1k docs {result['kit_s'] / (n / 1000):.1f} s; build_summary {result['build_summary_s']} s; "
              f"peak RSS largest process {result['peak_rss_largest_mib']} MiB, all kit processes "
              f"{result['peak_rss_total_mib']} MiB; load {result['load_average'][0]:.1f}", flush=True)
        step03 = next((s["wall_s"] for s in result["steps"] if s["step"] == "03_vector_contract_diff"), None)
        sample = result["diagnosis_sample"] or {}
        waited = result["diagnosis_waited_s"]
        if result["diagnosis_s"] is not None and step03 and waited is None:  # a kit that diagnosed in the step
            print(f"  diagnosis {result['diagnosis_s']:.1f} s of step 03's {step03:.1f} s "
                  f"({result['diagnosis_s'] / step03:.1%}) on {sample.get('documents')} of {sample.get('of')} "
                  f"documents ({sample.get('lowest')} lowest cosines); causes {result['diagnosis_causes']}", flush=True)
        elif result["diagnosis_s"] is not None and step03:  # beside the index part: the step waits only for the rest
            print(f"  diagnosis ran {result['diagnosis_s']:.1f} s beside the index part (lower priority) on "
                  f"{sample.get('documents')} of {sample.get('of')} documents ({sample.get('lowest')} lowest "
                  f"cosines); step 03 waited {waited:.1f} s for it after the index part ({waited / step03:.1%} of "
                  f"step 03's {step03:.1f} s); causes {result['diagnosis_causes']}", flush=True)
        if result["index_seconds"]:
            print(f"  the index part's own seconds per candidate {result['index_seconds']}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
