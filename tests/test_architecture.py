"""The layering the design asks for: the core never imports Textual, and startup never waits
on openenv or the Daytona SDK."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "smoldata_tui"
CORE = ["trace", "tasks", "sandbox", "session", "training", "fleet", "diff", "episode"]
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
