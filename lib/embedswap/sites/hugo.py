"""Hugo: a page bundle content/posts/<slug>/index.<lang>.md with the figures beside it; the notebooks' HTML in
static/posts/<slug>/notebooks/ (an .html file inside a bundle would be read as a content page).

The languages are tied by ``translationKey`` and linked with Hugo's own ``relref`` shortcode (a link to a
language the site does not define fails Hugo's build with REF_NOT_FOUND instead of leaving a dead link).
"""

from __future__ import annotations

from pathlib import Path

from embedswap.sites.post import Post, claim, copy_files, language_links, with_figures_at, write_text


def export(post: Post, site: Path, force: bool) -> list[Path]:
    bundle = site / "content" / "posts" / post.slug
    pages = {lang: bundle / f"index.{lang}.md" for lang in post.languages}
    claim(list(pages.values()) + [site / "static" / "posts" / post.slug / "notebooks" / n for n in post.notebooks],
          force)

    def url(lang: str) -> str:
        return f'{{{{< relref path="/posts/{post.slug}" lang="{lang}" >}}}}'

    out = []
    for lang, page in pages.items():
        body = with_figures_at(post.body[lang], None, f"/posts/{post.slug}/notebooks/")
        out.append(write_text(page, post.front[lang], language_links(post, lang, url) + body))
    out += copy_files(post.figures, bundle / "figures")  # the body's figures/<name>.png links stay as they are
    out += copy_files(post.notebooks, site / "static" / "posts" / post.slug / "notebooks")
    return out
