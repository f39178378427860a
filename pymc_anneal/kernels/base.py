"""Common kernel types."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from pytensor.tensor.variable import TensorVariable


class Info(NamedTuple):
    """Per-particle diagnostics of one transition."""

    acceptance_rate: TensorVariable  # (N,) Metropolis acceptance probability min(1, exp(dH))
    is_accepted: TensorVariable  # (N,) bool
    is_divergent: TensorVariable  # (N,) bool: non-finite or exploding energy


@dataclass(frozen=True)
class Kernel:
    """A transition kernel built for one path.

    ``init(position, point, momentum)`` builds the initial state from a
    :class:`~pymc_anneal.paths.PathPoint` at ``position``; ``step(rng, state, beta, params)``
    returns ``(next_rng, new_state, info)``. ``needs_gradients`` and ``has_momentum`` tell
    the driver what to prepare.
    """

    name: str
    init: Callable[..., Any]
    step: Callable[..., tuple[Any, Any, Info]]
    state_type: type
    needs_gradients: bool
    has_momentum: bool
    target_acceptance: float
    structure: tuple  # hashable: everything that changes the graph's structure
