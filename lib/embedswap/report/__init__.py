"""The report of an experiment: one skeleton template, a catalogue of words per language, one module per section.

Layout: ``format.py`` (numbers, labels, markdown cells), ``catalogue.py`` + ``catalogue/<lang>.toml`` (words),
``sections/<name>.py`` (summary section -> template values), ``markdown.py`` (the skeleton rendered: the full
report), ``post.py`` (the post: the blog draft that leads with its conclusion and links the full report),
``html.py`` (the page), ``publish.py`` (files, figures, report.json, the index), ``figures.py`` (charts).
"""

from embedswap.report import figures
from embedswap.report.catalogue import LANGUAGES
from embedswap.report.errors import ReportError
from embedswap.report.format import fmt, label
from embedswap.report.html import markdown_to_html
from embedswap.report.markdown import render_markdown
from embedswap.report.post import render_post
from embedswap.report.publish import headline, render_index, render_report
from embedswap.report.sections.gaps import not_measured_items

__all__ = [
    "LANGUAGES",
    "ReportError",
    "figures",
    "fmt",
    "headline",
    "label",
    "markdown_to_html",
    "not_measured_items",
    "render_index",
    "render_markdown",
    "render_post",
    "render_report",
]
