"""The house plan as a test: imports go down the layers, never up, and never in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# lower number = nearer the ground; a module may import its own layer and those below
LAYERS = {"schemas": 0, "infra.platform": 1, "producers": 2, "streams": 2, "learner": 2, "consumers": 2,
          "infra.compose": 3}
# service packages that may import one another (evaluation scores with the stream evaluator,
# the generator reads the learner's importance-sampling knobs)
SIDEWAYS = {("producers", "streams"), ("producers", "learner")}


def modules() -> dict[str, Path]:
    found = {}
    for top in ("schemas", "infra", "producers", "streams", "learner", "consumers"):
        for path in (ROOT / top).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    del found["infra"]  # a docstring only: its two halves are layers of their own
    return found


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> project modules it imports (anywhere in the file, lazy imports included)."""
    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names}
        graph[name] = {r for t in targets if (r := resolve(t)) and r != name}
    return graph


def layer_of(module: str) -> tuple[str, int]:
    for prefix, rank in sorted(LAYERS.items(), key=lambda kv: -len(kv[0])):
        if module == prefix or module.startswith(prefix + "."):
            return prefix, rank
    raise AssertionError(f"{module} is in no layer")


def upward(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for a, targets in graph.items():
        (pa, ra) = layer_of(a)
        for b in targets:
            (pb, rb) = layer_of(b)
            if rb > ra or (rb == ra and pa != pb and (pa, pb) not in SIDEWAYS):
                found.append(f"{a} -> {b}")
    return sorted(found)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_goes_up_a_layer_or_across_services():
    assert upward(imports(modules())) == []


def test_no_import_circle():
    assert circles(imports(modules())) == []


def test_the_checks_can_fail():
    graph = {"infra.platform.topics": {"streams.app"}, "streams.app": {"streams.agents.reshape"},
             "streams.agents.reshape": {"streams.app"}, "consumers.sink": {"learner.loss"}}
    assert upward(graph) == ["consumers.sink -> learner.loss", "infra.platform.topics -> streams.app"]
    assert circles(graph) == [["streams.agents.reshape", "streams.app"]]
