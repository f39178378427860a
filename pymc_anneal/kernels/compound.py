r"""HMC on the continuous coordinates, then Metropolis on each integer coordinate.

For a path whose ``discrete_dims`` live on the integers (a PyMC model's discrete variables
that are annealed rather than summed out, such as a Poisson count). One transition at
inverse temperature :math:`\beta`:

1. the inner HMC kernel (``"hais"`` or ``"hmc"``) moves the continuous coordinates; it gives
   the integer coordinates no momentum, and their gradient is zero, so they stay put;
2. each integer coordinate :math:`j` in turn: on a small finite support (the path's
   ``discrete_supports``, at most :data:`MAX_GIBBS_SUPPORT` values) it is drawn from its
   exact tempered conditional :math:`f_\beta(z_j \mid \cdot)` (Gibbs; one evaluation per
   value); otherwise it proposes :math:`z_j' = z_j \pm k`, with the sign uniform and
   :math:`k` uniform on :math:`\{1, \dots, w_j\}` (a symmetric proposal), accepted with
   probability :math:`\min(1, f_\beta(z') / f_\beta(z))`. Values outside the support have
   :math:`\log f = -\infty` and are rejected. :math:`w_j` is the rounded prior standard
   deviation of the coordinate (at least 1), so a count of prior scale 30 moves in steps of
   up to 30;
3. the cached log densities and gradients are recomputed at the new position (the inner
   kernel's persistent momentum is kept).

Each part leaves :math:`f_\beta` invariant, so the composition does, and the AIS weights are
the usual :math:`(\beta_k - \beta_{k-1}) \log L` at the current state: the *annealed* route of
the design notes, which tempers the likelihood given the discrete values,
:math:`\log f_\beta(\theta, z) = \log p(\theta, z) + \beta \log p(y \mid \theta, z)`.

Cost: one evaluation of the log density per integer coordinate per step (one per value of
its support for a Gibbs draw), plus one with gradients. The ``acceptance_rate`` in the
results (and what the pilot tunes the step size to) is the continuous kernel's; each
integer coordinate has a statistic of its own (:data:`STATISTIC_PREFIX`): the Metropolis
acceptance probability, or for a Gibbs draw (always accepted) the probability of leaving
the current value, :math:`1 - f_\beta(z_j \mid \cdot)` at the current :math:`z_j`.
"""

from __future__ import annotations

import functools

import numpy as np
import pytensor.tensor as pt

from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.kernels.base import Kernel, StepParameter, metropolis_accept, select
from pymc_anneal.paths import Path

__all__ = ["INNER_KERNELS", "MAX_GIBBS_SUPPORT", "STATISTIC_PREFIX", "build_kernel",
           "proposal_widths"]

INNER_KERNELS = ("hais", "hmc")
"""The continuous kernels the compound kernel can wrap (they honour ``discrete_dims``)."""

STATISTIC_PREFIX = "discrete_acceptance_"
"""The kernel's statistics: for integer coordinate j, ``discrete_acceptance_{j}``, its
Metropolis acceptance probability, or for a Gibbs draw the probability of leaving the
current value, averaged over each chain's particles at each step."""

MAX_GIBBS_SUPPORT = 32
"""Integer coordinates with at most this many values are drawn from their exact tempered
conditional (one evaluation per value); larger ones move by Metropolis."""

MOVES = StepParameter("discrete_moves", default=1.0, no_op=0.0)
"""1: propose integer moves; 0 (JAX's padding steps): propose none, leaving the state as is."""


def _tempered(log_base, log_ratio, beta):
    """log f_beta with 0 * (-inf) = 0: at beta = 0 a zero likelihood does not matter."""
    return log_base + pt.switch(pt.gt(beta, 0), beta * log_ratio, 0.0)


def proposal_widths(path: Path) -> np.ndarray:
    """Largest jump of each integer coordinate: its prior standard deviation, rounded, at
    least 1 (from the path's ``base_scale``)."""
    dims = list(path.discrete_dims)
    scale = np.ones(path.num_dims) if path.base_scale is None else np.asarray(path.base_scale)
    return np.maximum(1, np.round(scale[dims])).astype(int)


def _gibbs_move(path, rng, position, log_base, log_ratio, j, support, beta, params,
                path_params, n):
    """Draw coordinate j from f_beta over its support (Gumbel-max over all values); with
    ``discrete_moves`` = 0 the current value is kept. Returns ``(rng, position, log_base,
    log_ratio, leave)``, ``leave`` the probability of leaving the current value."""
    values = np.arange(support[0], support[1] + 1, dtype="float64")
    k = len(values)
    # the k copies of the particles, one per value, stacked value-major; by concatenation,
    # whose number of rows is a sum of the particles' count: ``pt.tile`` reshapes to k * n
    # rows, and PyTensor cannot prove that product different from a reshape's -1, so the
    # shape it infers is a switch, which JAX computes as a traced array and then refuses
    # as a static shape (a crash where the log density broadcasts a parameter computed
    # from the particles, such as a Binomial's p = sigmoid(x))
    stacked = pt.concatenate([pt.set_subtensor(position[:, j], np.asarray(v, position.dtype))
                              for v in values], axis=0)
    point = path.evaluate(stacked, gradients=False, params=path_params)
    base_kn, ratio_kn = point.log_base.reshape((k, n)), point.log_ratio.reshape((k, n))
    logits = _tempered(base_kn, ratio_kn, beta)
    logits = pt.switch(pt.isnan(logits), -np.inf, logits)
    rng, gumbel = pt.random.gumbel(0.0, 1.0, size=(k, n), rng=rng, return_next_rng=True)
    choice = pt.argmax(logits + gumbel, axis=0)
    columns = pt.arange(n)
    moved = pt.gt(params[MOVES.name], 0)
    # the statistic: the probability of leaving the current value, 1 - p(current)
    current = pt.cast(pt.clip(position[:, j] - support[0], 0, k - 1), "int64")
    log_norm = pt.logsumexp(logits, axis=0)
    stay = pt.exp(logits[current, columns] - log_norm)
    # a switch, not a product with the boolean: PyTensor's GEMM rewrite (C backend)
    # fails on a boolean factor ("bool input not supported") and logs the traceback
    leave = pt.switch(pt.isfinite(log_norm) & moved, 1.0 - stay, 0.0)
    new_value = pt.switch(moved, pt.as_tensor(values)[choice], position[:, j])
    position = pt.set_subtensor(position[:, j], new_value)
    log_base = pt.switch(moved, base_kn[choice, columns], log_base)
    log_ratio = pt.switch(moved, ratio_kn[choice, columns], log_ratio)
    return rng, position, log_base, log_ratio, leave


def _metropolis_move(path, rng, position, log_base, log_ratio, j, width, beta, params,
                     path_params, n):
    """Propose coordinate j plus or minus 1..``width`` (times ``discrete_moves``) and accept
    or reject it. Returns ``(rng, position, log_base, log_ratio, acceptance probability)``."""
    rng, size = pt.random.integers(1, int(width) + 1, size=(n,), rng=rng, return_next_rng=True)
    rng, sign = pt.random.integers(0, 2, size=(n,), rng=rng, return_next_rng=True)
    jump = (2 * sign - 1) * size * params[MOVES.name]
    proposal = pt.inc_subtensor(position[:, j], jump.astype(position.dtype))
    point = path.evaluate(proposal, gradients=False, params=path_params)
    log_f_new = _tempered(point.log_base, point.log_ratio, beta)
    log_f_old = _tempered(log_base, log_ratio, beta)
    rng, accepted, info = metropolis_accept(rng, log_f_old, log_f_new, log_f_new - log_f_old,
                                            (n,))
    moved = select(accepted, (proposal, point.log_base, point.log_ratio),
                   (position, log_base, log_ratio))
    return (rng, *moved, info.acceptance_rate)


def build_kernel(path: Path, inner: str = "hais", num_leapfrog_steps: int | None = None) -> Kernel:
    """Build the compound transition for ``path`` around the continuous kernel ``inner``."""
    from pymc_anneal.kernels import KERNELS, resolve_kernel

    dims = tuple(int(j) for j in path.discrete_dims)
    if not dims:
        raise AnnealingError("the 'discrete' kernel is for paths with integer coordinates "
                             "(discrete_dims); this path has none. Use 'hais'.")
    if inner not in INNER_KERNELS:
        raise AnnealingError(f"annealed discrete variables need the continuous kernel to be one "
                             f"of {list(INNER_KERNELS)} (which leave integer coordinates "
                             f"alone), got {inner!r}.")
    path.require("evaluate", "kernel 'discrete'")
    base = resolve_kernel(KERNELS[inner], path, num_leapfrog_steps=num_leapfrog_steps)
    widths = proposal_widths(path)
    supports = tuple(path.discrete_supports) or (None,) * len(dims)
    supports = tuple(None if sp is None or sp[1] - sp[0] + 1 > MAX_GIBBS_SUPPORT
                     else (int(sp[0]), int(sp[1])) for sp in supports)

    def step(rng, state, beta, params, path_params):
        # the number of particles from the state as it comes in: a shape read off a computed
        # position would be a computation that JAX cannot use as a static size
        n = state.position.shape[0]
        rng, state, info = base.step(rng, state, beta, params, path_params)
        position, log_base, log_ratio = state.position, state.log_base, state.log_ratio
        rates = []
        for j, width, support in zip(dims, widths, supports):
            move = (functools.partial(_gibbs_move, path, support=support) if support is not None
                    else functools.partial(_metropolis_move, path, width=width))
            rng, position, log_base, log_ratio, rate = move(
                rng, position, log_base, log_ratio, j, beta=beta, params=params,
                path_params=path_params, n=n)
            rates.append(rate)
        point = path.evaluate(position, params=path_params)
        state = state._replace(position=position, log_base=point.log_base,
                               log_ratio=point.log_ratio, grad_log_base=point.grad_log_base,
                               grad_log_ratio=point.grad_log_ratio)
        return rng, state, info._replace(extra=(*info.extra, *rates))

    return Kernel(
        name=f"{base.name}+discrete",
        state_type=base.state_type,
        state=base.state,
        parameters=(*base.parameters, MOVES),
        init=base.init,
        step=step,
        target_acceptance=base.target_acceptance,
        structure=("discrete", base.structure, dims, tuple(int(w) for w in widths), supports),
        statistics=(*base.statistics, *(f"{STATISTIC_PREFIX}{j}" for j in dims)),
    )
