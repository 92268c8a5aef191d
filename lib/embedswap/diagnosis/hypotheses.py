"""Why a server's vectors differ from the model's: recompute them under each known pipeline mistake, keep the match.

The known causes (vLLM #39579, #45995, sentence-transformers #3208, Qwen3-Embedding #54/#122) split in
two kinds. *Output-side* ones (pooling mean / cls / lasttoken / max, the model's Dense modules applied or not, L2
normalisation on or off) are cheap reductions of one forward pass. *Input-side* ones need a pass of their own:
the EOS token appended or dropped before pooling, a prompt prepended (the model's sentence-transformers prompts,
the kit's query template), truncation at a server's reported or probed limit, the model run in fp16 / bf16. Every
input-side variant is crossed with every output-side one, so a server with two mistakes is still found.

The hypothesis that reproduces the server's vectors (same dimension, lowest cosine >= the gate, median norms within
:data:`NORM_RELATIVE_TOLERANCE`) is reported as reason codes (``diagnosis_*`` in :mod:`embedswap.reasons`), each
saying what the server does differently and the fix; fewest differences win, then the highest cosine. None
reproducing it gives ``diagnosis_unknown``. The model's own pipeline is the legacy server's :class:`Embedder`
(checked against sentence-transformers by ``tests/zoo/test_tiny_zoo.py``).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, replace
from pathlib import Path
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

from embedswap.diagnosis.findings import Hypothesis, explain_difference
from embedswap.diagnosis.probe import PROBE, probe_batches, probe_rows, reach_floor
from embedswap.diagnosis.prompts import known_prompts
from embedswap.diagnosis.truncation import truncation_finding
from embedswap.diagnosis.truth_cache import LazyEmbedder, TruthCache

POOLINGS = ("mean", "cls", "lasttoken", "max")
LOWER_DTYPES = ("float16", "bfloat16")
BATCHINGS = ("mask_ignored", "padding_flipped", "padding_flipped_position")
NORM_RELATIVE_TOLERANCE = 1e-2
BATCH = 32


def _matches(candidate: np.ndarray, served: np.ndarray, threshold: float, norms: bool = True) -> float | None:
    """Lowest cosine when ``candidate`` reproduces ``served`` (shape, direction and, with ``norms``, length), else
    None."""
    if candidate.shape != served.shape:
        return None
    a, b = candidate.astype(np.float64), served.astype(np.float64)
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    cos = (a * b).sum(1) / np.maximum(na * nb, 1e-30)
    if not np.all(np.isfinite(cos)) or cos.min() < threshold:
        return None
    if norms and abs(np.median(na) - np.median(nb)) > NORM_RELATIVE_TOLERANCE * max(float(np.median(nb)), 1e-12):
        return None
    return float(cos.min())


class Diagnoser:
    """The model's vectors for ``texts`` under every hypothesis, computed as needed; :meth:`diagnose` per server.

    Sized for a corpus: with more than ``2 * PROBE`` texts every input-side variant (the model's own pipeline too)
    is first computed on :data:`PROBE` texts only (the longest, where a cut shows, and an even spread), and on
    every text only when one of its reductions reproduces the server there: a hypothesis has to reproduce every
    vector, so one that misses a probe text is out. The probe's vectors are kept, so a second server is screened
    without another forward pass. A lower precision is not even loaded when no reduction of the model's own
    pipeline comes within :data:`~embedswap.diagnosis.probe.DTYPE_REACH` of the server on the probe texts. A
    batch-mate variant is probed on whole batches (its vectors depend on them).
    """

    def __init__(self, model: str | Path, texts: list[str], *, limits: list[int] | None = None,
                 query_template: str | None = None, query_task: str | None = None,
                 expected_prompt: str | None = None, batches: list[tuple[int, int]] | None = None,
                 embedder: Any = None) -> None:
        from embedswap.models import local_model_folder, resolve_model_path

        self.path = resolve_model_path(str(model))
        self.texts = list(texts)
        # ``embedder``: the model already loaded for the same path (documents and queries share one); loaded only
        # when a pass is computed (truth_cache: a truth read from the cache needs none)
        self.embedder = embedder if isinstance(embedder, LazyEmbedder) else LazyEmbedder(str(model), embedder)
        e = self.embedder
        self.truth = Hypothesis(e.pooling, e.has_dense, e.normalize, prompt=expected_prompt)
        self.prompts = known_prompts(local_model_folder(self.path), query_template, query_task)
        self._stated = limits or []
        self.candidates: dict[Hypothesis, np.ndarray] = {}  # every reduction of a full pass, by hypothesis
        self.probed: dict[Hypothesis, np.ndarray] = {}  # every reduction of a pass over the probe texts
        # the server's batches as (start, end) of ``texts`` (known when they are the workload's, whole, in order):
        # the batch-mate hypotheses need them
        self.batches = batches
        self.end_token: str | None = None  # the token the end-token hypothesis drops or appends
        self._lower_models: dict[str, Any] = {}
        self._batch_probed: dict[Hypothesis, tuple[list[int], dict[Hypothesis, np.ndarray]]] = {}
        self._variants = self._inputs()  # a generator: nothing tokenised before the first pass
        self._pending: list[tuple[Hypothesis, list[list[int]], Any]] = []  # screened out for an earlier server
        self.cache = TruthCache(self, BATCH)

    @property
    def limit(self) -> int:
        return int(self.embedder.limit)

    @functools.cached_property
    def limits(self) -> list[int]:
        return sorted({int(n) for n in self._stated if 0 < int(n) < self.limit})

    @functools.cached_property
    def _truth_input(self) -> tuple[Hypothesis, list[list[int]], Any]:
        return next(self._variants)

    @functools.cached_property
    def rows(self) -> list[int] | None:
        """The probe texts (None: a few texts, where the whole pass costs no more than a probe)."""
        if len(self.texts) <= 2 * PROBE:
            return None
        return probe_rows([len(row) for row in self._truth_input[1]], PROBE)

    def truth_vectors(self) -> np.ndarray:
        """The model's own pipeline over every text: computed on first use, or read from the cache."""
        if self.truth in self.candidates:
            return self.candidates[self.truth]
        cached = self.cache.cached()
        if cached is not None:
            return cached
        self._own_pass()
        return self.candidates[self.truth]

    def _own_pass(self) -> None:
        """Every reduction of the model's own pass over every text (a cache entry holds only the truth's)."""
        if self.truth not in self.candidates:
            self._reduce(*self._truth_input)
            self.cache.computed(self.candidates[self.truth])

    def truth_on_probe(self) -> np.ndarray:
        """The model's own pipeline over the probe texts (``rows``)."""
        return self._probe(self._truth_input)[self.truth]

    def _probe(self, item: tuple[Hypothesis, list[list[int]], Any]) -> dict[Hypothesis, np.ndarray]:
        """Every reduction of one input-side variant on the probe texts (kept: the next server reuses them)."""
        variant, ids, model = item
        keys = [key for key in self.probed if _input_side(key, self.truth) == variant]
        if not keys:
            assert self.rows is not None
            self.probed.update(self._reduce(variant, [ids[i] for i in self.rows], model, store=False))
            keys = [key for key in self.probed if _input_side(key, self.truth) == variant]
        return {key: self.probed[key] for key in keys}

    def _complete(self) -> None:
        self._own_pass()
        while self._advance() is not None:
            pass

    def _advance(self, screen: Callable[[Hypothesis, list[list[int]], Any], bool] | None = None
                 ) -> list[Hypothesis] | None:
        """The next input-side variant's hypotheses (computed now) that passes ``screen`` (variants that do not
        wait, for the next server), None when none is left."""
        for item in list(self._pending):
            if screen is None or screen(*item):
                self._pending.remove(item)
                return self._reduce(*item)
        for item in self._variants:  # a generator: each lower-precision model loaded in turn
            if screen is None or screen(*item):
                return self._reduce(*item)
            self._pending.append(item)
        return None

    def _screen(self, served: np.ndarray, threshold: float) -> Callable[[Hypothesis, list[list[int]], Any], bool]:
        """Whether a variant can reproduce ``served``, judged on the probe texts first: a full pass only for a
        variant one of whose reductions reproduces those (without a probe: every variant within reach)."""
        if served.shape[0] != len(self.texts):
            return lambda variant, ids, model: True
        reach = reach_floor(threshold)
        if self.rows is None:  # a few texts: the model's own pass is whole, and a variant's pass costs a probe
            truth = [v for key, v in self.candidates.items() if _input_side(key, self.truth) == self.truth]
            near = any(_matches(v, served, reach, norms=False) is not None for v in truth)
            return lambda variant, ids, model: near or variant.dtype == self.truth.dtype
        rows = self.rows
        probe = served[rows]
        near_truth = any(_matches(v, probe, reach, norms=False) is not None
                         for v in self._probe(self._truth_input).values())

        def screen(variant: Hypothesis, ids: list[list[int]], model: Any) -> bool:
            if variant.batching:  # batch mates: judged on whole batches
                return self._batch_probe_matches((variant, ids, model), served, threshold)
            if variant.dtype != self.truth.dtype and not near_truth:
                return False  # no precision moves a vector that far (DTYPE_REACH): not worth loading the model
            found = self._probe((variant, ids, model))
            return any(_matches(v, probe, threshold) is not None for v in found.values())

        return screen

    def _batch_probe_matches(self, item: tuple[Hypothesis, list[list[int]], Any], served: np.ndarray,
                             threshold: float) -> bool:
        """A batch-mate variant on whole batches holding at least :data:`PROBE` texts (the longest text's batch
        first); kept for the next server. True without a probe where those batches are all of them."""
        variant, ids, model = item
        if variant not in self._batch_probed:
            spans = probe_batches(self.batches or [], self._truth_input[1], PROBE)
            rows = [i for start, end in spans for i in range(start, end)]
            if len(rows) >= len(self.texts):
                return True
            local = list(itertools.accumulate((end - start for start, end in spans), initial=0))
            vectors = self._reduce(variant, [ids[i] for i in rows], model, store=False,
                                   chunks=list(zip(local, local[1:])))
            self._batch_probed[variant] = (rows, vectors)
        rows, vectors = self._batch_probed[variant]
        return any(_matches(v, served[rows], threshold) is not None for v in vectors.values())

    # -- inputs: token ids per text for each input-side variant ------------------------------------------------------
    def _ids(self, texts: list[str], max_tokens: int) -> list[list[int]]:
        tok = self.embedder.tokenizer
        return [list(r) for r in tok(texts, truncation=True, max_length=max_tokens)["input_ids"]]

    def _eos_variant(self, base: list[list[int]]) -> tuple[bool, list[list[int]]] | None:
        """The end token dropped where the tokenizer appends one to every text (Qwen3's ``<|endoftext|>``, BERT's
        ``[SEP]``), the EOS token appended where it appends none (None: no EOS token to append)."""
        tok = self.embedder.tokenizer
        ends = {row[-1] for row in base if row}
        if len(ends) == 1 and next(iter(ends)) in set(tok.all_special_ids):
            self.end_token = str(tok.convert_ids_to_tokens(next(iter(ends))))
            return False, [row[:-1] or row for row in base]
        if tok.eos_token_id is None:
            return None
        self.end_token = str(tok.eos_token)
        return True, [row[: self.limit - 1] + [int(tok.eos_token_id)] for row in base]

    def _inputs(self) -> Iterator[tuple[Hypothesis, list[list[int]], Any]]:
        """Input-side variants (output fields left at the truth's), the truth first: (variant, token ids, model);
        a lower precision's model is a :class:`_Lower` (loaded when first run)."""
        t, e = self.truth, self.embedder
        prefix = t.prompt or ""
        base = self._ids([prefix + x for x in self.texts], self.limit)
        yield t, base, e.model
        eos = self._eos_variant(base)
        if eos is not None:
            yield replace(t, eos=eos[0]), eos[1], e.model
        for prompt in [p for p in self.prompts if p != t.prompt] + ([None] if t.prompt else []):
            yield replace(t, prompt=prompt), self._ids([(prompt or "") + x for x in self.texts], self.limit), e.model
        for limit in self.limits:
            yield replace(t, max_tokens=limit), self._ids([prefix + x for x in self.texts], limit), e.model
        for dtype in LOWER_DTYPES:
            yield replace(t, dtype=dtype), base, _Lower(dtype)
        if self.batches:
            for batching in BATCHINGS:
                yield replace(t, batching=batching), base, e.model

    def _model(self, model: Any) -> Any:
        """The model to run: the loaded one, or a lower precision loaded now (once)."""
        if not isinstance(model, _Lower):
            return model
        if model.dtype not in self._lower_models:
            from transformers import AutoModel

            from embedswap.legacy.pipeline import DTYPES

            # as an engine defaulting to this precision would run it
            self._lower_models[model.dtype] = AutoModel.from_pretrained(self.path, dtype=DTYPES[model.dtype]).eval()
        return self._lower_models[model.dtype]

    # -- outputs: every pooling x Dense x Normalize of one forward pass ---------------------------------------------
    def _reduce(self, variant: Hypothesis, ids: list[list[int]], model: Any, store: bool = True,
                chunks: list[tuple[int, int]] | None = None) -> Any:
        import torch
        import torch.nn.functional as F

        from embedswap.legacy.pipeline import pool

        e = self.embedder
        model = self._model(model)
        out: dict[Hypothesis, list[torch.Tensor]] = {}
        if chunks is None:
            chunks = self.batches if variant.batching else [(s, s + BATCH) for s in range(0, len(ids), BATCH)]
        with torch.inference_mode():
            for start, end in chunks:
                batch, mask, side = padded(e, ids[start:end], variant.batching)
                hidden = model(**batch).last_hidden_state
                for mode in POOLINGS:
                    pooled = pool(hidden, mask, mode, side)
                    projected = pooled
                    for layer in e.dense:
                        projected = layer({"sentence_embedding": projected})["sentence_embedding"].float()
                    for dense, normalize in itertools.product((True, False), (True, False)):
                        if dense and not e.dense:
                            continue
                        vec = projected if dense else pooled
                        vec = F.normalize(vec, p=2, dim=1) if normalize else vec
                        key = replace(variant, pooling=mode, dense=dense, normalize=normalize)
                        out.setdefault(key, []).append(vec)
        if not store:  # a probe: the vectors of a subset, kept apart
            return {key: torch.cat(parts).numpy() for key, parts in out.items()}
        added = [key for key in out if key not in self.candidates]
        for key in added:
            self.candidates[key] = torch.cat(out[key]).numpy()
        return added

    def diagnose(self, served: np.ndarray, name: str, threshold: float = 0.999,
                 evidence: dict[str, Any] | None = None) -> dict[str, Any]:
        """The hypothesis reproducing ``served`` and its reasons; ``cause`` None when the model's own pipeline
        reproduces it, truncation at the limit found when a cut of the inputs does (diagnosis.truncation, with
        the server's ``usage`` as ``evidence``), ``diagnosis_unknown`` when nothing does."""
        served = np.asarray(served, dtype=np.float32)
        if self._truth_may_reproduce(served, threshold):
            if _matches(self.truth_vectors(), served, threshold) is not None:
                return {"cause": None, "reasons": [], "hypothesis": None}
            self._own_pass()  # the truth's other reductions (pooling, Dense, normalisation) are hypotheses too
        found = self._reproducing(list(self.candidates), served, threshold)
        # one input-side pass at a time, stopping once a single difference reproduces the vectors (none can
        # beat it: every pass still to come differs at least once); two differences keep looking for one
        screen = self._screen(served, threshold)
        while not any(h.differences(self.truth) <= 1 for h, _ in found):
            added = self._advance(screen)
            if added is None:
                break
            found += self._reproducing(added, served, threshold)
        if not found:
            return truncation_finding(self, served, name, threshold, evidence)
        best, cos = min(found, key=lambda hc: (hc[0].differences(self.truth), -hc[1]))
        reasons = explain_difference(self.truth, best, name, self.limit, self.end_token)
        return {"cause": reasons[0]["code"] if reasons else None, "reasons": reasons,
                "hypothesis": {**best.as_dict(), "cos_min": cos}}

    def _truth_may_reproduce(self, served: np.ndarray, threshold: float) -> bool:
        """Whether a reduction of the model's own pass can reproduce ``served`` (on the probe texts; always when
        there is no probe): only then is that pass run over every text."""
        if self.truth in self.candidates or served.shape[0] != len(self.texts) or self.cache.cached() is not None:
            return True  # (the cached truth: compared on every text at no cost)
        if self.rows is None:
            return True
        probe = served[self.rows]
        return any(_matches(v, probe, threshold) is not None for v in self._probe(self._truth_input).values())

    def _reproducing(self, keys: list[Hypothesis], served: np.ndarray,
                     threshold: float) -> list[tuple[Hypothesis, float]]:
        return [(h, cos) for h in keys if (cos := _matches(self.candidates[h], served, threshold)) is not None]

    @property
    def passes(self) -> int:
        """How many input-side passes over every text were computed so far (the truth's included)."""
        return len({_input_side(h, self.truth) for h in self.candidates})


@dataclass(frozen=True)
class _Lower:
    """The model in a lower precision, loaded only when a variant needs it (:meth:`Diagnoser._model`)."""

    dtype: str


def _input_side(key: Hypothesis, truth: Hypothesis) -> Hypothesis:
    """The input-side variant a hypothesis belongs to (its output-side fields set back to the truth's)."""
    return replace(key, pooling=truth.pooling, dense=truth.dense, normalize=truth.normalize)


def padded(embedder: Any, rows: list[list[int]], batching: str | None) -> tuple[dict[str, Any], Any, str]:
    """(the model's inputs, the mask pooling uses, the padding side pooling assumes) of one batch, padded as
    ``batching`` says."""
    import torch

    if batching in ("padding_flipped", "padding_flipped_position"):
        other = "left" if embedder.padding_side == "right" else "right"
        width = max(len(row) for row in rows)
        ids = torch.full((len(rows), width), embedder.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            span = slice(width - len(row), width) if other == "left" else slice(0, len(row))
            ids[i, span] = torch.tensor(row, dtype=torch.long)
            mask[i, span] = 1
        side = other if batching == "padding_flipped" else embedder.padding_side
        return {"input_ids": ids, "attention_mask": mask}, mask, side
    batch = embedder._pad_ids(rows)
    if batching == "mask_ignored":
        ones = torch.ones_like(batch["attention_mask"])
        return {"input_ids": batch["input_ids"], "attention_mask": ones}, ones, embedder.padding_side
    return batch, batch["attention_mask"], embedder.padding_side


def diagnose(model: str | Path, texts: list[str], served: np.ndarray, name: str, threshold: float = 0.999,
             **options: Any) -> dict[str, Any]:
    """One server's diagnosis (see :class:`Diagnoser` for ``options``: limits, query template/task)."""
    return Diagnoser(model, texts, **options).diagnose(served, name, threshold)


def diagnose_safely(model: str | Path, texts: list[str], served: np.ndarray, name: str,
                    threshold: float = 0.999, **options: Any) -> dict[str, Any]:
    """:func:`diagnose`, with a failure recorded instead of raised (a model the diagnosis cannot load must not take
    the parity step down: the gate has already failed the row)."""
    try:
        return diagnose(model, texts, served, name, threshold, **options)
    except Exception as exc:  # noqa: BLE001 - recorded as the diagnosis' own error
        return {"cause": None, "reasons": [], "hypothesis": None, "error": f"{type(exc).__name__}: {exc}"}
