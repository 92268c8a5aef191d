"""Reason codes: why a part of the summary was not measured, language-neutral.

Every ``{"measured": false, "why": ...}`` the kit writes carries ``reason: {code, params}`` beside its English
``why``; the report words the code in each language (``[reasons]`` of ``report/catalogue/<lang>.toml``). The codes
are read off the English sentence by the patterns below: :func:`attach_reasons` (run by the migrations at load)
gives every ``why`` in those sentences its code, whichever version wrote it. A ``why``
that matches no pattern (an exception's or a server's own message) stays as recorded: it is data, not the kit's
sentence.
"""

from __future__ import annotations

import re
from typing import Any

# code -> the English sentence, {name} placeholders (the exact text the kit's summary builders write)
REASONS: dict[str, str] = {
    "section_absent": "summary.json has no such section (made by a kit from before the section existed)",
    "target_not_captured": "'{name}' was not captured in this attempt",
    "target_failed": "'{name}' failed: {error}",
    "no_document_vectors": "no document vectors for '{name}'",
    "no_document_vectors_file": "no document vectors for '{name}' (captures/{path})",
    "no_query_vectors_file": "no query vectors for '{name}' (captures/{path})",
    "vectors_missing": "vectors of '{legacy}' or '{name}' missing",
    "dimensions_differ": "dimensions differ ({legacy} vs {candidate})",
    "no_probe_captures": "no probe captures in this attempt",
    "long_input_not_probed": "the over_long_input probe was not among the contract probes",
    "latency_incomplete": "latency runs did not complete",
    "no_ablation_variants": "no ablation variants in experiment.yaml (`ablations:`)",
    "timing_not_recorded": "no step durations recorded in this attempt (steps.json has no seconds)",
    "no_matryoshka": "no `matryoshka:` variant in experiment.yaml",
    "no_matryoshka_probes": "no probe captures for '{name}' or the legacy server",
    "restore_off": "sequencing.restore_legacy is off",
    "restore_not_run": "step 02 did not restore the legacy server in this attempt",
    "parity_not_run": "step 05 (parity) has not run in this attempt",
    "parity_matrix_too_few_texts": "fewer texts than the batch size: no batch of that size to compare",
    "parity_chunked_prefill_encoder": "vLLM turns chunked prefill off for encoder (non-causal) models",
    "parity_chunked_prefill_pooling": "vLLM turns chunked prefill off for mean/CLS pooling (it needs every token's "
                                      "state at once)",
    "parity_matrix_not_configured": "the parity matrix is not configured (`parity.checks` in experiment.yaml)",
    "parity_matrix_off": "`parity.checks.{key}` is off in experiment.yaml",
    "parity_tp_opt_in": "tensor parallel 2 is opt-in (`parity.checks.tensor_parallel: true`): it starts two engine "
                        "workers, slow on a small CPU",
    "parity_tp_cpus": "tensor parallel 2 needs at least 2 CPU cores; this host has {n}",
    "parity_matrix_engine_failed": "the engine failed: {error}",
    "parity_matrix_shape_mismatch": "the vectors have shape {got} where the reference has {expected}: not "
                                    "comparable",
    "parity_matrix_no_engine": "no engine environment ({python}): build it with `make engine`",
    "parity_chunked_prefill_refused": "vLLM was asked for chunked prefill and ran without it",
    "parity_cold_start_external": "'{name}' is an external server: this run did not start it",
    "parity_cold_start_no_requests": "no workload requests captured for '{name}'",
    "no_client_prefixed_queries": "no client-prefixed query vectors for the legacy server '{name}' (captures/{path})",
    "no_query_captures": "no query captures for '{name}'",
    "capture_shape": "captures/{path} has shape {shape}, expected {expected}",
    "query_dimensions_differ": "'{name}': documents have {documents} dimensions, queries {queries}",
    "no_queries": "the workload has no queries",
    "no_qrels": "the workload has no relevance judgements (qrels)",
    "candidate_not_captured": "candidate not captured",
    "no_legacy_probe_captures": "no probe captures for the legacy server '{name}'",
    "no_shim_probes": "no candidate was probed through the shim (captures/<candidate>/shim_probes.jsonl)",
    "not_probed_through_shim": "'{name}' was not probed through the shim",
    "no_document_vectors_captured": "no document vectors captured",
    "parity_nothing_gated": "nothing to gate: no target was asked to capture document vectors (no `workload` in `capture:`) and no parity backend is configured",
    "vectors_empty": "no vectors to compare ({legacy} vs {candidate})",
    "vectors_non_finite": "{n} of {total} documents have no finite cosine (NaN/inf values or a zero vector)",
    "no_vectors": "no vectors",
    "vector_shapes_differ": "cannot compare vectors of shapes {a} and {b}",
    # what a server does differently from the model (embedswap.diagnosis.hypotheses), with the fix
    "diagnosis_pooling": "'{name}' pools with {pooling} where the model pools with {expected}: set the server's "
                         "pooling to the model's (vLLM: --pooler-config)",
    "diagnosis_dense_ignored": "'{name}' ignores the Dense module in modules.json: load the full sentence-"
                               "transformers pipeline or apply the projection client-side",
    "diagnosis_normalize_added": "'{name}' normalises vectors the model leaves unnormalised: turn normalisation off "
                                 "on the server",
    "diagnosis_normalize_missing": "'{name}' skips the model's Normalize module: turn normalisation on or "
                                   "L2-normalise client-side",
    "diagnosis_unknown": "no known cause reproduces the vectors of '{name}'",
    "diagnosis_see_above": "its cause ({cause}) is stated under \"Why the vectors differ\"",
    "diagnosis_not_run": "the diagnosis did not run (step 03 wrote no captures/diagnosis/vectors.json)",
    "diagnosis_failed": "the diagnosis of '{name}' failed: {error}",
    "diagnosis_eos_appended": "'{name}' appends the EOS token {token} the model's tokenizer does not add: embed with "
                              "the model's tokenizer settings (no extra special token)",
    "diagnosis_eos_missing": "'{name}' drops the end token {token} the model's tokenizer appends before pooling: "
                             "let the server add special tokens (or append EOS to token-id input)",
    "diagnosis_prompt_applied": "'{name}' prepends the prompt '{prompt}' to the texts: send documents without the "
                                "query prompt (input_type document) or turn the server's prompt off",
    "diagnosis_prompt_other": "'{name}' puts the prompt '{prompt}' before the queries where the model's is "
                              "'{expected}': set the server's query prompt to the model's, or prefix queries "
                              "client-side and send them without input_type",
    "diagnosis_no_query_vectors": "no server's query vectors were captured (input_type query)",
    "diagnosis_query_template_not_prefix": "the query template has text after its query placeholder: the query "
                                           "diagnosis tries prefixes only",
    "diagnosis_prompt_missing": "'{name}' embeds the texts without the prompt '{prompt}': apply the model's "
                                "prompt client-side (the shim can) or on the server",
    "diagnosis_truncation": "'{name}' truncates inputs at {limit} tokens where the model reads {expected}: raise "
                            "the server's limit (vLLM --max-model-len, legacy --max-input-tokens) or chunk long "
                            "inputs",
    "diagnosis_dtype": "'{name}' runs the model in {dtype} where the reference is {expected}: start it with "
                       "the reference's dtype (--dtype)",
    "parity_dimension_mismatch": "'{name}' gives {dim}-dimensional vectors where the reference has {reference}: "
                                 "the gate fails (a module of the model's pipeline, e.g. a Dense projection, is "
                                 "ignored or added)",
    "parity_norm_mismatch": "'{name}' gives vectors of median norm {norm} where the reference's is {reference}: "
                            "the gate fails (normalisation is on where the model has none, or off where it has "
                            "a Normalize module)",
    "parity_cosine_below": "'{name}': the lowest cosine is {cosine} (on '{worst}'), {below} of {n} below the "
                           "gate's {threshold}: the vectors point elsewhere, which no difference of length explains",
    "images_not_embedded": "{n} workload record(s) carry an image ({ids}), but no backend here embeds images (no "
                           "multimodal model runs here): text+image rows not measured: the text+image gate was not run "
                           "in this attempt",
    "no_images": "the workload has no image inputs and no multimodal model runs here",
    "parity_multimodal_failed": "the multimodal model {model} could not be served or answered: {error}",
    "parity_multimodal_server_failed": "{server} could not serve the multimodal model or answer it: {error}",
    "sweep_server_exited": "skipped: the server process had exited",
    "sweep_no_answers": "skipped: the server answered none of the article points' requests",
    # why a contract verdict was given (answers.classify's detail); {side} is "legacy" or "candidate"
    "detail_retry_hazard": "{side} answered {status} where the other side answered {other}: a retrying client "
                           "resends it forever",
    "detail_both_server_errors": "both failed with server errors ({legacy} vs {candidate})",
    "detail_rejected": "{side} rejected it ({status}) where the other answered 200",
    "detail_both_rejected_with": "both rejected it with {status}",
    "detail_both_rejected": "both rejected it ({legacy} vs {candidate})",
    "detail_format": "{legacy} vs {candidate} (same numbers once decoded)",
    "detail_equivalent": "equivalent answers",
    "detail_another_model": "the candidate serves another model: its vectors, token counts and model name differ from "
                            "the legacy server's by nature; status and shape agree",
    "detail_within_differs": "compared within each server (another model): against its own answer to `plain`, the "
                             "legacy server's answer has cosine {legacy} and the candidate's {candidate}; one server "
                             "answers this request otherwise than its plain answer, the other does not",
    "detail_both_200_but": "both 200, but {differences}",
    "index_options_failed": "the index options could not be searched: {error}",
    "index_options_too_few": "{per_fold} held-out documents per fold, no more than the top {k}: every option returns "
                             "the whole fold, so recall@10 cannot tell the options apart (a larger corpus decides)",
    "parity_no_local_model": "not measured: no local copy of the model '{model}' that '{name}' serves (the fp32 "
                             "reference is of another model)",
    "diagnosis_another_model": "'{name}' serves another model ({model}) than the legacy server ({legacy_model}): its "
                               "vectors differ by nature, not by a tokenizer, truncation or pooling of the same model",
    # issue 64: a server that does not state its model is never named with the experiment's model
    "parity_no_local_model_unstated": "not measured: '{name}' serves another model, which the server does not state "
                                      "and its `model` key in experiment.yaml does not name, so there is no local copy "
                                      "to build its reference from (the fp32 reference is of another model)",
    "diagnosis_another_model_unstated": "'{name}' serves another model than the legacy server ({legacy_model}), one "
                                        "the server does not state and its `model` key in experiment.yaml does not "
                                        "name: its vectors differ by nature, not by a tokenizer, truncation or "
                                        "pooling of the same model",
    # the parts of detail_both_200_but's {differences}, joined by "; "
    "difference_n_vectors": "{legacy} vs {candidate} vectors",
    "difference_dimensions": "{legacy} vs {candidate} dimensions",
    "difference_cosine": "cosine {cosine} between the two answers",
    "difference_cosine_undefined": "cosine undefined (a vector of length zero)",
    "figure_not_finite": "not a finite number (NaN or infinity): left out as null",
    "difference_prompt_tokens": "prompt_tokens {legacy} vs {candidate}",
    # the aspects of a difference (answers.classify)
    "detail_metadata": "same vectors, but {differences} (breaks billing and token budgets, not search)",
    "detail_not_applicable": "not applicable: the {shape} API cannot express {field}",
    "difference_cosine_threshold": "cosine {cosine} between the two answers (threshold {threshold})",
    "difference_vector_shapes": "vector shapes {legacy} vs {candidate}",
    "difference_norm_ratio": "norm ratio {ratio} (candidate / legacy L2 length: {candidate} vs {legacy}); "
                             "a dot-product index ranks these differently",
    "difference_order": "data[] out of index order",
    "difference_usage_missing": "usage missing (the legacy server counted {legacy})",
    "difference_usage_missing_counted": "usage missing (the legacy server counted {legacy}, the tokenizer counts "
                                        "{expected})",
    "difference_usage_off": "prompt_tokens {legacy} vs {candidate}: the candidate is off by {off} tokens from the "
                            "tokenizer's count ({expected})",
    "difference_model": "echoed model {legacy} vs {candidate}",
    # why the client shim chose each setting (shim.ShimConfig.from_probes; `reason_codes` beside `reasons`)
    "shim_dimensions_rejected": "the server rejected `dimensions` ({answers}); the shim drops it and cuts + "
                                "renormalises the vectors itself",
    "shim_dimensions_ignored": "the server ignored `dimensions: {asked}` (answered {dim} values); the shim cuts + "
                               "renormalises the vectors itself",
    "shim_dimensions_honoured": "the server honours `dimensions`; passed through",
    "shim_dimensions_alike": "the server answers `dimensions` as the legacy server does; passed through",
    "shim_dimensions_not_probed": "not probed; the shim emulates `dimensions` (safe default)",
    "shim_query_applied": "the server applies the query prompt itself ({findings}); passed through",
    "shim_query_prepended": "{findings}: the shim drops input_type/instruction and puts the query prompt in the text",
    "shim_finding_rejected": "{probe}: answered {status}",
    "shim_finding_verdict": "{probe}: {verdict} ({detail})",
    "shim_finding_unknown": "{probe}: 200, not compared with the legacy server",
    "shim_finding_none": "not probed",
    "shim_truncate_stated": "the server answered {status} to an over-long input; the shim truncates to {limit} tokens "
                            "(the limit stated in the server's error) with the model's tokenizer",
    "shim_truncate_configured": "the server answered {status} to an over-long input; the shim truncates to {limit} "
                                "tokens (the configured limit (the error did not state one)) with the model's "
                                "tokenizer",
    "shim_truncate_not_needed": "the server accepted an over-long input (it truncates itself)",
    "shim_truncate_alike": "the server answered {status} to an over-long input, as the legacy server did; passed "
                           "through",
    "shim_truncate_not_probed": "not probed; truncating to the configured limit ({limit})",
    "shim_model_override": "the server answered {status} to an unknown `model` (the legacy server ignored it); the "
                           "shim always sends '{name}'",
    "shim_no_retry_list": "{items}",
    "shim_no_retry_status": "{status} answered a client error ({probes}): never retried",
    "shim_reject_empty": "the legacy server rejected an empty string ({status}) where the server embeds it; the shim "
                         "rejects it with 400",
    "shim_force_float": "the server answers base64 when asked; the shim asks for floats",
    "shim_encoding_alike": "the server answers `encoding_format` as the legacy server does; passed through",
    "shim_renormalise": "the server's vectors are not unit length ({probes}) where the legacy server's are; the shim "
                        "re-normalises every vector (L2)",
    # what the shim did to one request (its `rewrites`)
    "rewrite_model": "model {old} -> {new}",
    "rewrite_dropped": "dropped {name}",
    "rewrite_query_prompt": "query prompt prepended in the text",
    "rewrite_dimensions": "dropped dimensions (emulated: slice + L2 renormalise)",
    "rewrite_encoding": "encoding_format {old} -> 'float'",
    "rewrite_truncated": "{n} input(s) truncated to {limit} tokens",
    "rewrite_not_json": "body not a JSON object: sent as is",
    "rewrite_renormalised": "vectors re-normalised (L2)",
    "shim_usage_server": "`usage` as the server sent it (null where it sent none): the shim never makes up a count",
    "shim_usage_counted": "`usage` counted by the shim with the model's tokenizer where the server sends none "
                          "(labelled so): it matches the legacy server's count on all {compared} probes captured",
    "shim_usage_count_differs": "`usage` as the server sent it, though counting was asked: the model's tokenizer "
                                "counts {counted} where the legacy server counted {legacy} ({probe}; {n} of "
                                "{compared} probes differ)",
    "shim_usage_unverified": "`usage` as the server sent it, though counting was asked: no legacy probe captures "
                             "with both counts to check the tokenizer's count against",
    "rewrite_shape": "said in the {shape} shape at {path}, answered in OpenAI's",
    "rewrite_usage_counted": "usage counted by the shim (model tokenizer)",
    # vectors that depend on batch mates (diagnosis.hypotheses, BATCHINGS)
    "diagnosis_batch_mask_ignored": "'{name}' ignores the attention mask: its vectors include the padding of "
                                    "their batch, so they depend on batch mates; pass the attention mask to the "
                                    "model and the pooling",
    "diagnosis_batch_padding_flipped": "'{name}' pads its batches on the other side than the model's (the "
                                       "padding shifts the positions): its vectors depend on batch mates; pad on "
                                       "the model's side",
    "diagnosis_batch_padding_flipped_position": "'{name}' pads its batches on the other side than its pooling "
                                                "assumes (it pools a padding token): its vectors depend on batch "
                                                "mates; pad on the model's side or pool with the attention mask",
    # the reference's witnesses (parity.witnesses)
    "witness_batch_dependent": "{name} differs from itself run the other way ({other}, lowest cosine {cos_min}): "
                               "its vectors depend on batch mates (padding side, a pooling at a fixed position, "
                               "an attention mask); left out",
    "witness_disagrees": "{name} disagrees with the other witnesses (closest lowest cosine {cos_min}); left out",
    "witness_failed": "{name} could not run: {error}",
    # the real input limit (diagnosis.truncation): a server cutting inputs at its own length
    "diagnosis_truncation_words": "'{name}' cuts its inputs at about {limit} words ({tokens} tokens) where the "
                                  "model reads {expected} tokens: cut long inputs client-side to that limit, or "
                                  "use a server that embeds the whole input",
    "diagnosis_truncation_characters": "'{name}' cuts its inputs at about {limit} characters ({tokens} tokens) "
                                       "where the model reads {expected} tokens: cut long inputs client-side to "
                                       "that limit, or use a server that embeds the whole input",
    "diagnosis_truncation_tokens": "'{name}' cuts its inputs at {limit} tokens where the model reads {expected}: "
                                   "cut long inputs client-side to that limit, or use a server that embeds the "
                                   "whole input",
    "diagnosis_truncation_usage": "its own usage agrees: {prompt_tokens} prompt tokens for the over-long probe, "
                                  "{expected} when cut that way",
    "diagnosis_truncation_usage_differs": "its own usage does not agree: {prompt_tokens} prompt tokens for the "
                                          "over-long probe, {expected} when cut that way",
    "diagnosis_no_truncation": "no truncation of the inputs reproduces the vectors of '{name}' either",
    # a server whose tokenizer differs from the model's, per language (embedswap.diagnosis.tokenization)
    "diagnosis_tokenizer_drops": "the tokenizer of '{name}' splits {lang} text into other tokens than the model's: "
                                 "{texts} of {of} documents in that language differ (e.g. {tokens} tokens where the "
                                 "model's tokenizer makes {expected}); it drops tokens the model's tokenizer "
                                 "keeps, most often {pieces} ({script}), and those documents' vectors differ "
                                 "(median cosine {cosine}): send the model's token ids, or use a server with the "
                                 "model's own tokenizer",
    "diagnosis_tokenizer_differs": "'{name}' counts other tokens than the model's tokenizer for {lang} text: {texts} "
                                   "of {of} documents in that language differ (e.g. {tokens} tokens where the "
                                   "model's tokenizer makes {expected}), and those documents' vectors differ (median "
                                   "cosine {cosine}) where the others agree: its tokenizer is not the model's; send "
                                   "the model's token ids, or use a server with the model's own tokenizer",
    "diagnosis_context_longer": "'{name}' reads up to {tokens} tokens of long {lang} documents ({texts} of "
                                "them) where the model's pipeline cuts at {limit}: its context is longer, so those "
                                "vectors differ (lowest cosine {cosine}); cap the server's input at the model's "
                                "limit, or cut long inputs client-side",
    "diagnosis_tokenizer_reproduced": "the model run on the tokens of '{name}' reproduces its vectors ({texts} "
                                      "documents, lowest cosine {cosine}): the tokens are the whole difference",
    # an answer checked against its own request (measure.request_checks)
    "detail_nondeterministic": "the {side} answered {differing} of {sent} identical requests otherwise (lowest "
                               "cosine between them {repeat_cosine}; unusable: {kinds}): an intermittent fault, not a "
                               "systematic difference",
    "detail_empty_200": "the candidate answered 200 without embeddings ({problem}); the legacy server answered {legacy}",
    "detail_legacy_empty_200": "the legacy server answered 200 without embeddings; the candidate answered {status}",
    "detail_format_asked": "the answer is not in the encoding asked for: {differences}",
    "difference_request_no_embeddings": "no embeddings in the body: {error}",
    "difference_request_index": "data[].index not complete and unique: {indices}",
    "difference_request_count": "{answered} vectors for {asked} inputs",
    "difference_request_model": "echoed model {echoed} where {asked} was asked for",
    "difference_request_encoding": "`encoding_format` {asked} asked, {answered} answered",
    "difference_request_usage_cut": "usage counts {used} tokens where a cut at the model's limit of {limit} keeps "
                                    "{counted}: the server embedded a shorter input",
    "difference_request_usage_cut_away": "usage counts {used} tokens, more than the model's limit of {limit}: it "
                                         "counts tokens that were cut away",
    # the index part (embedswap.index): the searches on the vector store
    "vector_store_lost": "the vector store went away mid-run: {error}",
    "vector_store_failed": "the vector store could not be used: {error}",
    "index_dimensions_too_many": "{dim} dimensions exceed pgvector's limit of {max} for an HNSW index",
    "index_off": "the index part is off in experiment.yaml (`index.enabled: false`)",
    "index_not_run": "step 03 did not search the index in this attempt",
}
# a parameter that holds a list of other reasons (joined by "; " in English), and the codes it may hold
LIST_PARAMS = {"differences": "difference_", "findings": "shim_finding_", "items": "shim_no_retry_status"}
# prefixes of codes that only occur inside another reason, never alone
INNER = ("difference_", "shim_finding_", "shim_no_retry_status")
# which key's English sentence gets which reason key beside it
REASON_KEYS = {"why": "reason", "detail": "detail_reason", "sweep_note": "sweep_reason"}


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)\}", template)
    # a plain value never holds "; " (that joins the parts of a list); a list or a verdict's detail may
    wide = set(LIST_PARAMS) | {"detail", "error"}
    regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" if p in wide else f"(?P<{p}>(?:(?!; ).)+?)"
                    for i, p in enumerate(parts))
    return re.compile(f"^{regex}$", re.S)


# most specific first: a longer fixed text wins over a shorter one that would also match
_PATTERNS = sorted(((code, _pattern(text)) for code, text in REASONS.items()),
                   key=lambda item: -len(re.sub(r"\{\w+\}", "", REASONS[item[0]])))


def reason_of(why: str, prefix: str = "") -> dict[str, Any] | None:
    """``{code, params}`` of an English reason sentence, or None for a free text. A list parameter
    (:data:`LIST_PARAMS`) becomes a list of reasons; one part that is not a known sentence makes it a free text."""
    for code, pattern in _PATTERNS:
        if not code.startswith(prefix) or (not prefix and code.startswith(INNER)):
            continue
        match = pattern.match(why.strip())
        if not match:
            continue
        params: dict[str, Any] = match.groupdict()
        for name, part_prefix in LIST_PARAMS.items():
            if name in params:
                params[name] = _split_reasons(params[name], part_prefix)
        if isinstance(params.get("detail"), str):  # a verdict's detail inside another sentence
            params["detail"] = reason_of(params["detail"]) or params["detail"]
        if any(name in params and params[name] is None for name in LIST_PARAMS):
            continue  # a part is not a known sentence: try the next pattern, else it is a free text
        return {"code": code, "params": params}
    return None


def _split_reasons(text: str, prefix: str) -> list[dict[str, Any]] | None:
    """A "; "-joined list of reasons (a part may itself contain "; "), or None when it is not one."""
    parts = text.split("; ")
    best: list[list[dict[str, Any]] | None] = [[]] + [None] * len(parts)
    for end in range(1, len(parts) + 1):
        for start in reversed(range(end)):  # the shortest last part first: a list of many parts wins
            if best[start] is None:
                continue
            found = reason_of("; ".join(parts[start:end]), prefix)
            if found:
                best[end] = [*best[start], found]  # type: ignore[misc]
                break
    return best[-1]


def is_reason(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("code"), str)


def explain(code: str, **params: Any) -> str:
    """The English sentence of a code (what ``why`` holds). A parameter may itself be a reason, or a list of
    reasons (joined by "; ")."""
    words = {}
    for name, value in params.items():
        if is_reason(value):
            value = explain(value["code"], **value.get("params", {}))
        elif isinstance(value, list) and value and all(is_reason(v) for v in value):
            value = "; ".join(explain(v["code"], **v.get("params", {})) for v in value)
        words[name] = value
    return REASONS[code].format(**words)


def reason(code: str, **params: Any) -> dict[str, Any]:
    """``{code, params}`` (checked against :data:`REASONS`)."""
    if code not in REASONS:
        raise KeyError(f"unknown reason code {code!r}")
    return {"code": code, "params": params}


def not_measured(code: str, **params: Any) -> dict[str, Any]:
    """A part that was not measured: ``{measured: false, why, reason}``."""
    return {"measured": False, "why": explain(code, **params), "reason": {"code": code, "params": params}}


def attach_reasons(node: Any) -> None:
    """Give every ``why``, verdict ``detail`` and ``sweep_note`` in a summary its reason code where it has one,
    in place (:data:`REASON_KEYS`)."""
    if isinstance(node, dict):
        for text_key, reason_key in REASON_KEYS.items():
            text = node.get(text_key)
            if isinstance(text, str) and text and reason_key not in node:
                found = reason_of(text)
                if found:
                    node[reason_key] = found
        # a shim config's reasons per setting, and a shim answer's rewrites
        if isinstance(node.get("reasons"), dict) and "reason_codes" not in node:
            codes = {k: reason_of(v) for k, v in node["reasons"].items() if isinstance(v, str)}
            node["reason_codes"] = {k: v for k, v in codes.items() if v}
        if isinstance(node.get("rewrites"), list) and "rewrite_reasons" not in node:
            node["rewrite_reasons"] = [reason_of(v) if isinstance(v, str) else None for v in node["rewrites"]]
        for value in list(node.values()):
            attach_reasons(value)
    elif isinstance(node, list):
        for value in node:
            attach_reasons(value)
