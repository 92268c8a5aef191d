"""summary.json's ``models`` section: does each candidate serve the legacy server's model, or another one (issue 57)?

Read from the evidence, each piece kept with what it read:

- ``configured``: ``targets.<name>.model`` names another model than the legacy server's (its own ``model``, else
  the experiment's), or not; also when both are servers the kit starts, which load the model spec they are given.
  It needs no measurement and decides alone: a server of the same model whose vectors are broken (a wrong pooling
  on a random-weight test model can fall below any cosine threshold) stays the same model, its differences shown;
- ``cosine``: the candidate's document vectors have a median cosine to the legacy server's below
  ``decisions.another_model_cosine`` overall *and* in every language (one model served wrongly moves the cosine
  by hundredths, two models' vectors are unrelated: ``config/decisions.py`` says why the threshold sits there);
- ``dimensions``: the vectors have another dimension (one model has one);
- ``stated``: the model names the server states (its model list, the echoed model) share none with the legacy
  server's. A name alone does not decide (a server may call the same model anything), it backs the dimensions;
- ``tokenizer``: the documents' token counts, each server's own, differ for at least half the documents of every
  language. Shown beside the rest, it decides nothing (see :func:`_tokenizer`).

The configuration decides where there is one; otherwise another model by the cosine, or by the dimensions backed by
the stated name; the same model when the cosine says so; otherwise undetermined. :func:`model_change` is called by
one function only, ``sections/plan.py``'s ``decide_plan``, once per run (step 03 stores the plan it decided); every
step and reader takes the plan.
"""

from __future__ import annotations

from pathlib import PurePosixPath
import numpy as np

from embedswap.captures import Attempt
from embedswap.config.experiment import Experiment
from embedswap.measure.server_tokens import CAPTURE as TOKENS_FILE  # each document's tokens as the server sees them
from embedswap.measure.workload import Workload
from embedswap.models import local_copy
from embedswap.stats.vectors import rowwise_cosine
from embedswap.summary.types_models import ModelChange, ModelEvidence, ModelSource


def configured_model(experiment: Experiment, name: str) -> str:
    """The model a target serves as configured: its own ``model``, else the experiment's."""
    return experiment.targets[name].model or experiment.model.path


# servers the kit starts itself: they load the model spec they are given (targets.build_target), so the weights are
# known without measuring; an external or Kubernetes server loads its own
KIT_LOADED = ("legacy", "vllm", "dynamo", "llamacpp")


def _loads(experiment: Experiment, name: str) -> bool:
    return experiment.targets[name].kind in KIT_LOADED


def _names(experiment: Experiment, name: str) -> set[str]:
    """The names one model goes by in this experiment (spec, served name), compared without folders and case."""
    own = experiment.targets[name].model
    names = {own} if own else {experiment.model.path, experiment.model.served_name}
    return {_plain(n) for n in names if n}


def _plain(name: str) -> str:
    return PurePosixPath(str(name).split(":", 1)[-1].rstrip("/")).name.lower()


def _stated(attempt: Attempt, name: str) -> set[str]:
    """The model names a server stated during its capture (measure.identity), plain."""
    if not attempt.has(f"{name}/target.json"):
        return set()
    identity = attempt.read_json(f"{name}/target.json").get("identity") or {}
    names = list(identity.get("served_models") or []) + ([identity["model"]] if identity.get("model") else [])
    info = (identity.get("routes") or {}).get("/info")  # TEI states it there (and a capture that kept /info alone)
    if isinstance(info, dict) and info.get("model_id"):
        names.append(info["model_id"])
    return {_plain(n) for n in names if n}


def _candidate_model(experiment: Experiment, name: str, stated: set[str]) -> tuple[str | None, ModelSource]:
    """The candidate's model and where it was read: its ``targets.<name>.model``, the spec the kit loads into a
    server it starts, else the names the server stated; otherwise none (issue 64: the experiment's model is the
    legacy server's, never a name for a server that did not say what it serves)."""
    if experiment.targets[name].model or _loads(experiment, name):
        return configured_model(experiment, name), "configured"
    if stated:
        return ", ".join(sorted(stated)), "stated"
    return None, "not_stated"


def _vectors(attempt: Attempt, name: str) -> np.ndarray | None:
    path = f"{name}/doc_vectors.npy"
    return np.asarray(attempt.read_array(path, mmap=True)[0]) if attempt.has(path) else None


def _cosine(legacy: np.ndarray, candidate: np.ndarray, langs: list[str], threshold: float) -> ModelEvidence:
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        cos = rowwise_cosine(legacy, candidate)
    finite = np.isfinite(cos)
    by_language = {lang: float(np.median(cos[finite & (np.asarray(langs) == lang)]))
                   for lang in sorted(set(langs)) if np.any(finite & (np.asarray(langs) == lang))}
    median = float(np.median(cos[finite])) if finite.any() else None
    says = median is not None and median < threshold and all(v < threshold for v in by_language.values())
    return ModelEvidence(kind="cosine", says_another=bool(says), cosine_median=median, by_language=by_language,
                         threshold=threshold)


def _token_counts(attempt: Attempt, name: str) -> dict[int, int]:
    path = f"{name}/{TOKENS_FILE}"
    if not attempt.has(path):
        return {}
    return {int(d["row"]): int(d["tokens"]) for d in attempt.read_json(path).get("documents") or []
            if d.get("tokens") is not None}


def _tokenizer(attempt: Attempt, legacy: str, name: str, workload: Workload) -> ModelEvidence | None:
    """The documents' token counts, each server's own (``tokens.json``): another tokenizer where they differ for at
    least half the documents of every language. Shown, never deciding: llama.cpp serving the same MiniLM counts
    Korean otherwise (it drops vowel jamo) and English alike (ENGINE_FACTS), so one language is not enough, and a
    model with the same tokenizer (a fine-tune) counts alike."""
    old, new = _token_counts(attempt, legacy), _token_counts(attempt, name)
    rows = sorted(set(old) & set(new))
    if not rows:
        return None
    langs = [d.lang for d in workload.documents]
    by_lang: dict[str, list[bool]] = {}
    for row in rows:
        if row < len(langs):
            by_lang.setdefault(langs[row], []).append(old[row] != new[row])
    differing = {lang: round(sum(flags) / len(flags), 4) for lang, flags in sorted(by_lang.items())}
    return ModelEvidence(kind="tokenizer", says_another=bool(differing) and all(v >= 0.5 for v in differing.values()),
                         legacy=str(sum(old[r] for r in rows)), candidate=str(sum(new[r] for r in rows)),
                         differing=differing)


def model_change(experiment: Experiment, attempt: Attempt, workload: Workload, name: str) -> ModelChange:
    """One candidate's model against the legacy server's, from the evidence (see the module doc)."""
    legacy = experiment.legacy
    evidence: list[ModelEvidence] = []
    legacy_model = configured_model(experiment, legacy)
    stated = _stated(attempt, name)
    candidate_model, source = _candidate_model(experiment, name, stated)
    # the configuration decides where it names the candidate's model (an external server without ``model`` is not
    # configured by the legacy server's ``model``: issue 64)
    if source == "configured" and (experiment.targets[name].model or experiment.targets[legacy].model
                                   or _loads(experiment, legacy)):
        evidence.append(ModelEvidence(kind="configured", legacy=legacy_model, candidate=candidate_model,
                                      says_another=not (_names(experiment, name) & _names(experiment, legacy))))
    if stated:
        theirs = _stated(attempt, legacy) or _names(experiment, legacy)
        evidence.append(ModelEvidence(kind="stated", legacy=", ".join(sorted(theirs)), candidate=", ".join(sorted(stated)),
                                      says_another=not (stated & theirs)))
    old, new = _vectors(attempt, legacy), _vectors(attempt, name)
    if old is not None and new is not None:
        if old.shape[1] != new.shape[1]:
            evidence.append(ModelEvidence(kind="dimensions", legacy=str(old.shape[1]), candidate=str(new.shape[1]),
                                          says_another=True))
        elif old.shape == new.shape:
            evidence.append(_cosine(old, new, [d.lang for d in workload.documents][: len(old)],
                                    experiment.decisions.another_model_cosine))
    if (tokenizer := _tokenizer(attempt, legacy, name, workload)) is not None:
        evidence.append(tokenizer)
    said = {e.kind: e.says_another for e in evidence}  # "tokenizer" is shown, and decides nothing below
    if "configured" in said:  # said, or loaded by the kit: a broken server of the same model stays the same model
        code = "another_model" if said["configured"] else "same_model"
    elif said.get("cosine") or (said.get("dimensions") and said.get("stated")):
        code = "another_model"
    elif said.get("cosine") is False:
        code = "same_model"
    else:
        code = "undetermined"
    return ModelChange(measured=bool(evidence), code=code, legacy_model=legacy_model, candidate_model=candidate_model,
                       candidate_model_source=source,
                       local_copy=local_copy(experiment.targets[name].model) is not None, evidence=evidence)
