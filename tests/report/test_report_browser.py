"""Browser check (issue #7, item 8): the self-contained HTML report, rendered from the synthetic complete summary,
opened in headless Chromium (the Debian package; `make browser` installs it). A screenshot must not be blank, and
the live DOM must hold the tables and figures with no broken image. No server runs; about 20 s.

The DOM check appends a small <script> to a COPY of the report (the rendered report itself stays script-free, as
tests/report/test_report.py demands): on load it writes a JSON summary (tables, images, broken images) into
document.title, which `--dump-dom` then hands back."""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from embedswap.report.publish import render_report
from browser import require_chromium, run_chromium
from synthetic_experiment import load_summary, synthetic_experiment

PROBE = """<script>
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  document.title = JSON.stringify({
    tables: document.querySelectorAll("table").length,
    images: images.length,
    broken: images.filter(function (i) { return !i.complete || i.naturalWidth === 0; }).length
  });
});
</script>
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("browser")
    return render_report(synthetic_experiment(root, load_summary("complete")))


def test_screenshot_is_not_blank(report: dict[str, Path], tmp_path: Path) -> None:
    chromium = require_chromium()
    shot = tmp_path / "report.png"
    run_chromium(chromium, tmp_path, f"--screenshot={shot}", "--window-size=1280,4000", "--hide-scrollbars",
                 report["report.ko.html"].as_uri())
    assert shot.exists() and shot.stat().st_size > 0, "chromium wrote no screenshot"
    with Image.open(shot) as image:
        assert image.size == (1280, 4000)
        pixels = image.convert("RGB")
        colours = pixels.getcolors(maxcolors=1 << 24) or []
    assert len(colours) > 16, f"screenshot looks blank: {len(colours)} distinct colours"
    background = max(colours)[0]
    assert background < 0.99 * 1280 * 4000, "screenshot is (almost) one colour"


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_dom_has_tables_and_figures(report: dict[str, Path], tmp_path: Path, lang: str) -> None:
    chromium = require_chromium()
    source = report[f"report.{lang}.html"].read_text(encoding="utf-8")
    head, body_end, tail = source.rpartition("</body>")
    assert body_end, "the report has no </body>"
    probe = tmp_path / f"report.{lang}.probe.html"
    probe.write_text(head + PROBE + body_end + tail, encoding="utf-8")

    dom = run_chromium(chromium, tmp_path, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()).stdout
    match = re.search(r"<title>(.*?)</title>", dom, flags=re.S)
    assert match, f"no <title> in the dumped DOM: {dom[:500]!r}"
    try:
        found: dict[str, Any] = json.loads(html.unescape(match.group(1)))
    except json.JSONDecodeError:
        pytest.fail(f"the load handler did not run (title is {match.group(1)!r})")

    assert found["tables"] >= 4, found
    assert found["images"] >= 1 and found["images"] == source.count("<img"), found
    assert found["broken"] == 0, f"broken images in the {lang} report: {found}"
    if lang == "ko":
        assert "실측" in dom
