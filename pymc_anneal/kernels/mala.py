r"""Metropolis-adjusted Langevin (MALA) for annealing.

At inverse temperature :math:`\beta`, with :math:`g = \nabla \log f_\beta`, step size
:math:`\epsilon` and diagonal inverse mass :math:`M^{-1}`, propose

.. math:: x' = x + \tfrac{\epsilon^2}{2} M^{-1} g(x) + \epsilon \sqrt{M^{-1}} \odot z,
          \qquad z \sim \mathcal N(0, I),

and accept with probability :math:`\min\{1, f_\beta(x')\, q(x \mid x') / f_\beta(x)\,
q(x' \mid x)\}`, where :math:`q(\cdot \mid x) = \mathcal N(x + \tfrac{\epsilon^2}{2} M^{-1}
g(x), \epsilon^2 M^{-1})`. This is HMC with one leapfrog step and a fresh momentum, written
as a proposal density; it leaves :math:`p_\beta` invariant for every :math:`\epsilon`
(Roberts & Tweedie 1996). Non-finite proposals are rejected and flagged divergent. With
:math:`\epsilon = 0` a transition is the identity.

References
----------
Roberts, G. O. & Tweedie, R. L. (1996). Exponential convergence of Langevin distributions
and their discrete approximations. *Bernoulli* 2(4), 341-363.
"""

from __future__ import annotations

from typing import NamedTuple

import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable

from pymc_anneal.kernels.base import Kernel, StateField, StepParameter, metropolis_accept, select
from pymc_anneal.paths import Path

__all__ = ["MALAState", "build_kernel"]


class MALAState(NamedTuple):
    position: TensorVariable  # (N, d)
    log_base: TensorVariable  # (N,)
    log_ratio: TensorVariable  # (N,)
    grad_log_base: TensorVariable  # (N, d)
    grad_log_ratio: TensorVariable  # (N, d)


PARAMETERS = (
    StepParameter("step_size", default=lambda d: 0.5 * d**-0.25, tuning="acceptance", no_op=0.0),
    StepParameter("inv_mass", per_dimension=True, default=1.0, tuning="variance"),
)


def build_kernel(path: Path) -> Kernel:
    """Build a MALA transition for ``path`` (which must provide gradients)."""
    path.require("evaluate", "kernel 'mala'")

    def init(rng, position, params, path_params):
        p = path.evaluate(position, params=path_params)
        return rng, MALAState(position, p.log_base, p.log_ratio, p.grad_log_base, p.grad_log_ratio)

    def log_proposal(to, frm, grad, step_size, inv_mass):
        # log q(to | frm) up to a constant shared by both directions
        resid = to - frm - 0.5 * step_size**2 * inv_mass * grad
        return -0.5 * (resid**2 / inv_mass).sum(axis=-1) / step_size**2

    def step(rng, state: MALAState, beta, params, path_params):
        step_size, inv_mass = params["step_size"], params["inv_mass"]
        grad = state.grad_log_base + beta * state.grad_log_ratio
        rng, noise = pt.random.normal(size=state.position.shape, rng=rng, return_next_rng=True)
        proposal = (state.position + 0.5 * step_size**2 * inv_mass * grad
                    + step_size * pt.sqrt(inv_mass) * noise)
        point = path.evaluate(proposal, params=path_params)
        grad_new = point.grad_log_base + beta * point.grad_log_ratio
        log_f_old = state.log_base + beta * state.log_ratio
        log_f_new = point.log_base + beta * point.log_ratio
        moving = step_size > 0  # a zero step is the identity (and 0/0 in the densities)
        correction = pt.switch(
            moving,
            log_proposal(state.position, proposal, grad_new, step_size, inv_mass)
            + 0.5 * (noise**2).sum(axis=-1),
            0.0,
        )
        invalid = ~pt.all(pt.isfinite(grad_new), axis=-1)
        rng, accepted, info = metropolis_accept(rng, log_f_old, log_f_new,
                                                log_f_new - log_f_old + correction,
                                                state.position.shape[:1], invalid)
        proposed = MALAState(proposal, point.log_base, point.log_ratio, point.grad_log_base,
                             point.grad_log_ratio)
        return rng, select(accepted, proposed, state), info

    return Kernel(
        name="mala",
        state_type=MALAState,
        state=(StateField("position"), StateField("log_base", False, "float64"),
               StateField("log_ratio", False, "float64"),
               StateField("grad_log_base", dtype="float64"),
               StateField("grad_log_ratio", dtype="float64")),
        parameters=PARAMETERS,
        init=init,
        step=step,
        target_acceptance=0.57,
        structure=("mala",),
    )
