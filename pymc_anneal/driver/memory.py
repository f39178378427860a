r"""The memory a run needs, estimated before anything is compiled or allocated.

A run of :math:`N` particles (``draws * chains``, with the check chain of
``num_steps="auto"``) in :math:`d` dimensions through :math:`K` steps holds at its peak

.. math:: M \approx F + N \max\bigl(a\,(s + 8),\; b\,8 d\bigr) + K\,(c\,8\,C\,S + 8 P),

where :math:`s` is the kernel's state per particle in bytes (the position, HMC's momentum
and gradients, cached log densities: :func:`kernel_state_bytes`) and 8 the log weight. At
the peak, during the run, the state lives :math:`a` = :data:`STATE_COPIES` times at once
(the chunk call's inputs and outputs, XLA's temporaries of a step, the base draws); after
it, the result builds :math:`b` = :data:`RESULT_COPIES` arrays of :math:`N \times d`
float64 (the final positions in the model's coordinates, the DataTree's ``particles`` and
resampled ``posterior``). The per-step statistics are per chain, never per particle:
:math:`S` of them (:data:`~pymc_anneal.driver.scan.STAT_NAMES` and the kernel's own) for
:math:`C` chains, held :math:`c` = :data:`STEP_COPIES` times (the chunks, their
concatenation, the DataTree), and :math:`P` per-step parameter values (a per-dimension
inverse mass matrix counts :math:`d`). :math:`F` = :data:`FIXED_BYTES` allows for
compiling the loop for the run's shapes.

The constants are measured by ``benchmarks/bench_memory.py`` (2026-11-26, JAX on CPU,
``sample_ais`` on ``d`` independent normals, 40,000 to 800,000 particles, HAIS and
Metropolis, d = 10 and 50): the peak's growth is :math:`F` = 88 MiB plus 4.76 state
copies per particle, within 10 % of the estimate at every size; 400 chains through 20,000
steps hold 2.1 copies of their per-step statistics. What the estimate leaves out is the
model's own intermediates per particle: a log density that broadcasts ``n`` observations
against each particle keeps about ``8 n`` bytes per particle more (measured: 20
observations of 10 normals, 1.45 times the estimate). So the estimate errs low, and only a
run that cannot fit is refused.

:func:`check_memory` refuses, with :class:`~pymc_anneal.exceptions.AnnealingError`, a run
whose estimate exceeds the memory available (Linux: ``MemAvailable`` of ``/proc/meminfo``,
and the cgroup's limit where one is set; elsewhere the physical memory), saying how to split
it into calls that fit, whose results :func:`pymc_anneal.merge` pools exactly; a split is
searched with the whole estimate (the per-step part falls with the chains of a call, not
with its draws), and none is suggested below ``draws=2``. Where no split fits because the
*temperatures* take the memory (:math:`K` times the per-step term, whatever the particles),
the message says so and gives the largest ``num_steps`` that fits instead. The
environment variable :data:`MEMORY_LIMIT_VARIABLE` overrides the available memory (a size
such as ``"64GiB"`` or a byte count), or turns the check off (``"off"``).

:func:`check_num_steps_budget` is the first check of an entry point's ``num_steps``, made
before the schedule is built or anything compiled (``num_steps=10**9`` was refused after
42 s of compiling, as a problem of the particles): it refuses a number of temperatures
whose per-step terms alone, for the fewest particles and the least state any model has,
exceed the available memory, and warns where the run's time has a floor of more than
:data:`LONG_RUN_SECONDS` (:data:`MIN_STEP_SECONDS` per step and
:data:`MIN_PARTICLE_STEP_SECONDS` per particle and step, measured on a 1-d model).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

import numpy as np

from pymc_anneal.exceptions import AnnealingError

__all__ = ["MEMORY_LIMIT_VARIABLE", "available_memory", "check_memory", "check_num_steps_budget",
           "check_run_memory", "estimate_memory", "format_bytes", "kernel_state_bytes",
           "parse_size", "run_memory"]

MEMORY_LIMIT_VARIABLE = "PYMC_ANNEAL_MEMORY_LIMIT"
"""Environment variable: the memory a run may use (``"64GiB"``, ``"5e9"``), or ``"off"``."""
STATE_COPIES = 4.5
"""Copies of the per-particle state (and log weights) alive at the peak of the run
(measured: 4.76)."""
RESULT_COPIES = 3.0
"""Arrays of ``N x d`` float64 alive at the peak of building the result."""
STEP_COPIES = 2.0
"""Copies of the per-step, per-chain statistics alive at once (measured: 2.1)."""
SPLIT_FRACTION = 0.8
"""The share of the available memory that one call of a suggested split may take."""
FIXED_BYTES = 88 * 2**20
"""An allowance for compiling the loop for the run's shapes (measured: 88 MiB)."""
MIN_DRAWS = 2
"""The fewest particles per chain that any entry point accepts (a split never goes below)."""
MIN_STEP_SECONDS = 2e-6
"""A floor on the time of one temperature, whatever the particles: one step of the
compiled loop for 2 particles of a 1-d model took 5 us (Numba) to 8 us (JAX) on a 2-core
CPU (2026-11-27); halved for faster machines."""
MIN_PARTICLE_STEP_SECONDS = 2e-8
"""A floor on the time of one particle through one temperature: 80 ns measured (Numba,
Metropolis, a 1-d model with 3 observations, 20,000 particles, same machine), a quarter
of it here."""
LONG_RUN_SECONDS = 3600.0
"""A fixed ``num_steps`` above ``AUTO_MAX_STEPS`` whose run cannot take less than this
warns before anything is built (:func:`check_num_steps_budget`)."""

_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 10**3, "kib": 2**10, "m": 2**20, "mb": 10**6,
          "mib": 2**20, "g": 2**30, "gb": 10**9, "gib": 2**30, "t": 2**40, "tb": 10**12,
          "tib": 2**40}


def format_bytes(size: float) -> str:
    """``size`` bytes in a readable unit (``"74.5 GiB"``)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024:
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    return f"{size:.1f} TiB"


def parse_size(text: str) -> int:
    """Bytes from a size such as ``"64GiB"``, ``"500 MB"`` or ``"5e9"``."""
    match = re.fullmatch(r"\s*([0-9.]+(?:e[0-9]+)?)\s*([a-z]*)\s*", str(text).lower())
    if match is None or match.group(2) not in _UNITS:
        raise AnnealingError(
            f"{MEMORY_LIMIT_VARIABLE}={text!r} is not a size: give bytes ('5e9') or a number "
            "with a unit (KiB, MiB, GiB, TiB, kB, MB, GB, TB), or 'off' to skip the check.")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def _cgroup_room() -> float:
    """The room left under this process's cgroup (v2 or v1) memory limit, or inf."""
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_file) as f:
                limit = f.read().strip()
            with open(usage_file) as f:
                usage = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 2**60:
            return max(int(limit) - usage, 0)
        return float("inf")
    return float("inf")


def available_memory() -> int | None:
    """The memory a new run may take, in bytes, or None when unknown or the check is off.

    :data:`MEMORY_LIMIT_VARIABLE` when set; else, on Linux, ``MemAvailable`` of
    ``/proc/meminfo`` (what can be allocated without swapping), bounded by the room under a
    cgroup's limit (a container's); elsewhere the physical memory (``os.sysconf``).
    """
    override = os.environ.get(MEMORY_LIMIT_VARIABLE, "").strip()
    if override.lower() in ("off", "none", "0", "false", "no"):
        return None
    if override:
        return parse_size(override)
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f if ":" in line)
        available = int(info["MemAvailable"].split()[0]) * 1024
        return int(min(available, _cgroup_room()))
    except (OSError, KeyError, ValueError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


def kernel_state_bytes(kernel, path) -> int:
    """Bytes of ``kernel``'s state per particle on ``path`` (every field, at its dtype)."""
    d = path.num_dims
    return int(sum((d if f.per_dimension else 1) * np.dtype(f.dtype or path.dtype).itemsize
                   for f in kernel.state))


def estimate_memory(*, num_particles: int, num_dims: int, state_bytes: int, num_steps: int,
                    num_chains: int, num_statistics: int, step_values: int = 0,
                    fixed: int = FIXED_BYTES) -> int:
    """The peak memory of a run, in bytes (the formula of the module docstring).

    Parameters
    ----------
    num_particles : int
        All particles that run at once (every chain's ``draws``, the check chain's too).
    num_dims : int
    state_bytes : int
        The kernel's state per particle (:func:`kernel_state_bytes`).
    num_steps : int
        Steps K (the largest a run may take: ``num_steps="auto"`` may add some).
    num_chains : int
        Chains, each with its per-step statistics.
    num_statistics : int
        Per-step statistics per chain.
    step_values : int
        Per-step parameter values (a scalar counts 1, a per-dimension one ``num_dims``).
    fixed : int
        The allowance for compiles and the pilot.
    """
    per_particle = max(STATE_COPIES * (state_bytes + 8), RESULT_COPIES * 8 * num_dims)
    per_step = STEP_COPIES * 8 * num_chains * num_statistics + 8 * (step_values + 2)
    return int(fixed + float(num_particles) * per_particle + float(num_steps) * per_step)


def _largest(fits, low: int, high: int) -> int | None:
    """The largest integer in ``[low, high]`` for which ``fits`` (true up to some value,
    false above it) holds, or None where it fails at ``low``."""
    if not fits(low):
        return None
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low


def check_memory(estimate: int, *, draws: int, chains: int, what: str = "this run",
                 size: Callable[[int, int, int], float] | None = None,
                 num_steps: int | None = None) -> None:
    """Refuse a run whose ``estimate`` (bytes) exceeds :func:`available_memory`.

    The message gives both, and how to split the run into calls that each take at most
    :data:`SPLIT_FRACTION` of the available memory: calls of fewer chains (of fewer draws,
    never below :data:`MIN_DRAWS`, where one chain is too large), with their own seeds,
    pooled by :func:`pymc_anneal.merge` into exactly the estimate one call with all the
    particles reports. Where not even one chain of :data:`MIN_DRAWS` particles fits, no
    split is suggested: the message says what takes the memory (with ``size`` and
    ``num_steps``: the temperatures, and the largest ``num_steps`` that fits).

    Parameters
    ----------
    estimate : int
        The run's estimate, in bytes.
    draws, chains : int
        The run's particles per chain, and chains.
    what : str, default "this run"
        The run, for the message.
    size : callable ``(draws, chains, num_steps) -> bytes``, optional
        The estimate of another call of the same run (default: in proportion to the
        particles, for a run without per-step terms).
    num_steps : int, optional
        The run's temperatures, passed to ``size`` (0 where not given).
    """
    available = available_memory()
    if available is None or estimate <= available:
        return
    if size is None:  # a run without per-step terms
        num_steps = None

        def size(n, c, k):
            return estimate * (n * c) / (draws * chains)

    room = SPLIT_FRACTION * available  # a margin for what the estimate leaves out
    head = (f"{what} needs about {format_bytes(estimate)} of memory (chains={chains} of "
            f"{draws} particles each), but {format_bytes(available)} is available.")
    override = (f"The environment variable {MEMORY_LIMIT_VARIABLE} overrides the available "
                "memory (e.g. '64GiB', or 'off').")
    smallest = MIN_DRAWS if draws >= MIN_DRAWS else draws
    if size(smallest, 1, num_steps or 0) > room:
        raise AnnealingError(f"{head} {_no_split(size, room, smallest, num_steps)} {override}")
    per_call = (_largest(lambda c: size(draws, c, num_steps or 0) <= room, 1, chains - 1)
                if chains > 1 else None)
    if per_call is not None:
        split = f"{-(-chains // per_call)} calls of chains={per_call}"
    else:
        per_draws = _largest(lambda n: size(n, 1, num_steps or 0) <= room, smallest,
                             max(draws - 1, smallest))
        split = (f"{chains * -(-draws // per_draws)} calls of chains=1 and draws={per_draws}"
                 " (or fewer test points per call, for batched_ais)")
    raise AnnealingError(
        f"{head} Split it: run {split}, each with its own random_seed and the same fixed "
        "num_steps, and pool the results with pymc_anneal.merge([...]): it reports exactly "
        f"the estimate of one run with all the particles. {override}")


_FEWER_STEPS = ("Use fewer temperatures: num_steps='auto' chooses as many as the run's weights "
                "need, at most 20,000 (AUTO_MAX_STEPS; dlogz sets a target error).")


def _no_split(size, room: float, smallest: int, num_steps: int | None) -> str:
    """Why no split of a run fits in ``room``: its temperatures, or the model itself."""
    alone = format_bytes(size(smallest, 1, num_steps or 0))
    if num_steps is not None and size(smallest, 1, 1) <= room:
        most = _largest(lambda k: size(smallest, 1, k) <= room, 1, num_steps)
        return (f"Fewer particles per call do not help: even one chain of {smallest} "
                f"particles needs about {alone}, mostly the per-step statistics and "
                f"values of its num_steps={num_steps:,} temperatures: at most about "
                f"{most:,} of them fit. {_FEWER_STEPS}")
    return (f"Fewer particles per call do not help: even one chain of {smallest} particles "
            f"needs about {alone}. Run it on a machine with more memory, or make the model "
            "smaller.")


def run_memory(path, kernel, *, draws: int, chains: int, num_steps: int) -> int:
    """:func:`estimate_memory` of a run of ``kernel`` on ``path``: ``chains`` chains of
    ``draws`` particles through ``num_steps`` steps."""
    from pymc_anneal.driver.scan import STAT_NAMES

    d = path.num_dims
    return estimate_memory(
        num_particles=draws * chains, num_dims=d, state_bytes=kernel_state_bytes(kernel, path),
        num_steps=num_steps, num_chains=chains,
        num_statistics=len(STAT_NAMES) + len(kernel.statistics),
        step_values=sum(d if p.per_dimension else 1 for p in kernel.parameters))


def check_run_memory(path, kernel, *, draws: int, chains: int, run_chains: int,
                     num_steps: int) -> None:
    """:func:`check_memory` of a run of ``kernel`` on ``path``: ``run_chains`` chains of
    ``draws`` particles (the reported ``chains`` and a check chain) through ``num_steps``
    steps (the pilot's, for ``num_steps="auto"``: the estimate errs low, so that only a run
    that cannot fit is refused). Called before anything is compiled or allocated; a split
    it suggests is sized by :func:`run_memory` too (its calls have a fixed ``num_steps``,
    so no check chain)."""
    def size(n, c, k):
        return run_memory(path, kernel, draws=n, chains=c, num_steps=k)

    check_memory(size(draws, run_chains, num_steps), draws=draws, chains=chains, size=size,
                 num_steps=num_steps)


def _least_run_memory(draws: int, chains: int, num_steps: int) -> int:
    """A floor on :func:`estimate_memory` of any run of ``chains`` chains of ``draws``
    particles through ``num_steps`` steps: one dimension, the position alone as state, the
    driver's statistics alone, no per-step parameter."""
    from pymc_anneal.driver.scan import STAT_NAMES

    return estimate_memory(num_particles=draws * chains, num_dims=1, state_bytes=8,
                           num_steps=num_steps, num_chains=chains,
                           num_statistics=len(STAT_NAMES))


def check_num_steps_budget(num_steps, *, draws: int = MIN_DRAWS, chains: int = 1) -> None:
    """Check a fixed ``num_steps`` against memory and time before anything is built for it.

    An entry point calls this right after checking ``num_steps`` (before its schedule is
    made, a model compiled or a pilot run): ``num_steps=10**9`` took 42 s to reach the
    memory check, whose message then split the particles. Nothing here knows the model,
    so only certain things are said: the temperatures alone (for one chain of
    :data:`MIN_DRAWS` particles of a one-dimensional model, :func:`_least_run_memory`)
    exceeding the available memory is refused, with the largest ``num_steps`` that fits
    (a run too large for its particles is refused later, with a split, by
    :func:`check_run_memory`); a fixed ``num_steps`` above ``AUTO_MAX_STEPS`` whose floor
    of time (:data:`MIN_STEP_SECONDS`, :data:`MIN_PARTICLE_STEP_SECONDS`) exceeds
    :data:`LONG_RUN_SECONDS` warns. ``"auto"``, ``None`` (an explicit schedule) or any other
    non-integer passes.

    Parameters
    ----------
    num_steps : int, "auto" or None
    draws, chains : int
        The call's particles per chain and chains (the floor of time counts them all).
    """
    from pymc_anneal.driver.tuning import AUTO_MAX_STEPS
    from pymc_anneal.exceptions import warn

    if isinstance(num_steps, bool) or not isinstance(num_steps, int | np.integer):
        return
    num_steps = int(num_steps)
    available = available_memory()
    smallest = _least_run_memory(MIN_DRAWS, 1, num_steps)
    if available is not None and smallest > available:
        most = _largest(lambda k: _least_run_memory(MIN_DRAWS, 1, k) <= available, 1,
                        num_steps)
        raise AnnealingError(
            f"num_steps={num_steps:,} needs at least {format_bytes(smallest)} of memory for "
            "the per-step statistics and values of its temperatures alone, whatever the "
            f"model, draws and chains (fewer particles per call do not help), but "
            f"{format_bytes(available)} is available: at most {most or 0:,} temperatures "
            f"could fit, fewer with a real model. {_FEWER_STEPS} The environment variable "
            f"{MEMORY_LIMIT_VARIABLE} overrides the available memory (e.g. '64GiB', or "
            "'off').")
    seconds = num_steps * (MIN_STEP_SECONDS + draws * chains * MIN_PARTICLE_STEP_SECONDS)
    if num_steps > AUTO_MAX_STEPS and seconds > LONG_RUN_SECONDS:
        warn(f"num_steps={num_steps:,} temperatures for {draws * chains:,} particles take at "
             f"least {seconds / 3600:,.1f} hours, even for a one-dimensional model (a step "
             f"takes at least {MIN_STEP_SECONDS * 1e6:g} us, and "
             f"{MIN_PARTICLE_STEP_SECONDS * 1e9:g} ns per particle). That is more than "
             f"{AUTO_MAX_STEPS:,} (AUTO_MAX_STEPS), the most num_steps='auto' chooses for a "
             "run whose weights need them: use num_steps='auto' (with dlogz for a target "
             "error), or pass checkpoint= to keep the work of a run this long.")
