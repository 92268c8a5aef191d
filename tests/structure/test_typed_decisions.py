"""The analysis returns typed decisions: no function in embedswap.analysis is annotated to return an open
``dict`` (``dict``, ``dict[str, Any]``, or one nested in a list, union or dict), so every reader uses the models'
attributes and summary.json's shape is stated once, in embedswap.summary.types_*. The JSON boundary is the only
exception: it turns raw summary.json into the models' input and the models back into JSON."""

from __future__ import annotations

import ast
from pathlib import Path

import embedswap

ANALYSIS = Path(embedswap.__file__).parent / "analysis"
# the JSON boundary: raw summary.json of any version in, current JSON out; the decisions model dumped as JSON
ALLOWED = {"upgrade.py::upgrade_summary", "__init__.py::decisions_json"}


def is_open_dict(node: ast.expr) -> bool:
    """Whether an annotation is, or contains, a ``dict`` without types or a dict whose values are ``Any``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        return is_open_dict(ast.parse(node.value, mode="eval").body)
    if isinstance(node, ast.Name):
        return node.id in ("dict", "Dict")
    if isinstance(node, ast.BinOp):  # X | Y
        return is_open_dict(node.left) or is_open_dict(node.right)
    if isinstance(node, ast.Tuple):
        return any(is_open_dict(e) for e in node.elts)
    if isinstance(node, ast.Subscript):
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if isinstance(node.value, ast.Name) and node.value.id in ("dict", "Dict"):
            if isinstance(args[-1], ast.Name) and args[-1].id == "Any":
                return True
        return any(is_open_dict(a) for a in args)
    return False


def open_dict_returns(source: str) -> list[str]:
    """``function:line`` of every function (methods and nested ones included) annotated to return an open dict."""
    return [f"{node.name}:{node.lineno}" for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None
            and is_open_dict(node.returns)]


def test_no_analysis_function_returns_an_open_dict() -> None:
    offenders = []
    for path in sorted(ANALYSIS.rglob("*.py")):
        for where in open_dict_returns(path.read_text(encoding="utf-8")):
            name = where.split(":")[0]
            if f"{path.relative_to(ANALYSIS)}::{name}" not in ALLOWED:
                offenders.append(f"{path.relative_to(ANALYSIS)}::{where}")
    assert not offenders, ("return the summary model the piece validates into (embedswap.summary.types_*), "
                           f"or a small typed one: {offenders}")


def test_the_check_sees_every_open_form() -> None:
    source = '''
def a() -> dict[str, Any]: ...
def b() -> dict: ...
def c() -> dict[str, Any] | None: ...
def d() -> list[dict[str, Any]]: ...
def e() -> dict[str, dict[str, Any]]: ...
def f() -> "dict[str, Any]": ...
class G:
    def h(self) -> dict[str, Any]: ...
def typed() -> dict[str, float]: ...
def nested_typed() -> dict[str, list[int]] | None: ...
'''
    assert sorted(w.split(":")[0] for w in open_dict_returns(source)) == ["a", "b", "c", "d", "e", "f", "h"]
