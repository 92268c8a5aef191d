"""The engine's own reason for failing, picked out of its log: the line a person would quote.

A failure's first line is what the report shows (a table cell, a not-run row), and a log tail is many lines of
progress output before the one that matters. vLLM ends a refused start with a traceback whose last lines state
the reason, e.g. pydantic's ``Value error, User-specified max_model_len (512) is greater than the derived
max_model_len ...``; a Python error ends in ``SomeError: message``. The last such line is the reason.
"""

from __future__ import annotations

import re
from pathlib import Path

# a line that states an error: "ValueError: ...", "  Value error, ...", "ERROR ... message", "error: ..."
_ERROR = re.compile(r"(?:\b[A-Za-z_.]*(?:Error|Exception)\b\s*[:,]|\b[Vv]alue error,|\bERROR\b|^error:)")
_NOISE = re.compile(r"^\s*(?:File \"|Traceback |\^|During handling|The above exception|For further information)")
LIMIT = 400


def error_line(log: str | Path | None) -> str | None:
    """The log's last line that states an error (stripped, at most 400 characters); None where none does."""
    if log is None:
        return None
    if isinstance(log, Path):
        try:
            log = log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    for line in reversed(log.splitlines()):
        text = line.strip()
        if text and not _NOISE.match(line) and _ERROR.search(text):
            # pydantic states the count first ("1 validation error for ModelConfig"); the next line says which
            if re.search(r"\d+ validation errors? for \w+$", text):
                continue
            return text if len(text) <= LIMIT else text[: LIMIT - 1] + "…"
    return None


def with_error_line(summary: str, log: str | Path | None) -> str:
    """``summary`` with the log's error line after it (``summary: line``), or ``summary`` alone."""
    line = error_line(log)
    return f"{summary}: {line}" if line else summary
