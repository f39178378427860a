"""The package's layers (``docs/design.md``, "Layout"): every import inside ``pymc_anneal``,
at module level or inside a function, goes to the same layer or one below, and nothing
imports the package root. Read from the source with :mod:`ast`, so a lazy import counts."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1] / "pymc_anneal"

LAYERS = [
    ("foundations", ["_version", "exceptions"]),
    ("checks and numerics", ["validation", "estimators", "_digest", "_progress",
                             "backends"]),
    ("paths", ["schedules", "paths", "diagnostics"]),
    ("kernels", ["kernels"]),
    ("driver", ["driver"]),
    ("models and results", ["energy", "pymc.adapter", "pymc.batched_scan", "pymc.stacks",
                            "pymc.noncentered", "pymc.symmetry",
                            "pymc.discrete", "pymc.laplace", "io", "evidence"]),
    ("entry points", ["partition", "batched", "reverse", "pymc.bases", "pymc.sampling", "pymc.bdmc",
                      "pymc.smc", "pymc.arviz_groups", "pymc.bridge"]),
    ("reading results", ["comparison", "distributed", "merge", "plots"]),
]
"""Bottom to top; a name is a module or a package (every module below it)."""


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> int:
    """The layer of ``module`` (relative to the package); the longest declared prefix wins."""
    best, index = "", None
    for i, (_, names) in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > len(best):
                best, index = name, i
    if index is None:
        raise AssertionError(f"pymc_anneal.{module} is in no layer: add it to LAYERS and to "
                             "the design notes' layout")
    return index


def _imports(path: Path) -> set[str]:
    """The package's modules that ``path`` imports (``from pymc_anneal.x import y`` names
    module ``x.y`` when that is a module, else ``x``)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "pymc_anneal":
            base = node.module.partition(".")[2]
            for alias in node.names:
                name = f"{base}.{alias.name}" if base else alias.name
                target = ROOT / name.replace(".", "/")
                out.add(name if target.with_suffix(".py").exists() or target.is_dir()
                        else base)
        elif isinstance(node, ast.Import):
            out.update(a.name.partition(".")[2] for a in node.names
                       if a.name.split(".")[0] == "pymc_anneal")
    return out


MODULES = sorted(p for p in ROOT.rglob("*.py") if p != ROOT / "__init__.py")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: _module(p))
def test_imports_go_down_the_layers(path):
    module = _module(path)
    for target in _imports(path):
        assert target != "", f"pymc_anneal.{module} imports the package root"
        assert _layer(target) <= _layer(module), (
            f"pymc_anneal.{module} ({LAYERS[_layer(module)][0]}) imports pymc_anneal.{target} "
            f"({LAYERS[_layer(target)][0]}), a layer above it")


def test_the_design_notes_list_every_layer():
    notes = (ROOT.parent / "docs" / "design.md").read_text()
    layout = notes[notes.index("## Layout"):]
    for name, modules in LAYERS:
        assert name in layout, name
        for module in modules:
            assert f"`{module.replace('.', '/')}" in layout, module


def test_an_upward_import_is_found(tmp_path):
    """The check sees module-level and lazy imports, by module and by package."""
    source = tmp_path / "fake.py"
    source.write_text("from pymc_anneal.driver import run_annealing\n"
                      "def f():\n    import pymc_anneal.pymc.sampling\n"
                      "    from pymc_anneal import plots\n")
    assert _imports(source) == {"driver", "pymc.sampling", "plots"}
    assert _layer("driver.run") > _layer("paths") > _layer("exceptions")
