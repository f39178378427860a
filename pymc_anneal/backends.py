"""Compilation for the three PyTensor backends; the only module that knows about them.

``"numba"`` (PyTensor 3's default mode, LLVM through Numba, cached on disk), ``"c"``
(PyTensor's C VM, ``mode="CVM"``) and ``"jax"`` (XLA; optional extra). Randomness is an
explicit input and output of every compiled function: callers pass a
:class:`numpy.random.Generator` and get the advanced one back, so the same seed gives the
same draws, and C and Numba give bit-identical results. On JAX, PyTensor converts the
Generator to a JAX key at each call, so results are reproducible but follow JAX's own stream.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pytensor

from pymc_anneal.exceptions import AnnealingError

__all__ = ["BACKENDS", "CompiledFunction", "compile_function", "validate_backend"]

BACKENDS = {"numba": "NUMBA", "c": "CVM", "jax": "JAX"}
"""Backend names accepted by ``backend=`` and the PyTensor mode each compiles to."""


def validate_backend(backend: str) -> str:
    """Return ``backend`` if it is known and importable, else raise a clear error."""
    if not isinstance(backend, str) or backend.lower() not in BACKENDS:
        raise AnnealingError(
            f"unknown backend {backend!r}; must be one of {sorted(BACKENDS)}."
        )
    backend = backend.lower()
    module = {"numba": "numba", "jax": "jax"}.get(backend)
    if module is not None:
        try:
            __import__(module)
        except ImportError as err:
            raise AnnealingError(
                f'backend="{backend}" needs the {module} package, which is not installed; '
                f"install it with `pip install pymc-anneal[{module}]` or choose another backend."
            ) from err
    return backend


@dataclass
class CompiledFunction:
    """A compiled PyTensor function returning NumPy arrays, with its compile time."""

    function: Callable
    backend: str
    compile_seconds: float

    def __call__(self, *args):
        if self.backend != "jax":
            return self.function(*args)
        from pytensor.link.jax.dispatch import jax_typify

        # JAX takes no Generator: PyTensor's JAX RNG state (a pytree) goes in instead, and
        # the advanced state that comes out is passed back in on the next call.
        args = [jax_typify(a) if isinstance(a, np.random.Generator) else a for a in args]
        outputs = self.function(*args)
        return [o if isinstance(o, dict) else np.asarray(o) for o in outputs]


def compile_function(inputs: Sequence, outputs: Sequence, backend: str) -> CompiledFunction:
    """Compile ``inputs -> outputs`` for ``backend`` (outputs always returned as a list)."""
    import time

    backend = validate_backend(backend)
    start = time.perf_counter()
    if backend == "jax":
        # JAX returns fresh arrays, so no defensive copy (which cannot copy an RNG state)
        inputs = [pytensor.In(i, borrow=True) for i in inputs]
        outputs = [pytensor.Out(o, borrow=True) for o in outputs]
    fn = pytensor.function(
        list(inputs), list(outputs), mode=BACKENDS[backend], on_unused_input="ignore"
    )
    fn.trust_input = backend == "jax"  # JAX RNG states are not Generators; inputs are exact
    return CompiledFunction(fn, backend, time.perf_counter() - start)


def compile_one_off(inputs: Sequence, outputs: Sequence, backend: str) -> CompiledFunction:
    """Compile a function called once per run on a batch (initial point, output mapping).

    Uses PyTensor's ``FAST_COMPILE`` mode (NumPy implementations, no code generation): such
    calls are vectorized over particles, so code generation would only add latency. Python
    mode cannot evaluate an elementwise op with more than 32 operands (a log density summed
    from many terms); such a function is recompiled once for ``backend`` at its first call.
    """
    import time

    start = time.perf_counter()
    fast = pytensor.function(list(inputs), list(outputs), mode="FAST_COMPILE",
                             on_unused_input="ignore")
    compiled: list = []

    def call(*args):
        if not compiled:
            try:
                return fast(*args)
            except NotImplementedError as err:
                if "32 operands" not in str(err):
                    raise
                compiled.append(compile_function(inputs, outputs, backend))
        return compiled[0](*args)

    return CompiledFunction(call, "python", time.perf_counter() - start)
