"""One figure that cannot be computed must not take the summary down: a NaN or an infinity becomes null, and its
place is recorded (``summary["non_finite"]``) so the report lists it as unconfirmed instead of hiding it."""

from __future__ import annotations

import math
from typing import Any


def null_non_finite(node: Any, path: str = "") -> tuple[Any, list[str]]:
    """(a copy of ``node`` with every non-finite float replaced by None, the dotted paths of those floats)."""
    if isinstance(node, float) and not math.isfinite(node):
        return None, [path]
    if isinstance(node, dict):
        out, found = {}, []
        for key, value in node.items():
            out[key], inner = null_non_finite(value, f"{path}.{key}" if path else str(key))
            found += inner
        return out, found
    if isinstance(node, list):
        items, found = [], []
        for i, value in enumerate(node):
            item, inner = null_non_finite(value, f"{path}.{i}" if path else str(i))
            items.append(item)
            found += inner
        return items, found
    return node, []
