"""The installed package's import graph has no circle.

Every import counts: at the top of a module, inside a function, and the modules
loaded on first use (``lazy("antiamp.kernels.baseline")``, ``importlib.import_module``
with a literal name).  A circle hidden inside functions still ties its modules
together: none of them can be read, tested or moved without the others.  The graph
is the installed package's (``antiamp.*``, the names imports use), not the source
tree's: ``sim/``, ``kernels/``, ``sweeps/`` and ``conf/`` are one package there.

Built with the standard library's :mod:`ast` rather than an import-graph library
(grimp, import-linter): those read ``import`` statements only, so the modules named
by string to :func:`antiamp.lazy.lazy` would be missing, and they find a package's
modules by walking its one source folder, where antiamp's subpackages live in other
folders (the package-dir mapping in pyproject.toml).  Here the modules are found
through the import system itself (:func:`importlib.util.find_spec`), as Python finds
them.
"""

from __future__ import annotations

import ast
import pkgutil
import sys
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = "antiamp"


@lru_cache(maxsize=None)
def _spec(name: str):
    """Where the import system finds ``name`` (as :func:`importlib.util.find_spec`),
    asked of its finders directly with the parent package's search path: nothing is
    imported (a model's package loads numba)."""
    parent, _, _ = name.rpartition(".")
    path = None
    if parent:
        up = _spec(parent)
        if up is None or not up.submodule_search_locations:
            return None
        path = list(up.submodule_search_locations)
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        spec = find(name, path) if find is not None else None
        if spec is not None:
            return spec
    return None


def _module_of(name: str) -> str | None:
    """The module a dotted name imports: itself, or (``from m import attr``) the
    nearest enclosing module that exists."""
    while name == ROOT or name.startswith(ROOT + "."):
        s = _spec(name)
        if s is not None and s.origin and s.origin.endswith(".py"):
            return name
        if "." not in name:
            return None
        name = name.rsplit(".", 1)[0]
    return None


def _imported_names(module: str, path: Path):
    """Every name ``module`` imports, wherever in the file (``ast.walk`` visits the
    bodies of functions and classes too)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolved against the importing module's package
                base = module if is_package else module.rsplit(".", 1)[0]
                for _ in range(node.level - 1):
                    base = base.rsplit(".", 1)[0]
                source = base + (f".{node.module}" if node.module else "")
            else:
                source = node.module
            yield from (f"{source}.{a.name}" for a in node.names)
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            f = node.func
            called = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
            if called in ("lazy", "import_module"):
                yield node.args[0].value


def import_graph() -> dict[str, set[str]]:
    """module -> the modules of the package it imports (installed names)."""
    graph, todo = {}, [ROOT]
    while todo:
        module = todo.pop()
        if module in graph:
            continue
        spec = _spec(module)
        graph[module] = set()
        if spec.submodule_search_locations:
            found = pkgutil.iter_modules(spec.submodule_search_locations)
            todo += [f"{module}.{m.name}" for m in found]
        for name in _imported_names(module, Path(spec.origin)):
            target = _module_of(name)
            if target is not None and target != module:
                graph[module].add(target)
                todo.append(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan's
    algorithm, iterative: no recursion limit on a deep package)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return found


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_graph_sees_every_kind_of_import(graph):
    """The graph is only as good as what it reads: a top-level import, one inside a
    function, one by ``lazy(...)``, and the subpackages in their own folders."""
    assert "antiamp.ownership" in graph["antiamp.outputs_policy"]  # top of the module
    assert "antiamp.sweeps.blocks" in graph["antiamp"]  # inside simulate_validated
    assert "antiamp.kernels.transcript_classes" in graph["antiamp.runner"]  # lazy("...")
    assert {"antiamp.kernels.rng", "antiamp.sweeps.metadata",
            "antiamp.models.baseline.config"} <= set(graph)


def test_circles_are_found():
    """The search itself finds a circle (so that an empty answer means something)."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle(graph):
    """No circle in the installed package, counting every import: a low module (the
    output policy every command imports) never reaches back up into the sweep engine."""
    found = circles(graph)
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)
