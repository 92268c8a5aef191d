"""The notebooks behind the report: each executed notebook of the attempt exported to HTML with nbconvert.

Inputs are shown (a reader follows every number to the cell that measured it); the text goes through the kit's
redaction (``redact.redact``) before and after the export and through ``portable.scrub``, like every published
file. The pages go to the report folder's ``notebooks/<name>.html``; the method section links them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from embedswap.report.files import write_file
from embedswap.redact import redact
from embedswap.report.portable import Locality, scrub


def executed(attempt_dir: Path | None) -> list[str]:
    """Names (no suffix) of the attempt's executed notebooks, in step order."""
    folder = (attempt_dir / "notebooks") if attempt_dir else None
    return sorted(p.stem for p in folder.glob("*.ipynb")) if folder and folder.is_dir() else []


def exported(attempt_dir: Path | None) -> list[str]:
    """The executed notebooks that have their HTML page in the report folder (what the report may link)."""
    if attempt_dir is None:
        return []
    from embedswap.paths import report_dir

    folder = report_dir(attempt_dir.parent.parent) / "notebooks"
    return [name for name in executed(attempt_dir) if (folder / f"{name}.html").is_file()]


def _installed_templates() -> list[str]:
    """nbconvert's templates as installed beside the package (``<prefix>/share/jupyter/nbconvert/templates``).

    Jupyter looks for them under ``sys.prefix``; a tool whose dependencies live in another environment (a venv
    with ``--system-site-packages`` or a ``.pth`` line to another site-packages, as tests/e2e/test_install.py builds)
    would not find the ``lab`` template there."""
    import nbconvert

    prefix = Path(nbconvert.__file__).resolve().parents[4]  # <prefix>/lib/python3.X/site-packages/nbconvert
    folder = prefix / "share" / "jupyter" / "nbconvert" / "templates"
    return [str(folder)] if folder.is_dir() else []


def export_notebooks(attempt_dir: Path, out: Path, where: Locality) -> dict[str, Path]:
    """notebooks/<name>.html for each executed notebook; earlier exports of notebooks no longer there removed."""
    import nbformat
    from nbconvert import HTMLExporter


    names = executed(attempt_dir)
    folder = out / "notebooks"
    written: dict[str, Path] = {}
    if folder.is_dir():
        for stale in folder.glob("*.html"):
            if stale.stem not in names:
                stale.unlink()
    if not names:
        return written
    folder.mkdir(parents=True, exist_ok=True)
    try:
        templates = _installed_templates()  # as base dirs ('lab') and as a search path ('base/null.j2')
        exporter = HTMLExporter(template_name="lab", extra_template_basedirs=templates, extra_template_paths=templates)
    except Exception as exc:  # no 'lab' template where Jupyter looks: the report is written without the pages
        print(f"[embedswap] notebooks not exported to HTML: {type(exc).__name__}: {exc}"[:300], file=sys.stderr)
        for stale in folder.glob("*.html"):
            stale.unlink()
        return written
    for name in names:
        source = redact((attempt_dir / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
        try:
            body, _ = exporter.from_notebook_node(nbformat.reads(source, as_version=4))
        except Exception as exc:  # a half-written notebook (a step killed mid-cell) must not cost the report
            print(f"[embedswap] notebook {name} not exported to HTML: {type(exc).__name__}: {exc}"[:300],
                  file=sys.stderr)
            (folder / f"{name}.html").unlink(missing_ok=True)
            continue
        written[f"notebooks/{name}.html"] = write_file(folder / f"{name}.html", scrub(redact(body), where))
    return written
