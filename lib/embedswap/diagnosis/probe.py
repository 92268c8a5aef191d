"""What a hypothesis is first tried on, so that the diagnosis does not grow with its sample: a few texts (or whole
batches, for batch mates) on which a variant that cannot reproduce a server is refuted without a pass over every
text (a hypothesis has to reproduce every vector), and how far a lower precision can move a vector at all.
"""

from __future__ import annotations

import numpy as np

PROBE = 16  # the texts an input-side variant is first computed on (diagnosis sized for a corpus)
# How far (an angle, radians) a lower precision may move a vector: twice the farthest measured, bf16 on the tiny
# BERT zoo (lowest cosine to fp32 0.956, 17 degrees; MiniLM and tiny Qwen3 0.9998; fp16 0.999 and above), so a
# server further than the gate plus this from every reduction of the model's own pass is no precision's doing.
DTYPE_REACH = float(np.radians(35.0))


def probe_rows(lengths: list[int], count: int) -> list[int]:
    """``count`` texts to probe a variant on, in text order: half the longest (a cut shows there), the rest spread
    evenly over the others (short texts, other languages)."""
    longest = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))[: count // 2]
    others = [i for i in range(len(lengths)) if i not in set(longest)]
    spread = [others[int(k * len(others) / (count - len(longest)))] for k in range(count - len(longest))]
    return sorted(set(longest) | set(spread))


def probe_batches(batches: list[tuple[int, int]], ids: list[list[int]], count: int) -> list[tuple[int, int]]:
    """Whole batches holding at least ``count`` texts, in text order: the batch of the longest text (the most
    padding around its mates), then the others in order."""
    longest = max(range(len(ids)), key=lambda i: len(ids[i])) if ids else 0
    chosen: list[tuple[int, int]] = []
    for span in sorted(batches, key=lambda b: not b[0] <= longest < b[1]):
        if sum(end - start for start, end in chosen) >= count:
            break
        chosen.append(span)
    return sorted(chosen)


def reach_floor(threshold: float) -> float:
    """The lowest cosine at which a reduction of the model's own pass can still be turned into a match (cosine
    >= ``threshold``) by a lower precision: the gate's angle plus :data:`DTYPE_REACH` (angles add up: triangle
    inequality on the sphere)."""
    return float(np.cos(np.arccos(np.clip(threshold, -1.0, 1.0)) + DTYPE_REACH))
