"""Parity: every backend's vectors against a golden reference, with a pass/fail gate per modality.

The package's modules:

- :mod:`embedswap.parity.gate`: the golden reference (fp32 sentence-transformers on the CPU), the thresholds, the
  gate (:func:`gate`, :func:`gate_by_modality`) and its rows;
- :mod:`embedswap.parity.backends`: :class:`OpenAIBackend` (a running ``/v1/embeddings`` server, batches of 8),
  :class:`TransformersBackend` (plain transformers with the model's own pooling: the legacy server's way);
- :mod:`embedswap.parity.vllm`: :class:`VllmOfflineBackend`, vLLM's offline pooling runner in the engine
  environment; :mod:`embedswap.parity.vllm_configs`: :func:`run_vllm_configs` (several engine configurations in one
  process, each torn down before the next) and :func:`run_vllm_jobs` (several jobs in one engine start);
- :mod:`embedswap.parity.matrix` / :mod:`embedswap.parity.checks`: article 003's matrix (batch invariance, long
  context with chunked prefill on and off, tensor parallel, cold start).
"""
