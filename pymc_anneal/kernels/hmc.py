r"""Hamiltonian Monte Carlo for annealing, with persistent momentum (HAIS) or full refresh.

One transition at inverse temperature :math:`\beta` (Sohl-Dickstein & Culpepper 2012, §2.2):

1. ``L`` leapfrog steps of size :math:`\epsilon` on :math:`E_\beta = -\log f_\beta` with
   mass :math:`M` (diagonal, given as ``inv_mass`` :math:`= M^{-1}`);
2. Metropolis accept with :math:`H = E_\beta(x) + \tfrac12 v^\top M^{-1} v`; on accept
   :math:`(x, v) \leftarrow (x', -v')`, on reject keep :math:`(x, v)`. Non-finite or
   exploding energies (:math:`\Delta H < -1000`) are rejected and flagged divergent;
3. partial momentum refresh :math:`v \leftarrow -\left(\sqrt{1-\gamma}\, v\right) + \sqrt{\gamma}\, r`,
   :math:`r \sim \mathcal N(0, M)`.

The paper prints :math:`\gamma r` in step 3; only :math:`\sqrt\gamma\, r` keeps
:math:`\mathcal N(0, M)` invariant (the two terms' variances must add to one). The double
negation makes accepted moves keep their direction and rejections reverse. The default
:math:`\gamma` randomizes half the momentum power per unit simulation time,
:math:`(1-\gamma)^{1/\epsilon} = 1/2`, i.e. :math:`\gamma = 1 - 2^{-\epsilon}`.
With ``persistent_momentum=False`` (:math:`\gamma = 1`) this is ordinary HMC with fresh
momentum at each step.

Before the transition the momentum is multiplied by ``momentum_scale``
:math:`= \sqrt{M^{-1}_{\rm prev} / M^{-1}}`: when the mass matrix changes between
temperature bands this pushes :math:`\mathcal N(0, M_{\rm prev})` forward onto
:math:`\mathcal N(0, M)` exactly, so the momentum terms of the AIS weight cancel (with a
constant mass matrix the scale is 1).

References
----------
Sohl-Dickstein, J. & Culpepper, B. J. (2012). Hamiltonian annealed importance sampling for
partition function estimation. arXiv:1205.1925.
Neal, R. M. (2011). MCMC using Hamiltonian dynamics. *Handbook of MCMC*.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable

from pymc_anneal.kernels.base import Kernel, StateField, StepParameter, metropolis_accept, select
from pymc_anneal.kernels.integrators import leapfrog
from pymc_anneal.paths import Path
from pymc_anneal.validation import check_count

__all__ = ["INV_MASS", "MOMENTUM_PARAMETERS", "MOMENTUM_SCALE", "REFRESH", "STEP_SIZE",
           "HMCState", "build_kernel", "default_refresh", "draw_momentum", "momentum_mask"]

MAX_ENERGY_ERROR = 1000.0


class HMCState(NamedTuple):
    """Per-particle HMC state; log densities and gradients are cached, never recomputed."""

    position: TensorVariable  # (N, d)
    momentum: TensorVariable  # (N, d)
    log_base: TensorVariable  # (N,)
    log_ratio: TensorVariable  # (N,)
    grad_log_base: TensorVariable  # (N, d)
    grad_log_ratio: TensorVariable  # (N, d)


HMC_STATE = (StateField("position"), StateField("momentum", dtype="float64"),
             StateField("log_base", False, "float64"), StateField("log_ratio", False, "float64"),
             StateField("grad_log_base", dtype="float64"),
             StateField("grad_log_ratio", dtype="float64"))


def default_refresh(step_size):
    """Refresh fraction that randomizes half the momentum power per unit time: 1 - 2**-eps."""
    return 1.0 - np.power(0.5, step_size)


def _momentum_scale(arrays):
    inv_mass = arrays["inv_mass"]
    previous = np.concatenate([inv_mass[:1], inv_mass[:-1]])
    return np.sqrt(previous / inv_mass)


STEP_SIZE = StepParameter("step_size", default=lambda d: 0.5 * d**-0.25, tuning="acceptance",
                          no_op=0.0)
"""The leapfrog step size, tuned by the pilot to the target acceptance rate."""
INV_MASS = StepParameter("inv_mass", per_dimension=True, default=1.0, tuning="variance")
"""The diagonal inverse mass matrix, set by the pilot from the particles' variances."""
REFRESH = StepParameter("refresh", default=0.0,
                        derive=lambda a: default_refresh(a[STEP_SIZE.name]), no_op=0.0)
"""The momentum refresh fraction, by default :func:`default_refresh` of the step size."""
MOMENTUM_SCALE = StepParameter("momentum_scale", per_dimension=True, derive=_momentum_scale,
                               no_op=1.0)
"""sqrt(previous inv_mass / inv_mass): 1 within a temperature band."""
MOMENTUM_PARAMETERS = (STEP_SIZE, REFRESH, INV_MASS, MOMENTUM_SCALE)
"""HAIS's parameters: the momentum refresh fraction follows the step size, and
``momentum_scale`` = sqrt(previous inv_mass / inv_mass) follows the mass matrix."""


def draw_momentum(rng, position, inv_mass, mask=None):
    """``(rng, v)`` with ``v ~ N(0, M)``, ``M = diag(1 / inv_mass)``, shaped like ``position``;
    zero where ``mask`` (a 0/1 array over the coordinates) is 0."""
    rng, noise = pt.random.normal(size=position.shape, rng=rng, return_next_rng=True)
    momentum = noise / pt.sqrt(inv_mass)
    return rng, momentum if mask is None else momentum * mask


def momentum_mask(path: Path):
    """0 on the path's ``discrete_dims`` (integer coordinates, which HMC must not move), 1
    elsewhere; ``None`` when the path has no such coordinates. The leapfrog and the kinetic
    energy use ``inv_mass * mask``, so those coordinates never move and their momenta
    (drawn as 0) never count."""
    dims = tuple(getattr(path, "discrete_dims", ()))
    if not dims:
        return None
    mask = np.ones(path.num_dims)
    mask[list(dims)] = 0.0
    return pt.as_tensor(mask)


def build_kernel(
    path: Path, persistent_momentum: bool = True, num_leapfrog_steps: int = 1
) -> Kernel:
    """Build an HMC transition for ``path``.

    Parameters
    ----------
    path : Path
    persistent_momentum : bool, default True
        Keep the momentum across transitions with partial refresh (HAIS). ``False`` draws a
        fresh momentum at every transition (gamma = 1: no ``refresh`` parameter).
    num_leapfrog_steps : int, default 1
        Leapfrog steps per transition (L; 1 in the HAIS paper).
    """
    num_leapfrog_steps = check_count("num_leapfrog_steps", num_leapfrog_steps, 1)
    path.require("evaluate", "kernel 'hais'" if persistent_momentum else "kernel 'hmc'")
    mask = momentum_mask(path)

    def init(rng, position, params, path_params):
        point = path.evaluate(position, params=path_params)
        rng, momentum = draw_momentum(rng, position, params["inv_mass"], mask)
        return rng, HMCState(position, momentum, point.log_base, point.log_ratio,
                             point.grad_log_base, point.grad_log_ratio)

    def kinetic(momentum, inv_mass):
        return 0.5 * (inv_mass * momentum**2).sum(axis=-1)

    def step(rng, state: HMCState, beta, params, path_params):
        step_size, inv_mass = params["step_size"], params["inv_mass"]
        moving = inv_mass if mask is None else inv_mass * mask  # masked: never moved
        if persistent_momentum:
            momentum = state.momentum * params["momentum_scale"]
        else:
            rng, momentum = draw_momentum(rng, state.position, inv_mass, mask)
        grad = state.grad_log_base + beta * state.grad_log_ratio
        new_position, new_momentum, point = leapfrog(
            path, state.position, momentum, grad, beta, step_size, moving, num_leapfrog_steps,
            params=path_params,
        )
        log_f_old = state.log_base + beta * state.log_ratio
        log_f_new = point.log_base + beta * point.log_ratio
        delta = (log_f_new - kinetic(new_momentum, moving)) - (log_f_old - kinetic(momentum, moving))
        rng, accepted, info = metropolis_accept(rng, log_f_old, log_f_new, delta,
                                                state.position.shape[:1],
                                                delta < -MAX_ENERGY_ERROR)
        proposed = HMCState(new_position, -new_momentum, point.log_base, point.log_ratio,
                            point.grad_log_base, point.grad_log_ratio)
        new_state = select(accepted, proposed, state._replace(momentum=momentum))
        if persistent_momentum:
            refresh = params["refresh"]
            rng, noise = pt.random.normal(size=momentum.shape, rng=rng, return_next_rng=True)
            noise = noise if mask is None else noise * mask
            refreshed = -(pt.sqrt(1.0 - refresh) * new_state.momentum) + pt.sqrt(refresh) * noise / pt.sqrt(inv_mass)
            new_state = new_state._replace(momentum=refreshed)
        return rng, new_state, info

    name = "hais" if persistent_momentum else "hmc"
    return Kernel(
        name=name,
        state_type=HMCState,
        state=HMC_STATE,
        parameters=MOMENTUM_PARAMETERS if persistent_momentum else (STEP_SIZE, INV_MASS),
        init=init,
        step=step,
        target_acceptance=0.8 if persistent_momentum else 0.65,
        structure=(name, num_leapfrog_steps) + ((("frozen", path.discrete_dims),) if mask is not None
                                                 else ()),
    )
