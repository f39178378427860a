"""The kernel contract: what a transition declares, and what the driver may assume of it.

See the :mod:`pymc_anneal.kernels` package docstring for the whole contract and an example.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable

from pymc_anneal.exceptions import AnnealingError

__all__ = ["TUNING_RULES", "Info", "Kernel", "StateField", "StepParameter", "metropolis_accept",
           "select"]


class Info(NamedTuple):
    """Per-particle diagnostics of one transition."""

    acceptance_rate: TensorVariable  # (N,) Metropolis acceptance probability min(1, exp(dH))
    is_accepted: TensorVariable  # (N,) bool
    is_divergent: TensorVariable  # (N,) bool: non-finite or exploding energy
    extra: tuple = ()  # (N,) each: the kernel's own statistics, named by Kernel.statistics


class StateField(NamedTuple):
    """One field of a kernel's per-particle state.

    Parameters
    ----------
    name : str
        The field's name in the kernel's state NamedTuple.
    per_dimension : bool, default True
        Shape ``(N, num_dims)`` (a position, a momentum, a gradient) if True, else ``(N,)``
        (a cached log density).
    dtype : str, optional
        ``None`` (default): the path's dtype, as for the position; else a fixed dtype such as
        ``"float64"`` for cached log densities.
    """

    name: str
    per_dimension: bool = True
    dtype: str | None = None


TUNING_RULES = ("acceptance", "variance")
"""How the pilot may tune a :class:`StepParameter`: ``"acceptance"`` searches a scalar
(a step size) per temperature band until the kernel's acceptance rate is near its target;
``"variance"`` sets a per-dimension parameter (a diagonal inverse mass matrix) to the pilot
particles' weighted variances in each band (or as ``mass_matrix`` says)."""


class StepParameter(NamedTuple):
    """A numeric parameter of a kernel's transition, with one value per temperature.

    The driver builds an array of values over the steps of the schedule (shape ``(K,)``, or
    ``(K, num_dims)`` when ``per_dimension``), passes it through the compiled loop and hands
    the kernel the current step's value under ``name``; it knows nothing else about it.

    Parameters
    ----------
    name : str
    per_dimension : bool, default False
    default : float or callable, default 1.0
        The value where nothing tunes or fixes it, and the pilot's starting value; a callable
        receives ``num_dims`` (e.g. a step size of ``0.5 * num_dims**-0.25``).
    tuning : {"acceptance", "variance"} or None
        How the pilot tunes it (:data:`TUNING_RULES`); ``None``: never tuned.
    derive : callable, optional
        ``(arrays) -> array``: the parameter is a function of the others, recomputed from
        their per-step arrays (a dict, in the order the steps run) whenever those change,
        unless the user fixes it. E.g. a momentum refresh from the step size.
    no_op : float, optional
        A value which, with ``delta_beta = 0`` and every other ``no_op``, makes the
        transition leave the state unchanged (JAX pads a short chunk with such steps).
        ``None``: repeat the last step's value.
    """

    name: str
    per_dimension: bool = False
    default: float | Callable[[int], float] = 1.0
    tuning: str | None = None
    derive: Callable[[dict[str, np.ndarray]], np.ndarray] | None = None
    no_op: float | None = None

    def initial(self, num_dims: int) -> np.ndarray:
        """The default value as an array of one step's shape."""
        value = self.default(num_dims) if callable(self.default) else self.default
        shape = (num_dims,) if self.per_dimension else ()
        return np.broadcast_to(np.asarray(value, dtype=np.float64), shape).copy()


@dataclass(frozen=True)
class Kernel:
    """A transition kernel built for one path; see :mod:`pymc_anneal.kernels`.

    Parameters
    ----------
    name : str
        Shown in results.
    state_type : type
        The NamedTuple of the state; its fields are described by ``state``.
    state : tuple of StateField
        Shapes and dtypes of the state's fields, in ``state_type`` order.
    parameters : tuple of StepParameter
        The per-step numeric parameters ``step`` reads.
    init : callable
        ``(rng, position, params, path_params) -> (rng, state)``: the state at a batch of
        positions (an auxiliary variable such as a momentum is drawn here, from its
        distribution under ``params``, the first step's parameters).
    step : callable
        ``(rng, state, beta, params, path_params) -> (rng, state, info)``: one transition
        leaving :math:`p_\\beta` invariant; ``info`` is an :class:`Info`.
    target_acceptance : float
        The acceptance rate the pilot aims at when it tunes an ``"acceptance"`` parameter.
    structure : tuple
        Hashable; everything that changes the graph's structure (it keys compiled loops).
    statistics : tuple of str, optional
        Names of the kernel's own per-step statistics, returned per particle in
        ``info.extra`` (in this order); the driver records their mean per chain and step
        next to ``acceptance_rate``.
    """

    name: str
    state_type: type
    state: tuple[StateField, ...]
    parameters: tuple[StepParameter, ...]
    init: Callable[..., Any]
    step: Callable[..., tuple[Any, Any, Info]]
    target_acceptance: float
    structure: tuple
    statistics: tuple[str, ...] = ()

    def __post_init__(self):
        names = tuple(f.name for f in self.state)
        if names != tuple(self.state_type._fields):
            raise AnnealingError(f"kernel {self.name!r}: state fields {names} do not match its "
                                 f"state type's fields {self.state_type._fields}.")
        if not names or names[0] != "position":
            raise AnnealingError(f"kernel {self.name!r}: the first state field must be "
                                 f"'position', got {names[:1]}.")
        for p in self.parameters:
            if p.tuning not in (None, *TUNING_RULES):
                raise AnnealingError(f"kernel {self.name!r}: parameter {p.name!r} has tuning "
                                     f"{p.tuning!r}; must be None or one of {list(TUNING_RULES)}.")
        if sum(p.tuning == "acceptance" for p in self.parameters) > 1:
            raise AnnealingError(f"kernel {self.name!r}: at most one parameter can be tuned "
                                 "to the acceptance rate.")

    @property
    def parameter_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)


def metropolis_accept(rng, log_f_old, log_f_new, delta, size, invalid=None):
    r"""The Metropolis test of a batch of proposals: accept with probability
    :math:`\min(1, e^{\Delta})`.

    A proposal whose log density is not finite, whose :math:`\Delta` is NaN, or that is
    ``invalid`` (e.g. an exploding energy) is rejected, and flagged divergent when the
    current state was finite. One uniform per particle is drawn from ``rng``.

    Parameters
    ----------
    rng : random generator variable
    log_f_old, log_f_new : TensorVariable (N,)
        :math:`\log f_\beta` at the current states and at the proposals.
    delta : TensorVariable (N,)
        The log acceptance ratio :math:`\Delta` (with any kinetic energy or proposal
        correction).
    size : tuple
        The uniforms' shape, ``(N,)``.
    invalid : TensorVariable (N,) of bool, optional
        Further proposals to reject.

    Returns
    -------
    ``(rng, accepted, info)``: the next generator, the (N,) booleans and the :class:`Info`.
    """
    bad = ~pt.isfinite(log_f_new) | pt.isnan(delta)
    if invalid is not None:
        bad = bad | invalid
    log_accept = pt.switch(bad, -np.inf, pt.minimum(delta, 0.0))
    rng, uniform = pt.random.uniform(size=size, rng=rng, return_next_rng=True)
    accepted = pt.log(uniform) < log_accept
    return rng, accepted, Info(pt.exp(log_accept), accepted, bad & pt.isfinite(log_f_old))


def select(accepted, proposed, current):
    """Field by field, ``proposed`` where ``accepted`` (N,) else ``current``: two NamedTuples
    (or tuples) of per-particle values, ``(N,)`` or ``(N, d)``."""
    keep = accepted[:, None]
    values = [pt.switch(keep if new.ndim == 2 else accepted, new, old)
              for new, old in zip(proposed, current)]
    return current._make(values) if hasattr(current, "_make") else tuple(values)
