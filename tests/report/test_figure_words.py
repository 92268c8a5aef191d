"""The figures speak the report's language (issue 55, point 6): every title, axis label, legend label and "no data"
text is the catalogue's word (``[figures.<name>]``), the same keys and placeholders in every language, and a Korean
figure is drawn in a font that has Hangul (matplotlib warns for each glyph it cannot draw: no warning, no box).

The texts are read from the matplotlib objects (titles, axis labels, legends), not from pixels."""

from __future__ import annotations

import copy
import io
import re
import warnings
from typing import Any, Callable

import pytest
from capacity_summary import summary_with_capacity
from index_summary import summary_with_index
from matplotlib import font_manager
from matplotlib.figure import Figure

from embedswap.doctor import figure_fonts_check
from embedswap.report import figure_words, figures
from embedswap.report.catalogue import LANGUAGES, catalogue, fill
from embedswap.report.figure_words import FigureWords, figure_stem
from typed_summary import as_typed

GLYPH_MISSING = re.compile(r"Glyph \d+ .* missing from font")


def _placeholders(text: str) -> list[str]:
    return sorted(re.findall(r"\{\{\s*(\w+)\s*\}\}", text))


def _flat(table: dict[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_every_language_has_the_english_figure_words(lang: str) -> None:
    english, other = _flat(catalogue("en").figures), _flat(catalogue(lang).figures)
    assert set(other) == set(english)
    assert set(catalogue("en").figures) == set(figures.FIGURES)  # one table per figure the report draws
    for key, text in english.items():
        assert _placeholders(other[key]) == _placeholders(text), (lang, key)
        assert other[key].strip(), (lang, key)


def _word(lang: str, key: str, **params: Any) -> str:
    figure, _, rest = key.partition(".")
    found: Any = catalogue(lang).figures[figure]
    for part in rest.split("."):
        found = found[part]
    return fill(found, **params)


def _drawn(fig: Figure | None) -> list[str]:
    """Draws the figure as the report saves it; returns the glyph-missing warnings matplotlib gave."""
    assert fig is not None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(io.BytesIO(), format="png", dpi=40)
    return [str(w.message) for w in caught if GLYPH_MISSING.search(str(w.message))]


def _texts(fig: Figure) -> dict[str, list[Any]]:
    """The worded texts of a figure by kind: titles, axis labels, legend entries and legend titles."""
    out: dict[str, list[Any]] = {"title": [], "xlabel": [], "ylabel": [], "legend": [], "legend_title": []}
    for ax in fig.axes:
        out["title"].append(ax.title)
        out["xlabel"].append(ax.xaxis.label)
        out["ylabel"].append(ax.yaxis.label)
        legend = ax.get_legend()
        if legend is not None:
            out["legend"] += legend.get_texts()
            out["legend_title"].append(legend.get_title())
    return out


def _strings(fig: Figure) -> dict[str, list[str]]:
    return {kind: [t.get_text() for t in texts] for kind, texts in _texts(fig).items()}


def _no_data(summary: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """No point has a p99: the middle panel of latency_points says so."""
    shown = figures.shown_point
    monkeypatch.setattr(figures, "shown_point",
                        lambda s, name, run: shown(s, name, run).model_copy(update={"p99_ms": None}))
    return summary


# figure -> (summary builder, the words it must show: kind -> catalogue keys with their parameters)
Expected = dict[str, list[tuple[str, dict[str, Any]]]]
CASES: dict[str, tuple[Callable[..., dict[str, Any]], Expected]] = {
    "cosine_by_language": (lambda c, u: c, {
        "title": [("title", {"legacy": "legacy"})], "xlabel": [("xlabel", {})], "ylabel": [("ylabel", {})],
        "legend": [("threshold", {"threshold": 0.999})]}),
    "latency_points": (lambda c, u: c, {
        "title": [("titles.p50_ms", {}), ("titles.p99_ms", {}), ("titles.docs_per_s", {})],
        "xlabel": [("xlabel", {})] * 3,
        "ylabel": [("ylabels.p50_ms", {}), ("ylabels.p99_ms", {}), ("ylabels.docs_per_s", {})],
        "legend_title": [("legend", {})]}),
    "latency_sweep": (lambda c, u: c, {
        "title": [("left_title", {}), ("right_title", {})], "xlabel": [("xlabel", {})] * 2,
        "ylabel": [("left_ylabel", {}), ("right_ylabel", {})],
        "legend": [("line", {"name": "legacy", "figure": "p50"}), ("line", {"name": "vllm", "figure": "p99"})]}),
    "parity_backends": (lambda c, u: c, {
        "title": [("title", {})], "xlabel": [("xlabel", {})], "ylabel": [("ylabel", {})],
        "legend": [("metrics.cos_min", {}), ("metrics.cos_median", {})]}),
    "capacity_curve": (lambda c, u: summary_with_capacity(), {
        "title": [("left_title", {}), ("right_title", {})], "xlabel": [("xlabel", {})] * 2,
        "ylabel": [("left_ylabel", {}), ("right_ylabel", {})],
        "legend": [("p99", {"name": "legacy"}), ("slo", {"slo": "500"}), ("invalid", {"name": "dynamo"}),
                   ("throughput", {"name": "vllm"}), ("goodput", {"name": "vllm"})]}),
    "index_shares": (lambda c, u: summary_with_index(u), {
        "title": [("title", {"distance": "inner_product"})], "xlabel": [("xlabel", {})],
        "ylabel": [("ylabels.ndcg_at_10", {})], "legend": [("line", {"name": "vllm", "method": "methods.exact"}),
                                                           ("line", {"name": "dynamo", "method": "methods.hnsw"})]}),
}


def _expected(lang: str, name: str, key: str, params: dict[str, Any]) -> str:
    params = {k: _word(lang, f"{name}.{v}") if isinstance(v, str) and v.startswith("methods.") else v
              for k, v in params.items()}
    return _word(lang, f"{name}.{key}", **params)


@pytest.mark.parametrize("name", list(CASES))
def test_each_figure_in_korean_shows_the_catalogue_words(name: str, complete: dict[str, Any],
                                                         complete_upgraded: dict[str, Any]) -> None:
    # no `monkeypatch` here (no builder patches anything): with it, tests/conftest.py's memo computed each case's
    # upgrades and decisions afresh, ~1.4 CPU-s a case
    build, expected = CASES[name]
    summary = build(complete, complete_upgraded)
    fig = figures.FIGURES[name](as_typed(copy.deepcopy(summary)), "ko")
    assert _drawn(fig) == []  # every glyph drawn: no tofu box
    drawn = _strings(fig)
    for kind, keys in expected.items():
        words = [_expected("ko", name, key, params) for key, params in keys]
        if kind in ("legend",):  # the entries it must hold (a legend also names the targets)
            assert set(words) <= set(drawn[kind]), (kind, words, drawn[kind])
        else:  # one per axes, in order
            assert drawn[kind] == words, (kind, drawn[kind])
    # nothing English is left: no static English word of this figure that the Korean word does not keep itself
    # (the metric names cos_min, nDCG@10 and the unit ms stay as they are)
    english = {k: v for k, v in _flat(catalogue("en").figures[name]).items() if "{" not in v}
    korean = _flat(catalogue("ko").figures[name])
    leaked = [text for texts in drawn.values() for text in texts for key, word in english.items()
              if word not in korean[key] and word in text]
    assert leaked == []
    # and drawn in the Korean face, not a fallback without Hangul
    for texts in _texts(fig).values():
        for text in texts:
            if text.get_text():
                assert "NotoSansKR" in font_manager.findfont(text.get_fontproperties()), text.get_text()


def test_no_data_is_said_in_the_language(complete: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    summary = _no_data(complete, monkeypatch)
    fig = figures.latency_points(as_typed(summary), "ko")
    assert _drawn(fig) == []
    title = _word("ko", "latency_points.no_data", title=_word("ko", "latency_points.titles.p99_ms"))
    assert _strings(fig)["title"][1] == title and not fig.axes[1].axison


@pytest.mark.parametrize("lang", ["ja", "zh"])
def test_japanese_and_chinese_figures_draw_every_glyph(lang: str, complete: dict[str, Any]) -> None:
    fig = figures.cosine_by_language(as_typed(complete), lang)
    assert _drawn(fig) == []
    assert _strings(fig)["xlabel"] == [_word(lang, "cosine_by_language.xlabel")]


def test_the_warning_check_sees_a_missing_glyph() -> None:
    # the control of the checks above: Hangul in matplotlib's default font is reported
    fig = Figure()
    fig.add_subplot().set_title("지연 시간")
    assert _drawn(fig)


def test_english_figures_keep_their_words_and_file_names(complete: dict[str, Any]) -> None:
    fig = figures.cosine_by_language(as_typed(complete))  # notebooks call it without a language: English
    assert _strings(fig)["title"] == ["Per-document cosine vs 'legacy' (first repeat), by language"]
    assert figure_stem("cosine_by_language", "en") == "cosine_by_language"
    assert figure_stem("cosine_by_language", "ko") == "cosine_by_language.ko"


def test_without_the_font_package_a_figure_keeps_the_english_words(monkeypatch: pytest.MonkeyPatch,
                                                                   complete: dict[str, Any]) -> None:
    monkeypatch.setattr(figure_words, "variable_font", lambda lang: None)
    figure_words.cjk_font.cache_clear()
    try:
        words = FigureWords("ko", "cosine_by_language")
        assert words.lang == "en" and words.rc == {} and words("xlabel") == "document language"
        fig = figures.cosine_by_language(as_typed(complete), "ko")
        assert _drawn(fig) == []  # English words in the default font: nothing missing
        fonts = figure_fonts_check()  # and `embedswap doctor` says so, with the command that installs them
        assert not fonts.ok and not fonts.required and "justmytype-intl-cjk" in fonts.fix
    finally:
        figure_words.cjk_font.cache_clear()
