"""The compile cache: compiled annealing loops, kept while their path's owner lives.

Compiling a loop costs seconds to a minute, so a loop is reused by every run on the same
path structure, kernel structure and backend. Entries are keyed by the path's
:meth:`compile_key`, ``(owner, key)``:

- an owner (a PyMC model's path, or the path a fitted Gaussian base was built on): its
  entries are dropped when the owner is garbage-collected, so a process that builds many
  models does not keep their loops;
- no owner (``None``: every value of the path is a loop input, as for RBMs): the entry is
  shared by every path of that structure.

In both cases at most :data:`MAX_ENTRIES` loops are kept; the least recently used go first.
A loop that could not be built (a backend that cannot compile the path, a gradient kernel on
a density without a gradient) is remembered as such, so asking again raises at once.

:func:`choose_loop` is where an entry point learns, before anything runs, whether its
kernel and backend can build the loop, and takes another where it may (the user left the
choice to ``"auto"``): random-walk Metropolis for a log density without a gradient, Numba
(else C) for a graph that JAX cannot trace.
"""

from __future__ import annotations

import importlib.util
import logging
import weakref
from collections import OrderedDict
from collections.abc import Callable

from pymc_anneal.backends import static_loop_length
from pymc_anneal.driver.scan import (
    BackendUnsupportedError,
    CompiledLoop,
    NoGradientError,
    build_loop,
)
from pymc_anneal.driver.tuning import needs_pilot
from pymc_anneal.kernels import resolve_kernel
from pymc_anneal.validation import check_backend

__all__ = ["GRADIENT_FREE_KERNEL", "LOOPS", "MAX_ENTRIES", "CompileCache", "choose_loop",
           "compiled_loop", "fallback_backend"]

_LOG = logging.getLogger(__name__)

GRADIENT_FREE_KERNEL = "metropolis"
"""The kernel :func:`choose_loop` takes for a log density without a gradient."""


class _Failed:
    """A cache entry for a loop whose build failed: its error, raised again on a hit."""

    def __init__(self, error: Exception):
        self.error = error

MAX_ENTRIES = 32
"""Compiled loops kept at most (each holds a few MB of compiled code)."""


class CompileCache:
    """A bounded least-recently-used map whose entries die with their owner."""

    def __init__(self, max_entries: int = MAX_ENTRIES):
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple, CompiledLoop] = OrderedDict()
        self._owners: dict[int, weakref.finalize] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def owned_by(self, owner) -> list[tuple]:
        """The keys of ``owner``'s entries (for tests and introspection)."""
        return [k[1:] for k in self._entries if k[0] == id(owner)]

    def get(self, owner, key: tuple, build: Callable[[], CompiledLoop]) -> CompiledLoop:
        """The entry for ``(owner, key)``, built by ``build()`` on a miss."""
        full_key = (None if owner is None else id(owner), *key)
        loop = self._entries.get(full_key)
        if loop is not None:
            self._entries.move_to_end(full_key)
            if isinstance(loop, _Failed):
                raise loop.error
            return loop
        try:
            loop = build()
        except (BackendUnsupportedError, NoGradientError) as error:
            loop = _Failed(error)
        if owner is not None and id(owner) not in self._owners:
            self._owners[id(owner)] = weakref.finalize(owner, self._drop_owner, id(owner))
        self._entries[full_key] = loop
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        if isinstance(loop, _Failed):
            raise loop.error
        return loop

    def _drop_owner(self, owner_id: int) -> None:
        self._owners.pop(owner_id, None)
        for key in [k for k in self._entries if k[0] == owner_id]:
            del self._entries[key]

    def clear(self) -> None:
        self._entries.clear()


LOOPS = CompileCache()
"""The process-wide cache of compiled annealing loops."""


def compiled_loop(path, kernel, backend: str) -> CompiledLoop:
    """The compiled loop of ``kernel`` on ``path`` for ``backend``, from :data:`LOOPS`.

    Where the backend's loops take the shapes of the path's parameters as static (JAX's),
    they are part of the key. A loop that cannot be built raises :class:`NoGradientError` or
    :class:`BackendUnsupportedError`, and so does every later call for it; one that JAX
    failed to trace (:meth:`CompiledLoop.precompile`) raises that failure too."""
    backend = check_backend(backend)
    owner, key = path.compile_key()
    key = (*key, kernel.structure, backend)
    if static_loop_length(backend) is not None:
        key += (tuple((k, v.shape) for k, v in sorted(path.parameters.items())),)
    loop = LOOPS.get(owner, key, lambda: build_loop(path, kernel, backend))
    if loop.failure is not None:
        raise loop.failure
    return loop


def choose_loop(path, options, *, draws: int, chains: int, auto_kernel: bool = False,
                auto_backend: bool = False) -> tuple:
    """The run options whose loop on ``path`` builds, and attributes that record a choice.

    The loop of ``options``' kernel and backend is built (or found in :data:`LOOPS`) and,
    on a backend that compiles per shape (JAX), the compile of the first shape the run will
    call is started: the pilot's (``options.tuning.num_pilot`` particles in one chain), or
    the run's own when there is no pilot. JAX traces the loop there, so a graph it cannot
    trace fails here, before anything runs, and nothing is done twice: the run finds the
    loop and that compile started. An entry point calls this before its first run.

    - A log density without a gradient under a gradient kernel
      (:class:`~pymc_anneal.driver.scan.NoGradientError`): with ``auto_kernel``, the kernel
      becomes :data:`GRADIENT_FREE_KERNEL` (``"metropolis"``), logged at INFO and recorded
      as ``kernel_fallback``; otherwise the error is raised (it names the op and the fix).
    - A graph that JAX cannot compile
      (:class:`~pymc_anneal.driver.scan.BackendUnsupportedError`): with ``auto_backend``,
      the backend becomes Numba (C where Numba is not installed), logged at INFO and
      recorded as ``backend_fallback``; otherwise the error is raised.

    Parameters
    ----------
    path : Path
    options : RunOptions
        As the run will take them (the backend resolved).
    draws, chains : int
        The run's particles per chain and chains.
    auto_kernel, auto_backend : bool, default False
        Whether the user left the kernel (``kernel="auto"``) or the backend
        (``backend="auto"``) to the package.

    Returns
    -------
    options : RunOptions
        ``options``, with the kernel or backend replaced where one was.
    attrs : dict
        ``kernel_fallback`` and ``backend_fallback`` where a choice was made: what was
        replaced by what, and why.
    """
    attrs: dict[str, str] = {}
    while True:
        kernel = resolve_kernel(path.default_kernel if options.kernel is None else options.kernel,
                                path, **options.kernel_options)
        try:
            loop = compiled_loop(path, kernel, options.backend)
            _precompile_first(loop, path, kernel, options, draws, chains)
            return options, attrs
        except NoGradientError as error:
            if not auto_kernel or kernel.name == GRADIENT_FREE_KERNEL or path.discrete_dims:
                raise
            attrs["kernel_fallback"] = (f"{kernel.name} -> {GRADIENT_FREE_KERNEL}: the log "
                                        f"density has no gradient ({error.cause})")
            _LOG.info("kernel %r needs gradients and the log density of %r has none (%s): "
                      "using kernel %r", kernel.name, path.name, error.cause,
                      GRADIENT_FREE_KERNEL)
            options = options.replace(kernel=GRADIENT_FREE_KERNEL)
        except BackendUnsupportedError as error:
            fallback = fallback_backend()
            if not auto_backend or options.backend == fallback:
                raise
            attrs["backend_fallback"] = f"{options.backend} -> {fallback}: {error.cause}"
            _LOG.info("JAX cannot compile the annealing loop of %r (%s): using backend %r",
                      path.name, error.cause, fallback)
            options = options.replace(backend=fallback)


def fallback_backend() -> str:
    """Numba where it is installed (PyTensor's default), else C."""
    return "numba" if importlib.util.find_spec("numba") is not None else "c"


def _precompile_first(loop: CompiledLoop, path, kernel, options, draws: int,
                      chains: int) -> None:
    """Start the compile of the first shape a run will call, as
    :func:`pymc_anneal.driver.run.run_annealing` does first (JAX traces the loop there)."""
    tuning = options.tuning
    field_dtypes = [f.dtype or path.dtype for f in kernel.state]
    parameters = [path.parameters[k] for k in sorted(path.parameters)]
    if needs_pilot(kernel.parameters, tuning):
        loop.precompile(tuning.num_pilot, 1, path.num_dims, field_dtypes, parameters)
    else:
        run_chains = chains + int(tuning.auto_variance is not None)
        loop.precompile(draws * run_chains, run_chains, path.num_dims, field_dtypes,
                        parameters)
