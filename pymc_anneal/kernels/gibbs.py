r"""Blocked Gibbs transitions for paths with tractable conditionals (RBMs).

One transition at inverse temperature :math:`\beta` is one sweep of the path's conditionals,
e.g. :math:`h \sim p_\beta(h \mid v)` then :math:`v \sim p_\beta(v \mid h)` for an RBM
(Salakhutdinov & Murray 2008). Each conditional leaves :math:`p_\beta` invariant, so the
sweep does; there is no rejection and nothing to tune. The state is the annealed vector
only: hidden and auxiliary units are drawn afresh from their conditionals in every sweep.

References
----------
Salakhutdinov, R. & Murray, I. (2008). On the quantitative analysis of deep belief
networks. *ICML*.
"""

from __future__ import annotations

from typing import NamedTuple

import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable

from pymc_anneal.kernels.base import Info, Kernel, StateField
from pymc_anneal.paths import GibbsPath

__all__ = ["GibbsState", "build_kernel"]


class GibbsState(NamedTuple):
    position: TensorVariable  # (N, d)


def build_kernel(path: GibbsPath) -> Kernel:
    """Build a blocked-Gibbs transition for a path with conditionals (a :class:`GibbsPath`)."""
    path.require("gibbs_sweep", "kernel 'gibbs'")

    def init(rng, position, params, path_params):
        return rng, GibbsState(position)

    def step(rng, state: GibbsState, beta, params, path_params):
        rng, position = path.gibbs_sweep(rng, state.position, beta, path_params)
        size = position.shape[:1]
        info = Info(pt.ones(size, dtype="float64"), pt.ones(size, dtype="bool"),
                    pt.zeros(size, dtype="bool"))
        return rng, GibbsState(position), info

    return Kernel(
        name="gibbs",
        state_type=GibbsState,
        state=(StateField("position"),),
        parameters=(),
        init=init,
        step=step,
        target_acceptance=1.0,
        structure=("gibbs",),
    )
