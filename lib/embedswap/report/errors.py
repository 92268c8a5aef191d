"""The report's one error type."""


class ReportError(RuntimeError):
    """The report cannot be rendered (no summary.json, unknown language, ...). The message says what to do."""
