"""The report of an experiment: figures (figures.py) and the bilingual markdown/HTML report (render.py)."""

from embedswap.report import figures
from embedswap.report.render import (
    ReportError,
    client_changes,
    fmt,
    label,
    markdown_to_html,
    not_measured_items,
    render_index,
    render_markdown,
    render_report,
)

__all__ = [
    "ReportError",
    "client_changes",
    "figures",
    "fmt",
    "label",
    "markdown_to_html",
    "not_measured_items",
    "render_index",
    "render_markdown",
    "render_report",
]
