"""`embedswap publish`: the rendered report as a blog draft in a static site's own layout.

Publishing is one more exporter over the rendered report (report/publish.py writes report.<lang>.md with its
front matter and figures/*.png): ``post.read_post`` reads them back, one small module per generator writes them
where that generator looks (``hugo.py``, ``jekyll.py``, ``mkdocs_blog.py``). A post that is already in the
site is never overwritten unless ``force``.
"""

from __future__ import annotations

from pathlib import Path

from embedswap.sites import hugo, jekyll, mkdocs_blog
from embedswap.sites.post import PublishError, Post, read_post

EXPORTERS = {"hugo": hugo.export, "jekyll": jekyll.export, "mkdocs-blog": mkdocs_blog.export}


def publish(experiment_dir: Path, to: str, into: Path, force: bool = False, attempt: str = "") -> list[Path]:
    """Render the report of one attempt (default: the newest), then write it into the site at ``into``."""
    from embedswap.report.publish import render_report

    if to not in EXPORTERS:
        raise PublishError(f"--to '{to}': unknown site generator (known: {', '.join(EXPORTERS)})")
    into = Path(into)
    if not into.is_dir():
        raise PublishError(f"--into '{into}': no such folder; point it at the root of your {to} site")
    written = render_report(experiment_dir, attempt)
    post = read_post(written["report.json"].parent)
    return EXPORTERS[to](post, into.resolve(), force)


__all__ = ["EXPORTERS", "Post", "PublishError", "publish", "read_post"]
