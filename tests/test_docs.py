"""The documentation site builds without warnings (about 15 s: the slow suite) and covers the
public API and the examples."""

from __future__ import annotations

import fcntl
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pymc_anneal as pa

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def html(tmp_path_factory):
    pytest.importorskip("sphinx")
    out = tmp_path_factory.mktemp("docs")
    # conf.py and autosummary write generated pages into the source tree: two pytest-xdist
    # workers building at once could read each other's half-written pages, so the builds
    # take turns (the lock file lies in the directory the workers' temporary roots share)
    with open(tmp_path_factory.getbasetemp().parent / "docs-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(
            [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
             "-d", str(out / "doctrees"), str(ROOT / "docs"), str(out / "html")],
            capture_output=True, text=True, timeout=600, cwd=ROOT, check=False,
        )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    return out / "html"


@pytest.mark.slow
def test_docs_build_without_warnings(html):
    for page in ["index", "getting_started", "user_guide/evidence",
                 "user_guide/temperatures_and_kernels", "user_guide/diagnostics",
                 "user_guide/comparing_models", "user_guide/pitfalls", "math", "api",
                 "gallery/index"]:
        assert (html / f"{page}.html").is_file(), page


@pytest.mark.slow
def test_api_reference_covers_the_public_api(html):
    api = (html / "api.html").read_text(encoding="utf-8")
    public = [name for name in pa.__all__ if not name.startswith("_")]
    for name in public:
        assert (html / "generated" / f"pymc_anneal.{name}.html").is_file(), name
        assert f'href="generated/pymc_anneal.{name}.html"' in api, name
    # the docstrings are rendered: a parameter of sample_ais and a column of compare
    assert "num_steps" in (html / "generated" / "pymc_anneal.sample_ais.html").read_text()
    assert "log_evidence_diff" in (html / "generated" / "pymc_anneal.compare.html").read_text()
    # module pages document their members
    plots = (html / "generated" / "pymc_anneal.plots.html").read_text(encoding="utf-8")
    for name in pa.plots.__all__:
        assert f"pymc_anneal.plots.{name}.html" in plots, name


@pytest.mark.slow
def test_gallery_has_a_page_per_example(html):
    gallery = (html / "gallery" / "index.html").read_text(encoding="utf-8")
    examples = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))
    assert examples
    for stem in examples:
        page = html / "gallery" / "generated" / f"{stem}.html"
        assert page.is_file(), stem
        assert f"generated/{stem}.html" in gallery
        text = page.read_text(encoding="utf-8")
        assert "def main(" in re.sub(r"<[^>]+>", "", text)  # the source is included


@pytest.mark.slow
def test_user_guide_figures_exist(html):
    for name in ["log_weights_poor", "log_weights_good", "annealing_poor",
                 "running_log_z_poor", "convergence", "compare"]:
        assert (html / "_images" / f"{name}.png").is_file(), name
