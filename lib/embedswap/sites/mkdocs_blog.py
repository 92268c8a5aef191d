"""mkdocs-material's blog plugin: docs/blog/posts/<slug>.md (first language; others <slug>-<lang>.md).

The figures and notebooks go to docs/blog/posts/<slug>/; links between languages are relative links to the
other .md files, which MkDocs resolves to their pages (and reports when one is missing). The plugin checks a
post's front matter against its own keys, so only those are kept (the translation key is the shared file stem).
"""

from __future__ import annotations

from pathlib import Path

from embedswap.sites.post import Post, claim, copy_files, language_links, with_figures_at, write_text

KEYS = ("title", "date", "draft", "description", "slug")


def file_name(post: Post, lang: str) -> str:
    return f"{post.slug}.md" if lang == post.languages[0] else f"{post.slug}-{lang}.md"


def export(post: Post, site: Path, force: bool) -> list[Path]:
    posts = site / "docs" / "blog" / "posts"
    pages = {lang: posts / file_name(post, lang) for lang in post.languages}
    claim(list(pages.values()), force)
    out = []
    for lang, page in pages.items():
        front = {k: post.front[lang][k] for k in KEYS if k in post.front[lang]}
        front["slug"] = post.slug if lang == post.languages[0] else f"{post.slug}-{lang}"
        body = with_figures_at(post.body[lang], f"{post.slug}/", f"{post.slug}/notebooks/")
        out.append(write_text(page, front, language_links(post, lang, lambda o: file_name(post, o)) + body))
    out += copy_files(post.figures, posts / post.slug)
    out += copy_files(post.notebooks, posts / post.slug / "notebooks")
    return out
