"""Jekyll: _posts/<date>-<slug>.md (the first language; the others <date>-<slug>-<lang>.md), assets/<slug>/.

Each version gets its own ``permalink`` (``/posts/<slug>/``, ``/<lang>/posts/<slug>/``) so the links between
languages are known without Liquid; ``render_with_liquid: false`` keeps Jekyll from reading the report's
``{task}``-style text as Liquid; ``published: false`` is Jekyll's own draft flag (``draft`` is Hugo's).
"""

from __future__ import annotations

from pathlib import Path

from embedswap.sites.post import Post, claim, copy_files, language_links, with_figures_at, write_text


def permalink(post: Post, lang: str) -> str:
    return f"/posts/{post.slug}/" if lang == post.languages[0] else f"/{lang}/posts/{post.slug}/"


def export(post: Post, site: Path, force: bool) -> list[Path]:
    first = post.languages[0]
    pages = {lang: site / "_posts" / (f"{post.date}-{post.slug}.md" if lang == first
                                      else f"{post.date}-{post.slug}-{lang}.md") for lang in post.languages}
    claim(list(pages.values()), force)
    out = []
    for lang, page in pages.items():
        front = {**post.front[lang], "layout": "post", "permalink": permalink(post, lang),
                 "render_with_liquid": False,
                 "published": False}  # Jekyll's draft flag: built only with --unpublished
        body = with_figures_at(post.body[lang], f"/assets/{post.slug}/", f"/assets/{post.slug}/notebooks/")
        out.append(write_text(page, front, language_links(post, lang, lambda o: permalink(post, o)) + body))
    out += copy_files(post.figures, site / "assets" / post.slug)
    out += copy_files(post.notebooks, site / "assets" / post.slug / "notebooks")
    return out
