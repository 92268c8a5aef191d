"""The index options of a model change (issue 57) searched on the real embedded PostgreSQL + pgvector with synthetic
vectors whose relation to the legacy ones is known: rotated (the orthogonal map recovers it), a general linear map
(the affine map recovers it, the rotation cannot), unrelated (only the re-embed keeps the ranking), another dimension
(no rotation, the affine map still runs), a bent space (only the MLP map undoes it), and a corpus too small to
tell the options apart."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

from pathlib import Path

import numpy as np
import pytest

from embedswap.analysis.index_options import options_decision
from embedswap.config.decisions import DecisionsConfig
from embedswap.config.index import IndexConfig, IndexOptionsConfig
from embedswap.index.maps import fit_map
from embedswap.index.searches import run_searches
from embedswap.summary.sections.index_options import score_options
from embedswap.summary.types_index import IndexDecision
from embedswap.summary.types_index_options import IndexOptions, IndexOptionsDecision

N_DOCS, N_QUERIES, DIM = 400, 40, 24
# the module's one PostgreSQL, reached as a user's server (index.dsn_env; fixture `store`)
DSN_ENV = "EMBEDSWAP_TEST_OPTIONS_DSN"
CONFIG = IndexConfig(shares=[0.0, 1.0], dsn_env=DSN_ENV, options=IndexOptionsConfig(folds=4, rescore_depth=20))


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _world(seed: int = 5, n_docs: int = N_DOCS) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    docs = _unit(rng.normal(size=(n_docs, DIM)))
    queries = _unit(docs[rng.choice(n_docs, N_QUERIES, replace=False)] + 0.3 * rng.normal(size=(N_QUERIES, DIM)))
    return docs, queries


@pytest.fixture(scope="module", autouse=True)
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One embedded PostgreSQL for the module, which run_searches reaches through DSN_ENV as it reaches a user's own
    server (the embedded path's own start and stop: tests/index/test_index_store.py, tests/vectorstore): a start per
    search was an initdb, a start and a stop each, ~45 % of the module's CPU seconds (issue 61). Each run_searches
    drops the tables it made, so the searches do not see each other's."""
    from ports import free_port

    from embedswap.vectorstore.server import EmbeddedPostgres

    with EmbeddedPostgres(tmp_path_factory.mktemp("options-pg"), port=free_port()) as server, \
            pytest.MonkeyPatch.context() as env:
        env.setenv(DSN_ENV, server.dsn)
        yield


SEARCHED: dict[tuple[bytes | None, str, int], tuple[IndexOptions, IndexOptionsDecision]] = {}


def _options(tmp_path: Path, map_: np.ndarray | None, config: IndexConfig = CONFIG, n_docs: int = N_DOCS
             ) -> tuple[IndexOptions, IndexOptionsDecision]:
    """The options searched and decided for the world under ``map_``; the same world, map and configuration once a
    module (the rotation under CONFIG is three tests' subject), each test handed its own copy."""
    key = (None if map_ is None else map_.tobytes(), config.model_dump_json(), n_docs)
    if key not in SEARCHED:
        SEARCHED[key] = _searched(tmp_path, map_, config, n_docs)
    options, decision = SEARCHED[key]
    return options.model_copy(deep=True), decision.model_copy(deep=True)


def _searched(tmp_path: Path, map_: np.ndarray | None, config: IndexConfig, n_docs: int
              ) -> tuple[IndexOptions, IndexOptionsDecision]:
    docs, queries = _world(n_docs=n_docs)
    if map_ is None:  # unrelated: another model's vectors
        rng = np.random.default_rng(11)
        new_docs, new_queries = _unit(rng.normal(size=docs.shape)), _unit(rng.normal(size=queries.shape))
    else:
        new_docs, new_queries = _unit(docs @ map_), _unit(queries @ map_)
    vectors = {"legacy": {"docs": docs, "queries": queries}, "cand": {"docs": new_docs, "queries": new_queries}}
    capture = run_searches(vectors, "legacy", ["cand"], config, tmp_path / "pg")
    assert capture["store"]["kind"] == "dsn" and not (tmp_path / "pg").exists()  # the module's server, no other
    options = IndexOptions.model_validate(score_options(capture["options"]["cand"], np.zeros((0, 0))))
    return options, options_decision(options, DecisionsConfig())


def test_a_rotation_is_recovered_by_the_orthogonal_map(tmp_path: Path) -> None:
    rotation, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(DIM, DIM)))
    options, decision = _options(tmp_path, rotation)
    assert options.of("re_embed").recall_at_10.value == pytest.approx(1.0)
    assert options.of("keep").recall_at_10.value < 0.5  # the old index does not understand the new queries
    assert options.of("orthogonal").recall_at_10.low > 0.95
    assert decision.code == "orthogonal" and decision.verdict("keep").lost == "below_margin"
    assert decision.verdict("affine").lost in ("costlier", "below_margin")
    assert decision.verdict("re_embed").lost == "costlier"
    for option in options.options:  # every option is measured on the store, with its cost
        assert option.query_ms > 0 and option.storage_bytes >= 0
    assert options.of("orthogonal").fit_s is not None and options.of("affine").fit_s is not None


def test_a_general_linear_map_is_undone_by_the_affine_map_not_the_rotation() -> None:
    # a faithful map gives the old model's ranking on the old index; how near that is to the re-embed's is what the
    # options' recall measures (a stretched space ranks otherwise than the old one, so no map reaches 1 there)
    docs, _ = _world()
    rng = np.random.default_rng(2)
    stretch = np.diag(np.geomspace(0.2, 5.0, DIM)) @ np.linalg.qr(rng.normal(size=(DIM, DIM)))[0]
    new = _unit(docs @ stretch)
    fidelity = {}
    for kind in ("orthogonal", "affine"):
        fitted = fit_map(kind, new[:300], docs[:300])
        mapped = _unit(fitted.apply(new[300:]))
        fidelity[kind] = float(np.median(np.sum(mapped * docs[300:], axis=1)))
    assert fidelity["affine"] > 0.99 > fidelity["orthogonal"]


def test_a_bent_space_is_undone_by_the_mlp_map_not_the_linear_ones() -> None:
    # each coordinate cubed after a rotation: monotone, so invertible, but no linear map undoes it (64 hidden units,
    # 128 before: median fidelity 0.94 against the linear maps' 0.85, 1.4 CPU-s against 2.3; 1,000 pairs or fewer
    # stop the network early below the linear maps, so the pairs stay)
    docs = _unit(np.random.default_rng(5).normal(size=(1800, DIM)))
    turned = docs @ np.linalg.qr(np.random.default_rng(6).normal(size=(DIM, DIM)))[0]
    new = _unit(np.sign(turned) * np.abs(turned) ** 3)
    fidelity = {}
    for kind in ("orthogonal", "affine", "mlp"):
        fitted = fit_map(kind, new[:1500], docs[:1500], hidden=64)
        fidelity[kind] = float(np.median(np.sum(_unit(fitted.apply(new[1500:])) * docs[1500:], axis=1)))
        if kind == "mlp":  # what it stores: the affine map and the network's two layers, as float32
            assert fitted.stored_bytes == 4 * ((DIM * DIM + DIM) + (DIM * 64 + 64) + (64 * DIM + DIM))
    assert fidelity["mlp"] > fidelity["affine"] + 0.05 and fidelity["mlp"] > fidelity["orthogonal"] + 0.05


def test_the_mlp_map_is_searched_where_the_folds_have_the_pairs(tmp_path: Path) -> None:
    rotation, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(DIM, DIM)))
    # 2 folds, not CONFIG's 4: each fold's network runs its 500 epochs on a rotation (~0.4 s a fit)
    few = IndexConfig(shares=[0.0, 1.0], dsn_env=DSN_ENV,
                      options=IndexOptionsConfig(folds=2, rescore_depth=20, mlp_min_pairs=200, mlp_hidden=32))
    options, decision = _options(tmp_path, rotation, few)  # 400 documents, 2 folds: 200 training pairs each
    assert options.training_pairs == 200 and options.mlp_min_pairs == 200
    mlp = options.of("mlp")
    assert mlp is not None and mlp.fit_s is not None and mlp.query_ms > 0
    assert mlp.storage_bytes == 4 * ((DIM * DIM + DIM) + (DIM * 32 + 32) + (32 * DIM + DIM))
    assert decision.code == "orthogonal" and decision.verdict("mlp").lost in ("costlier", "below_margin")
    # the defaults (1,000 pairs) leave it out of CONFIG's 300-pair folds, and say so
    options, decision = _options(tmp_path / "default", rotation)
    assert options.of("mlp") is None and options.training_pairs == 300 and options.mlp_min_pairs == 1000
    assert decision.verdict("mlp").lost == "not_measured"


def test_unrelated_vectors_leave_only_the_re_embed(tmp_path: Path) -> None:
    options, decision = _options(tmp_path, None)
    assert decision.code == "re_embed"
    assert all(v.lost == "below_margin" for v in decision.verdicts if v.option in ("keep", "orthogonal", "affine"))
    assert options.of("rescore").recall_at_10.high < 0.95
    assert decision.dual_read_within is False  # half the index answers the wrong model's ranking


def test_another_dimension_runs_the_affine_map_only(tmp_path: Path) -> None:
    widen = np.random.default_rng(3).normal(size=(DIM, 2 * DIM))
    options, decision = _options(tmp_path, widen)
    assert {o.option for o in options.options} == {"re_embed", "affine", "rescore", "dual_read"}
    assert decision.verdict("keep").lost == "not_measured"


def test_a_fold_no_larger_than_the_top_k_is_not_decided(tmp_path: Path) -> None:
    rotation, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(DIM, DIM)))
    # 4 folds of 10 documents (20 folds of 200 documents before: the same 10 a fold, five times the searches)
    small = IndexConfig(shares=[0.0, 1.0], dsn_env=DSN_ENV, options=IndexOptionsConfig(folds=4, rescore_depth=10))
    options, decision = _options(tmp_path, rotation, small, n_docs=40)
    assert options.documents_per_fold == 10 and decision.code == "not_decided"
    assert decision.reason is not None and decision.reason.code == "index_options_too_few"


def test_re_score_reading_the_whole_fold_is_not_counted(tmp_path: Path) -> None:
    deep = IndexConfig(shares=[0.0, 1.0], dsn_env=DSN_ENV, options=IndexOptionsConfig(folds=4, rescore_depth=100))
    options, decision = _options(tmp_path, None, deep)  # 100 documents per fold: re-score reads them all
    assert options.of("rescore").recall_at_10.value == pytest.approx(1.0)  # the re-embed's own ranking
    assert decision.verdict("rescore").lost == "not_measured" and decision.code == "re_embed"


def test_the_affine_map_is_fitted_by_ridge_with_a_chosen_penalty() -> None:
    docs, _ = _world()
    fitted = fit_map("affine", docs @ np.eye(DIM) * 2.0, docs)
    assert fitted.alpha is not None and fitted.weight.shape == (DIM, DIM)
    assert fitted.stored_bytes == 4 * (DIM * DIM + DIM)


def test_the_options_decide_the_candidates_one_index_decision(monkeypatch) -> None:
    from embedswap.analysis import index_decision

    sampled = {"e5": IndexDecision.sampled("re_embed"), "same": IndexDecision.sampled("keep_index"),
               "tiny": IndexDecision.sampled("re_embed")}
    monkeypatch.setattr(index_decision, "candidate_decision", lambda entry, *a: sampled[entry.name])
    monkeypatch.setattr(index_decision, "index_config", lambda summary: None)
    monkeypatch.setattr(index_decision, "_costs", lambda *a: [])
    monkeypatch.setattr(index_decision, "index_condition", lambda summary: None)
    summary = SimpleNamespace(index=SimpleNamespace(measured=True, by_candidate={
        n: SimpleNamespace(measured=True, name=n) for n in sampled}, distance="cosine"))
    options = {"e5": IndexOptionsDecision(code="orthogonal"), "tiny": IndexOptionsDecision(code="not_decided")}
    index = index_decision.index_decisions(summary, None, {}, options)  # type: ignore[arg-type]
    # the options decided: theirs is the one decision, in the one vocabulary
    assert (index["e5"].choice, index["e5"].map_kind, index["e5"].decided_on) == ("map", "orthogonal", "options")
    assert index["e5"].sample == "re_embed" and index["e5"].option == "orthogonal"  # the sample: its evidence
    # none measured / not decided: the sample's cross search decides
    assert (index["same"].choice, index["same"].decided_on) == ("keep", "sample")
    assert (index["tiny"].choice, index["tiny"].decided_on) == ("re_embed", "sample")


def test_the_post_and_report_say_the_options_decision_once(complete: dict) -> None:
    from embedswap.analysis.upgrade import read_summary
    from embedswap.report import post_claims
    from embedswap.report.sections.context import ReportContext
    from embedswap.report.sections.index import _candidate

    summary = read_summary(complete)
    name = summary.experiment.config["candidates"][0]
    decision = IndexDecision(choice="map", map_kind="orthogonal", decided_on="options", sample="re_embed")
    summary.decisions.index[name] = decision
    ctx = ReportContext(summary, "en", {}, None, None, None, None)
    assert name not in {c.name.strip("`") for c in post_claims.index_claims(ctx)}  # the options line says it
    words = _candidate(ctx, name, decision)
    assert (words["decision"], words["option"]) == ("by_options", "orthogonal map")
    from embedswap.report.post_lines import index_choice

    assert index_choice(ctx) == ""  # the closing names it only for a candidate serving another model


def test_the_chosen_option_is_said_with_its_cost(tmp_path: Path, complete: dict) -> None:
    # the post states the decision and what it costs, from the stored figures, in every language
    from embedswap.analysis.upgrade import read_summary
    from embedswap.report.sections.context import ReportContext
    from embedswap.report.sections.index_options import option_tables
    from embedswap.summary.types_index import Index, ReembedCost

    rotation, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(DIM, DIM)))
    options, decision = _options(tmp_path, rotation)
    summary = read_summary(complete)
    name = summary.experiment.config["candidates"][0]
    summary.index = Index(measured=True, options={name: options})
    summary.decisions.index_options[name] = decision
    summary.decisions.index[name] = IndexDecision(choice="map", map_kind="orthogonal", decided_on="options",
                                                  sample="re_embed")
    lines = {}
    for lang in ("en", "ko", "ja", "zh"):
        (line,) = option_tables(ReportContext(summary, lang, {}, None, None, None, None))
        lines[lang] = line["cost"]
        assert f"{options.of('orthogonal').storage_bytes / 2**20:.2f}" in line["cost"]
    assert lines["en"].startswith("Its cost: a fit of ") and "MiB stored" in lines["en"]
    # the re-embed: its hours where index.corpus_size gave them, else how to get them
    summary.decisions.index_options[name] = decision.model_copy(update={"code": "re_embed"})
    (line,) = option_tables(ReportContext(summary, "en", {}, None, None, None, None))
    assert "index.corpus_size" in line["cost"]
    summary.decisions.index[name].cost = ReembedCost(corpus_size=1_000_000, point="concurrent", docs_per_s=50.0,
                                                     hours_per_replica=5.6, window_hours=24.0, replicas=1)
    (line,) = option_tables(ReportContext(summary, "en", {}, None, None, None, None))
    assert "about 5.6 h on one replica for 1,000,000 documents at the measured 50" in line["cost"]
