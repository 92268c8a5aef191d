"""Which documents step 03 diagnoses: a sample sized like ``parity.sample``, never the whole corpus.

Every hypothesis is a forward pass over the diagnosed texts, so at corpus scale (20,000 documents) diagnosing all of
them took longer than capturing them. The cause of a difference shows in the documents that differ most, and must
hold across languages; so the sample is the documents with the lowest cosines between each candidate and the legacy
server (a quarter of the sample, shared among the candidates), filled up with a seeded sample stratified by
language (``measure.workload.stratified_sample``, the parity step's). A corpus no larger than the sample is
diagnosed whole.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from embedswap.stats.vectors import rowwise_cosine
from embedswap.measure.workload import SAMPLE_SEED, sample_record, stratified_sample

LOWEST_SHARE = 4  # a quarter of the sample: the lowest cosines
METHOD = "lowest cosines + stratified by language"


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-row cosine of two (n, d) arrays; -inf where a row is not finite or of length zero (diagnosed first)."""
    if np.shape(a) != np.shape(b):
        return np.full(len(a), -np.inf)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        cos = rowwise_cosine(a, b)
    return np.where(np.isfinite(cos), cos, -np.inf)


def lowest(cosines: Sequence[np.ndarray], count: int) -> list[int]:
    """The ``count`` rows with the lowest cosines, taken in turn from each candidate's cosines (stable order)."""
    if count <= 0 or not cosines:
        return []
    orders = [list(np.argsort(c, kind="stable")) for c in cosines]
    chosen: list[int] = []
    seen: set[int] = set()
    for rank in range(max(len(o) for o in orders)):
        for order in orders:
            if rank < len(order) and int(order[rank]) not in seen:
                seen.add(int(order[rank]))
                chosen.append(int(order[rank]))
                if len(chosen) >= count:
                    return chosen
    return chosen


def diagnosis_sample(langs: Sequence[str], cosines: Sequence[np.ndarray], size: int,
                     seed: int = SAMPLE_SEED) -> tuple[list[int], dict[str, object]]:
    """(row indices in file order, the summary's record of them) for a corpus of ``len(langs)`` documents."""
    n = len(langs)
    if size >= n:
        whole = list(range(n))
        return whole, {**sample_record(langs, whole, METHOD), "lowest": 0}
    worst = lowest(cosines, size // LOWEST_SHARE)
    taken = set(worst)
    rest = [i for i in range(n) if i not in taken]
    drawn = stratified_sample([langs[i] for i in rest], size - len(worst), seed)
    chosen = sorted(set(worst) | {rest[i] for i in drawn})
    return chosen, {**sample_record(langs, chosen, METHOD), "seed": seed, "lowest": len(worst)}
