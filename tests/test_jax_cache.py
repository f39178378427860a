"""JAX's persistent compilation cache (``pymc_anneal.backends.enable_jax_cache``): where it
goes, that the user's choices win, and that a stored loop gives the bits a compile gives,
for the same model and not for another one. Each case runs in a new process: the cache is
one per process, and the tests' own (``tests/conftest.py``) must not be seen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[1]

CHOICES = r"""
import json, os
import jax, pytensor
from pymc_anneal import backends
seen = {}
os.environ["PYMC_ANNEAL_JAX_CACHE"] = "off"
seen["off"] = [backends.enable_jax_cache(), jax.config.jax_compilation_cache_dir]
backends.enable_jax_cache.cache_clear()
del os.environ["PYMC_ANNEAL_JAX_CACHE"]
seen["default"] = [backends.enable_jax_cache(), jax.config.jax_compilation_cache_dir,
                   os.path.join(pytensor.config.compiledir, "jax")]
backends.enable_jax_cache.cache_clear()
jax.config.update("jax_compilation_cache_dir", "/tmp/users-own-choice")
seen["user"] = [backends.enable_jax_cache(), jax.config.jax_compilation_cache_dir]
print(json.dumps(seen))
"""

# base="prior": an annealing loop to store (at the defaults this model takes importance
# sampling from its Laplace fit, and no loop is built)
RUN = r"""
import json, sys
sys.path.insert(0, {root!r})
import pymc as pm, pymc_anneal as pa
with pm.Model() as model:
    mu = pm.Normal("mu", 0.0, 2.0)
    pm.Normal("y", mu, 1.0, observed={data!r})
    idata = pa.sample_ais(base="prior", random_seed=3, progressbar=False)
print(json.dumps(pa.log_evidence(idata).log_evidence.hex()))
"""


def _run(code: str, home: Path, **env) -> str:
    environment = {k: v for k, v in os.environ.items()
                   if k not in {"PYMC_ANNEAL_TEST_JAX_CACHE", "JAX_COMPILATION_CACHE_DIR",
                                "PYMC_ANNEAL_JAX_CACHE", "PYTENSOR_FLAGS"}}
    environment.update(HOME=str(home), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", **env)
    out = subprocess.run([sys.executable, "-c", code], env=environment, cwd=ROOT,
                         capture_output=True, text=True, check=False, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


def test_the_cache_goes_beside_pytensors_code_and_the_users_choices_win(tmp_path):
    seen = json.loads(_run(CHOICES, tmp_path))
    assert seen["off"] == [None, None]
    path, configured, expected = seen["default"]
    assert path == configured == expected
    assert path.startswith(str(tmp_path))
    assert seen["user"] == ["/tmp/users-own-choice", "/tmp/users-own-choice"]


@pytest.mark.slow
def test_a_new_process_reads_the_stored_loops_and_gets_the_same_bits(tmp_path):
    """Same model in a second process: the stored executables (no new entries) give the
    first process's bits. Other observed values (folded into the XLA program as constants):
    a new entry, and the bits of a run without any cache, not the first model's."""
    data, other = [0.3, -1.2, 2.0], [1.3, 0.4, -0.7]
    first = _run(RUN.format(root=str(ROOT), data=data), tmp_path)
    cache = next(tmp_path.glob(".pytensor/*/jax"))
    stored = sorted(p.name for p in cache.iterdir())
    assert stored, "the first process stored nothing"
    assert _run(RUN.format(root=str(ROOT), data=data), tmp_path) == first
    assert sorted(p.name for p in cache.iterdir()) == stored  # read, not compiled again
    changed = _run(RUN.format(root=str(ROOT), data=other), tmp_path)
    assert len(list(cache.iterdir())) > len(stored)
    (tmp_path / "none").mkdir()
    uncached = _run(RUN.format(root=str(ROOT), data=other), tmp_path / "none",
                    PYMC_ANNEAL_JAX_CACHE="off")
    assert changed == uncached != first
    assert not list((tmp_path / "none").glob(".pytensor/*/jax"))
