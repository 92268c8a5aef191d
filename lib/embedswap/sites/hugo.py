"""Hugo: the post as a page bundle content/posts/<slug>/index.<lang>.md with the figures beside it, the full report
it links as content/reports/<slug>/index.<lang>.md; the notebooks' HTML in static/posts/<slug>/notebooks/ (an
.html file inside a bundle would be read as a content page).

Only the languages the site serves are written (its own ``languages`` and ``defaultContentLanguage``): a site
without ``languages`` gets index.md in its one language, linked without ``lang=``. The languages are tied by
``translationKey`` and linked with Hugo's own ``relref`` shortcode (a link to a page that is not there fails
Hugo's build with REF_NOT_FOUND instead of leaving a dead link).
"""

from __future__ import annotations

import sys
from pathlib import Path

from embedswap.sites.post import Post, claim, copy_files, language_links, with_figures_at, write_text
from embedswap.sites.site_config import hugo_languages, missing_note


def export(post: Post, site: Path, force: bool) -> list[Path]:
    served = hugo_languages(site)
    langs = [lang for lang in post.languages if lang in served.languages] or post.languages[:1]
    note = missing_note("hugo", served, post.languages)
    if note:
        print(note, file=sys.stderr)
    single = not served.multilingual

    def page(folder: Path, lang: str) -> Path:
        return folder / ("index.md" if single else f"index.{lang}.md")

    def url(lang: str, section: str = "posts") -> str:
        if single:
            return f'{{{{< relref "/{section}/{post.slug}" >}}}}'
        return f'{{{{< relref path="/{section}/{post.slug}" lang="{lang}" >}}}}'

    bundle = site / "content" / "posts" / post.slug
    full = site / "content" / "reports" / post.slug
    pages = {lang: page(bundle, lang) for lang in langs}
    full_pages = {lang: page(full, lang) for lang in langs if lang in post.full_body}
    notebooks = f"/posts/{post.slug}/notebooks/"
    claim([*pages.values(), *full_pages.values(),
           *(site / "static" / "posts" / post.slug / "notebooks" / n for n in post.notebooks)], force)
    out = []
    for lang, path in pages.items():
        body = with_figures_at(post.body[lang], None, notebooks)
        if lang in full_pages:
            body = post.with_full_report_at(lang, body, url(lang, "reports"))
        links = language_links(post, lang, url, langs) if not single else ""
        out.append(write_text(path, post.front[lang], links + body))
    for lang, path in full_pages.items():
        front = {**post.full_front[lang], "translationKey": f"{post.slug}-report"}
        body = with_figures_at(post.full_body[lang], None, notebooks)
        out.append(write_text(path, front, body))
    out += copy_files(post.figures, bundle / "figures")  # the body's figures/<name>.png links stay as they are
    if full_pages:
        out += copy_files(post.figures, full / "figures")
    out += copy_files(post.notebooks, site / "static" / "posts" / post.slug / "notebooks")
    return out
