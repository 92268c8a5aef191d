"""The legacy server's model: its settings and the :class:`Embedder` (tokenise, forward, pool, normalise under one
lock). Apart from the app (:mod:`embedswap.legacy.server`) so that what only embeds (the diagnosis, the parity
reference) does not import the web stack: a cold import of this module takes 1.6-1.7 s here against 1.9-2.1 s
for the server module (three runs each, 2026-12-03), torch and transformers being most of both.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Any, Literal

import torch
from transformers import AutoModel, AutoTokenizer

from embedswap.config.base import DEFAULT_QUERY_TASK, DEFAULT_QUERY_TEMPLATE
from embedswap.legacy.mistakes import apply_to_pipeline, drop_end_token
from embedswap.legacy.pipeline import (DTYPES, EmbedResult, _load_dense, _model_max_length,
                                       read_sentence_transformers_config, sentence_vectors)
from embedswap.models import local_model_folder, resolve_model_path


class RequestError(Exception):
    """A client error, answered in OpenAI's error shape."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code


PaddingSide = Literal["left", "right"]
FaultMode = Literal["none", "http500", "hang", "malformed", "nan", "wrong-length", "reorder", "crash",
                    "ignore-dimensions"]  # the last: answers full-length vectors whatever `dimensions` asks (common)
FAULT_MODES: tuple[str, ...] = FaultMode.__args__  # type: ignore[attr-defined]

# Inputs of one request go through the model in slices of this size (sentence-transformers' default batch size):
# it bounds activation memory for a 2048-input request without changing the vectors.
MICRO_BATCH = 32


@dataclass(frozen=True)
class LegacySettings:
    """Everything the server needs; the CLI flags map one to one onto these fields."""

    model: str
    served_model_name: str | None = None  # None: echo the --model spec, as vLLM does
    use_lock: bool = True
    max_input_tokens: int = 1024
    query_task: str = DEFAULT_QUERY_TASK
    # None: the model's own sentence-transformers query prompt when it has one, else DEFAULT_QUERY_TEMPLATE.
    query_prompt_template: str | None = None
    dtype: str = "float32"
    device: str = "cpu"
    max_inputs: int = 2048
    max_body_bytes: int = 8 * 1024 * 1024
    fault: str = "none"
    fault_after: int = 0
    # fault emulation for the diagnosis zoo (embedswap.legacy.mistakes): one pipeline mistake made on purpose
    emulate_mistake: str = "none"

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.model


class Embedder:
    """The model, its tokenizer and the global lock; ``embed`` is what the worker thread runs."""

    def __init__(self, settings: LegacySettings) -> None:
        if settings.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}")
        path = resolve_model_path(settings.model)
        st = read_sentence_transformers_config(local_model_folder(path))
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path, dtype=DTYPES[settings.dtype]).to(settings.device).eval()
        self.device = settings.device
        self.pooling = st.pooling
        self.normalize = st.normalize
        self.dense = _load_dense(local_model_folder(path), st.dense, settings.device)
        # Decoder models pooled on the last token need it at a fixed position: pad on the left.
        self.padding_side: PaddingSide = "left" if st.pooling == "lasttoken" else "right"
        self.tokenizer.padding_side = self.padding_side
        if self.tokenizer.pad_token is None:  # decoder tokenizers often lack one; the mask hides it anyway
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.pad_id = int(self.tokenizer.pad_token_id or 0)
        self.vocab_size = int(self.model.get_input_embeddings().num_embeddings)
        self.max_model_len = _model_max_length(st.max_seq_length, self.tokenizer, self.model)
        self.limit = min(settings.max_input_tokens, self.max_model_len)
        self.query_prefix = st.query_prefix if settings.query_prompt_template is None else None
        self.query_template = settings.query_prompt_template or DEFAULT_QUERY_TEMPLATE
        self.query_template.format(task="", query="")  # fail at start-up, not on the first query
        self.query_task = settings.query_task
        # The article's server: one request in the model at a time. --no-lock keeps only the tokenizer guarded,
        # because a Rust tokenizer used from several threads at once can fail with "Already borrowed".
        self.lock: contextlib.AbstractContextManager[Any] = (
            threading.Lock() if settings.use_lock else contextlib.nullcontext()
        )
        self.tokenizer_lock = threading.Lock()
        self.mistake = settings.emulate_mistake
        apply_to_pipeline(self, self.mistake)
        # Warm-up: the first forward pass pays lazy initialisation; it also tells the native dimension.
        self.dim = int(self.embed(["warm-up"]).vectors.shape[1])

    def query_text(self, text: str, task: str | None) -> str:
        # A model's own sentence-transformers prompt is a fixed prefix: it has no slot for a task text, so an
        # explicit task (the `instruction` field) goes through the template instead of being dropped silently.
        if self.query_prefix is not None and task is None:
            return self.query_prefix + text
        return self.query_template.format(task=self.query_task if task is None else task, query=text)

    def embed(self, inputs: list[str] | list[list[int]]) -> EmbedResult:
        """Tokenise (or pad token ids), forward, pool, normalise; under the global lock."""
        with self.lock, torch.inference_mode():  # inference_mode is per thread: enter it in the worker
            vectors: list[torch.Tensor] = []
            tokens = 0
            for start in range(0, len(inputs), MICRO_BATCH):
                batch = self._encode(inputs[start : start + MICRO_BATCH])
                tokens += int(batch["attention_mask"].sum())
                batch = {name: tensor.to(self.device) for name, tensor in batch.items()}
                hidden = self.model(**batch).last_hidden_state
                pooled = sentence_vectors(hidden, batch["attention_mask"], self.pooling, self.padding_side,
                                          self.dense, self.normalize)
                vectors.append(pooled.cpu())
        return EmbedResult(torch.cat(vectors), tokens)

    def _encode(self, chunk: list[str] | list[list[int]]) -> dict[str, torch.Tensor]:
        if isinstance(chunk[0], str):
            with self.tokenizer_lock:
                encoded = self.tokenizer(
                    chunk, padding=True, truncation=True, max_length=self.limit, return_tensors="pt"
                )
            batch = dict(encoded)
            if self.mistake == "drop-end-token":  # fault emulation: the same ids less the appended end token
                rows = [ids[m.bool()].tolist() for ids, m in zip(encoded["input_ids"], encoded["attention_mask"])]
                batch = self._pad_ids(drop_end_token(rows))
        else:
            batch = self._pad_ids([ids[: self.limit] for ids in chunk])  # type: ignore[index]
        if int(batch["attention_mask"].sum(dim=1).min()) == 0:
            raise RequestError(400, "an input produced no tokens", param="input")
        return batch

    def _pad_ids(self, rows: list[list[int]]) -> dict[str, torch.Tensor]:
        """Token-id inputs are embedded as given (no special tokens added), padded like the tokenizer would."""
        width = max(len(row) for row in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            span = slice(width - len(row), width) if self.padding_side == "left" else slice(0, len(row))
            ids[i, span] = torch.tensor(row, dtype=torch.long)
            mask[i, span] = 1
        return {"input_ids": ids, "attention_mask": mask}
