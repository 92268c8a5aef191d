"""Hugo: a page bundle content/posts/<slug>/index.<lang>.md, the figures and notebooks beside it.

The languages are tied by ``translationKey`` and linked with Hugo's own ``relref`` shortcode (a link to a
language the site does not define fails Hugo's build with REF_NOT_FOUND instead of leaving a dead link).
"""

from __future__ import annotations

from pathlib import Path

from embedswap.sites.post import Post, claim, copy_files, language_links, write_text


def export(post: Post, site: Path, force: bool) -> list[Path]:
    bundle = site / "content" / "posts" / post.slug
    pages = {lang: bundle / f"index.{lang}.md" for lang in post.languages}
    claim(list(pages.values()), force)

    def url(lang: str) -> str:
        return f'{{{{< relref path="/posts/{post.slug}" lang="{lang}" >}}}}'

    out = []
    for lang, page in pages.items():
        out.append(write_text(page, post.front[lang], language_links(post, lang, url) + post.body[lang]))
    out += copy_files(post.figures, bundle / "figures")  # the body's figures/<name>.png links stay as they are
    out += copy_files(post.notebooks, bundle / "notebooks")
    return out
