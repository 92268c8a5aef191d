"""A corpus of real texts that ships offline, for fitting and scoring index adapters (issue 57): the docstrings of
the public functions and classes of numpy, scipy, scikit-learn, pandas, matplotlib, networkx and sympy, the kit's
own pinned dependencies
(requirements/kit.lock), read from their installed source files with :mod:`ast` (nothing is imported or run).

Why it serves (docs/model-migration.md says more): the texts are written by people for people (API reference prose
of varied length and vocabulary, tens of thousands of them), they are on every machine the kit runs on, offline, at
versions the lock pins, and each comes with a natural query: its summary line. A document is the docstring's body
(what follows the summary line), its query the summary line, and that query's one relevant document its own body,
so recall and nDCG can be judged without a hand-made judgement file. The stdlib's docstrings are too few once
deduplicated, and PyPI's corpus packages checked (``fortune``, ``pycorpora``) bundle no texts in their wheels.

Its limits: English only, technical prose; a multilingual model's gain on other languages is not shown by it.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
from dataclasses import dataclass, field
from pathlib import Path

import importlib.util

# distribution -> import name: the kit's own pinned dependencies (requirements/kit.lock), found without importing
PACKAGES = {"numpy": "numpy", "scipy": "scipy", "scikit-learn": "sklearn", "pandas": "pandas",
            "matplotlib": "matplotlib", "networkx": "networkx", "sympy": "sympy"}
MIN_SUMMARY, MIN_BODY, MAX_BODY = 20, 200, 1200  # characters: a query says something, a document has a paragraph


@dataclass
class Corpus:
    """Documents (body texts), their queries (summary lines, same order: query i is relevant to document i)."""
    ids: list[str] = field(default_factory=list)
    documents: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def sha256(self) -> str:
        digest = hashlib.sha256()
        for doc_id, query, text in zip(self.ids, self.queries, self.documents, strict=True):
            digest.update(f"{doc_id}\t{query}\t{text}\n".encode())
        return digest.hexdigest()


def _public(path: Path, root: Path) -> bool:
    parts = path.relative_to(root).with_suffix("").parts
    # private modules hold most of the public API (numpy/_core, sklearn/linear_model/_base.py): only tests are left out
    return not any(p in ("tests", "testing", "conftest", "_examples", "benchmarks") for p in parts)


STOP_SECTIONS = ("Examples", "References", "See Also", "Notes")  # code, citations, cross-references: not prose


def _split(doc: str) -> tuple[str, str] | None:
    """(summary line, body) of a docstring: the body is what follows the summary up to its first
    :data:`STOP_SECTIONS` header, without numpydoc's underlines, cut at a word under :data:`MAX_BODY` characters."""
    lines = doc.strip().splitlines()
    if not lines:
        return None
    # the summary is the first paragraph (a summary line may wrap), the body the rest
    first = next((i for i, line in enumerate(lines) if not line.strip()), len(lines))
    summary = " ".join(line.strip() for line in lines[:first])
    kept: list[str] = []
    for i, line in enumerate(lines[first:], start=first):
        stripped = line.strip()
        underline = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}
        if stripped in STOP_SECTIONS and underline:
            break
        if stripped and set(stripped) <= set("-=~"):
            continue
        kept.append(stripped)
    body = " ".join(" ".join(kept).split())
    if len(body) > MAX_BODY:
        body = body[: body.rfind(" ", 0, MAX_BODY)]
    return (summary, body) if len(summary) >= MIN_SUMMARY and len(body) >= MIN_BODY else None


def docstring_corpus(limit: int | None = None) -> Corpus:
    """The corpus in a fixed order (package, file, line); ``limit``: its first documents only. Documents with the
    same body (aliases, inherited docstrings) are kept once."""
    corpus, seen = Corpus(), set()
    for dist, name in PACKAGES.items():
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue  # not installed here: the versions say which were read
        corpus.versions[dist] = importlib.metadata.version(dist)
        root = Path(spec.origin).parent
        for path in sorted(root.rglob("*.py")):
            if not _public(path, root):
                continue
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            for node in ast.walk(tree):
                if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) or node.name.startswith("_"):
                    continue
                parts = _split(ast.get_docstring(node) or "")
                if parts is None or parts[1] in seen:
                    continue
                seen.add(parts[1])
                name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
                corpus.ids.append(f"{name}.{node.name}:{node.lineno}")
                corpus.queries.append(parts[0])
                corpus.documents.append(parts[1])
                if limit is not None and len(corpus.ids) >= limit:
                    return corpus
    return corpus


def write_workload(folder: Path, limit: int | None = None, queries: int | None = None) -> Corpus:
    """The corpus as a workload folder (documents.jsonl, queries.jsonl, qrels.jsonl) with every ``len // queries``-th
    document's summary as a query (all when None), and a manifest of its versions and sha256."""
    corpus = docstring_corpus(limit)
    folder.mkdir(parents=True, exist_ok=True)
    step = max(1, len(corpus.ids) // queries) if queries else 1
    asked = list(range(0, len(corpus.ids), step))[: queries or None]
    with open(folder / "documents.jsonl", "w", encoding="utf-8") as out:
        for i, (doc_id, text) in enumerate(zip(corpus.ids, corpus.documents, strict=True)):
            out.write(json.dumps({"id": f"d{i}", "lang": "en", "title": doc_id, "text": text}) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as out:
        for i in asked:
            out.write(json.dumps({"id": f"q{i}", "lang": "en", "text": corpus.queries[i]}) + "\n")
    with open(folder / "qrels.jsonl", "w", encoding="utf-8") as out:
        for i in asked:
            out.write(json.dumps({"query_id": f"q{i}", "doc_id": f"d{i}", "relevance": 1}) + "\n")
    (folder / "corpus.json").write_text(json.dumps({"source": "docstrings", "versions": corpus.versions,
                                                    "documents": len(corpus.ids), "queries": len(asked),
                                                    "sha256": corpus.sha256}, indent=2), encoding="utf-8")
    return corpus
