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

import itertools
from dataclasses import dataclass, fields, replace
from pathlib import Path
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

from embedswap.reasons import explain

POOLINGS = ("mean", "cls", "lasttoken", "max")
LOWER_DTYPES = ("float16", "bfloat16")
SCREEN = 16  # the worst documents a variant is first tried on (diagnosis sized for a corpus)
BATCHINGS = ("mask_ignored", "padding_flipped", "padding_flipped_position")
NORM_RELATIVE_TOLERANCE = 1e-2
BATCH = 32


@dataclass(frozen=True)
class Hypothesis:
    """One way of turning the texts into vectors. ``eos``: None as the tokenizer does, True appended, False dropped;
    ``prompt``: the text prepended (None: none); ``max_tokens``: None is the model's own limit."""

    pooling: str
    dense: bool
    normalize: bool
    eos: bool | None = None
    prompt: str | None = None
    max_tokens: int | None = None
    dtype: str = "float32"
    # how a batch is padded (None: as the model's pipeline does): "mask_ignored" pools (and attends) over the
    # padding of its batch; "padding_flipped" pads on the other side (absolute positions shift by the padding);
    # "padding_flipped_position" also pools at the position the model's own side would hold (a pad token)
    batching: str | None = None

    def differences(self, truth: Hypothesis) -> int:
        return sum(getattr(self, f.name) != getattr(truth, f.name) for f in fields(self))

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _matches(candidate: np.ndarray, served: np.ndarray, threshold: float) -> float | None:
    """Lowest cosine when ``candidate`` reproduces ``served`` (shape, direction and norm), else None."""
    if candidate.shape != served.shape:
        return None
    a, b = candidate.astype(np.float64), served.astype(np.float64)
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    cos = (a * b).sum(1) / np.maximum(na * nb, 1e-30)
    if not np.all(np.isfinite(cos)) or cos.min() < threshold:
        return None
    if abs(np.median(na) - np.median(nb)) > NORM_RELATIVE_TOLERANCE * max(float(np.median(nb)), 1e-12):
        return None
    return float(cos.min())


def known_prompts(folder: Path | None, query_template: str | None, query_task: str | None) -> list[str]:
    """The prefixes a server may put before a text: the model's sentence-transformers prompts, the kit's query
    template with its task (everything before ``{query}``)."""
    from embedswap.config.base import DEFAULT_QUERY_TASK, DEFAULT_QUERY_TEMPLATE
    from embedswap.models import sentence_transformers_prompts

    prompts = [p for p in (sentence_transformers_prompts(folder) if folder else {}).values() if p]
    prefix = template_prefix(query_template or DEFAULT_QUERY_TEMPLATE, query_task or DEFAULT_QUERY_TASK)
    if prefix is not None:
        prompts.append(prefix)
    return list(dict.fromkeys(prompts))


def template_prefix(template: str, task: str) -> str | None:
    """What a query template puts before the query (None when text follows ``{query}``: not a prefix)."""
    if not template.endswith("{query}"):
        return None
    return template[: -len("{query}")].format(task=task)


class Diagnoser:
    """The model's vectors for ``texts`` under every hypothesis, computed once; :meth:`diagnose` per server."""

    def __init__(self, model: str | Path, texts: list[str], *, limits: list[int] | None = None,
                 query_template: str | None = None, query_task: str | None = None,
                 expected_prompt: str | None = None, batches: list[tuple[int, int]] | None = None) -> None:
        from embedswap.legacy.server import Embedder, LegacySettings
        from embedswap.models import local_model_folder, resolve_model_path

        self.path = resolve_model_path(str(model))
        self.texts = list(texts)
        self.embedder = Embedder(LegacySettings(model=str(model), max_input_tokens=10**9))
        e = self.embedder
        self.truth = Hypothesis(e.pooling, bool(e.dense), e.normalize, prompt=expected_prompt)
        self.limit = e.limit
        self.prompts = known_prompts(local_model_folder(self.path), query_template, query_task)
        self.limits = sorted({int(n) for n in limits or [] if 0 < int(n) < e.limit})
        self.candidates: dict[Hypothesis, np.ndarray] = {}
        # the server's batches as (start, end) of ``texts`` (known when they are the workload's, whole, in order):
        # the batch-mate hypotheses need them
        self.batches = batches
        self.end_token: str | None = None  # the token the end-token hypothesis drops or appends
        self._variants = self._inputs()
        self._pending: list[tuple[Hypothesis, list[list[int]], Any]] = []  # screened out for an earlier server
        self._reduce(*next(self._variants))  # the truth's own pass; the others only when a server differs

    def _complete(self) -> None:
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
        """Whether a variant can reproduce ``served``, judged on its :data:`SCREEN` worst documents first (a
        hypothesis must reproduce every document): a full pass only for a variant that reproduces those."""
        truth = self.candidates[self.truth]
        if len(self.texts) <= 2 * SCREEN or served.shape != truth.shape:
            return lambda variant, ids, model: True
        a, b = truth.astype(np.float64), served.astype(np.float64)
        cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30)
        rows = sorted(int(i) for i in np.argsort(np.nan_to_num(cos, nan=-2.0), kind="stable")[:SCREEN])

        def screen(variant: Hypothesis, ids: list[list[int]], model: Any) -> bool:
            if variant.batching:  # batch mates: only the whole batches say anything
                return True
            subset = self._reduce(variant, [ids[i] for i in rows], model, store=False)
            return any(_matches(v, served[rows], threshold) is not None for v in subset.values())

        return screen

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
        """Input-side variants (output fields left at the truth's), the truth first: (variant, token ids, model)."""
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
            yield replace(t, dtype=dtype), base, self._lower(dtype)
        if self.batches:
            for batching in BATCHINGS:
                yield replace(t, batching=batching), base, e.model

    def _lower(self, dtype: str) -> Callable[..., Any]:
        """The model loaded in ``dtype`` (as an engine defaulting to it would run it)."""
        from transformers import AutoModel

        from embedswap.legacy.pipeline import DTYPES

        return AutoModel.from_pretrained(self.path, dtype=DTYPES[dtype]).eval()

    # -- outputs: every pooling x Dense x Normalize of one forward pass ---------------------------------------------
    def _reduce(self, variant: Hypothesis, ids: list[list[int]], model: Any, store: bool = True) -> Any:
        import torch
        import torch.nn.functional as F

        from embedswap.legacy.pipeline import pool

        e = self.embedder
        out: dict[Hypothesis, list[torch.Tensor]] = {}
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
        if not store:  # a screening pass: the vectors of a subset, not kept
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
        if _matches(self.candidates[self.truth], served, threshold) is not None:
            return {"cause": None, "reasons": [], "hypothesis": None}
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
            return self._truncation_or_unknown(served, name, threshold, evidence)
        best, cos = min(found, key=lambda hc: (hc[0].differences(self.truth), -hc[1]))
        reasons = explain_difference(self.truth, best, name, self.limit, self.end_token)
        return {"cause": reasons[0]["code"] if reasons else None, "reasons": reasons,
                "hypothesis": {**best.as_dict(), "cos_min": cos}}


    def _truncation_or_unknown(self, served: np.ndarray, name: str, threshold: float,
                               evidence: dict[str, Any] | None) -> dict[str, Any]:
        """A server cutting inputs at its own length (words, characters, a token limit nobody stated), else
        ``diagnosis_unknown`` saying that no truncation reproduces the vectors either."""
        from embedswap.diagnosis.truncation import search_truncation

        cut = None
        if self.truth.prompt is None and served.shape == self.candidates[self.truth].shape:
            cut = search_truncation(self.embedder, self.texts, served, self.candidates[self.truth], threshold,
                                    evidence)
        if cut is not None and cut.get("found"):
            params = {"name": name, "limit": cut["limit"], "tokens": cut["tokens"], "expected": self.limit}
            code = f"diagnosis_truncation_{cut['unit']}"
            reasons = [{"code": code, "params": params, "why": explain(code, **params)}]
            usage = cut.get("usage")
            if usage is not None:
                code = "diagnosis_truncation_usage" if usage["agrees"] else "diagnosis_truncation_usage_differs"
                params = {"name": name, "prompt_tokens": usage["prompt_tokens"], "expected": usage["expected"]}
                reasons.append({"code": code, "params": params, "why": explain(code, **params)})
            hypothesis = {**replace(self.truth).as_dict(), "max_tokens": cut["tokens"], "cos_min": cut["cos_min"]}
            return {"cause": reasons[0]["code"], "reasons": reasons, "hypothesis": hypothesis, "truncation": cut}
        reasons = [{"code": "diagnosis_unknown", "params": {"name": name},
                    "why": explain("diagnosis_unknown", name=name)}]
        if cut is not None:  # the documents differ, and no cut of them reproduces the server's vectors
            reasons.append({"code": "diagnosis_no_truncation", "params": {"name": name},
                            "why": explain("diagnosis_no_truncation", name=name)})
        out = {"cause": "diagnosis_unknown", "reasons": reasons, "hypothesis": None}
        return {**out, "truncation": cut} if cut is not None else out

    def _reproducing(self, keys: list[Hypothesis], served: np.ndarray,
                     threshold: float) -> list[tuple[Hypothesis, float]]:
        return [(h, cos) for h in keys if (cos := _matches(self.candidates[h], served, threshold)) is not None]

    @property
    def passes(self) -> int:
        """How many input-side passes were computed so far (the truth's included)."""
        return len({replace(h, pooling=self.truth.pooling, dense=self.truth.dense, normalize=self.truth.normalize)
                    for h in self.candidates})


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


def explain_difference(truth: Hypothesis, found: Hypothesis, name: str, limit: int | None = None,
                       end_token: str | None = None) -> list[dict[str, Any]]:
    """Reason codes for what ``found`` (the server) does differently from ``truth`` (the model)."""
    codes: list[tuple[str, dict[str, Any]]] = []
    if found.pooling != truth.pooling:
        codes.append(("diagnosis_pooling", {"name": name, "pooling": found.pooling, "expected": truth.pooling}))
    if truth.dense and not found.dense:
        codes.append(("diagnosis_dense_ignored", {"name": name}))
    if found.normalize and not truth.normalize:
        codes.append(("diagnosis_normalize_added", {"name": name}))
    if truth.normalize and not found.normalize:
        codes.append(("diagnosis_normalize_missing", {"name": name}))
    if found.eos is True:
        codes.append(("diagnosis_eos_appended", {"name": name, "token": _token(end_token)}))
    if found.eos is False:
        codes.append(("diagnosis_eos_missing", {"name": name, "token": _token(end_token)}))
    if found.prompt != truth.prompt:
        if found.prompt is None:
            codes.append(("diagnosis_prompt_missing", {"name": name, "prompt": _shown(truth.prompt)}))
        elif truth.prompt is not None:  # a query prompt, but not the model's
            codes.append(("diagnosis_prompt_other", {"name": name, "prompt": _shown(found.prompt),
                                                     "expected": _shown(truth.prompt)}))
        else:
            codes.append(("diagnosis_prompt_applied", {"name": name, "prompt": _shown(found.prompt)}))
    if found.max_tokens is not None:
        codes.append(("diagnosis_truncation", {"name": name, "limit": found.max_tokens, "expected": limit}))
    if found.dtype != truth.dtype:
        codes.append(("diagnosis_dtype", {"name": name, "dtype": found.dtype, "expected": truth.dtype}))
    if found.batching is not None:  # its vectors depend on batch mates
        codes.append((f"diagnosis_batch_{found.batching}", {"name": name}))
    return [{"code": c, "params": p, "why": explain(c, **p)} for c, p in codes]


def _token(token: str | None) -> str:
    """The end token as the sentence shows it (``[SEP]``, ``<|endoftext|>``)."""
    return f"'{token}'" if token else "(EOS)"


def _shown(prompt: str | None) -> str:
    """A prompt on one line of a sentence (the kit's template holds a newline)."""
    return (prompt or "").replace("\n", "\\n").strip()


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
