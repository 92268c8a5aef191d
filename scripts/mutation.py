"""Mutation testing of the deciding modules with cosmic-ray (issue 23): ``make mutation`` (not in CI: see README).

Works on a copy of lib/ and tests/ in $WORK, so the checkout is never mutated. One cosmic-ray session per entry of
SESSIONS, each with the unit tests that cover that module (fast hand-made tests first, so ``-x`` stops a killed
mutant early) and a per-module timeout. Two kinds of mutant are skipped before the run, both counted in the output:
  * a mutation inside a type annotation: every module has ``from __future__ import annotations``, so an
    annotation is never evaluated and any operator swapped inside one is equivalent;
  * an arithmetic operator replaced by a bitwise/shift one (``a + b`` -> ``a | b``): on the floats these modules
    compute with it raises TypeError at the first call, a kill that says nothing about the tests.
Prints per session: mutants, killed, survived, timeouts, skipped, kill rate, wall time, and each survivor's diff;
writes $WORK/<session>.json. Usage:
  PY=.venvs/kit/bin/python SESSIONS="vectors redact" python scripts/mutation.py
"""
from __future__ import annotations

import ast
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# plugins off (PYTEST_DISABLE_PLUGIN_AUTOLOAD): 0.7 s a run instead of 2.5 s. tests/analysis/test_properties.py is left out of
# the sessions: pytest imports every file before running any, and its imports (hypothesis, scipy, aiohttp) cost
# ~3 s of every mutant's run on the shared machine; each module's hand-made test file kills what it killed.
FAST = "-p no:cacheprovider -m 'not e2e'"

# session -> module under lib/embedswap, the functions to mutate (None: the whole module), the tests, timeout (s)
SESSIONS: dict[str, dict] = {
    "vectors": {"module": "stats/vectors.py", "functions": None, "timeout": 30,
                "tests": ("tests/mutants/test_mutants_vectors.py tests/mutants/test_mutants_vectors_chunks.py "
                          "tests/analysis/test_vector_diff.py")},
    "contract": {"module": "answers/classify.py", "functions": None, "timeout": 40, "sample": 120,
                 "tests": ("tests/mutants/test_mutants_contract.py tests/mutants/test_mutants_contract_aspects.py "
                           "tests/measure/test_contract.py")},
    "ranking": {"module": "ranking/metrics.py", "timeout": 30, "sample": 60,
                "functions": ["ranking_from", "_relevance", "dcg", "ndcg_at_k", "recall_at_k", "mrr_at_k", "top_k",
                              "top_k_overlap", "jaccard", "_unit", "cosine_scores", "_mean", "evaluate",
                              "overlap_with"],
                "tests": "tests/ranking/test_ranking.py tests/mutants/test_mutants_ranking.py tests/mutants/test_mutants_ranking_agreement.py"},
    "ranking_agreement": {"module": "ranking/agreement.py", "timeout": 30, "functions": None,
                          "tests": "tests/mutants/test_mutants_ranking.py tests/mutants/test_mutants_ranking_agreement.py"},
    "ranking_section": {"module": "summary/sections/ranking.py", "timeout": 30, "functions": ["_deltas"],
                        "tests": "tests/mutants/test_mutants_ranking.py tests/ranking/test_ranking.py"},
    "latency_stats": {"module": "measure/load.py", "timeout": 30,
                      "functions": ["percentile", "run_stats", "_median", "point_stats"],
                      "tests": "tests/mutants/test_mutants_latency.py"},
    "intervals": {"module": "analysis/intervals.py", "functions": None, "timeout": 60, "sample": 50,
                  "tests": "tests/mutants/test_mutants_intervals.py"},
    "parity_gate": {"module": "parity/gate.py", "timeout": 40,
                    "functions": ["threshold_for", "thresholds_from", "_finite_or_none", "gate", "_cause",
                                  "_norm_cause", "_shape_failure", "gate_by_modality"],
                    "tests": "tests/mutants/test_mutants_parity.py"},
    "ranking_verdict": {"module": "analysis/ranking_verdict.py", "functions": None, "timeout": 40,
                        "tests": "tests/analysis/test_analysis_decisions.py"},
    "latency_ratios": {"module": "analysis/latency_ratios.py", "functions": None, "timeout": 40,
                       "tests": "tests/analysis/test_analysis_decisions.py"},
    "shim_outcome": {"module": "analysis/shim_outcome.py", "functions": None, "timeout": 40,
                     "tests": "tests/analysis/test_analysis_decisions.py"},
    "redact": {"module": "redact.py", "functions": None, "timeout": 60,
               "tests": "tests/mutants/test_mutants_redact.py"},
}
# Survivors that no test can kill, with the reason: (operator name's end, text in the mutated line, why[, text the
# diff's context must hold, where the same mutated text could come from another line]).
EQUIVALENT: dict[str, list[tuple[str, ...]]] = {
    "redact": [
        ("NumberReplacer", "fullmatch(m.group( 2))", "no header name _HEADER_NAME accepts is a tokenizer special-token "
         "name, so _header's vocabulary check never fires: testing another group changes nothing", "def _header("),
        ("NumberReplacer", "fullmatch(m.group( 0))", "no header name _HEADER_NAME accepts is a tokenizer special-token "
         "name, so _header's vocabulary check never fires: testing another group changes nothing", "def _header("),
        ("NumberReplacer", "return m.group( 1)", "_header's vocabulary branch is never reached (see above)",
         "def _header("),
        ("NumberReplacer", "len(str(value)) >= 3", "register_secret itself refuses values under 4 characters"),
        ("NumberReplacer", "return m.group( -1)", "_header's vocabulary branch is never reached (see above)",
         "def _header("),
        ("Eq_Is", "return data if cleaned is text", "str.replace and re.sub return their argument itself when "
         "nothing matched (CPython), so an unchanged text is the same object"),
        ("Eq_Is", "if cleaned is data:", "redact_bytes returns the very bytes object it was given when nothing "
         "changed"),
    ],
    "vectors": [
        ("NumberReplacer", "ROW_CHUNK = 8193", "rows are independent: any chunk size gives the same figures (only the "
         "memory held at once changes)"),
        ("NumberReplacer", "ROW_CHUNK = 8191", "rows are independent: any chunk size gives the same figures (only the "
         "memory held at once changes)"),
        ("Eq_LtE", 'r.get("repeat") <= 0', "repeat numbers count up from 0: none is negative"),
        ("Eq_LtE", "a.shape[0] <= 0", "an array's length is never negative"),
        ("Eq_LtE", "len(vectors) <= 0", "an array's length is never negative"),
        ("Eq_LtE", "a.shape[1] <= 0", "an array's length is never negative"),
        ("NotEq_Lt", "a.ndim < 2 or b.ndim != 2", "equal shapes have equal ndim: the b.ndim test alone decides"),
        ("NotEq_Lt", "b.ndim < 2 or a.shape", "equal shapes have equal ndim: the a.ndim test alone decides"),
        ("NotEq_Gt", "a.ndim > 2 or b.ndim != 2", "equal shapes have equal ndim: the b.ndim test alone decides"),
        ("NotEq_Gt", "b.ndim > 2 or a.shape", "equal shapes have equal ndim: the a.ndim test alone decides"),
        ("ReplaceOrWithAnd", "a.ndim != 2 and b.ndim != 2 or",
         "equal shapes have equal ndim: the two ndim tests agree whenever the shape test does not decide"),
        ("NotEq_Gt", 'k > "measured"', "not_measured's other keys (why, reason) sort after 'measured'"),
        ("NotEq_IsNot", 'k is not "measured"', "the key is the interned literal 'measured' (CPython)"),
        ("Gt_GtE", ">= UNIT_NORM_TOLERANCE",
         "no double length is exactly 1e-3 from 1 (x - 1 is exact near 1, and 1 +- fl(1e-3) is not a double)"),
        ("NumberReplacer", "UNIT_NORM_TOLERANCE)[ -1]", "np.where on a 1-D array returns a 1-tuple: [-1] is [0]"),
        ("NumberReplacer", "for r in range( 0, stack", "repeat 0 against itself adds a cosine of 1 (or the nan "
                                                       "the other repeats give too), never a lower minimum"),
        ("NumberReplacer", 'r.get("n_vectors") or -1', "range(-1) and range(0) are both empty"),
    ],
    "intervals": [
        ("Gt_NotEq", "np.where(rd != 0, rl, np.nan)", "a request's document count is never negative"),
        ("Gt_NotEq", "lat[d != 0]", "a request's document count is never negative"),
        ("Gt_NotEq", "lat[docs != 0]", "a request's document count is never negative"),
        ("Gt_NotEq", "(d != 0).sum()", "a request's document count is never negative"),
    ],
    "ranking": [
        ("Eq_LtE", "if total <= 0:", "a count of relevant documents is never negative"),
    ],
    "ranking_agreement": [
        ("NumberReplacer", "seed: int = 18", "another seed is another, equally valid bootstrap draw: the tests check "
                                             "the interval's properties (inside [0, 1], around the mean, seeded)"),
        ("NumberReplacer", "seed: int = 16", "another seed is another, equally valid bootstrap draw"),
        ("Eq_LtE", "if k <= 0:", "a list's length is never negative"),
        ("ReplaceOrWithAnd", "if len(arr) < 2 and np.allclose", "the percentile bootstrap of a constant is that "
                                                                 "constant: both branches give the value"),
        ("NumberReplacer", "if len(arr) < 1 or", "one value is always close to itself: both branches give the value"),
        ("NumberReplacer", "np.allclose(arr, arr[ 1])", "all values equal the first exactly when they all equal "
                                                       "the second"),
        ("NumberReplacer", "np.allclose(arr, arr[ -1])", "all values equal the first exactly when they all equal "
                                                        "the last"),
        ("NumberReplacer", "n_resamples= 2001", "2,001 resamples instead of 2,000 moves the interval by bootstrap noise"),
        ("NumberReplacer", "n_resamples= 1999", "1,999 resamples instead of 2,000 moves the interval by bootstrap noise"),
    ],
    "ranking_verdict": [
        ("Lt_NotEq", 'q["top5_overlap"] != 1)', "a top-5 overlap is a Jaccard index: never above 1"),
        ("Is_Eq", "if naive_same == False:", "naive_same is True, False or None: == and is agree on them"),
    ],
    "latency_ratios": [
        ("Is_Eq", "s == True for s in states", "point_state returns True, None or False: == and is agree on them"),
        ("Is_Eq", 'r.get("lock") == False', "lock is a bool in the typed summary: == and is agree on it"),
        ("Is_Eq", "latency_state(r) == True", "latency_state returns True, None or False"),
        ("Is_Eq", 'base.get("lock") == True', "lock is a bool in the typed summary: == and is agree on it"),
        ("Is_Eq", "latency_state(base) == True", "latency_state returns True, None or False"),
        ("IsNot_NotEq", "latency_state(legacy) != True", "latency_state returns True, None or False"),
        ("NotEq_IsNot", "if n is not legacy_name and", "the legacy row cannot pass: it would need lock True (the "
                                                       "base) and lock False (a variant) at once"),
    ],
    "latency_stats": [
        ("Gt_NotEq", "wall_s != 0 and", "a run's wall time is a monotonic-clock difference: never negative"),
        ("Gt_NotEq", "wall_s != 0 and ok", "a run's wall time is a monotonic-clock difference: never negative"),
    ],
    "contract": [
        ("Eq_LtE", "cs <= 0", "a status is never negative: 0 is the kit's own 'no answer'"),
        ("Eq_LtE", "ls <= 0", "a status is never negative: 0 is the kit's own 'no answer'"),
        ("Eq_Is", 'side is "candidate"', "side is one of two interned literals set two lines above (CPython)"),
        ("Eq_Is", "side is 'candidate'", "side is one of two interned literals set two lines above (CPython)"),
        ("NotEq_IsNot", 'failing is not "candidate"', "an interned literal set one line above (CPython)"),
        ("Eq_LtE", 'side <= "candidate"', "side is 'candidate' or 'legacy', and 'legacy' > 'candidate'"),
        ("Gt_GtE", "abs(ratio - 1.0) >= NORM_TOLERANCE", "no float ratio r has |r - 1| == 1e-3 exactly: r - 1 is "
         "exact near 1 (Sterbenz) and 1e-3's float needs bits below r's spacing, so > and >= never disagree"),
    ],
}
# cosmic-ray runs the pending mutants in random order; a sample is drawn from them with this seed
SAMPLE_SEED = 23
NOT_SAMPLED = "not in the sample"
IN_ANNOTATION = "inside a type annotation (never evaluated)"
BITWISE = r"core/ReplaceBinaryOperator_(Add|Sub|Mul|Div|FloorDiv|Mod|Pow)_(BitOr|BitAnd|BitXor|LShift|RShift)$"


def function_lines(source: str, names: list[str]) -> list[str]:
    """Line ranges ("a-b") of the named top-level functions (by name, so a moved function is still found)."""
    found = {node.name: f"{node.lineno}-{node.end_lineno}" for node in ast.parse(source).body
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    missing = [name for name in names if name not in found]
    if missing:
        sys.exit(f"mutation: functions {missing} not found (renamed? update SESSIONS)")
    return [found[name] for name in names]


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) positions, 1-based lines and 0-based columns as cosmic-ray records them, of every annotation."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        notes = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            notes.append(node.returns)
        if isinstance(node, ast.arg) and node.annotation is not None:
            notes.append(node.annotation)
        if isinstance(node, ast.AnnAssign):
            notes.append(node.annotation)
        spans += [((n.lineno, n.col_offset), (n.end_lineno, n.end_col_offset)) for n in notes]
    return spans


def skip_annotations(session: Path, source: str) -> int:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    assert "from __future__ import annotations" in source, "annotations are evaluated: do not skip them"
    spans = annotation_spans(source)
    skipped = 0
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            m = item.mutations[0]
            start, end = tuple(m.start_pos), tuple(m.end_pos)
            if any(a <= start and end <= b for a, b in spans):
                db.set_result(item.job_id, WorkResult(output=IN_ANNOTATION,
                                                      worker_outcome=WorkerOutcome.SKIPPED))
                skipped += 1
    return skipped


def results(session: Path) -> dict:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    out = {"killed": 0, "survived": 0, "timeout": 0, "incompetent": 0, "skipped": 0, "not_sampled": 0,
           "annotation_skipped": 0,
           "survivors": []}
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                out["not_sampled" if result.output == NOT_SAMPLED else "skipped"] += 1
                out["annotation_skipped"] += result.output == IN_ANNOTATION
            elif result.test_outcome == TestOutcome.KILLED and result.output == "timeout":
                out["timeout"] += 1
            elif result.test_outcome == TestOutcome.KILLED:
                out["killed"] += 1
            elif result.test_outcome == TestOutcome.INCOMPETENT:
                out["incompetent"] += 1
            else:
                out["survived"] += 1
                m = item.mutations[0]
                out["survivors"].append({"job": item.job_id, "operator": m.operator_name, "line": m.start_pos[0],
                                         "occurrence": m.occurrence, "diff": result.diff})
        out["pending"] = db.num_work_items - db.num_results
    return out


def equivalent_reason(name: str, survivor: dict) -> str | None:
    """The recorded reason a survivor is equivalent (same behaviour on every input the kit can produce), if any."""
    added = [line[1:].strip() for line in (survivor["diff"] or "").splitlines()
             if line.startswith("+") and not line.startswith("+++")]
    for operator, text, reason, *context in EQUIVALENT.get(name, []):
        if survivor["operator"].endswith(operator) and any(text in line for line in added) \
                and all(c in (survivor["diff"] or "") for c in context):
            return reason
    return None


def sample(session: Path, size: int, seed: int = SAMPLE_SEED) -> int:
    """Keep a seeded random sample of ``size`` mutants (those already run count toward it); mark the other
    pending ones skipped. Returns how many were left out."""
    import random

    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    with use_db(str(session), WorkDB.Mode.open) as db:
        ran = sum(1 for _, r in db.completed_work_items if r.worker_outcome != WorkerOutcome.SKIPPED)
        pending = sorted(item.job_id for item in db.pending_work_items)
        keep = set(random.Random(seed).sample(pending, min(len(pending), max(0, size - ran))))
        left_out = [job for job in pending if job not in keep]
        for job in left_out:
            db.set_result(job, WorkResult(output=NOT_SAMPLED, worker_outcome=WorkerOutcome.SKIPPED))
    return len(left_out)


def wilson(killed: int, n: int, z: float = 1.959964) -> tuple[float, float] | None:
    """95 % Wilson score interval of a kill rate measured on a sample of n mutants (in %)."""
    if not n:
        return None
    p = killed / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return round(100 * (centre - half) / (1 + z * z / n), 1), round(100 * (centre + half) / (1 + z * z / n), 1)


def reset_survivors(session: Path) -> int:
    """Put the survivors of an earlier run back to pending, to run them against the tests written since."""
    import sqlite3

    with sqlite3.connect(session) as db:
        return db.execute("DELETE FROM work_results WHERE test_outcome = 'SURVIVED'").rowcount


def summarise(name: str, spec: dict, out: dict) -> dict:
    for survivor in out["survivors"]:
        survivor["equivalent"] = equivalent_reason(name, survivor)
    run = out["killed"] + out["survived"] + out["timeout"]
    equivalent = sum(1 for s in out["survivors"] if s["equivalent"])
    killed = out["killed"] + out["timeout"]
    out.update(mutants=run + out["not_sampled"], interval_95=wilson(killed, run) if out["not_sampled"] else None,
               session=name, module=f"lib/embedswap/{spec['module']}", mutants_run=run, equivalent=equivalent,
               kill_rate=round(100 * killed / run, 1) if run else None,
               kill_rate_non_equivalent=round(100 * killed / (run - equivalent), 1) if run > equivalent else None,
               tests=spec["tests"])
    return out


def recheck_session(name: str, spec: dict, work: Path, py: str) -> dict:
    config, _, _ = write_config(name, spec, work, py)
    session = work / f"{name}.sqlite"
    path = work / f"{name}.json"  # absent when the first run was stopped: the recheck finishes it
    first = json.loads(path.read_text()) if path.exists() else None
    started = time.monotonic()
    reset = reset_survivors(session)
    if spec.get("sample"):
        sample(session, spec["sample"])
    subprocess.run(["cosmic-ray", "exec", str(config), str(session)], cwd=work, check=True)
    out = summarise(name, spec, results(session))
    out.update(first_run=first.get("first_run") or {k: first[k] for k in ("killed", "survived", "timeout",
                                                                          "mutants_run", "kill_rate", "wall_s")}
               if first else {"killed": 0, "survived": 0, "timeout": 0, "mutants_run": 0, "kill_rate": None,
                              "wall_s": 0},
               rechecked=reset, recheck_s=round(time.monotonic() - started) + ((first or {}).get("recheck_s") or 0),
               wall_s=first["wall_s"] if first else 0)
    (work / f"{name}.json").write_text(json.dumps(out, indent=1))
    return out


def write_config(name: str, spec: dict, work: Path, py: str) -> tuple[Path, str, str]:
    """The session's cosmic-ray config (rewritten by a recheck too, so it runs today's test selection)."""
    module = f"lib/embedswap/{spec['module']}"
    source = (work / module).read_text()
    env_vars = (f"PYTHONPATH={work}/lib:{work}/tests/support HF_HUB_OFFLINE=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 "
                "EMBEDSWAP_HYPOTHESIS_EXAMPLES=15")
    command = f"env {env_vars} {py} -m pytest -x -q {FAST} {spec['tests']}"
    lines = "" if spec["functions"] is None else \
        f'[cosmic-ray.filters.line-filter.lines]\n"{module}" = {json.dumps(function_lines(source, spec["functions"]))}\n'
    config = work / f"{name}.toml"
    config.write_text(f"""[cosmic-ray]
module-path = "{module}"
timeout = {float(spec['timeout'])}
excluded-modules = []
test-command = {json.dumps(command)}
[cosmic-ray.distributor]
name = "local"
[cosmic-ray.filters.operators-filter]
exclude-operators = [{json.dumps(BITWISE)}]
{lines}""")
    return config, source, command


def run_session(name: str, spec: dict, work: Path, py: str) -> dict:
    config, source, command = write_config(name, spec, work, py)
    session = work / f"{name}.sqlite"
    started = time.monotonic()
    resume = os.environ.get("RESUME") == "1" and session.exists()  # go on with a stopped session
    if not resume:
        session.unlink(missing_ok=True)
        subprocess.run(["cosmic-ray", "init", str(config), str(session)], cwd=work, check=True)
        subprocess.run(["cr-filter-operators", str(session), str(config)], cwd=work, check=True)
        if spec["functions"] is not None:
            subprocess.run(["cr-filter-lines", "--config", str(config), str(session)], cwd=work, check=True)
    skip_annotations(session, source)
    if spec.get("sample"):
        sample(session, spec["sample"])
    if not resume and subprocess.run(["cosmic-ray", "baseline", str(config)], cwd=work).returncode != 0:
        sys.exit(f"mutation: {name}: the unaltered tests fail ({command})")
    subprocess.run(["cosmic-ray", "exec", str(config), str(session)], cwd=work, check=True)
    out = summarise(name, spec, results(session))
    out.update(wall_s=round(time.monotonic() - started))
    (work / f"{name}.json").write_text(json.dumps(out, indent=1))
    return out


def table(work: Path, names: list[str]) -> str:
    """The README's table from the sessions' JSON files in ``work``."""
    rows = ["| module (session) | mutants | run | killed | survived (equivalent) | killed % (95 % interval) "
            "| killed % of non-equivalent | time |", "|---|---|---|---|---|---|---|---|"]
    for name in names:
        path = work / f"{name}.json"
        if not path.exists():
            continue
        o = json.loads(path.read_text())
        killed = o["killed"] + o["timeout"]
        interval = f" ({o['interval_95'][0]}–{o['interval_95'][1]})" if o.get("interval_95") else ""
        run = f"{o['mutants_run']} (random sample)" if o.get("not_sampled") else str(o["mutants_run"])
        first = o.get("first_run") if (o.get("first_run") or {}).get("mutants_run") else None
        took = (f"{o['wall_s']} s" if o["wall_s"] else "stopped, finished by the recheck") \
            + (f" + {o['recheck_s']} s recheck" if o.get("recheck_s") else "")
        killed_text = f"{killed}" + (f" ({first['killed'] + first['timeout']} in the first run)" if first else "")
        rows.append(f"| `{o['module'].removeprefix('lib/embedswap/')}` ({name}) | {o.get('mutants', o['mutants_run'])} "
                    f"| {run} | {killed_text} | {o['survived']} ({o.get('equivalent', 0)}) | {o['kill_rate']}{interval} "
                    f"| {o.get('kill_rate_non_equivalent')} | {took} |")
    notes = ["", "Survivors, each with its reason (equivalent) or marked **not killed**:", ""]
    for name in names:
        path = work / f"{name}.json"
        if not path.exists():
            continue
        for survivor in json.loads(path.read_text())["survivors"]:
            added = [line[1:].strip() for line in (survivor["diff"] or "").splitlines()
                     if line.startswith("+") and not line.startswith("+++")]
            why = survivor.get("equivalent") or "**not killed**"
            notes.append(f"- {name}, line {survivor['line']}: `{added[0] if added else survivor['operator']}` — {why}")
    return "\n".join(rows + notes)


def main() -> None:
    py = os.environ.get("PY", str(REPO / ".venvs/kit/bin/python"))
    cr_dir = os.environ.get("COSMIC_RAY_DIR")  # a pip --target folder holding cosmic-ray, else it is on PATH
    if cr_dir:
        os.environ["PYTHONPATH"] = cr_dir + os.pathsep + os.environ.get("PYTHONPATH", "")
        os.environ["PATH"] = f"{cr_dir}/bin{os.pathsep}{os.environ['PATH']}"
        sys.path.insert(0, cr_dir)
    names = os.environ.get("SESSIONS", " ".join(SESSIONS)).split()
    if os.environ.get("TABLE") == "1":  # print the table of the last runs in $WORK, run nothing
        print(table(Path(os.environ["WORK"]), names))
        return
    work = Path(os.environ.get("WORK") or tempfile.mkdtemp(prefix="embedswap-mutation."))
    work.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", ".hypothesis")
    for part in ("lib", "tests", "data"):  # a recheck takes today's tests too
        shutil.rmtree(work / part, ignore_errors=True)
        shutil.copytree(REPO / part, work / part, ignore=ignore, symlinks=True)
    shutil.copy(REPO / "pyproject.toml", work)
    recheck = os.environ.get("RECHECK") == "1"  # rerun only the survivors of the last run, with today's tests
    for name in names:
        out = (recheck_session if recheck else run_session)(name, SESSIONS[name], work, py)
        first = out.get("first_run")
        print(f"== {name} ({out['module']}): {out['mutants_run']} mutants run, {out['killed']} killed, "
              f"{out['timeout']} timeouts (killed), {out['survived']} survived ({out['equivalent']} equivalent) -> "
              f"{out['kill_rate']} % killed, {out['kill_rate_non_equivalent']} % of the non-equivalent; skipped "
              f"{out['skipped']} ({out['annotation_skipped']} inside annotations, the rest bitwise operators on "
              f"numbers or outside the deciding functions)"
              + (f"; a random sample of {out['mutants_run']} of {out['mutants']}: 95 % interval "
                 f"{out['interval_95']}" if out["not_sampled"] else "") + f"; {out['wall_s']} s"
              + (f"; first run {first['killed'] + first['timeout']} killed, {first['survived']} survived, "
                 f"{out['rechecked']} rechecked in {out['recheck_s']} s" if first else ""), flush=True)
        for s in out["survivors"]:
            tag = f"equivalent: {s['equivalent']}" if s["equivalent"] else "SURVIVED"
            print(f"-- {tag} ({s['job']} line {s['line']} {s['operator']})\n{s['diff']}", flush=True)
    print(f"work folder: {work}")


if __name__ == "__main__":
    main()
