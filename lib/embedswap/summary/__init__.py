"""summary.json: every figure and decision of the report, computed from an attempt's capture files only.

:mod:`.build` assembles the summary from one builder per section (:mod:`.sections`), :mod:`.model` is its typed
shape, :mod:`.upgrade` reads a file of any schema version and returns the typed :class:`~.model.Summary`.
"""

from embedswap.summary.build import build_summary, write_summary
from embedswap.summary.upgrade import SummaryError, load_summary

__all__ = ["SummaryError", "build_summary", "load_summary", "write_summary"]
