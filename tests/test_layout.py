"""The package's shape: no import circles, the domain never imports a view, a small root.

Read from the source with ``ast`` (nothing is imported), counting imports at module
level and inside functions alike: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[1] / "cns_core"

def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> nx.DiGraph:
    """Module -> the ``cns_core`` modules it imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    files = {module_name(p, package): p for p in package.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
            for target in targets:
                while target and target not in files:   # `import cns_core.a.b.c` where c is a name
                    target = target.rpartition(".")[0]
                if target.startswith("cns_core") and target != name:
                    graph.add_edge(name, target)
    return graph


def test_the_graph_sees_lazy_and_package_imports():
    graph = import_graph()
    assert graph.has_edge("cns_core.agents.bus", "cns_core.agents.journal")       # inside BusProxy.start
    assert graph.has_edge("cns_core.cli.run", "cns_core.cli.supervisor")          # inside run_demo
    assert graph.has_edge("cns_core.views.graph_html", "cns_core.views.display")


def test_no_import_circles(tmp_path):
    cycles = [set(c) for c in nx.simple_cycles(import_graph())]
    assert cycles == []

    # and the check does find one
    pkg = tmp_path / "cns_core"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text("def f():\n    from cns_core.sub import b\n")
    (pkg / "sub" / "b.py").write_text("from .a import f\n")
    assert [set(c) for c in nx.simple_cycles(import_graph(pkg))] == [{"cns_core.sub.a", "cns_core.sub.b"}]


def test_the_domain_never_imports_a_view():
    graph = import_graph()
    reverse = sorted((src, dst) for src, dst in graph.edges
                     if dst.startswith("cns_core.views") and not src.startswith("cns_core.views"))
    assert reverse == []


def test_the_root_holds_the_domain_only():
    root = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert len(root) <= 9, root
    assert not {"ui_state", "display", "graph_html", "engram_view", "judge_feed", "demo_memory"} & set(root)


# The house plan, ground floor first. A module may import its own floor or a lower one, never a higher one;
# a new room (or root module) must be placed here before it can land.
FLOORS: tuple[frozenset[str], ...] = tuple(frozenset(f.split()) for f in (
    "config bounds access engrams sno metrics",   # root modules: settings, limits, the SNO, the engram record, figures
    "models formats",                     # run a model; read and write files
    "text memory",                        # draft SNOs from text; store engrams
    "critics",
    "scoring training",                   # the Trust Score; the recipes that make the shipped models
    "pipeline coherence",
    "meta",
    "agents engine judging",              # the judge loop; corpus runs on Ray; judging an answer
    "people",                             # people's verdicts, calibration, export (above agents and memory)
    "cli views",
))


def room(module: str) -> str:
    """``cns_core.models.nli`` -> ``models``; a root module is its own room (``cns_core.memory`` -> ``memory``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def floor(module: str) -> int:
    name = room(module)
    for level, rooms in enumerate(FLOORS):
        if name in rooms:
            return level
    raise AssertionError(f"{module}: room {name!r} is on no floor of the house plan (tests/test_layout.py FLOORS)")


def upward_imports(graph: nx.DiGraph) -> list[tuple[str, str]]:
    return sorted((a, b) for a, b in graph.edges
                  if room(a) != "__init__" and room(b) != "__init__" and floor(a) < floor(b))


def test_every_import_runs_down_the_floors():
    assert upward_imports(import_graph()) == []

    # and the check does find one: a model backend that knows an agent
    graph = nx.DiGraph([("cns_core.models.minicheck", "cns_core.agents.ollama")])
    assert upward_imports(graph) == [("cns_core.models.minicheck", "cns_core.agents.ollama")]


def test_rooms_form_no_circle():
    rooms = nx.DiGraph((room(a), room(b)) for a, b in import_graph().edges if room(a) != room(b))
    assert [sorted(c) for c in nx.simple_cycles(rooms)] == []


def test_models_only_load_and_run_models():
    """``models/`` holds inference backends; data readers, augmentation, training loops and metrics
    live in ``training/``, which nothing at inference time imports (only the train and eval commands)."""
    graph = import_graph()
    assert {room(b) for a, b in graph.edges if room(a) == "models"} <= {"config", "bounds", "sno", "models"}
    training_users = {a for a, b in graph.edges if room(b) == "training" and room(a) != "training"}
    assert {room(a) for a in training_users} <= {"cli", "coherence"}
    assert {a for a in training_users if room(a) == "coherence"} <= {"cns_core.coherence.evaluate"}
    recipes = {p.stem for p in (PACKAGE / "models").glob("*.py")} & {
        "nli_training", "nli_data", "nli_augment", "nli_metrics", "verifier_data", "logic_data", "logic_training"}
    assert recipes == set()


def _defined_at_top(statements: list[ast.stmt]) -> set[str]:
    """The names a module's own statements bind (a guarded import or definition inside a top-level ``if`` or
    ``try`` counts; a class's fields and a function's locals do not)."""
    names: set[str] = set()
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            inner = [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", []),
                     *(s for h in getattr(node, "handlers", []) for s in h.body)]
            names |= _defined_at_top(inner)
    return names


def test_every_name_a_module_exports_is_defined_in_it():
    """``__all__`` lists only what the module has: a name removed from the module goes from its list too. (A
    module with its own ``__getattr__``, such as ``cns_core.memory``, hands its names out lazily: skipped.)"""
    missing = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if "__getattr__" in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}:
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                exported = ast.literal_eval(node.value)
                missing += [f"{module_name(path)}.{n}" for n in exported if n not in _defined_at_top(tree.body)]
    assert missing == []
