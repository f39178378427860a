"""Shared test targets and fixtures.

Targets with closed forms live in :mod:`tests.analytic` (PyMC models with known evidence)
and :mod:`tests.gaussian_paths` (a Gaussian annealing path with exact tempered
distributions); the tests import them as ``tests.*`` (the repository root is on
``sys.path`` because ``tests`` is a package).

:data:`CONTINUOUS_KERNELS` is the tests' kernel table: every kernel that runs on a continuous
path, with a step size that suits the Gaussian path at inverse mass 1. A new kernel is one row
here; the invariance, robustness, no-op and evidence tests pick it up.
"""

from __future__ import annotations

import atexit
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COMPILEDIR_ENV = "PYMC_ANNEAL_TEST_COMPILEDIR"
JAX_CACHE_ENV = "PYMC_ANNEAL_TEST_JAX_CACHE"
CACHE_ROOT = Path.home() / ".cache" / "pymc_anneal"
_SLOT_LOCK: list = []  # the open lock file of this process's slot, held until it exits


def _compile_slot() -> tuple[Path, str]:
    """This process's own PyTensor compile directory (its C modules and its Numba cache,
    ``<base_compiledir>/numba``) and the slot's name: ``worker-gw0`` for pytest-xdist's
    worker ``gw0``, ``worker-main`` without xdist, under ``$PYMC_ANNEAL_TEST_COMPILEDIR``
    or ``~/.cache/pymc_anneal/pytensor-tests``; stable, so the next run finds its caches
    warm.

    Numba saves its cache index without a lock (a read, an update, a rename): two processes
    adding entries to one index at once can leave one key pointing to the other's code.
    PyTensor's C cache has a lock; its Numba cache does not. So no two test processes share
    one: each holds an exclusive lock on its slot while it lives, and a slot another
    process holds (two pytest sessions at once) gives way to ``worker-gw0-2``, and so on.
    The subprocesses a test starts inherit the directory (``PYTENSOR_FLAGS``) while the
    test waits for them; the Dask workers of ``tests/test_distributed.py`` get one each
    under it. PyTensor reads ``base_compiledir`` once, when it is imported, hence before
    any import of it here."""
    root = Path(os.environ.get(COMPILEDIR_ENV) or CACHE_ROOT / "pytensor-tests")
    name = f"worker-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
    root.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # not POSIX: one slot per worker id
        return root / name, name
    for attempt in range(1, 1000):
        slot = name if attempt == 1 else f"{name}-{attempt}"
        lock = open(root / f"{slot}.lock", "w")  # noqa: SIM115 (held while the process lives)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        _SLOT_LOCK.append(lock)
        atexit.register(lock.close)  # the lock goes with the process anyway; no warning
        return root / slot, slot
    raise RuntimeError(f"no free compile slot under {root}: remove its *.lock files")


def _use_own_compiledir() -> Path:
    """Point PyTensor at :func:`_compile_slot`'s directory (``base_compiledir`` in
    ``PYTENSOR_FLAGS``, in place of one inherited from pytest-xdist's parent process)."""
    if "pytensor" in sys.modules:
        raise RuntimeError(
            "tests/conftest.py must be imported before PyTensor: PyTensor reads "
            "base_compiledir once, at import, and every test process needs its own (got "
            "pytensor imported already, by a plugin or a sitecustomize). Run pytest so "
            "that PyTensor is first imported by the tests.")
    path, slot = _compile_slot()
    flags = [f for f in os.environ.get("PYTENSOR_FLAGS", "").split(",")
             if f.strip() and not f.strip().startswith("base_compiledir=")]  # xdist's parent
    os.environ["PYTENSOR_FLAGS"] = ",".join([*flags, f"base_compiledir={path}"])
    os.environ["PYMC_ANNEAL_TEST_SLOT"] = slot
    return path


COMPILEDIR = _use_own_compiledir()

import numpy as np  # noqa: E402 (PyTensor is imported from here on)
import pytest  # noqa: E402

from pymc_anneal.driver.cache import compiled_loop  # noqa: E402
from pymc_anneal.driver.tuning import step_arrays  # noqa: E402
from pymc_anneal.kernels import KERNELS  # noqa: E402
from tests.gaussian_paths import DEFAULT as GAUSSIAN  # noqa: E402


def _persistent_jax_cache() -> None:
    """XLA's compiled loops on disk, as PyTensor keeps its C modules and Numba its caches: a
    graph the tests compile again (in another test, in the next run) skips XLA's compile
    (about 1.5 s of a small model's 4 s first call). Only where nobody configured a cache;
    the directory is ``$PYMC_ANNEAL_TEST_JAX_CACHE`` or, per process as PyTensor's
    (:func:`_compile_slot`), ``~/.cache/pymc_anneal/jax-tests/<slot>``: JAX writes an entry
    in place, without a lock, so another process could read half of it (a warning, which
    the tests turn into an error). Not the package's default (beside PyTensor's compiled
    code; ``pymc_anneal.backends.enable_jax_cache``), whose own tests run in new processes
    (``tests/test_jax_cache.py``)."""
    try:
        import jax
    except ImportError:  # the JAX extra is not installed
        return
    if jax.config.jax_compilation_cache_dir:
        return
    default = CACHE_ROOT / "jax-tests" / os.environ["PYMC_ANNEAL_TEST_SLOT"]
    jax.config.update("jax_compilation_cache_dir", os.environ.get(JAX_CACHE_ENV, str(default)))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)


_persistent_jax_cache()


@dataclass(frozen=True)
class KernelCase:
    """A row of the kernel table."""

    name: str
    step_size: float  # leaves the Gaussian path's p_beta well mixed (inv_mass = 1)


CONTINUOUS_KERNELS = {
    "hais": KernelCase("hais", 0.5),  # HMC: eps * omega_max ~ 1.2 at beta = 1
    "hmc": KernelCase("hmc", 0.5),
    "mala": KernelCase("mala", 0.5),
    "metropolis": KernelCase("metropolis", 1.0),
}


@pytest.fixture(params=sorted(CONTINUOUS_KERNELS))
def kernel_case(request) -> KernelCase:
    """Each row of the kernel table in turn."""
    return CONTINUOUS_KERNELS[request.param]


@dataclass
class CompiledKernel:
    """A kernel's compiled loop on the Gaussian path, with a thin driver around it."""

    name: str
    kernel: Any
    loop: Any

    @property
    def fields(self) -> tuple[str, ...]:
        return self.loop.field_names

    @property
    def has_momentum(self) -> bool:
        return "momentum" in self.fields

    def initial_state(self, position, momentum=None, inv_mass=None) -> dict[str, np.ndarray]:
        """The kernel's state (``kernel.init``) at ``position``; ``momentum`` replaces the
        one the kernel draws, for kernels that have one."""
        d = GAUSSIAN.num_dims
        params = self.arrays(beta=0.0, num_steps=1, inv_mass=inv_mass)
        _, state = self.loop.init(np.random.default_rng(0), np.asarray(position, dtype=np.float64),
                                  {k: v[0] for k, v in params.items()}, [])
        state = {k: np.array(v) for k, v in state.items()}
        if momentum is not None:
            assert self.has_momentum
            state["momentum"] = np.array(momentum, dtype=np.float64).reshape(-1, d)
        return state

    def arrays(self, *, beta, num_steps, delta_beta=0.0, **values) -> dict[str, np.ndarray]:
        """Constant per-step arrays: the given values by name (those the kernel does not have
        are ignored), the others derived from them or at the kernel's defaults."""
        d = GAUSSIAN.num_dims
        params = self.kernel.parameters
        values = {k: v for k, v in values.items()
                  if v is not None and k in self.kernel.parameter_names}
        base = {p.name: np.tile(p.initial(d), (num_steps,) + (1,) * p.per_dimension)
                for p in params if p.derive is None}
        for name in base.keys() & values.keys():
            base[name] = np.broadcast_to(np.float64(values[name]), base[name].shape).copy()
        arrays = step_arrays(params, np.linspace(0.0, 1.0, num_steps + 1), base, {})
        for name, value in values.items():
            arrays[name] = np.broadcast_to(np.float64(value), arrays[name].shape).copy()
        arrays["beta"] = np.full(num_steps, float(beta))
        arrays["delta_beta"] = np.full(num_steps, float(delta_beta))
        return arrays

    def run(self, state, *, beta, num_steps=30, seed=0, delta_beta=0.0, log_weight=None,
            arrays=None, **values):
        """Run ``num_steps`` transitions with constant parameters through the real loop.

        ``values`` set kernel parameters by name (``step_size``, ``inv_mass``, ``refresh``,
        ``momentum_scale``, ...). Returns ``(state, log_weight, acceptance (K,),
        divergences (K,))``.
        """
        n = state["position"].shape[0]
        log_weight = np.zeros(n) if log_weight is None else np.asarray(log_weight, dtype=np.float64)
        if arrays is None:
            arrays = self.arrays(beta=beta, num_steps=num_steps, delta_beta=delta_beta, **values)
        _, new_state, new_log_weight, stats = self.loop.run(
            np.random.default_rng(seed), arrays, state, log_weight, 1, [])
        new_state = {k: np.asarray(v) for k, v in new_state.items()}
        return (new_state, np.asarray(new_log_weight), stats["acceptance_rate"][:, 0],
                stats["divergences"][:, 0])


@pytest.fixture(scope="session")
def compiled():
    """``compiled(name) -> CompiledKernel``: each kernel's loop on the Gaussian path, compiled
    once per session (Numba) through the driver's compile cache."""
    cache: dict[str, CompiledKernel] = {}

    def get(name: str) -> CompiledKernel:
        if name not in cache:
            kernel = KERNELS[name](GAUSSIAN.path)
            cache[name] = CompiledKernel(name, kernel, compiled_loop(GAUSSIAN.path, kernel, "numba"))
        return cache[name]

    return get


LONGEST_FIRST = ("test_slow_calibration",)
"""The longest tests of the whole suite (tens of minutes each), started first."""


def pytest_collection_modifyitems(config, items):
    """Run :data:`LONGEST_FIRST` before every other test (a stable sort). Under pytest-xdist
    the first worker then runs them from the start, beside the others, instead of alone at
    the end: the whole suite's wall time on 2 cores is their time or half the total,
    whichever is larger."""
    items.sort(key=lambda item: item.originalname not in LONGEST_FIRST)
