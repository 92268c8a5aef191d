"""The languages a site serves, read from its own configuration (sites/site_config.py)."""

from __future__ import annotations

from pathlib import Path

from embedswap.sites.site_config import hugo_languages, missing_note, mkdocs_languages


def test_a_hugo_site_without_languages_serves_its_default_one(tmp_path: Path) -> None:
    (tmp_path / "hugo.toml").write_text("baseURL = 'https://example.org/'\ntitle = 'blog'\n", encoding="utf-8")
    site = hugo_languages(tmp_path)
    assert site.languages == ["en"] and not site.multilingual
    note = missing_note("hugo", site, ["ko", "en", "ja"])
    assert note is not None and "not written: ko, ja" in note and "[languages.ko]" in note
    assert missing_note("hugo", site, ["en"]) is None


def test_hugo_languages_default_first_then_by_weight(tmp_path: Path) -> None:
    (tmp_path / "config" / "_default").mkdir(parents=True)
    (tmp_path / "config" / "_default" / "hugo.yaml").write_text(
        "defaultContentLanguage: ja\nlanguages:\n  en: {weight: 2}\n  ko: {weight: 1}\n  ja: {weight: 3}\n",
        encoding="utf-8")
    site = hugo_languages(tmp_path)
    assert site.languages == ["ja", "ko", "en"] and site.multilingual


def test_mkdocs_i18n_languages_or_every_language(tmp_path: Path) -> None:
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: s\nplugins:\n  - blog\n  - i18n:\n      languages:\n        - locale: en\n          default: true\n"
        "        - locale: ko\n", encoding="utf-8")
    assert mkdocs_languages(tmp_path, ["ko", "en", "zh"]).languages == ["en", "ko"]
    (tmp_path / "mkdocs.yml").write_text("site_name: s\nplugins: [blog]\n", encoding="utf-8")
    assert mkdocs_languages(tmp_path, ["ko", "en"]).languages == ["ko", "en"]
