"""The modules of ``autogluon_maya`` import one another without a circle.

Every ``import`` counts, at module level and inside functions alike: a function-level import only defers the
circle to the first call.  Read from the source with ``ast``, so nothing is imported to check it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set

PACKAGE = Path(__file__).resolve().parents[1] / "autogluon_maya"


def modules(package: Path) -> Dict[str, Path]:
    """Dotted name -> file of every module under ``package`` (a package is named by its ``__init__.py``)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imported(name: str, path: Path, known: Dict[str, Path]) -> Set[str]:
    """The modules of ``known`` that module ``name`` (file ``path``) imports anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # ``from pkg import mod`` imports the submodule; ``from mod import name`` the module
            targets += [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                        for alias in node.names]
    found = set()
    for target in targets:
        while target not in known and "." in target:  # ``import a.b.c`` of an attribute path: its module
            target = target.rpartition(".")[0]
        if target in known and target != name:
            found.add(target)
    return found


def import_graph(package: Path = PACKAGE) -> Dict[str, Set[str]]:
    known = modules(package)
    return {name: imported(name, path, known) for name, path in known.items()}


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """A circle of imports as ``[a, b, ..., a]``, or None (depth-first search, iterative)."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def test_the_package_imports_without_a_circle():
    graph = import_graph()
    assert len(graph) > 30 and "autogluon_maya.tabswift.checkpoints_io.hub" in graph  # the whole package was read
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_a_circle_is_found_and_named(tmp_path):
    """The checker itself: relative imports, function-level imports and ``from pkg import module`` count."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("import os\n\n\ndef f():\n    from .sub import b\n    return b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("from .. import a\n")
    graph = import_graph(pkg)
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.sub.b"}, "pkg.sub": set(), "pkg.sub.b": {"pkg.a"}}
    assert find_cycle(graph) == ["pkg.a", "pkg.sub.b", "pkg.a"]
    (pkg / "sub" / "b.py").write_text("from pkg.sub import c\n")
    assert find_cycle(import_graph(pkg)) is None


#: what each layer may not import: shared utilities import no model, the models do not import each other, and
#: pretraining (which uses TabSwift's network and losses) is above TabSwift
FORBIDDEN = {"autogluon_maya.common": ("autogluon_maya.maya", "autogluon_maya.tabswift", "autogluon_maya.pretraining",
                                       "autogluon_maya.portfolio", "autogluon_maya.integrations"),
             "autogluon_maya.maya": ("autogluon_maya.tabswift", "autogluon_maya.pretraining",
                                     "autogluon_maya.portfolio"),
             "autogluon_maya.tabswift": ("autogluon_maya.maya", "autogluon_maya.pretraining",
                                         "autogluon_maya.portfolio")}


def layer_violations(graph: Dict[str, Set[str]]) -> List[str]:
    out = []
    for name, targets in sorted(graph.items()):
        for layer, forbidden in FORBIDDEN.items():
            if name == layer or name.startswith(layer + "."):
                out += [f"{name} -> {t}" for t in sorted(targets)
                        if any(t == f or t.startswith(f + ".") for f in forbidden)]
    return out


def test_no_module_imports_from_a_higher_layer():
    graph = import_graph()
    assert layer_violations(graph) == []
    # the check itself: an import of a model from common is named
    graph["autogluon_maya.common.ag_model"] = graph["autogluon_maya.common.ag_model"] | {"autogluon_maya.maya.model"}
    assert layer_violations(graph) == ["autogluon_maya.common.ag_model -> autogluon_maya.maya.model"]
