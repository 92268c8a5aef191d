"""One stored figure as the post states it (issue 63): its value, the interval printed beside it (or none), the n it
rests on, and what that interval is, so that the label a sentence puts on an interval is read from the figure and
never chosen apart from it.

``within_run``: the ratio's own 95 % bootstrap interval over this run's requests
(``decisions.latency.ratios.<c>.intervals``); ``widened_by_drift``: that interval widened by the host drift bound,
the one the latency verdicts are decided on (``decisions.latency.ratios.<c>.widened``, at the same 95 %);
``paired_t``: the (1 - 2 alpha) interval of the per-query deltas a ranking verdict is decided on; ``bootstrap``: a
paired bootstrap of per-query deltas (``decisions.ranking...tests``); ``none``: no interval (too few, or a figure
without one)."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from embedswap.summary.types_common import Strict

IntervalKind = Literal["within_run", "widened_by_drift", "paired_t", "bootstrap", "none"]
# what the figure is, and so how it prints: the decimals the report prints it with (report/format.py's kinds)
Unit = Literal["ratio", "delta", "score", "ms", "rate", "cos4", "count"]
DECIMALS: dict[str, int] = {"ratio": 2, "delta": 3, "score": 3, "ms": 1, "rate": 1, "cos4": 4, "count": 0}


class Estimate(Strict):
    """A figure with the interval its label names. ``interval`` is ``none`` exactly when ``low``/``high`` are; the
    drift ``widened_by`` is set exactly when the interval is ``widened_by_drift``."""
    value: float | None = None
    low: float | None = None
    high: float | None = None
    n: int | None = None
    interval: IntervalKind = "none"
    unit: Unit = "ratio"
    widened_by: float | None = None  # the host drift bound the interval was widened by

    @model_validator(mode="after")
    def _labelled(self) -> Estimate:
        if (self.interval == "none") != (self.low is None or self.high is None):
            raise ValueError(f"an interval labelled {self.interval!r} with bounds {self.low}, {self.high}")
        if (self.interval == "widened_by_drift") != (self.widened_by is not None):
            raise ValueError(f"an interval labelled {self.interval!r} widened by {self.widened_by}")
        return self

    def printed(self) -> tuple[float | None, float | None, float | None]:
        """Value, low and high at the precision the report prints them (two estimates that print alike are equal
        statements)."""
        digits = DECIMALS[self.unit]
        return tuple(None if x is None else round(x, digits) for x in (self.value, self.low, self.high))  # type: ignore[return-value]

    @classmethod
    def point(cls, value: float | None, unit: Unit = "ratio", n: int | None = None) -> Estimate:
        """A figure printed without an interval."""
        return cls(value=value, unit=unit, n=n)
