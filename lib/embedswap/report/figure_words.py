"""The words and the font of a figure in one report language.

Every title, axis label, legend label and "no data" text of a figure is a catalogue word, ``[figures.<figure>]`` in
``report/catalogue/<lang>.toml``, filled by :func:`embedswap.report.catalogue.fill`: a Korean post shows Korean
figures (issue 55, point 6). Data drawn as it is stored (target names, language codes, operating points, numbers)
stays as the tables print it.

The font. matplotlib's own fonts (DejaVu) have no Hangul, kana or Han, and a bare host (CI, a container) has no CJK
font either: matplotlib would draw a box per character and warn "Glyph ... missing from font(s)". The kit installs
Noto Sans KR / JP / SC (OFL) with the package ``justmytype-intl-cjk`` (pyproject.toml). Those files are variable
fonts whose default instance is Thin (wght 100), and matplotlib cannot pick a named instance of a variable font (its
``face_index`` stops at 65535, below FreeType's instance bits), so the Regular instance (wght 400) is cut once with
fontTools' instancer (a matplotlib dependency) and kept in matplotlib's cache folder; the next process reads it back.
Without the package a ko/ja/zh figure is drawn with the English words (never boxes): docs/environments.md.

A figure of language ``lang`` is written as ``figures/<name>.<lang>.png``, English as ``figures/<name>.png`` (the
name readers and earlier reports use): :func:`figure_stem`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

from embedswap.report.catalogue import CatalogueError, catalogue, fill

if TYPE_CHECKING:  # the report's sections name a figure's file without drawing it: matplotlib's modules load late
    from matplotlib.figure import Figure

STYLE = "whitegrid"
PALETTE = "colorblind"
# the Noto family of each language whose figures need one: its folder in justmytype-intl-cjk and its family name
CJK_FONTS = {"ko": ("notosanskr", "NotoSansKR", "Noto Sans KR"), "ja": ("notosansjp", "NotoSansJP", "Noto Sans JP"),
             "zh": ("notosanssc", "NotoSansSC", "Noto Sans SC")}
FONT_PACKAGE = "justmytype_intl_cjk"
REGULAR = 400.0


def figure_stem(name: str, lang: str) -> str:
    """The file name, without ``.png``, of figure ``name`` drawn in ``lang``."""
    return name if lang == "en" else f"{name}.{lang}"


def variable_font(lang: str) -> Path | None:
    """The kit's variable font file for ``lang`` (ko, ja, zh), or None when its package is not installed."""
    folder, stem, _ = CJK_FONTS[lang]
    try:
        path = resources.files(FONT_PACKAGE).joinpath(f"fonts/ofl/{folder}/{stem}[wght].ttf")
    except ModuleNotFoundError:
        return None
    return Path(str(path)) if path.is_file() else None


@functools.cache
def cjk_font(lang: str) -> str | None:
    """The family name of ``lang``'s font, registered with matplotlib; None when the kit's font package is missing."""
    source = variable_font(lang)
    if source is None:
        return None
    _, stem, family = CJK_FONTS[lang]
    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:16]  # a new release of the package cuts a new instance
    cached = Path(matplotlib.get_cachedir()) / "embedswap-fonts" / f"{stem}-Regular-{digest}.ttf"
    if not cached.exists():
        _cut_regular(source, cached)
    from matplotlib import font_manager

    font_manager.fontManager.addfont(str(cached))
    return family


def _cut_regular(source: Path, target: Path) -> None:
    """The Regular instance of a variable font, written atomically (two test workers may cut it at once)."""
    from fontTools.ttLib import TTFont
    from fontTools.varLib import instancer

    target.parent.mkdir(parents=True, exist_ok=True)
    font = instancer.instantiateVariableFont(TTFont(str(source)), {"wght": REGULAR}, updateFontNames=True)
    handle, part = tempfile.mkstemp(dir=target.parent, suffix=".part")
    os.close(handle)
    try:
        font.save(part)
        os.chmod(part, 0o644)  # mkstemp's 0600 would hide it from another user sharing the cache folder
        os.replace(part, target)
    finally:
        if os.path.exists(part):
            os.unlink(part)


class FigureWords:
    """The words of one figure in one language, and the rc settings that draw them in a font that has them."""

    def __init__(self, lang: str, figure: str):
        family = cjk_font(lang) if lang in CJK_FONTS else None
        # no font for the language: its figures keep the English words rather than draw boxes
        self.lang = lang if lang not in CJK_FONTS or family is not None else "en"
        self.figure = figure
        self.table = catalogue(self.lang).figures.get(figure)
        if not isinstance(self.table, dict):
            raise CatalogueError(f"report catalogue '{self.lang}' has no words for figure '{figure}' "
                                 f"(lib/embedswap/report/catalogue/{self.lang}.toml, [figures.{figure}])")
        # an explicit family (never the generic "sans-serif", which is looked up again when the figure is saved,
        # outside this context); DejaVu Sans after it for a glyph the Noto face lacks
        self.rc: dict[str, Any] = {"font.family": [family, "DejaVu Sans"]} if family else {}

    def __call__(self, key: str, **params: Any) -> str:
        """The word ``key`` (``a.b`` for a word of a sub-table) with its placeholders filled in."""
        found: Any = self.table
        for part in key.split("."):
            found = found.get(part) if isinstance(found, dict) else None
        if not isinstance(found, str):
            raise CatalogueError(f"report catalogue '{self.lang}' has no figure word '{self.figure}.{key}' "
                                 f"(lib/embedswap/report/catalogue/{self.lang}.toml, [figures.{self.figure}])")
        return fill(found, **params)

    @contextmanager
    def drawing(self) -> Iterator[None]:
        """Every text created inside takes the language's font (a text keeps the family it was created with)."""
        with matplotlib.rc_context(self.rc):
            yield

    def figure_with_axes(self, width: float, height: float, ncols: int = 1) -> tuple[Figure, list[Any]]:
        """A figure of ``ncols`` axes in the report's style; seaborn's style sets its own font family, so the
        language's is laid over it."""
        import seaborn as sns
        from matplotlib.figure import Figure

        with sns.axes_style(STYLE, rc=self.rc):
            fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
            axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
        return fig, axes


def in_language(figure: str) -> Callable[[Callable[..., Figure | None]], Callable[..., Figure | None]]:
    """A figure function ``draw(summary, words)`` called as ``name(summary, lang="en")``: the words of ``lang``,
    drawn in its font."""
    def wrap(draw: Callable[..., Figure | None]) -> Callable[..., Figure | None]:
        @functools.wraps(draw)
        def drawn(summary: Any, lang: str = "en") -> Figure | None:
            words = FigureWords(lang, figure)
            with words.drawing():
                return draw(summary, words)
        del drawn.__wrapped__  # help() and signature() in a notebook show (summary, lang), what a caller passes
        return drawn
    return wrap
