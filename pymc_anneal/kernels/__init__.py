r"""Annealing transition kernels, each a backend-agnostic PyTensor graph builder.

**The kernel contract.** A kernel module provides ``build_kernel(path, **structural_options) -> Kernel``, where the
options are what changes the graph's structure (the number of leapfrog steps). The
:class:`Kernel` it returns declares

- ``state_type`` and ``state``: its per-particle state, a NamedTuple whose first field is
  ``position``, and each field's shape (``(N, d)`` or ``(N,)``) and dtype
  (:class:`StateField`). A kernel may cache what it likes in its state (log densities,
  gradients) and keep auxiliary variables (a momentum) there;
- ``parameters``: its numeric per-step parameters (:class:`StepParameter`): name, shape,
  default, whether and how the pilot tunes it (``"acceptance"`` or ``"variance"``), whether
  it is derived from the others, and its no-op value;
- ``init(rng, position, params, path_params) -> (rng, state)``: the state at a batch of
  positions, with auxiliary variables drawn from their distribution under ``params``;
- ``step(rng, state, beta, params, path_params) -> (rng, state, info)``: one transition that
  leaves the tempered density :math:`p_\beta` invariant; ``params`` holds the step's
  parameter values by name and ``path_params`` the path's symbolic parameters (pass them on
  to ``path.evaluate``); ``info`` is an :class:`Info`;
- ``target_acceptance`` and a hashable ``structure``.

Randomness goes in and out as ``rng`` (draw with ``pt.random.*(..., rng=rng,
return_next_rng=True)``); everything is batched over a leading particle axis. The driver
builds the loop from these declarations alone (it names no kernel, state field or parameter),
so a new kernel is one module and one entry in :data:`KERNELS` (or a builder passed as
``kernel=`` to :func:`pymc_anneal.ais` and :func:`pymc_anneal.sample_ais`). A kernel asks
the path for what it needs with ``path.require("evaluate", who)`` (log densities and
gradients) or ``path.require("gibbs_sweep", who)`` (conditionals).

Example: a Metropolis kernel with uniform proposals, written from scratch and run on a
one-dimensional Gaussian target whose normalizing constant is known,
:math:`\int e^{-x^2/(2 \cdot 0.5^2)}\,dx = 0.5\sqrt{2\pi}`:

>>> from typing import NamedTuple
>>> import numpy as np, pytensor.tensor as pt, pymc_anneal as pa
>>> from pymc_anneal.kernels import Info, Kernel, StateField, StepParameter
>>> from pymc_anneal.paths import Path
>>> class BoxState(NamedTuple):
...     position: pt.TensorVariable
...     log_f: pt.TensorVariable  # (N,) log f_beta's two parts, cached
...     log_ratio: pt.TensorVariable
>>> def build_box_kernel(path):
...     path.require("evaluate", "the box kernel")
...     def init(rng, position, params, path_params):
...         point = path.evaluate(position, gradients=False, params=path_params)
...         return rng, BoxState(position, point.log_base, point.log_ratio)
...     def step(rng, state, beta, params, path_params):
...         rng, u = pt.random.uniform(-1, 1, size=state.position.shape, rng=rng,
...                                    return_next_rng=True)
...         proposal = state.position + params["width"] * u
...         point = path.evaluate(proposal, gradients=False, params=path_params)
...         log_accept = pt.minimum(0.0, point.log_base + beta * point.log_ratio
...                                 - state.log_f - beta * state.log_ratio)
...         log_accept = pt.switch(pt.isnan(log_accept), -np.inf, log_accept)
...         rng, v = pt.random.uniform(size=log_accept.shape, rng=rng, return_next_rng=True)
...         accepted = pt.log(v) < log_accept
...         new = BoxState(pt.switch(accepted[:, None], proposal, state.position),
...                        pt.switch(accepted, point.log_base, state.log_f),
...                        pt.switch(accepted, point.log_ratio, state.log_ratio))
...         return rng, new, Info(pt.exp(log_accept), accepted, pt.zeros_like(accepted))
...     return Kernel(
...         name="box", state_type=BoxState,
...         state=(StateField("position"), StateField("log_f", False, "float64"),
...                StateField("log_ratio", False, "float64")),
...         parameters=(StepParameter("width", default=1.0, tuning="acceptance", no_op=0.0),),
...         init=init, step=step, target_acceptance=0.5, structure=("box",))
>>> def log_densities(x):  # base N(0, 1); target exp(-x^2 / (2 * 0.5^2))
...     log_base = -0.5 * x[:, 0] ** 2 - 0.5 * np.log(2 * np.pi)
...     return log_base, -2.0 * x[:, 0] ** 2 - log_base
>>> path = Path(num_dims=1, build_log_densities=log_densities,
...             sample_base=lambda rng, n: rng.standard_normal((n, 1)), name="gaussian")
>>> idata = pa.ais(path, kernel=build_box_kernel, draws=500, chains=2, num_steps=200,
...                random_seed=3, progressbar=False)
>>> est = pa.log_evidence(idata)
>>> exact = np.log(0.5 * np.sqrt(2 * np.pi))
>>> bool(abs(est.log_evidence - exact) < 3 * est.standard_error + 0.02)
True
>>> idata.attrs["kernel"], idata["annealing_stats"]["width"].shape
('box', (2, 200))
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.kernels.base import TUNING_RULES, Info, Kernel, StateField, StepParameter
from pymc_anneal.kernels.gibbs import build_kernel as build_gibbs_kernel
from pymc_anneal.kernels.hmc import build_kernel as build_hmc_kernel
from pymc_anneal.kernels.mala import build_kernel as build_mala_kernel
from pymc_anneal.kernels.metropolis import build_kernel as build_metropolis_kernel
from pymc_anneal.validation import check_choice

KERNELS: dict[str, Callable[..., Kernel]] = {
    "gibbs": build_gibbs_kernel,
    "hais": functools.partial(build_hmc_kernel, persistent_momentum=True),
    "hmc": functools.partial(build_hmc_kernel, persistent_momentum=False),
    "mala": build_mala_kernel,
    "metropolis": build_metropolis_kernel,
}
"""The registry of kernel builders ``(path, **structural_options) -> Kernel`` by name:
``"hais"`` (HMC with persistent momentum, the default for continuous paths), ``"hmc"`` (a
fresh momentum each step), ``"mala"`` (Metropolis-adjusted Langevin), ``"metropolis"``
(random walk) and ``"gibbs"`` (blocked Gibbs, for paths with conditionals such as RBMs)."""


def resolve_kernel(kernel, path, **options) -> Kernel:
    """The :class:`Kernel` for ``path`` from a name in :data:`KERNELS`, a builder, or a kernel.

    ``options`` are structural options for the builder (``None`` values are left out, so
    the builder's defaults apply); an option the builder does not take is an error.
    """
    options = {k: v for k, v in options.items() if v is not None}
    if isinstance(kernel, Kernel):
        if options:
            raise AnnealingError(f"options {sorted(options)} apply to kernels given by name; "
                                 f"the kernel {kernel.name!r} is already built.")
        return kernel
    if isinstance(kernel, str):
        builder = KERNELS[check_choice("kernel", kernel, KERNELS)]
    elif callable(kernel):
        builder = kernel
    else:
        raise AnnealingError(f"kernel must be a name in {sorted(KERNELS)}, a kernel builder "
                             f"or a Kernel, got {type(kernel).__name__}.")
    accepted = [name for name, p in list(inspect.signature(builder).parameters.items())[1:]
                if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
                and not (isinstance(builder, functools.partial) and name in builder.keywords)]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        name = kernel if isinstance(kernel, str) else getattr(kernel, "__name__", "kernel")
        raise AnnealingError(f"the {name!r} kernel takes no option(s) {unknown}; it takes "
                             f"{accepted or 'none'}.")
    built = builder(path, **options)
    if not isinstance(built, Kernel):
        raise AnnealingError(f"a kernel builder must return a pymc_anneal.kernels.Kernel, "
                             f"got {type(built).__name__}.")
    return built


__all__ = ["KERNELS", "TUNING_RULES", "Info", "Kernel", "StateField", "StepParameter",
           "build_gibbs_kernel", "build_hmc_kernel", "build_mala_kernel",
           "build_metropolis_kernel", "resolve_kernel"]
