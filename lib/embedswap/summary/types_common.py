"""Building blocks of the summary model: the strict base, a reason code, a section's measured/not-measured head."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """A typed part of summary.json: an unknown or renamed key fails at load, with its path."""
    model_config = ConfigDict(extra="forbid")


# JSON has one number type; ``int | float`` keeps a stored 1 as 1 (a bare ``float`` would make it 1.0 and change
# how the report prints it)
Number = int | float


class Reason(Strict):
    """Why a part was not measured (or what a finding is): a code the report catalogue words, and its parameters."""
    code: str
    params: dict[str, Any] = {}  # open: each code has its own parameters (embedswap.reasons' catalogue)


class Finding(BaseModel):
    """One hypothesis' finding: its English why, its reason code and parameters when it has one. Open
    (``extra="allow"``): each hypothesis records its own evidence beside them."""
    model_config = ConfigDict(extra="allow")
    why: str | None = None
    code: str | None = None
    params: dict[str, Any] | None = None  # open: each code has its own parameters


# the reason of a section the summary holds no record of (the migrations give it to each section a kit did not write)
ABSENT = "section_absent"


class Section(Strict):
    """A part of the summary: measured, or not measured with a reason (``why`` is the English sentence); the
    figures of a section that was not measured are absent (their defaults)."""
    measured: bool
    why: str | None = None
    reason: Reason | None = None

    @property
    def absent(self) -> bool:
        """The summary holds no record of this part at all (reason ``section_absent``): a report leaves it out."""
        return self.reason is not None and self.reason.code == ABSENT


class Spread(Strict):
    """min / median / max of a figure over documents (None when nothing was measured)."""
    min: Number | None = None
    median: Number | None = None
    max: Number | None = None
