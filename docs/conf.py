"""Sphinx configuration for the pymc_anneal documentation.

Build (warnings are errors, as in CI):  sphinx-build -W --keep-going -b html docs docs/_build/html

Some pages are written at build time (and ignored by git), so they can never go stale:

- the API reference, ``api.md``, lists every name in ``pymc_anneal.__all__``: names added to
  ``__all__`` appear without editing the docs, modules with a page of their own members;
- the gallery has one page per ``examples/*.py``: its module docstring and its source. The
  examples are not executed (they take minutes); CI runs them in their fast mode.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

import pymc_anneal

project = "pymc_anneal"
author = "pymc_anneal developers"
copyright = "2026, pymc_anneal developers"
version = release = pymc_anneal.__version__

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "README.md"]
templates_path = ["_templates"]
html_static_path = ["_static"]

myst_enable_extensions = ["amsmath", "colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3

autosummary_generate = True
autosummary_ignore_module_all = False  # module pages list their __all__
autodoc_default_options = {"members": False}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

html_theme = "pydata_sphinx_theme"
html_title = f"pymc_anneal {release}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
}

# --------------------------------------------------------------------------- API reference

API_INTRO = """# API reference

Everything below is importable from the top level, `import pymc_anneal as pa`. This page
lists every name in `pymc_anneal.__all__` (it is written when the docs are built); the
docstrings are the reference.
"""


def _api_page() -> str:
    """The API page: autosummary blocks for everything in ``pymc_anneal.__all__``."""
    import inspect

    names = [n for n in pymc_anneal.__all__ if not n.startswith("_")]
    modules = [n for n in names if inspect.ismodule(getattr(pymc_anneal, n))]
    classes = [n for n in names if inspect.isclass(getattr(pymc_anneal, n))]
    functions = [n for n in names if n not in modules and n not in classes]
    blocks = [API_INTRO]
    # (the page templates for classes and modules are in _templates/autosummary/)
    for title, group in (("Functions", functions), ("Classes", classes), ("Modules", modules)):
        if not group:
            continue
        lines = [f"## {title}", "", "```{eval-rst}", ".. currentmodule:: pymc_anneal", "",
                 ".. autosummary::", "   :toctree: generated/", "   :nosignatures:", ""]
        lines += [f"   {name}" for name in group] + ["```", ""]
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


# --------------------------------------------------------------------------- gallery

GALLERY = DOCS / "gallery" / "generated"


def _example_page(path: Path) -> str:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or path.stem
    title, _, body = docstring.partition("\n")
    body = re.sub(r":(func|class|mod|meth|attr):`", r"{\1}`", body.strip())
    relative = path.relative_to(ROOT).as_posix()
    return (f"# {title.strip()}\n\n{body}\n\n"
            f"Source: `{relative}` (run `python {relative} --fast` for a quick version)."
            f"\n\n```{{literalinclude}} ../../../{relative}\n:language: python\n:linenos:\n```\n")


def _write_if_changed(path: Path, text: str) -> None:
    """Unchanged pages keep their mtime, so incremental builds stay incremental."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _write_generated_pages(app=None):
    _write_if_changed(DOCS / "api.md", _api_page())
    GALLERY.mkdir(parents=True, exist_ok=True)
    wanted = {}
    for path in sorted((ROOT / "examples").glob("*.py")):
        wanted[f"{path.stem}.md"] = _example_page(path)
    for stale in GALLERY.glob("*.md"):
        if stale.name not in wanted:
            stale.unlink()
    for name, text in wanted.items():
        _write_if_changed(GALLERY / name, text)


# Written when this file is read, before Sphinx lists the source files: on a fresh checkout
# a page first written at "builder-inited" is read but gets no autosummary stubs.
_write_generated_pages()
