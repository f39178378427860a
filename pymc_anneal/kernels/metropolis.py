r"""Random-walk Metropolis for annealing (the HAIS paper's first baseline).

Proposal :math:`x' = x + \epsilon\, \sqrt{M^{-1}} \odot z`, :math:`z \sim \mathcal N(0, I)`,
accepted with probability :math:`\min(1, f_\beta(x') / f_\beta(x))`. Non-finite proposals
are rejected. Needs no gradients.
"""

from __future__ import annotations

from typing import NamedTuple

import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable

from pymc_anneal.kernels.base import Kernel, StateField, StepParameter, metropolis_accept, select
from pymc_anneal.paths import Path

__all__ = ["MetropolisState", "build_kernel"]


class MetropolisState(NamedTuple):
    position: TensorVariable  # (N, d)
    log_base: TensorVariable  # (N,)
    log_ratio: TensorVariable  # (N,)


PARAMETERS = (
    StepParameter("step_size", default=lambda d: d**-0.25, tuning="acceptance", no_op=0.0),
    StepParameter("inv_mass", per_dimension=True, default=1.0, tuning="variance"),
)


def build_kernel(path: Path) -> Kernel:
    """Build a random-walk Metropolis transition for ``path``."""
    path.require("evaluate", "kernel 'metropolis'")

    def init(rng, position, params, path_params):
        point = path.evaluate(position, gradients=False, params=path_params)
        return rng, MetropolisState(position, point.log_base, point.log_ratio)

    def step(rng, state: MetropolisState, beta, params, path_params):
        rng, noise = pt.random.normal(size=state.position.shape, rng=rng, return_next_rng=True)
        proposal = state.position + params["step_size"] * pt.sqrt(params["inv_mass"]) * noise
        point = path.evaluate(proposal, gradients=False, params=path_params)
        log_f_old = state.log_base + beta * state.log_ratio
        log_f_new = point.log_base + beta * point.log_ratio
        rng, accepted, info = metropolis_accept(rng, log_f_old, log_f_new, log_f_new - log_f_old,
                                                state.position.shape[:1])
        proposed = MetropolisState(proposal, point.log_base, point.log_ratio)
        return rng, select(accepted, proposed, state), info

    return Kernel(
        name="metropolis",
        state_type=MetropolisState,
        state=(StateField("position"), StateField("log_base", False, "float64"),
               StateField("log_ratio", False, "float64")),
        parameters=PARAMETERS,
        init=init,
        step=step,
        target_acceptance=0.3,
        structure=("metropolis",),
    )
