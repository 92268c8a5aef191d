"""What an A/A run's post says, read from the post's model, not its markdown (issue 63, "the post is a document of
statements"): ``post_failures(summary, posts, candidate)`` lists every way the post of an A/A run (one server named
as both sides) fails to say "nothing differs", one line each (empty: it says so).

- ``document: ...``: the stored post document (``decisions.post.document``) fails a check of
  embedswap/report/post_checks.py (every figure and fact its stored one, directions the verdicts', the interval
  its label's, no two statements that disagree, no twins), or is not stored at all;
- ``post: <message> ...``: a statement of the document about the candidate says a difference: a claim whose code
  is ``different`` or ``failed``, a shim trade (``post.shim_trades.*``: the ranking moved and the shim trades it),
  an index line whose choice is not ``keep``; or the document says nothing about the candidate;
- a note about each server's own runs (``post.concurrency_gains.*``: what concurrency gained each server, the
  legacy one included, whatever its code) is no difference between the two sides: it is never a failure;
- ``post: post.contract_conclusions / post.vectors_conclusions / post.closings ...``: the document's conclusion
  statements (its ``conclusion`` section's vectors and contract sentences, its ``closing`` section) are not the
  catalogue's ``same``, ``same`` and ``drop_in``, or a closing leaves the candidate out. Their codes are one for
  every language (the language words them), so they are read once, from the document the post is worded from;
- ``post.<lang>: ...``: a language's post.<lang>.md is missing, empty, or holds an unrendered template tag. That
  is all the markdown is read for (labels only): which sentence it holds is decided above.

This replaced the regular expressions built from the catalogue's messages that found which conclusion sentence the
markdown held (aa_check's ``_pattern``/``_sentence``). Used by tests/support/aa_check.py's ``aa_failures``."""

from __future__ import annotations

from typing import Any

from embedswap.analysis.post_conclusion import keyed_code
from embedswap.summary.model import SummaryError, validate_summary
from embedswap.summary.types_post_document import PostDocument

# the codes of a claim that says the two sides differ (an A/A's latency may stay inconclusive, never these)
DIFFERS = ("different", "failed")
# the conclusion's sentences: (the keyed catalogue table the statement's key begins with, what an A/A says)
CONCLUSION = (("post.contract_conclusions", "same"), ("post.vectors_conclusions", "same"))
CLOSING, DROP_IN = "post.closings", "drop_in"
# notes about each server on its own, both sides of an A/A alike: not a difference whatever they say
NOTES = ("post.concurrency_gains.",)
# what a rendered post never holds: a Jinja tag the renderer left as it was
UNRENDERED = ("{{", "{%")


def _file_failures(posts: dict[str, str], languages: list[str] | None) -> list[str]:
    out = [] if posts else ["post: no post was written"]
    out += [f"post.{lang}: missing" for lang in languages or [] if lang not in posts]
    for lang, post in sorted(posts.items()):
        if not post.strip():
            out.append(f"post.{lang}: empty")
        left = [tag for tag in UNRENDERED if tag in post]
        if left:
            out.append(f"post.{lang}: holds unrendered template tags {left}")
    return out


def _statement_failures(document: PostDocument, candidate: str) -> list[str]:
    out = []
    about = [s for s in document.statements() if not s.key.startswith(NOTES)
             and (candidate in s.subjects or any(candidate in c.subjects for c in s.claims))]
    if not about:
        out.append(f"post: the post document states nothing about `{candidate}`")
    for s in about:
        for c in s.claims:
            if candidate in c.subjects and c.code in DIFFERS:
                variant = f" ({c.variant})" if c.variant else ""
                out.append(f"post: {s.key} says {c.metric}{variant} of {c.subjects} is {c.code} ({c.direction}), "
                           f"from '{c.source}'")
        if s.key.startswith("post.shim_trades."):
            out.append(f"post: {s.key} for {s.subjects}: the ranking moved and the shim trades it")
        choice = s.fact("index_choice") if s.key == "post.index_line" else None
        if choice is not None and choice.value != "keep":
            out.append(f"post: post.index_line says the index of {s.subjects} is {choice.value!r}, not 'keep' "
                       f"('{choice.source}')")
    return out


def _conclusion_failures(document: PostDocument, candidate: str) -> list[str]:
    out = []
    for table, same in CONCLUSION:
        said = [c for c in (keyed_code(s, table) for s in document.statements()) if c is not None]
        if said != [same]:  # said once by every document of this kit: the code, else every code found
            out.append(f"post: {table} says {said[0] if len(said) == 1 else said!r}, not {same!r}")
    closings = [s for s in document.statements() if keyed_code(s, CLOSING) is not None]
    if not any(candidate in s.subjects for s in closings):
        out.append(f"post: {CLOSING} says nothing of `{candidate}`, not {DROP_IN!r}")
    out += [f"post: {CLOSING} says {keyed_code(s, CLOSING)!r} for {', '.join(f'`{m}`' for m in s.subjects)}, "
            f"not {DROP_IN!r}" for s in closings if keyed_code(s, CLOSING) != DROP_IN]
    return out


def post_failures(summary: dict[str, Any], posts: dict[str, str], candidate: str,
                  languages: list[str] | None = None) -> list[str]:
    """Every way the post of an A/A run (``summary``: summary.json as stored, ``posts``: post.<lang>.md by
    language) fails to say that ``candidate`` differs nowhere; ``languages``: the posts that must exist."""
    out = _file_failures(posts, languages)
    try:
        typed = validate_summary(summary)
    except SummaryError as exc:
        return [*out, f"post: summary.json does not validate: {exc}"]
    document = typed.decisions.post.document
    if document is None:  # stored by every run since issue 63: a summary without it was not decided by the kit
        return [*out, "document: decisions.post.document is not stored"]
    from embedswap.report.post_checks import document_problems

    out += [f"document: {p}" for p in document_problems(typed)]
    return out + _statement_failures(document, candidate) + _conclusion_failures(document, candidate)
