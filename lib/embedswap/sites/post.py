"""A rendered report read back as a post: its slug, date, languages (front matter + body) and figures."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embedswap.report.catalogue import catalogue
from embedswap.report.front_matter import dump, split
from embedswap.report.post import FULL_REPORT
from embedswap.report.report_data import read_report_json

LANGUAGE_NAMES = {"ko": "한국어", "en": "English", "ja": "日本語", "zh": "中文"}
FIGURE_LINK = re.compile(r"\]\(figures/([\w.-]+\.png)\)")
NOTEBOOK_LINK = re.compile(r"\]\(notebooks/([\w.-]+\.html)\)")


class PublishError(ValueError):
    """The site folder, the generator or an existing post stands in the way. The message says which."""


@dataclass(frozen=True)
class Post:
    slug: str
    date: str
    languages: list[str]
    front: dict[str, dict[str, Any]]  # by language
    body: dict[str, str]  # by language
    figures: dict[str, Path]  # file name -> rendered PNG
    notebooks: dict[str, Path]  # file name -> exported HTML (report/notebooks.py)
    # the full report the post links (report.<lang>.md), by language; empty for a folder rendered before posts
    full_front: dict[str, dict[str, Any]] = field(default_factory=dict)
    full_body: dict[str, str] = field(default_factory=dict)

    def with_full_report_at(self, lang: str, body: str, target: str) -> str:
        """The post's body with its link to the full report (report.<lang>.md) pointing at ``target``."""
        return body.replace(f"]({FULL_REPORT.format(lang=lang)})", f"]({target})")


def _read(path: Path) -> tuple[dict[str, Any], str]:
    front, body = split(path.read_text(encoding="utf-8"))
    if not front:
        raise PublishError(f"{path} has no front matter: render it again with `embedswap report`")
    return front, without_title(body, str(front.get("title", "")))


def read_post(report_folder: Path) -> Post:
    """The post of a rendered report folder (report.json, post.<lang>.md, report.<lang>.md, figures/,
    notebooks/). A folder rendered before there were posts publishes its full report as the post."""
    languages = list(read_report_json(report_folder / "report.json").languages)
    front, body, full_front, full_body = {}, {}, {}, {}
    for lang in languages:
        post = report_folder / f"post.{lang}.md"
        if post.exists():
            front[lang], body[lang] = _read(post)
            full_front[lang], full_body[lang] = _read(report_folder / f"report.{lang}.md")
        else:
            front[lang], body[lang] = _read(report_folder / f"report.{lang}.md")
    first = front[languages[0]]
    figures = {p.name: p for p in sorted((report_folder / "figures").glob("*.png"))}
    notebooks = {p.name: p for p in sorted((report_folder / "notebooks").glob("*.html"))}
    return Post(slug=first["slug"], date=str(first["date"]), languages=languages, front=front, body=body,
                figures=figures, notebooks=notebooks, full_front=full_front, full_body=full_body)


def without_title(body: str, title: str) -> str:
    """The body without its H1 when that H1 is the front matter's title (inline code marks aside): every
    generator's theme prints the title itself, and a page with two H1s reads as two posts (Hugo printed both)."""
    lines = body.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("# "):
            if title and line[2:].replace("`", "").strip() == title.strip():
                end = i + 1 + (i + 1 < len(lines) and not lines[i + 1].strip())
                return "\n".join(lines[:i] + lines[end:])
            break
    return body


def language_links(post: Post, lang: str, url_of, served: list[str] | None = None) -> str:
    """One line linking every other language version the site serves (url_of(lang) -> the link target in that
    generator; ``served``: the site's languages, None for all of the post's)."""
    others = [f"[{LANGUAGE_NAMES[o]}]({url_of(o)})" for o in post.languages
              if o != lang and (served is None or o in served)]
    if not others:
        return ""
    return f"{catalogue(lang).terms['publish']['languages']}: " + " · ".join(others) + "\n\n"


def with_figures_at(body: str, prefix: str | None, notebooks: str) -> str:
    """The body with its figures/<name>.png links pointing at prefix<name>.png (None: left as they are) and its
    notebooks/<name>.html links at notebooks<name>.html."""
    if prefix is not None:
        body = FIGURE_LINK.sub(lambda m: f"]({prefix}{m.group(1)})", body)
    return NOTEBOOK_LINK.sub(lambda m: f"]({notebooks}{m.group(1)})", body)


def claim(paths: list[Path], force: bool) -> None:
    """Refuse before writing anything when one of the post's files is there already (unless force)."""
    there = [p for p in paths if p.exists()]
    if there and not force:
        raise PublishError(f"{there[0]} exists: the post is already in the site (pass --force to replace it)")


def write_text(path: Path, front: dict[str, Any], body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump(front) + body, encoding="utf-8")
    return path


def copy_files(files: dict[str, Path], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, source in files.items():
        shutil.copyfile(source, folder / name)
        out.append(folder / name)
    return out
