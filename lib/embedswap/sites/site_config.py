"""What a site can serve, read from its own configuration: Hugo's ``languages`` and ``defaultContentLanguage``,
the languages of mkdocs' i18n plugin (mkdocs-static-i18n). A post is written only in the languages the site
serves, and links only to those; :func:`missing_note` says in one line what the site would need for the rest."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HUGO_FILES = [f"{stem}.{ext}" for stem in ("hugo", "config") for ext in ("toml", "yaml", "yml", "json")]
HUGO_DEFAULT_LANGUAGE = "en"  # Hugo's own default for defaultContentLanguage


@dataclass(frozen=True)
class SiteLanguages:
    languages: list[str]  # the languages the site serves, the default first
    multilingual: bool  # the site defines languages (Hugo: a [languages] table; mkdocs: the i18n plugin)
    config: str  # the file the languages were read from (or would go into)


def _load(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        return tomllib.loads(text)
    if path.suffix == ".json":
        return json.loads(text)
    return yaml.safe_load(text) or {}


def hugo_languages(site: Path) -> SiteLanguages:
    """The languages a Hugo site serves: the keys of ``languages`` (in the root config or in
    config/_default/languages.*), the default content language first; one language (``defaultContentLanguage``,
    else ``en``) when the site defines none."""
    config: dict[str, Any] = {}
    name = "hugo.toml"
    for candidate in [*HUGO_FILES, *(f"config/_default/{f}" for f in HUGO_FILES)]:
        if (site / candidate).is_file():
            config, name = _load(site / candidate), candidate
            break
    languages = config.get("languages") or {}
    for ext in ("toml", "yaml", "yml", "json"):
        extra = site / "config" / "_default" / f"languages.{ext}"
        if not languages and extra.is_file():
            languages = _load(extra)
    default = str(config.get("defaultContentLanguage") or HUGO_DEFAULT_LANGUAGE).lower()
    if not isinstance(languages, dict) or not languages:
        return SiteLanguages([default], False, name)
    keys = [str(k).lower() for k in languages]
    weights = {str(k).lower(): (v or {}).get("weight", 0) if isinstance(v, dict) else 0 for k, v in languages.items()}
    keys.sort(key=lambda k: (k != default, weights.get(k, 0)))
    return SiteLanguages(keys, True, name)


def mkdocs_languages(site: Path, wanted: list[str]) -> SiteLanguages:
    """The languages of mkdocs-static-i18n's ``languages`` list when the plugin is configured; otherwise every
    language of the post (MkDocs serves any .md file as a page)."""
    path = site / "mkdocs.yml"
    config: dict[str, Any] = {}
    if path.is_file():
        # mkdocs.yml may carry !!python tags (material's emoji); those are not languages, so they load as None
        loader = type("Loader", (yaml.SafeLoader,), {})
        loader.add_multi_constructor("", lambda *_: None)  # type: ignore[no-untyped-call]
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=loader) or {}
    for plugin in config.get("plugins") or []:
        if isinstance(plugin, dict) and "i18n" in plugin:
            entries = (plugin["i18n"] or {}).get("languages") or []
            codes = [str(e.get("locale") or e.get("lang") or "").lower() for e in entries if isinstance(e, dict)]
            default = next((str(e.get("locale") or e.get("lang")).lower() for e in entries
                            if isinstance(e, dict) and e.get("default")), codes[0] if codes else None)
            codes.sort(key=lambda c: c != default)
            return SiteLanguages([c for c in codes if c], True, "mkdocs.yml")
    return SiteLanguages(list(wanted), False, "mkdocs.yml")


def missing_note(generator: str, site: SiteLanguages, wanted: list[str]) -> str | None:
    """One line: the post's languages the site cannot serve and what the site would need for them (None: none)."""
    left = [lang for lang in wanted if lang not in site.languages]
    if not left:
        return None
    if generator == "hugo":
        need = (f"add {', '.join(f'[languages.{x}]' for x in left)} to {site.config}"
                + ("" if site.multilingual else f" (with [languages.{site.languages[0]}] for the one it has)"))
    else:
        need = f"add {', '.join(left)} to the i18n plugin's languages in {site.config}"
    return (f"{generator}: the site serves {', '.join(site.languages)}; not written: {', '.join(left)} "
            f"({need} to publish them)")
