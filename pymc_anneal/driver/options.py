"""How a run anneals: one validated options object for every entry point.

Every entry point (:func:`pymc_anneal.sample_ais`, :func:`pymc_anneal.ais`,
:func:`pymc_anneal.batched_ais`, :func:`pymc_anneal.reverse_ais`, :func:`pymc_anneal.bdmc`)
takes the same run arguments as flat keywords, as :func:`pymc.sample_smc` does (``kernel``,
``backend``, ``progressbar``, ``step_size``, ...). :func:`run_options` checks them once and
returns a :class:`RunOptions`, which is what :func:`~pymc_anneal.driver.run_annealing`
takes. An entry point is then its own policy (which path, which schedule, which result)
and one call.

Why not tuning on the kernel, as NumPyro does (``NUTS(step_size=...)``)? Here one kernel
object serves every temperature, and its parameters are per-step arrays that the driver's
pilot chooses band by band (:mod:`pymc_anneal.driver.tuning`); a kernel is a declaration of
its parameters and state, and knows nothing of how they are tuned. So tuning belongs to
the run, with the kernel's name and its build options beside it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pymc_anneal.driver.tuning import TuningOptions
from pymc_anneal.kernels import KERNELS
from pymc_anneal.validation import check_backend, check_choice, check_tuning

__all__ = ["RUN_ARGUMENTS", "RunOptions", "run_options", "run_options_from"]


@dataclass(frozen=True)
class RunOptions:
    """How :func:`~pymc_anneal.driver.run_annealing` anneals (build with :func:`run_options`
    from user arguments; the fields are already checked).

    Parameters
    ----------
    kernel : str, Kernel or callable, optional
        A name in :data:`pymc_anneal.kernels.KERNELS`, a kernel built for the path, or a
        kernel builder; ``None`` is the path's ``default_kernel``.
    kernel_options : mapping
        Keyword arguments of the kernel's builder (e.g. ``num_leapfrog_steps``).
    backend : str
        A resolved backend name (``"jax"``, ``"numba"`` or ``"c"``), or ``"auto"``.
    tuning : TuningOptions
        How per-step kernel parameters are chosen.
    progressbar : bool
    """

    kernel: Any = None
    kernel_options: Mapping[str, Any] = field(default_factory=dict)
    backend: str = "auto"
    tuning: TuningOptions = field(default_factory=TuningOptions)
    progressbar: bool = True

    def replace(self, **changes) -> RunOptions:
        """A copy with ``changes`` (fields by name; ``tuning`` fields are a
        :class:`TuningOptions` of their own: ``replace(tuning=dataclasses.replace(...))``)."""
        return dataclasses.replace(self, **changes)


def run_options(*, kernel=None, backend: str = "auto", progressbar: bool = True,
                num_leapfrog_steps: int | None = None, step_size=None, momentum_refresh=None,
                mass_matrix: str = "adapt", num_tuning_bands: int = 8, num_pilot: int = 250,
                target_acceptance=None, schedule=None) -> RunOptions:
    """The entry points' run arguments, checked, as a :class:`RunOptions`.

    ``kernel`` (a name is checked against :data:`pymc_anneal.kernels.KERNELS`; a kernel
    object or builder passes as it is; ``None``: the path's default), ``backend`` (checked
    and ``"auto"`` resolved), ``num_leapfrog_steps`` (a kernel option, ``None``: the kernel's
    default), and the tuning arguments of :func:`pymc_anneal.validation.check_tuning`
    (``schedule="adaptive"`` turns on the re-spacing of the schedule from the pilot).
    """
    if isinstance(kernel, str):
        kernel = check_choice("kernel", kernel, KERNELS)
    tuning = TuningOptions(**check_tuning(
        step_size=step_size, momentum_refresh=momentum_refresh, mass_matrix=mass_matrix,
        num_tuning_bands=num_tuning_bands, num_pilot=num_pilot,
        target_acceptance=target_acceptance, schedule=schedule))
    return RunOptions(kernel=kernel, kernel_options={"num_leapfrog_steps": num_leapfrog_steps},
                      backend=check_backend(backend), tuning=tuning,
                      progressbar=progressbar)


RUN_ARGUMENTS = ("kernel", "backend", "progressbar", "num_leapfrog_steps", "step_size",
                 "momentum_refresh", "mass_matrix", "num_tuning_bands", "num_pilot",
                 "target_acceptance", "schedule")
"""The entry points' keyword arguments that :func:`run_options` reads."""


def run_options_from(arguments: Mapping[str, Any]) -> RunOptions:
    """:func:`run_options` of an entry point's arguments, e.g. its ``locals()`` at the top:
    the names in :data:`RUN_ARGUMENTS` that ``arguments`` has are read, the rest ignored,
    so every entry point forwards its run arguments in one line."""
    return run_options(**{name: arguments[name] for name in RUN_ARGUMENTS if name in arguments})
