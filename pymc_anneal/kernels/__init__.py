"""Annealing transition kernels, each a backend-agnostic PyTensor graph builder.

A kernel module provides ``build_kernel(path, **structural_options) -> Kernel``. A
:class:`Kernel` has

- ``init(point, position, momentum_draw)`` -> the kernel's own state NamedTuple;
- ``step(rng, state, beta, params)`` -> ``(next_rng, new_state, info)`` where ``params``
  holds the per-step numeric parameters (``step_size``, ``inv_mass``, ``momentum_scale``,
  ``refresh``) and the path's own parameters, to be passed on to ``path.evaluate``, and
  ``info`` is an :class:`Info`.

Every state has ``position`` and ``log_ratio``; the driver only reads those (and rescales
``momentum`` when the kernel has one). Adding a kernel = one module + one row in
:data:`KERNELS` + one row in the test matrix.
"""

from pymc_anneal.kernels.base import Info, Kernel
from pymc_anneal.kernels.gibbs import build_kernel as build_gibbs_kernel
from pymc_anneal.kernels.hmc import build_kernel as build_hmc_kernel
from pymc_anneal.kernels.metropolis import build_kernel as build_metropolis_kernel

KERNELS = {
    "hmc": lambda path, **kw: build_hmc_kernel(path, persistent_momentum=False, **kw),
    "hais": lambda path, **kw: build_hmc_kernel(path, persistent_momentum=True, **kw),
    "metropolis": lambda path, **kw: build_metropolis_kernel(path, **kw),
    "gibbs": lambda path, **kw: build_gibbs_kernel(path, **kw),
}
"""Kernel names accepted by the drivers: ``"hais"`` (HMC with persistent momentum, the
default), ``"hmc"`` (full momentum refresh each step), ``"metropolis"`` (random walk) and
``"gibbs"`` (blocked Gibbs, for paths with tractable conditionals such as RBMs)."""

CONTINUOUS_KERNELS = ("hais", "hmc", "metropolis")
"""The kernels that run on any continuous :class:`~pymc_anneal.paths.Path` (PyMC models)."""

__all__ = ["CONTINUOUS_KERNELS", "KERNELS", "Info", "Kernel", "build_gibbs_kernel",
           "build_hmc_kernel", "build_metropolis_kernel"]
