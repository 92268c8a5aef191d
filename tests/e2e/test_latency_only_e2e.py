"""End to end: `embedswap run` of an experiment that measures only latency (every target ``capture: [latency]``)
exits 0; the parity gate has nothing to gate and the report says so instead of "FAIL"."""

from __future__ import annotations

import json

import pytest
import yaml

from realkit import make_experiment, pooled_target, run_whole_experiment

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(name="legacy-minilm")]
# the group of the files sharing the kit's legacy server (tests/e2e/conftest.py's legacy_minilm): one worker, one start


def test_latency_only_experiment_exits_0(tmp_path, legacy_minilm) -> None:
    # both sides are the worker's shared legacy server (kind external, one URL twice: a legal experiment): the
    # subject is a run that measures only latency, not the servers' starts; its latency verdicts are not asserted
    # (they run beside other tests: the quiet-host files decide those)
    folder = make_experiment(tmp_path, "latency-only", pooled_target(legacy_minilm, ["latency"]),
                             {"candidate": pooled_target(legacy_minilm, ["latency"])},
                             latency={"sequential_requests": 3, "concurrent_requests": 4, "sweep": [2],
                                      "sweep_requests": 4})  # the one e2e concurrency sweep (the demo has none)
    config = yaml.safe_load((folder / "experiment.yaml").read_text())
    assert all(t["capture"] == ["latency"] for t in config["targets"].values())
    done = run_whole_experiment(folder, timeout_s=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "parity gate: FAIL" not in done.stdout
    attempt = sorted((folder / "attempts").iterdir())[-1]
    rows = json.loads((attempt / "captures" / "parity" / "rows.json").read_text(encoding="utf-8"))
    assert rows["pass"] is None and rows["not_asked"] == ["legacy", "candidate"]
    summary = json.loads((attempt / "summary.json").read_text(encoding="utf-8"))
    assert summary["parity"]["measured"] is False
    assert summary["parity"]["reason"]["code"] == "parity_nothing_gated"
    for name in ("legacy", "candidate"):  # the sweep's point, measured and summarised
        (point,) = summary["latency"]["by_target"][name]["sweep"]
        assert point["concurrency"] == 2 and point["errors"] == 0 and point["p50_ms"] > 0, point
