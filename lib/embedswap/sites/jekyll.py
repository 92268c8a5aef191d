"""Jekyll: _posts/<date>-<slug>.md (the first language; the others <date>-<slug>-<lang>.md), assets/<slug>/, and
the full report the post links as a page reports/<slug>.md (others reports/<slug>-<lang>.md).

Each version gets its own ``permalink`` (``/posts/<slug>/``, ``/<lang>/posts/<slug>/``; ``/reports/<slug>/``,
``/<lang>/reports/<slug>/``) so the links between languages are known without Liquid or an i18n plugin (Jekyll
has none of its own, so every language is written); ``render_with_liquid: false`` keeps Jekyll from reading the
report's ``{task}``-style text as Liquid; ``published: false`` is Jekyll's own draft flag (``draft`` is Hugo's).
"""

from __future__ import annotations

from pathlib import Path

from embedswap.sites.post import Post, claim, copy_files, language_links, with_figures_at, write_text


def permalink(post: Post, lang: str, section: str = "posts") -> str:
    return f"/{section}/{post.slug}/" if lang == post.languages[0] else f"/{lang}/{section}/{post.slug}/"


def export(post: Post, site: Path, force: bool) -> list[Path]:
    first = post.languages[0]
    pages = {lang: site / "_posts" / (f"{post.date}-{post.slug}.md" if lang == first
                                      else f"{post.date}-{post.slug}-{lang}.md") for lang in post.languages}
    full = {lang: site / "reports" / (f"{post.slug}.md" if lang == first else f"{post.slug}-{lang}.md")
            for lang in post.languages if lang in post.full_body}
    claim([*pages.values(), *full.values()], force)
    out = []
    assets, notebooks = f"/assets/{post.slug}/", f"/assets/{post.slug}/notebooks/"
    for lang, page in pages.items():
        front = {**post.front[lang], "layout": "post", "permalink": permalink(post, lang),
                 "render_with_liquid": False,
                 "published": False}  # Jekyll's draft flag: built only with --unpublished
        body = with_figures_at(post.body[lang], assets, notebooks)
        if lang in full:
            body = post.with_full_report_at(lang, body, permalink(post, lang, "reports"))
        out.append(write_text(page, front, language_links(post, lang, lambda o: permalink(post, o)) + body))
    for lang, page in full.items():
        front = {**post.full_front[lang], "layout": "page", "permalink": permalink(post, lang, "reports"),
                 "render_with_liquid": False, "published": False}
        out.append(write_text(page, front, with_figures_at(post.full_body[lang], assets, notebooks)))
    out += copy_files(post.figures, site / "assets" / post.slug)
    out += copy_files(post.notebooks, site / "assets" / post.slug / "notebooks")
    return out
