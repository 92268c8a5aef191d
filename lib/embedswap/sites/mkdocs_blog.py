"""mkdocs-material's blog plugin: docs/blog/posts/<slug>.md (first language; others <slug>-<lang>.md), and the
full report the post links as a plain page docs/reports/<slug>.md (others <slug>-<lang>.md): a file under posts/
would be listed as a second post.

The figures and notebooks go to docs/blog/posts/<slug>/ (and the report's figures to docs/reports/<slug>/); links
between languages and to the full report are relative links to the other .md files, which MkDocs resolves to their
pages (and reports when one is missing). When the i18n plugin (mkdocs-static-i18n) is configured, only its
languages are written. The blog plugin checks a post's front matter against its own keys, so only those are kept
(the translation key is the shared file stem).
"""

from __future__ import annotations

import sys
from pathlib import Path

from embedswap.sites.post import Post, claim, copy_files, language_links, with_figures_at, write_text
from embedswap.sites.site_config import missing_note, mkdocs_languages

KEYS = ("title", "date", "draft", "description", "slug")


def file_name(post: Post, lang: str) -> str:
    return f"{post.slug}.md" if lang == post.languages[0] else f"{post.slug}-{lang}.md"


def export(post: Post, site: Path, force: bool) -> list[Path]:
    served = mkdocs_languages(site, post.languages)
    langs = [lang for lang in post.languages if lang in served.languages] or post.languages[:1]
    note = missing_note("mkdocs", served, post.languages)
    if note:
        print(note, file=sys.stderr)
    posts, reports = site / "docs" / "blog" / "posts", site / "docs" / "reports"
    pages = {lang: posts / file_name(post, lang) for lang in langs}
    full = {lang: reports / file_name(post, lang) for lang in langs if lang in post.full_body}
    claim([*pages.values(), *full.values()], force)
    out = []
    for lang, page in pages.items():
        front = {k: post.front[lang][k] for k in KEYS if k in post.front[lang]}
        front["slug"] = post.slug if lang == post.languages[0] else f"{post.slug}-{lang}"
        body = with_figures_at(post.body[lang], f"{post.slug}/", f"{post.slug}/notebooks/")
        if lang in full:
            body = post.with_full_report_at(lang, body, f"../../reports/{file_name(post, lang)}")
        out.append(write_text(page, front, language_links(post, lang, lambda o: file_name(post, o), langs) + body))
    for lang, page in full.items():
        front = {"title": post.full_front[lang].get("title", post.slug)}
        body = with_figures_at(post.full_body[lang], f"{post.slug}/", f"../blog/posts/{post.slug}/notebooks/")
        out.append(write_text(page, front, body))
    out += copy_files(post.figures, posts / post.slug)
    out += copy_files(post.notebooks, posts / post.slug / "notebooks")
    if full:
        out += copy_files(post.figures, reports / post.slug)
    return out
