"""The package's shape: no import cycle between the kit's modules, every module importable on its own in a fresh
interpreter (so no module works only because another happened to be imported first), and a small package root."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import embedswap

LIB = Path(embedswap.__file__).parent
MODULES = sorted(m.name for m in pkgutil.walk_packages(embedswap.__path__, "embedswap.")
                 if not m.name.endswith("__main__"))


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(LIB.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(inside_functions: bool = True) -> dict[str, set[str]]:
    """Module -> the kit's modules it imports: at module level and, with ``inside_functions``, inside functions too
    (a deferred import hides a cycle from the interpreter, not from the design)."""
    known = set(MODULES)
    graph: dict[str, set[str]] = {}
    for path in LIB.rglob("*.py"):
        name = _module_of(path)
        if name not in known:
            continue
        edges: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if inside_functions:
            imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        else:
            imports = [imp for node in tree.body for imp in (
                [node] if isinstance(node, (ast.Import, ast.ImportFrom)) else
                [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
                if isinstance(node, (ast.If, ast.Try)) else [])]
        for imp in imports:
            if isinstance(imp, ast.Import):
                edges.update(a.name for a in imp.names if a.name in known)
            elif imp.module and imp.level == 0 and imp.module.startswith("embedswap"):
                for alias in imp.names:
                    sub = f"{imp.module}.{alias.name}"
                    edges.add(sub if sub in known else imp.module)
        graph[name] = {e for e in edges if e != name and e in known}
    return graph


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The same graph between the package's first-level parts (``embedswap.measure.capture`` -> ``measure``)."""
    out: dict[str, set[str]] = {}
    for a, targets in graph.items():
        for b in targets:
            pa, pb = a.split(".")[1], b.split(".")[1]
            if pa != pb:
                out.setdefault(pa, set()).add(pb)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_between_files_even_inside_functions():
    assert cycles(import_graph(inside_functions=True)) == []


def test_no_import_cycle_between_packages_even_inside_functions():
    """The layers (docs/architecture.md): config, wire, stats, answers -> targets -> shim, measure -> summary ->
    analysis -> parity, diagnosis -> pipeline -> report, steps, the application; nothing imports a layer above it."""
    assert cycles(package_graph(import_graph(inside_functions=True))) == []


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def third_party_imports() -> list[str]:
    """Every library module the kit imports (at module level or inside functions, by its dotted name), the kit and the
    standard library left out."""
    names: set[str] = set()
    for path in LIB.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
    return sorted(n for n in names if n.split(".")[0] not in ("embedswap", *sys.stdlib_module_names))


# run in a fresh interpreter: every library the kit imports is loaded once (those this environment has: vllm and
# the like live in the engine's), then each module is imported first in a forked child, which is what an import
# cycle between kit modules breaks. Loading the libraries in each child instead was 134 of the unit pass's seconds.
# The children of one package fork from a process that imported that package: `import a.b.c` in a fresh interpreter
# runs a, then a.b (its __init__ and whatever that pulls in), before a.b.c's own body, so the child's state when its
# module's body starts is the fresh interpreter's, step for step; the package's own check is in its parent's group.
# Its __init__ was run again per child before (embedswap.steps and embedswap.analysis pull in most of the kit).
# gc.freeze() before forking: a collection in a child walked every library object and so copied their pages (the
# collector's state is no part of what an import may depend on). 45 -> 26 s, 47.6 -> 31 CPU-s (docs/testing.md).
IMPORT_EACH_FIRST = """
import gc, importlib, multiprocessing, os, sys
libraries, names = sys.argv[1].split(","), sys.argv[2:]
for library in libraries:
    try:
        importlib.import_module(library)
    except Exception:  # not installed here (an engine's library): the kit imports it only inside that engine's code
        pass
def alone(name):
    try:
        importlib.import_module(name)
    except Exception as exc:
        return f"{name}: {type(exc).__name__}: {exc}"
    return ""
def forked(name):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the parent's code, whatever the import raises
        code = 1
        try:
            os.close(read)
            os.write(write, (alone(name) or "imported").encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    if said == "imported" and status == 0:
        return ""
    return said if said and said != "imported" else f"{name}: the child ended (wait status {status}) in its import"
def group(task):
    package, members = task
    said = alone(package)  # what every fresh import of package.x runs first
    gc.freeze()
    return [said] if said else [f for f in map(forked, members) if f]
if __name__ == "__main__":
    assert not [m for m in sys.modules if m.startswith("embedswap")], "a library imported the kit"
    groups = {}
    for name in names:
        groups.setdefault(name.rpartition(".")[0], []).append(name)
    tasks = sorted(groups.items(), key=lambda item: -len(item[1]))
    gc.freeze()  # the libraries' objects out of the collector's sight: a child's collection would touch (copy) them
    with multiprocessing.get_context("fork").Pool(2, maxtasksperchild=1) as pool:
        failures = [f for found in pool.map(group, tasks, chunksize=1) for f in found]
    print("\\n".join(failures))
    sys.exit(1 if failures else 0)
"""


def test_every_module_imports_first_in_a_fresh_interpreter(tmp_path):
    script = tmp_path / "import_each_first.py"
    script.write_text(IMPORT_EACH_FIRST, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), ",".join(third_party_imports()), *MODULES], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]


def test_package_root_is_small():
    root = sorted(p.name for p in LIB.glob("*.py"))
    assert len(root) <= 15, root


@pytest.mark.parametrize("name", MODULES)
def test_no_module_getattr(name):
    path = LIB.parent.joinpath(*name.split("."))
    source = (path.with_suffix(".py") if path.with_suffix(".py").exists() else path / "__init__.py").read_text(
        encoding="utf-8")
    tree = ast.parse(source)
    assert not any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body)


# Libraries every notebook's kernel paid for at `from embedswap import steps` before its first line ran, though most
# steps never call them (issue 61: ~1.4 of the import's ~2.2 CPU-s, docs/testing.md): each is imported inside the
# functions that use it. A module-level import of one of them, anywhere on the way to embedswap.steps or to the
# summary builder, fails here. pandas: the notebooks' tables import it when shown (a table's first call pays it).
DEFERRED = {
    "embedswap.steps": ("scipy", "pandas", "psycopg", "aiohttp", "sklearn", "matplotlib", "papermill"),
    "embedswap.pipeline.build": ("scipy", "pandas", "psycopg", "aiohttp", "sklearn", "matplotlib", "papermill"),
}


@pytest.mark.parametrize("module", sorted(DEFERRED))
def test_heavy_libraries_are_not_imported_with(module):
    libraries = DEFERRED[module]
    done = subprocess.run([sys.executable, "-c", f"import sys, {module}; print(' '.join(sorted({{m.split('.')[0] for m "
                           f"in sys.modules}} & set({list(libraries)!r}))))"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [], f"import {module} loads {done.stdout.strip()}"
