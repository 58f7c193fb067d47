"""The layering the design asks for: the packages form layers with no import circle, the core never
imports Textual, and startup never waits on openenv or the Daytona SDK."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "smoldata_tui"
CORE = ["trace", "tasks", "sandbox", "store", "opencode", "replay", "session", "training", "fleet", "diff", "episode"]
HEAVY = ("textual", "openenv", "daytona")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", CORE)
def test_core_layers_never_import_textual(layer):
    folder = PACKAGE / layer
    if not folder.exists():
        pytest.skip(f"{layer}/ does not exist yet")
    offenders = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in sorted(folder.rglob("*.py"))
        for name in imported_modules(path)
        if name == "textual" or name.startswith("textual.") or name.startswith("smoldata_tui.ui")
    ]
    assert not offenders, offenders


def test_no_module_imports_openenv_or_daytona_at_top_level():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # module level only: lazy imports inside functions are the rule
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ("openenv", "daytona")]
    assert not offenders, offenders


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return {name.split(".")[0] for name in out.split()}


def test_importing_the_cli_loads_no_heavy_library():
    loaded = _loaded_after("import smoldata_tui.cli")
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_the_trace_engine_loads_no_heavy_library():
    loaded = _loaded_after("import smoldata_tui.trace, smoldata_tui.commands.check")
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_every_notification_of_computed_text_is_shown_as_plain_text():
    """``notify`` reads Textual markup by default: an error or path holding ``[b]`` or ``[@click=…]``
    would be styled, turned into an action, or raise MarkupError. Only literal text may be markup."""
    offenders = []
    for path in sorted((PACKAGE / "ui").rglob("*.py")):  # the core's ``notify`` callbacks take plain text
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "notify"):
                continue
            literal = bool(node.args) and _literal_text(node.args[0])
            plain = any(k.arg == "markup" and isinstance(k.value, ast.Constant) and k.value.value is False for k in node.keywords)
            if not literal and not plain:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not offenders, offenders


def _literal_text(node: ast.expr) -> bool:
    """A string written in the source: a constant, a CONSTANT's name, or a choice between them."""
    if isinstance(node, ast.IfExp):
        return _literal_text(node.body) and _literal_text(node.orelse)
    return isinstance(node, ast.Constant) or (isinstance(node, ast.Name) and node.id.isupper())


# Lowest first. A module may import its own package and any package of a lower layer, never one of a
# higher layer; within ``ui`` the helpers sit below the widgets, the widgets below the screens, the
# screens below the apps (which open them: ui/apps/navigation.py); the command-line verbs start the apps.
LAYERS = [
    {"lazy_names", "masking"},
    {"trace"},
    {"sandbox"},
    {"sandbox.daytona"},
    {"tasks"},
    {"store"},
    {"opencode"},
    {"training"},
    {"episode", "diff"},
    {"replay"},
    {"session"},
    {"fleet"},
    {"ui"},
    {"ui.widgets"},
    {"ui.screens"},
    {"ui.apps"},
    {"commands"},
    {"cli"},
    {"__main__"},
]


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return {name: path for name, path in modules.items() if "sample_tasks" not in name}


def _import_graph() -> dict[str, set[str]]:
    """Every import of the package's own modules, wherever it is written (module level, inside a
    function, under ``if TYPE_CHECKING``): importing ``a.b.c`` runs ``a``'s and ``a.b``'s too."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def _package_of(module: str, modules: dict[str, Path]) -> str:
    inner = module.removeprefix("smoldata_tui.")
    if module == "smoldata_tui":
        return ""
    return inner if modules[module].name == "__init__.py" else inner.rpartition(".")[0] or inner


def test_no_module_imports_itself_in_a_circle():
    graph = _import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            circle = []
            while True:
                member = stack.pop()
                circle.append(member)
                if member == module:
                    break
            if len(circle) > 1:
                circles.append(sorted(circle))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    assert not circles, circles


def test_packages_import_only_their_own_layer_or_lower():
    modules = _modules()
    rank = {package: level for level, packages in enumerate(LAYERS) for package in packages}
    graph = _import_graph()
    unplaced = sorted({_package_of(m, modules) for m in graph} - set(rank) - {""})
    assert not unplaced, f"packages with no layer in LAYERS: {unplaced}"
    upward = [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if _package_of(target, modules) and _package_of(module, modules)
        and rank[_package_of(target, modules)] > rank[_package_of(module, modules)]
    ]
    assert not upward, upward
