"""Files of a report: post.<lang>.md/.html (the blog draft), report.<lang>.md/.html (the full report it links),
figures/*.png (one file per figure and language: <name>.png in English, <name>.<lang>.png otherwise), report.json,
and the index of all reports."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from embedswap.analysis.common import is_measured, roles
from embedswap.analysis.latency_ratios import latency_state
from embedswap.captures import open_attempt
from embedswap.config.base import ConfigError
from embedswap.config.sections import ReportConfig
from embedswap.config.experiment import load_experiment
from embedswap.paths import report_dir
from embedswap.report import figures as figures_mod
from embedswap.report.errors import ReportError
from embedswap.report.figure_words import figure_stem
from embedswap.report.files import write_file
from embedswap.report.format import code, esc, fmt, label, md_table
from embedswap.report.front_matter import dump, front_matter, slug_of
from embedswap.report.html import markdown_to_html, page_title
from embedswap.report.notebooks import export_notebooks
from embedswap.report.portable import locality, scrub
from embedswap.report.markdown import load_article, render_markdown
from embedswap.report.post import FULL_REPORT, render_post
from embedswap.report.report_data import Headline, ModelRef, ReportJson, read_report_json
from embedswap.summary.model import Summary
from embedswap.summary.types_decisions import RatioFigure
from embedswap.summary.types_faults import comparable
from embedswap.analysis.upgrade import load_summary

REPORT_JSON = "report.json"


def _png(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    return buffer.getvalue()


def draw_figures(summary: Summary, lang: str = "en") -> dict[str, bytes]:
    """PNG bytes of every figure that has data, drawn with the words of ``lang``, by file stem
    (``figures/<stem>.png``: figure_words.figure_stem); a figure whose data was not measured is left out."""
    out = {}
    for name, function in figures_mod.FIGURES.items():
        fig = function(summary, lang)
        if fig is not None:
            out[figure_stem(name, lang)] = _png(fig)
    return out


def headline(summary: Summary) -> Headline:
    """The numbers the index and the console show, copied from the summary (nothing computed)."""
    candidate = summary.roles.candidate
    comparison = summary.vectors.comparison(candidate)
    lat = summary.latency.of(candidate)
    cosine = comparison.cosine if comparison is not None and is_measured(comparison) else None
    measured = lat is not None and is_measured(lat)
    # the report's one statistic (decisions.shown), so the index and the front matter print the body's numbers
    seq = summary.decisions.shown.at(candidate, "sequential") if measured else None
    conc = lat.concurrent if measured else None
    conc_shown = summary.decisions.shown.at(candidate, "concurrent") if measured else None
    candidates = roles(summary)[1]
    comparisons = [summary.vectors.comparison(n) for n in candidates]
    lows = [c.cosine.min for c in comparisons if is_measured(c) and c.cosine is not None and c.cosine.min is not None]
    return Headline(
        candidate=candidate,
        legacy=summary.roles.legacy,
        cosine_min=cosine.min if cosine is not None else None,
        cosine_measured=is_measured(comparison),
        candidate_seq_p50_ms=seq.p50_ms if seq is not None else None,
        candidate_conc_docs_per_s=conc_shown.docs_per_s if conc_shown is not None else None,
        concurrency=conc.concurrency if conc is not None else None,
        latency_state=latency_state(lat),
        parity_pass=summary.parity.passed if is_measured(summary.parity) else None,
        candidate_seq_p50_ratio=_ratio(summary, candidate, "sequential", "p50"),
        candidate_conc_docs_per_s_ratio=_ratio(summary, candidate, "concurrent", "docs_per_s"),
        candidates=list(candidates),
        cosine_min_all=min(lows, default=None),
        gpu=bool(summary.environment.gpu) if summary.environment is not None else None,
    )


def _ratio(summary: Summary, candidate: str | None, run: str, figure: RatioFigure) -> float | None:
    if candidate is None or not comparable(summary.decisions.faults, summary.roles.legacy, [candidate]):
        return None  # a pair with a corrupting server: compared with no one, as in the body
    entry = summary.latency_ratio(candidate, run, figure)  # the one stored ratio, as the report and the post print it
    return entry.value if entry is not None else None


def _report_config(experiment_dir: Path) -> ReportConfig:
    try:
        return load_experiment(experiment_dir).report
    except ConfigError:
        return ReportConfig()  # an old experiment.yaml that no longer validates still gets its report


def _write_figures(summary: Summary, figure_dir: Path, written: dict[str, Path],
                   languages: list[str]) -> dict[str, dict[str, bytes]]:
    """Every figure once per report language (its titles, axes and legends are the language's words)."""
    images = {lang: draw_figures(summary, lang) for lang in languages}
    for drawn in images.values():
        for stem, data in drawn.items():
            written[f"figures/{stem}.png"] = write_file(figure_dir / f"{stem}.png", data)
    for path in figure_dir.glob("*.png"):
        # a figure of an earlier render whose data is no longer measured, or of a language no longer listed
        if path.name.split(".")[0] in figures_mod.FIGURES and f"figures/{path.name}" not in written:
            path.unlink()
    return images


@dataclass(frozen=True)
class Page:
    """What every page of one render shares: figures, manifest, attempt, title, article, languages, footer."""
    drawn: dict[str, bool]
    manifest: dict[str, Any] | None
    attempt_dir: Path
    title: str | None
    article: Any
    images: dict[str, dict[str, bytes]]  # by language, then by file stem
    languages: list[str]
    footer: str
    where: Any
    fallback: str


def _write_language(summary: Summary, lang: str, out: Path, page: Page, head: Headline,
                    config: ReportConfig) -> dict[str, Path]:
    """The full report (every table, the post's appendix) and the post (the blog draft that leads with its
    conclusion and links the full report) of one language, as markdown with front matter and as HTML."""
    written = {}
    text = scrub(render_markdown(summary, lang, page.drawn, page.manifest, page.attempt_dir, page.title,
                                 page.article), page.where)
    post = scrub(render_post(summary, lang, page.drawn, page.title, page.article), page.where)
    link = f"]({FULL_REPORT.format(lang=lang)})"
    for kind, body, html_body in (("report", text, text), ("post", post, post.replace(link, f"](report.{lang}.html)"))):
        title = page_title(body, page.fallback)
        front = front_matter(summary, lang, title, head, config.publish)
        written[f"{kind}.{lang}.md"] = write_file(out / f"{kind}.{lang}.md", dump(front) + body)
        html = markdown_to_html(html_body, lang, title, page.images[lang], page.languages, footer=page.footer)
        written[f"{kind}.{lang}.html"] = write_file(out / f"{kind}.{lang}.html", scrub(html, page.where))
    return written


def render_report(experiment_dir: Path, attempt: str = "") -> dict[str, Path]:
    """Render the report of one attempt (default: the newest) from its summary.json.

    Writes into ``embedswap.paths.report_dir(experiment_dir)``: report.<lang>.md / .html for each language of
    experiment.yaml's ``report.languages``, report.md / report.html (copies of the first language), figures/*.png
    (each figure in each language) and report.json (headline numbers + the summary's path). Reads no capture;
    when the report folder sits in a ``reports/`` folder, the index there is refreshed too. Returns every written
    file by its name in the folder.
    """
    experiment_dir = Path(experiment_dir).resolve()
    chosen = open_attempt(experiment_dir, attempt)
    if not chosen.summary_path.exists():
        raise ReportError(f"{chosen.summary_path} does not exist: attempt {chosen.name} has no summary yet. Run a "
                          "step of the experiment (any step ends by writing summary.json), then render again.")
    # loaded, upgraded and validated once: every part of the render reads this one typed summary
    summary = load_summary(chosen.summary_path)
    manifest_path = chosen.path / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else None
    config = _report_config(experiment_dir)
    languages, title = list(config.languages), config.title
    where = locality(summary, experiment_dir)
    head = headline(summary)
    out = report_dir(experiment_dir)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    images = _write_figures(summary, out / "figures", written, languages)
    # which figures have data does not depend on the language
    drawn = {name: figure_stem(name, languages[0]) in images[languages[0]] for name in figures_mod.FIGURES}
    written.update(export_notebooks(chosen.path, out, where))
    article = load_article()
    fallback = f"embedswap report {summary.experiment.folder}"
    footer = f"embedswap · summary {summary.generated} · {chosen.name}"
    for lang in languages:
        written.update(_write_language(summary, lang, out, Page(drawn, manifest, chosen.path, title, article,
                                                                images, languages, footer, where, fallback),
                                       head, config))
    for suffix in ("md", "html"):
        target = out / f"report.{suffix}"
        write_file(target, (out / f"report.{languages[0]}.{suffix}").read_bytes())
        written[f"report.{suffix}"] = target
    try:
        summary_ref = str(chosen.summary_path.relative_to(out.parent.parent))
    except ValueError:
        summary_ref = scrub(str(chosen.summary_path), where)
    report_json = ReportJson(
        experiment=summary.experiment,
        model=ModelRef(spec=summary.model.spec, served_name=summary.model.served_name,
                       fingerprint=summary.model.fingerprint, revision=summary.model.revision),
        summary_path=summary_ref, summary_generated=summary.generated,
        rendered=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        languages=languages, headline=head, slug=slug_of(summary),
    )
    written[REPORT_JSON] = write_file(out / REPORT_JSON, scrub(report_json.to_json(), where))
    if out.parent.name == "reports":
        written.update({f"../{k}": v for k, v in render_index(out.parent).items()})
    return written


def _index_cell(value: Any, kind: str, state: bool | None) -> str:
    if value is not None:
        return fmt(value, kind)
    return f"{label(state, 'en')} ({label(state, 'ko')})"


def _index_row(folder: str, data: ReportJson) -> list[str]:
    h = data.headline
    exp = data.experiment
    links = " · ".join(f"[{lang}]({folder}/report.{lang}.html)" for lang in data.languages)
    gate = h.parity_pass
    latency_missing = False if h.latency_state is False else None
    return [
        esc(exp.date), f"{code(folder)} {links}", esc(data.model.spec),
        f"{code(h.candidate)} vs {code(h.legacy)}",
        _index_cell(h.cosine_min, "cos", False),
        _index_cell(h.candidate_seq_p50_ms, "ms", latency_missing),
        _index_cell(h.candidate_conc_docs_per_s, "rate", latency_missing)
        + (f" (c{fmt(h.concurrency, 'raw')})" if h.candidate_conc_docs_per_s is not None else ""),
        _index_cell(None if gate is None else ("pass" if gate else "fail"), "raw", False),
        f"{code(exp.attempt)}",
    ]


def render_index(reports_root: Path) -> dict[str, Path]:
    """reports/index.md and index.html: every report folder (one with report.json) with its headline figures."""
    reports_root = Path(reports_root).resolve()
    reports_root.mkdir(parents=True, exist_ok=True)
    entries = []
    for path in sorted(reports_root.glob(f"*/{REPORT_JSON}")):
        try:
            data = read_report_json(path)
        except (OSError, ValueError):  # unreadable, or not a report.json (a ValidationError is a ValueError)
            continue
        entries.append((path.parent.name, data))
    entries.sort(key=lambda e: (e[1].experiment.date, e[0]), reverse=True)
    rows = [_index_row(folder, data) for folder, data in entries]
    header = ["Date", "Report", "Model", "Candidate vs legacy", "Cosine min (candidate vs legacy)",
              "Candidate seq p50 (ms)", "Candidate concurrent docs/s", "Parity gate", "Attempt"]
    lines = ["# embedswap reports", "",
             "Every experiment report in this folder, newest first. Figures are copied from each attempt's "
             "summary.json (report.json in the report folder); a value the run did not produce is labelled "
             "*not measured (미실측)* or *unconfirmed (미확인)*.", ""]
    lines.append(md_table(header, rows, ["l", "l", "l", "l", "r", "r", "r", "c", "l"]) if rows
                 else "No report yet: render one with `embedswap report <experiment folder>`.")
    text = "\n".join(lines) + "\n"
    out = {"index.md": write_file(reports_root / "index.md", text)}
    out["index.html"] = write_file(reports_root / "index.html", markdown_to_html(text, "en", "embedswap reports"))
    return out
