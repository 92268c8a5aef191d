"""What each server says about itself reaches the setup: two external servers that answer ``/version`` (an engine
upgrade, vLLM 0.31.0 -> 0.32.0) are named with their versions in the post and the full report, in every language,
and "unconfirmed" is left to a server that said nothing (issue 54, item 4)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from embedswap.analysis.upgrade import read_summary
from embedswap.pipeline.build import version_fields
from embedswap.report.catalogue import LANGUAGES, catalogue
from embedswap.report.markdown import render_markdown
from embedswap.report.post import render_post
from embedswap.summary.model import Summary
from typed_summary import as_typed


def _identity(version: str) -> dict[str, Any]:
    """What vLLM's server says about itself, as measure.identity records it."""
    return {"served_models": ["minilm"], "model": "minilm", "system_fingerprint": None,
            "headers": {"server": "uvicorn"}, "routes": {"/version": {"version": version}},
            "models_path": "/v1/models", "status": 200}


def _external(target: dict[str, Any], identity: dict[str, Any] | None) -> dict[str, Any]:
    """A target of the complete fixture made external (no kit-side version), as the pipeline builds it."""
    config = {"kind": "external", "url": target["base_url"]}
    entry = {**target, "config": config, "kind": "external", "version": None, "commands": [],
             **({"identity": identity} if identity is not None else {})}
    return {**entry, **version_fields(entry)}


@pytest.fixture
def upgrade(complete: dict[str, Any]) -> Summary:
    """The complete fixture with its legacy server and first candidate external, saying 0.31.0 and 0.32.0 on
    ``/version``; the second candidate (``dynamo``) external and never asked (no identity recorded)."""
    targets = complete["targets"]
    targets["legacy"] = _external(targets["legacy"], _identity("0.31.0"))
    targets["vllm"] = _external(targets["vllm"], _identity("0.32.0"))
    targets["dynamo"] = _external(targets["dynamo"], None)
    return read_summary(complete)


def _setup_lines(text: str, names: tuple[str, ...]) -> dict[str, str]:
    """The post's setup line of each server (``- <role> `name`: ...`` in its section 2)."""
    setup = text.split("\n## 2. ")[1].split("\n## ")[0]
    out = {}
    for name in names:
        (out[name],) = [x for x in setup.splitlines() if x.startswith("- ") and f"`{name}`" in x]
    return out


def test_the_pipeline_fills_the_version_from_what_the_server_says(upgrade: Summary) -> None:
    legacy, vllm, dynamo = (upgrade.targets[n] for n in ("legacy", "vllm", "dynamo"))
    assert (legacy.version, legacy.version_source, legacy.statement) == ("0.31.0", "server", "/version 0.31.0")
    assert (vllm.version, vllm.version_source) == ("0.32.0", "server")
    assert vllm.said["/version version"] == "0.32.0" and vllm.said["served models"] == "minilm"
    assert (dynamo.version, dynamo.version_source, dynamo.said) == (None, None, {})


def test_a_kit_version_is_kept_and_named_as_the_kit_s() -> None:
    found = version_fields({"version": "vllm 0.31.0", "identity": _identity("0.31.0")})
    assert found["version_source"] == "kit" and "version" not in found  # the kit's own stays as it was
    assert version_fields({"version": None, "identity": None}) == {
        "version": None, "version_source": None, "said": {}, "statement": None}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_post_names_both_versions_and_where_they_came_from(upgrade: Summary, lang: str) -> None:
    text = render_post(as_typed(upgrade), lang)
    unconfirmed = catalogue(lang).label(None)
    lines = _setup_lines(text, ("legacy", "vllm", "dynamo"))
    for name, version in (("legacy", "0.31.0"), ("vllm", "0.32.0")):
        assert version in lines[name] and "`/version " + version + "`" in lines[name], lines[name]
        assert unconfirmed not in lines[name], lines[name]
    assert unconfirmed in lines["dynamo"]  # it said nothing: the only unconfirmed one


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_report_setup_and_gaps_name_only_the_silent_server(upgrade: Summary, lang: str) -> None:
    text = render_markdown(as_typed(upgrade), lang)
    unconfirmed = catalogue(lang).label(None)
    setup = text.split("\n## 3. ")[0]
    for version in ("0.31.0", "0.32.0"):
        (line,) = [x for x in setup.splitlines() if f"`/version {version}`" in x]
        assert version in line.split("`")[0] and unconfirmed not in line, line
    gaps = text.split("\n## 8. ")[1]
    assert "`dynamo.version`" in gaps
    assert not re.search(r"`(legacy|vllm)\.version`", gaps)


def test_the_post_reads_vllm_s_version_from_its_version_route(upgrade: Summary) -> None:
    (row,) = [v for v in upgrade.decisions.post.versions if v.component == "vllm"]
    assert (row.run, row.server) == ("0.32.0", "vllm")


def test_a_server_that_says_something_but_no_version_is_not_unconfirmed(complete: dict[str, Any]) -> None:
    quiet = {**_identity("x"), "routes": {}, "system_fingerprint": "fp_abc"}
    complete["targets"]["vllm"] = _external(complete["targets"]["vllm"], quiet)
    summary = read_summary(complete)
    assert summary.targets["vllm"].statement == "system_fingerprint fp_abc"
    for lang in ("en", "ko"):
        line = _setup_lines(render_post(as_typed(summary), lang), ("vllm",))["vllm"]
        assert "`system_fingerprint fp_abc`" in line and catalogue(lang).label(None) not in line, line
        gaps = render_markdown(as_typed(summary), lang).split("\n## 8. ")[1]
        assert "`vllm.version`" in gaps  # its version is still not known


def test_a_dynamo_frontend_s_own_version_is_dynamo_s(complete: dict[str, Any]) -> None:
    complete["targets"]["dynamo"] = _external(complete["targets"]["dynamo"], _identity("1.6.2"))
    rows = {v.component: v for v in read_summary(complete).decisions.post.versions}
    assert (rows["dynamo"].run, rows["dynamo"].server, rows["dynamo"].same) == ("1.6.2", "dynamo", True)
    assert rows["vllm"].run == "0.31.0" and rows["vllm"].server == "vllm"  # the kit's own, not the frontend's
