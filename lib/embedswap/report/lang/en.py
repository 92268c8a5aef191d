"""English: the report's words. Every language module has the same names and keys (see ko.py)."""

from __future__ import annotations

from typing import Any

LABELS = {True: "measured", False: "not measured", None: "unconfirmed"}
PARTLY = "partly measured"
UNIT_GAP = " "  # 384 dims
VERSION = "version"

TERMS: dict[str, Any] = {
    "item": "Item", "target": "Server", "lang": "Language", "probe": "Request", "verdict": "Verdict",
    "status": "Status", "legacy_role": "legacy", "candidate_role": "candidate",
    "dimension": "Dimension", "first_l2": "Length of the first vector (L2)",
    "token_total": "Token total of the {n} documents",
    "cosine_mmm": "Per-document cosine vs legacy, min · median · max", "repeat_min": "Lowest cosine across repeats",
    "index_order": "Response index order", "reference": "reference", "yes": "ok", "no": "wrong",
    "dims_unit": "dims", "tokens_unit": "tokens", "no_answer": "no answer",
    "compared_with": "reference: legacy's {probe}",
    "tokenizer_match": "Equals the model tokenizer's count ({n}, offline)",
    "instruction": {
        "server": "Server", "request": "Request", "tokens": "Prompt tokens ({n} queries)",
        "tokenizer": "Tokenizer's count", "cosine": "Cosine to the reference, min · median",
        "reading": "Reading", "status": "Status", "cosine_one": "Cosine to the reference (first query)",
        "tokens_one": "Prompt tokens",
        "variants": {"server_instruction": "`input_type: \"query\"` (the server adds the prompt)",
                     "client_prefixed": "prompt written into the text by the client",
                     "plain": "no instruction"},
        "readings": {"applied": "prompt applied (matches the model card's format)",
                     "ignored": "field ignored (same as no instruction)",
                     "differs": "another vector (neither the model card's format nor no instruction)",
                     "no-instruction": "no instruction (differs from the model card's format)",
                     "no-instruction-equals-reference": "no instruction, yet equal to the reference"},
    },
    "seq_p50": "Seq p50 (ms)", "seq_p99": "Seq p99 (ms)", "conc_p50": "c{c} p50 (ms)", "conc_p99": "c{c} p99 (ms)",
    "conc_rate": "c{c} throughput (docs/s)", "per_repeat": "Throughput per repeat (docs/s)",
    "errors": "Errors (failed/requests)", "point": "Point", "p50": "p50 (ms)", "p99": "p99 (ms)",
    "rate": "Throughput (docs/s)", "backend": "Backend", "dtype": "dtype", "device": "Device",
    "modality": "Input", "n": "n", "cos_min": "cos min", "cos_median": "cos median", "cos_max": "cos max",
    "threshold": "Threshold", "pass": "pass", "fail": "fail", "step": "Step", "updated": "Updated",
    "problems": "Problems", "start_s": "Start-up (s)", "rss_start": "RSS after start (MiB)",
    "rss_end": "RSS at end (MiB)", "measured_s": "Measuring time (s)", "version": "Version", "kind": "Kind",
    "label": "Label", "article_legacy": "Article: legacy server",
    "article_candidate": "Article: Dynamo embedding worker",
    "run_side": "This run: {name}", "article_row": "Article: {name}",
    "docs": "documents", "queries": "queries", "batch": "batch size", "repeats": "repeats",
    "mean_tokens": "mean tokens per document", "languages": "documents per language", "request": "Request",
    "all_failed": "all {n} requests failed", "failed_some": "failed {f}/{n}",
    "not_meaningful": "not meaningful (random weights)",
    "no_section": "summary.json has no such section (made by a kit from before the section existed)",
    "failed_short": "failed",
    "on": "on", "off": "off", "lock": "Global lock", "rss_peak": "RSS peak (MiB)", "ablation_mark": "ablation",
    "concurrency": "Concurrency", "sweep_skipped": "sweep skipped: {why}",
    "rss_unreadable_external": "external server: its memory cannot be read",
    "rss_unreadable": "no memory sample",
    "source_kind": "Source", "kind_server": "server", "kind_offline": "offline backend",
    "non_finite": "— ({n} non-finite vectors)", "text_image": "(text+image)",
    "variant": "Variant", "documents_of": "Documents", "queries_as": "Queries", "ndcg": "nDCG@10",
    "d_ndcg": "Δ nDCG@10", "recall": "recall@5", "d_recall": "Δ recall@5", "overlap": "top-5 overlap",
    "judged": "Judged queries",
    "variants": {"legacy": "legacy as today", "naive": "address swap only", "shim": "through the shim"},
    "queries_how": {"legacy": "`input_type: query` (the server adds the prompt)",
                    "naive": "`input_type: query` (the same request)",
                    "shim": "prompt prepended as text by the client"},
    "ranking_defs": [
        "nDCG@10: ranking quality of the top 10 with graded relevance (2 = answers, 1 = partly, 0 = not judged): "
        "gain 2^rel−1, discount log2(rank+1), normalised by the ideal order of the same judgements.",
        "recall@5: the share of a query's relevant documents (grade ≥ 1) found in its top 5.",
        "top-5 overlap: Jaccard index of the top-5 set against the legacy server's top 5, averaged over queries; "
        "1.000 means the same five documents for every query.",
    ],
    "rank_same": "same ranking as legacy",
    "rank_differs": "differs from legacy",
    "rank_short": "{state} (Δ nDCG@10 {d_ndcg}, top-5 overlap {overlap})",
    "rank_line": "{state} (Δ nDCG@10 {d_ndcg}, Δ recall@5 {d_recall}, top-5 overlap {overlap}; the top 5 changed "
                 "for {changed} of {queries} queries)",
    "rank_decision": {
        "client": "Changing only the address changes the ranking without any error; with the client change (the "
                  "prompt as text, what `embedswap.shim` does) it comes back to the legacy ranking. Change the "
                  "client; on this workload the ranking does not call for re-indexing.",
        "none": "The ranking stays the legacy one either way: on this workload the ranking calls for neither a "
                "client change nor re-indexing.",
        "reindex": "Even with the client change the ranking differs from legacy: the candidate's vectors do not "
                   "rank like the legacy ones. Do not mix old and new vectors; re-index with the candidate and check "
                   "search quality again before switching.",
        "shim_only": "Through the shim the ranking stays the legacy one, so on this workload the ranking does not "
                     "call for re-indexing; the address-swap-only ranking was not measured, so whether the client "
                     "could stay as it is is not decided here.",
        "shim_missing": "The ranking through the shim is {label} ({why}), so whether to re-index is not decided "
                        "here.",
    },
    "before_after": "verdict before → after", "through_shim": "answer through the shim",
    "settings": {"true": "on", "false": "off"},
    "legacy_side": "a legacy-side failure (status {status}) that goes away with the swap",
    "shim_done": "`embedswap.shim` does this (verdict through the shim: same).",
    "shim_left": "remains after `embedswap.shim`: {items}.",
    "not_probed": "not probed through the shim (no captures/{name}/shim_probes.jsonl)",
    "sections": {"vectors": "Vectors", "contract": "API contract", "latency": "Latency and throughput",
                 "parity": "Numeric parity", "targets": "Servers", "environment": "Environment",
                 "ranking": "Search ranking", "shim": "Migration shim", "ablation": "Lock ablation"},
    "verdicts": {
        "same": "Equivalent answers (same status class; vectors within the threshold).",
        "silent-divergence": "Both answered 200 but the vectors or fields differ: no error, only worse search, "
                             "the most dangerous class.",
        "loud-failure": "One side rejected the request (4xx) where the other answered: visible at once, "
                        "easy to fix.",
        "retry-hazard": "A client error answered with 5xx (or no answer): a retrying client resends a request "
                        "that can never succeed.",
        "format-difference": "The same numbers in another shape (e.g. a base64 string instead of a float array).",
    },
    "changes": {
        "drop_dimensions": "Drop `dimensions` from the request; where fewer dimensions are needed, slice "
                           "client-side (first N) and re-normalise.",
        "prepend_instruction": "Prepend the query instruction as text instead of sending a field (`input_type`, "
                               "`instruction`).",
        "truncate": "Truncate long inputs client-side{limit}.",
        "truncate_limit": " (the legacy server cut them at {n} tokens)",
        "decode_encoding": "State `encoding_format` and check the answer's shape: decode base64, or request "
                           "`float`.",
        "cap_batch": "Split large requests into smaller batches (this experiment sent batches of {batch}).",
        "validate_input": "Reject empty or mistyped input in the client before sending it.",
        "send_text": "Send text, not token ids.",
        "model_name": "Send exactly the served model name in `model`.",
        "strip_whitespace": "Strip leading/trailing whitespace client-side.",
        "normalise_unicode": "Normalise text client-side (NFC, drop zero-width characters).",
        "batch_invariance": "Vectors depend on the batch they were computed in: batch index and queries alike, or "
                            "rebuild the index.",
        "plain_differs": "The plain request already answers differently: resolve that before anything else.",
        "review": "Review the difference on `{probe}` ({verdict}).",
        "no_retry_5xx": "Do not retry 5xx (or no answer) for these requests: they are client errors, and "
                        "resending fails again.",
    },
}
