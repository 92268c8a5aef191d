"""What ``guard check`` says: one line for people and logs, a JSON document and JUnit XML for CI.

JUnit XML is written with the standard library's ElementTree: no maintained JUnit library is in the kit's
environment, and the format needs four elements (testsuites, testsuite, testcase, failure/skipped).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path
from typing import Any

from embedswap.guard.check import CheckResult


def one_line(result: CheckResult) -> str:
    """``drift: <aspect>: ...`` naming the worst canary and its cosine, ``could not tell: ...`` saying why, or
    ``pass: ...`` with the warnings."""
    failed = result.failed
    if failed:
        aspect = failed[0]
        cosine = "n/a" if aspect.cosine is None else f"{aspect.cosine:.6f}"
        more = f" (also: {', '.join(a.name for a in failed[1:])})" if len(failed) > 1 else ""
        return (f"drift: {aspect.name}: worst canary {aspect.worst or 'n/a'} cosine {cosine}: {aspect.detail}{more}")
    if result.undecided:
        return f"could not tell: {result.undecided}; nothing that answered had changed"
    warnings = [f"{a.name}: {a.detail}" for a in result.aspects if a.status == "warn"]
    direction = next((a for a in result.aspects if a.name == "direction"), None)
    worst = "" if direction is None or direction.cosine is None else \
        f"; worst canary {direction.worst} cosine {direction.cosine:.6f}"
    probes = sum(1 for c in result.canaries if c.id.startswith("probe:"))
    return (f"pass: {len(result.canaries) - probes} canaries and {probes} probes in {result.requests} requests, "
            f"{result.seconds:.1f} s"
            f"{worst}" + (f"; warning: {'; '.join(warnings)}" if warnings else ""))


def as_json(result: CheckResult) -> dict[str, Any]:
    return {"result": result.result, "exit_code": result.exit_code, "undecided": result.undecided, "url": result.url,
            "guard": result.guard, "seconds": result.seconds, "requests": result.requests,
            "summary": one_line(result), "aspects": [asdict(a) for a in result.aspects],
            "server": result.server, "canaries": [asdict(c) for c in result.canaries]}


def write_junit(result: CheckResult, path: Path) -> Path:
    """One test case per aspect; a drift is a <failure>, a warning a <system-out> of a passing case."""
    suites = ET.Element("testsuites")
    suite = ET.SubElement(suites, "testsuite", name="embedswap guard check", tests=str(len(result.aspects)),
                          failures=str(len(result.failed)), errors="1" if result.undecided else "0",
                          skipped=str(sum(1 for a in result.aspects if a.status == "skipped")),
                          time=f"{result.seconds:.3f}")
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="url", value=result.url)
    for aspect in result.aspects:
        case = ET.SubElement(suite, "testcase", classname="embedswap.guard", name=aspect.name, time="0")
        if aspect.name == "contract" and result.undecided:  # could not tell: an error, not a failure
            ET.SubElement(case, "error", type="could_not_tell", message=result.undecided)
        if aspect.status == "fail":
            failure = ET.SubElement(case, "failure", type="drift", message=one_line_of(aspect.name, result))
            failure.text = aspect.detail
        elif aspect.status == "skipped":
            ET.SubElement(case, "skipped", message=aspect.detail)
        else:
            ET.SubElement(case, "system-out").text = ("warning: " if aspect.status == "warn" else "") + aspect.detail
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)
    return path


def one_line_of(name: str, result: CheckResult) -> str:
    aspect = next(a for a in result.aspects if a.name == name)
    cosine = "n/a" if aspect.cosine is None else f"{aspect.cosine:.6f}"
    return f"{name}: worst canary {aspect.worst or 'n/a'} cosine {cosine}"
