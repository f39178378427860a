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
it into calls that fit, whose results :func:`pymc_anneal.merge` pools exactly. The
environment variable :data:`MEMORY_LIMIT_VARIABLE` overrides the available memory (a size
such as ``"64GiB"`` or a byte count), or turns the check off (``"off"``).
"""

from __future__ import annotations

import os
import re

import numpy as np

from pymc_anneal.exceptions import AnnealingError

__all__ = ["MEMORY_LIMIT_VARIABLE", "available_memory", "check_memory", "check_run_memory",
           "estimate_memory", "format_bytes", "kernel_state_bytes", "parse_size", "run_memory"]

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


def check_memory(estimate: int, *, draws: int, chains: int, what: str = "this run") -> None:
    """Refuse a run whose ``estimate`` (bytes) exceeds :func:`available_memory`.

    The message gives both, and how to split the run into calls that each take at most
    :data:`SPLIT_FRACTION` of the available memory: calls of fewer chains (of fewer draws
    where one chain is too large), with their own seeds, pooled by
    :func:`pymc_anneal.merge` into exactly the estimate one call with all the particles
    reports.
    """
    available = available_memory()
    if available is None or estimate <= available:
        return
    room = SPLIT_FRACTION * available  # a margin for what the estimate leaves out
    per_chain = estimate / chains
    if per_chain <= room:
        per_call = int(room // per_chain)
        split = f"{-(-chains // per_call)} calls of chains={per_call}"
    else:
        per_call = max(int(draws * room // per_chain), 1)
        split = (f"{chains * -(-draws // per_call)} calls of chains=1 and draws={per_call}"
                 " (or fewer test points per call, for batched_ais)")
    raise AnnealingError(
        f"{what} needs about {format_bytes(estimate)} of memory (chains={chains} of "
        f"{draws} particles each), but {format_bytes(available)} is available. Split it: "
        f"run {split}, each with its own random_seed and the same fixed num_steps, and pool "
        "the results with pymc_anneal.merge([...]): it reports exactly the estimate of one "
        f"run with all the particles. The environment variable {MEMORY_LIMIT_VARIABLE} "
        "overrides the available memory (e.g. '64GiB', or 'off').")


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
    that cannot fit is refused). Called before anything is compiled or allocated."""
    check_memory(run_memory(path, kernel, draws=draws, chains=run_chains, num_steps=num_steps),
                 draws=draws, chains=chains)
