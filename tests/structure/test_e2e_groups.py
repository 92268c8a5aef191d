"""Every e2e file that uses a shared server of tests/e2e/conftest.py names that server's ``xdist_group``: a file
that asks for the fixture without the group runs on whichever worker is free, and that worker starts the server a
second time (a session fixture is per worker process), silently undoing "one engine start per kind per run"."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
E2E = REPO / "tests" / "e2e"
# the shared servers and the group their files name (tests/e2e/conftest.py's docstring table)
GROUPS = {
    "vllm_fp32_minilm": "vllm-fp32-minilm",
    "infinity_minilm": "infinity-0.0.78-minilm",
    "legacy_minilm": "legacy-minilm",
}


def group_problems(name: str, source: str) -> list[str]:
    """What is wrong with one test file's use of the shared servers: a fixture used without its group, or fixtures
    of two groups in one file (a file names one group)."""
    # a use: a test's or fixture's parameter, or request.getfixturevalue("...")
    used = [f for f in GROUPS if re.search(rf"\b{f}\s*[:,)]|getfixturevalue\(\s*[\"']{f}[\"']", source)]
    named = re.findall(r'xdist_group\(name="([^"]+)"\)', source)
    problems = [f"{name}: uses {f} but names group {named or 'none'}, not {GROUPS[f]!r}"
                for f in used if GROUPS[f] not in named]
    if len({GROUPS[f] for f in used}) > 1:
        problems.append(f"{name}: uses servers of two groups ({', '.join(used)}): one worker holds one group")
    return problems


def test_every_file_using_a_shared_server_names_its_group() -> None:
    problems = [p for path in sorted(E2E.glob("test_*.py"))
                for p in group_problems(path.name, path.read_text(encoding="utf-8"))]
    assert problems == [], "\n".join(problems)


def test_the_shared_servers_are_the_conftest_fixtures_and_used() -> None:
    conftest = (E2E / "conftest.py").read_text(encoding="utf-8")
    for fixture, group in GROUPS.items():
        assert f"def {fixture}(" in conftest, fixture  # renamed there: this map must follow
        assert f'"{group}"' in conftest, group
        users = [p.name for p in E2E.glob("test_*.py") if not group_problems(p.name, p.read_text(encoding="utf-8"))
                 and group in p.read_text(encoding="utf-8")]
        assert len(users) >= 2, (fixture, users)  # a server shared by fewer than two files saves no start


def test_the_check_sees_a_missing_or_a_second_group() -> None:
    grouped = 'pytestmark = [pytest.mark.xdist_group(name="legacy-minilm")]\ndef test_a(legacy_minilm) -> None: ...'
    assert group_problems("ok.py", grouped) == []
    assert group_problems("bare.py", "def test_a(tmp_path, legacy_minilm: Any) -> None: ...")
    assert group_problems("lazy.py", 'server = request.getfixturevalue("infinity_minilm")')
    both = grouped + '\nfp32 = request.getfixturevalue("vllm_fp32_minilm")'
    assert any("two groups" in p for p in group_problems("both.py", both))
