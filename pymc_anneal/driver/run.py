r"""The run loop: tune, then anneal all chains' particles chunk by chunk, in either direction.

**Forward** (AIS, Neal 2001): particles start at exact draws of the base,
:math:`\log w = \log Z_0`, and run through :math:`0 = \beta_0 < \dots < \beta_K = 1`;
:math:`\operatorname{mean}(w)` is unbiased for :math:`Z_1`.

**Backward**: particles start at given states (exact draws of the target, for an unbiased
run), :math:`\log w = 0`, and run through the same schedule from :math:`\beta_K = 1` down to
:math:`\beta_0 = 0`, each step adding :math:`\log f_{\beta_{k-1}}(x) - \log f_{\beta_k}(x)`
before a transition at :math:`\beta_{k-1}`. This is AIS from the normalized target to the
base, so :math:`\operatorname{mean}(w)` is unbiased for :math:`Z_0 / Z_1`, and
:math:`\log Z_0 - \log \operatorname{mean}(w)` is a stochastic *upper* bound on
:math:`\log Z_1`: the other side of the forward run's lower bound (the reverse chains of
RAISE and bidirectional Monte Carlo). The transition at a temperature uses the parameters the
forward pilot tuned for it.

**Choosing K** (``tuning.auto_variance``, ``num_steps="auto"``): a forward run then carries
one extra *check* chain of ``draws`` particles in the same batch, with the same K and the
same frozen parameters. Only its weights decide whether the run is repeated with more
temperatures (:func:`~pymc_anneal.driver.tuning.auto_rerun_steps`), and it is dropped from
the result. Given K and the tuned values, the reported particles are independent of the
weights that chose to keep them, so :math:`E[\hat Z] = Z` whatever the rule decides; a run
kept because its own weights passed would be biased low.

Python runs once per chunk of steps (the progress bar), never per step or per particle.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pymc_anneal.backends import validate_backend
from pymc_anneal.driver.cache import compiled_loop
from pymc_anneal.driver.options import RunOptions
from pymc_anneal.driver.tuning import (
    auto_miss_message,
    auto_num_steps,
    auto_rerun_steps,
    equal_length_schedule,
    needs_pilot,
    step_arrays,
    thermodynamic_length,
    tune,
)
from pymc_anneal.estimators import effective_sample_size
from pymc_anneal.exceptions import AnnealingError, AnnealingWarning
from pymc_anneal.kernels import resolve_kernel

__all__ = ["DIRECTIONS", "AnnealingRun", "run_annealing"]

DIRECTIONS = ("forward", "backward")


@dataclass
class AnnealingRun:
    """Raw output of :func:`run_annealing` (NumPy only); :mod:`pymc_anneal.io` makes data.

    ``log_weights`` are forward AIS weights (``mean(exp)`` unbiased for :math:`Z_1`) or, for
    a backward run, reverse weights (unbiased for :math:`Z_0 / Z_1`). ``betas`` are in the
    order the run went; ``parameters`` holds the per-step kernel parameters it used.
    """

    positions: np.ndarray  # (chains, draws, d)
    log_weights: np.ndarray  # (chains, draws)
    betas: np.ndarray  # (K + 1,)
    step_stats: dict[str, np.ndarray]  # name -> (chains, K)
    parameters: dict[str, np.ndarray]  # name -> (K, ...)
    log_base_normalizer: float
    direction: str = "forward"
    timings: dict[str, float] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)


def _chunks(num_steps: int, num_chunks: int, multiple: int | None = None) -> np.ndarray:
    """Boundaries of at most ``num_chunks`` progress chunks; with ``multiple`` (a loop of
    static length, JAX), every chunk but the last is a whole number of such calls."""
    if multiple is None:
        return np.unique(np.linspace(0, num_steps, min(num_chunks, num_steps) + 1)
                         .round().astype(int))
    calls = -(-num_steps // multiple)
    edges = np.linspace(0, calls, min(num_chunks, calls) + 1).round().astype(int) * multiple
    return np.unique(np.minimum(edges, num_steps))


def run_annealing(
    path,
    *,
    betas: np.ndarray,
    draws: int,
    chains: int,
    rng: np.random.Generator,
    options: RunOptions | None = None,
    direction: str = "forward",
    initial_positions: np.ndarray | None = None,
    num_chunks: int = 20,
    label: str | None = None,
) -> AnnealingRun:
    """Anneal ``path`` through the increasing schedule ``betas`` (0 to 1).

    Parameters
    ----------
    path
        A path (see :mod:`pymc_anneal.paths`).
    betas : array (K + 1,)
        The schedule, strictly increasing from 0 to 1, in either direction.
    draws, chains : int
        Particles per chain, and independent chains (all run as one batch).
    rng : numpy.random.Generator
    options : RunOptions, optional
        The kernel (a name in :data:`pymc_anneal.kernels.KERNELS`, built for ``path`` with
        ``options.kernel_options``, a builder or a kernel already built for it; ``None``:
        the path's ``default_kernel``), the backend, the tuning and the progress bar
        (:func:`pymc_anneal.driver.options.run_options` builds it from user arguments).
    direction : {"forward", "backward"}
        Base to target (AIS), or target to base from ``initial_positions``.
    initial_positions : array (chains * draws, d), optional
        The starting states of a backward run (exact draws of the target for an unbiased
        one). A forward run starts from the base, or from these states when given (they
        must then be exact draws of the base, e.g. of a conditional base that the caller
        samples itself; not with ``tuning.auto_variance``, whose check chain draws its own).
    num_chunks : int
        Compiled calls (progress-bar updates) per run.
    label : str, optional
        Names the run in the progress bar (default: the path's name).
    """
    from pymc_anneal._progress import annealing_progress

    options = options or RunOptions()
    tuning, progressbar = options.tuning, options.progressbar
    backend = validate_backend(options.backend)
    if direction not in DIRECTIONS:
        raise AnnealingError(f"unknown direction {direction!r}; must be one of {list(DIRECTIONS)}.")
    kernel = resolve_kernel(path.default_kernel if options.kernel is None else options.kernel,
                            path, **options.kernel_options)
    unknown = sorted(set(tuning.fixed) - set(kernel.parameter_names))
    if unknown:
        raise AnnealingError(f"the {kernel.name!r} kernel has no parameter(s) {unknown} to fix; "
                             f"its parameters are {list(kernel.parameter_names)}.")
    num_steps, num_particles, d = betas.size - 1, draws * chains, path.num_dims
    if direction == "backward" and initial_positions is None:
        raise AnnealingError("a backward run starts from given states: pass "
                             f"initial_positions of shape ({num_particles}, {d}).")
    if initial_positions is not None:
        initial_positions = np.asarray(initial_positions, dtype=path.dtype)
        if initial_positions.shape != (num_particles, d):
            raise AnnealingError(f"initial_positions must have shape ({num_particles}, {d}) "
                                 f"(chains * draws, num_dims), got {initial_positions.shape}.")
    auto = tuning.auto_variance is not None
    check = auto and direction == "forward"  # one more chain, whose weights decide a repeat
    if check and initial_positions is not None:
        raise AnnealingError(
            "with tuning.auto_variance (num_steps='auto') a forward run starts from the base's "
            "own draws: its extra check chain needs them too. Drop initial_positions, or fix "
            "the number of temperatures (auto_variance=None).")
    run_chains = chains + int(check)
    path_parameters = [path.parameters[k] for k in sorted(path.parameters)]
    timings = {}
    t0 = time.perf_counter()
    loop = compiled_loop(path, kernel, backend)
    field_dtypes = [f.dtype or path.dtype for f in kernel.state]
    loop.precompile(draws * run_chains, run_chains, d, field_dtypes, path_parameters)
    if needs_pilot(kernel.parameters, tuning):
        loop.precompile(tuning.num_pilot, 1, d, field_dtypes, path_parameters)
    timings["compile"] = time.perf_counter() - t0
    length = None

    with annealing_progress(progressbar, label or path.name, num_steps) as progress:
        progress("tuning", 0)
        t1 = time.perf_counter()
        pilot_rng, base_rng, run_rng = rng.spawn(3)
        values, ratio_var, inefficiency = tune(
            loop, path, betas, tuning, tuning.target_acceptance or kernel.target_acceptance,
            pilot_rng, lambda done: progress("tuning", done))
        pilot_betas, pilot_values = betas, values

        def respace(num_steps):  # equal thermodynamic length, each step the pilot's values
            new = equal_length_schedule(pilot_betas, ratio_var, num_steps)
            index = np.searchsorted(pilot_betas[1:], new[1:], side="left")
            index = index.clip(0, pilot_betas.size - 2)
            return new, {k: v[index] for k, v in pilot_values.items()}

        if auto:
            length = thermodynamic_length(pilot_betas, ratio_var)
            num_steps = auto_num_steps(length, tuning.auto_variance, inefficiency)
        if tuning.adapt_schedule or auto:
            betas, values = respace(num_steps)
        timings["tuning"] = time.perf_counter() - t1
        t2 = time.perf_counter()

        def anneal(betas, values, base_rng, run_rng):
            num_steps = betas.size - 1
            progress("annealing", 0, num_steps)
            if direction == "forward":
                run_betas = betas
                chain_rngs = base_rng.spawn(run_chains)
                positions = (initial_positions if initial_positions is not None else
                             np.concatenate([path.sample_base(r, draws) for r in chain_rngs]))
                log_w = np.full(draws * run_chains, float(path.log_base_normalizer))
            else:  # step j runs at beta_{K-j}, with the values tuned there (beta_0: beta_1's)
                run_betas = betas[::-1].copy()
                order = np.maximum(np.arange(num_steps)[::-1] - 1, 0)
                values = {k: v[order] for k, v in values.items()}
                positions = initial_positions
                log_w = np.zeros(num_particles)
            arrays = step_arrays(loop.parameters, run_betas, values, tuning.fixed)
            base_rng, state = loop.init(base_rng, positions,
                                        {k: v[0] for k, v in arrays.items()}, path_parameters)
            stats: dict[str, list] = {}
            chunks = _chunks(num_steps, num_chunks, loop.chunk_length)
            for start, stop in zip(chunks[:-1], chunks[1:]):
                run_rng, state, log_w, chunk_stats = loop.run(
                    run_rng, {k: v[start:stop] for k, v in arrays.items()}, state, log_w,
                    run_chains, path_parameters)
                for name, value in chunk_stats.items():
                    stats.setdefault(name, []).append(value)
                progress("annealing", stop)
            return run_betas, arrays, state, np.asarray(log_w), stats

        run_betas, arrays, state, log_w, stats = anneal(betas, values, base_rng, run_rng)
        reruns, realized = 0, None
        while check:
            # the pilot may under-rate the kernel's lag: size again from the check chain's
            # realized variance (never from the reported chains': that would bias them low)
            realized, next_steps = auto_rerun_steps(num_steps, log_w[num_particles:],
                                                    tuning.auto_variance, reruns)
            if next_steps is None:
                break
            num_steps = next_steps
            betas, values = respace(num_steps)
            run_betas, arrays, state, log_w, stats = anneal(betas, values, *rng.spawn(2))
            reruns += 1
        timings["sampling"] = time.perf_counter() - t2
    if realized is not None:
        message = auto_miss_message(num_steps, realized, tuning.auto_variance, num_particles,
                                    draws)
        if message:  # stacklevel: the caller of sample_ais, the one caller that sizes runs
            warnings.warn(message, AnnealingWarning, stacklevel=3)
    # the check chain (the last) is dropped: the result holds the chains that did not decide
    step_stats = {name: np.concatenate(v, axis=0).T[:chains] for name, v in stats.items()}
    if direction == "forward":
        step_stats["log_z"] = step_stats["log_z"] + path.log_base_normalizer
    log_w = np.asarray(log_w)[:num_particles].reshape(chains, draws)
    return AnnealingRun(
        positions=np.asarray(state["position"])[:num_particles].reshape(chains, draws, d),
        log_weights=log_w,
        betas=run_betas,
        step_stats=step_stats,
        parameters={k: v for k, v in arrays.items() if k not in ("beta", "delta_beta")},
        log_base_normalizer=float(path.log_base_normalizer),
        direction=direction,
        timings=timings,
        settings={"kernel": kernel.name, "kernel_structure": repr(kernel.structure),
                  "backend": backend, "num_steps": num_steps, "direction": direction,
                  "mass_matrix": tuning.mass_matrix, "num_bands": tuning.num_bands,
                  "num_pilot": tuning.num_pilot,
                  **({"thermodynamic_length": length, "auto_variance": tuning.auto_variance,
                      "inefficiency": inefficiency, "auto_reruns": reruns,
                      **({"auto_check_variance": realized} if realized is not None else {})}
                     if length is not None else {}),
                  "tuned": ",".join(sorted(p.name for p in kernel.parameters
                                           if p.tuning and p.name not in tuning.fixed)),
                  "ess": effective_sample_size(log_w)},
    )
