r"""The forward AIS driver: the annealing loop as one compiled PyTensor ``scan``.

For N particles :math:`x_0 \sim p_0`, :math:`\log w = \log Z_0`, and k = 1..K:

.. math:: \log w \mathrel{+}= (\beta_k - \beta_{k-1})\,\ell(x_{k-1}), \qquad
          x_k \sim T_k(\cdot \mid x_{k-1}),

with :math:`T_k` leaving :math:`f_{\beta_k}` invariant (Neal 2001). All chains' particles run
as one batch (a leading particle axis) through a ``scan`` over a chunk of steps; Python runs
once per chunk (progress bar) and never per step or per particle. Per-step statistics
(acceptance, divergences, running log Z and weight ESS per chain) are reduced inside the
loop, so no (steps × particles) array is ever stored.

Step sizes and the diagonal mass matrix are *tuned without biasing the estimate*: a pilot
population, separate from the particles that make the estimate, anneals through the same
schedule in bands (resampling at each band's end, SMC-style); in each band the step size is
adjusted to a target acceptance rate and the mass matrix set from the pilot particles'
weighted variances. The resulting per-step parameters are then frozen, so the main run is an
exact AIS whose transitions do not depend on its own particles.

References
----------
Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11, 125-139.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.tensor.random.type import random_generator_type

from pymc_anneal.backends import CompiledFunction, compile_function, compile_one_off
from pymc_anneal.estimators import effective_sample_size, systematic_resample
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.kernels import KERNELS, Kernel
from pymc_anneal.kernels.hmc import default_refresh
from pymc_anneal.paths import GibbsPath, Path

__all__ = ["AISResult", "TuningOptions", "equal_length_schedule", "run_ais"]


@dataclass(frozen=True)
class TuningOptions:
    """How per-step kernel parameters are chosen.

    Parameters
    ----------
    step_size : float or None
        A fixed step size for every temperature; ``None`` (default) tunes it per band.
    mass_matrix : {"adapt", "base", "identity"}
        ``"adapt"`` (default): diagonal inverse mass from the pilot particles' variances in
        each band. ``"base"``: the base distribution's scale, fixed. ``"identity"``.
    num_bands : int
        Number of temperature bands with their own step size and mass matrix.
    num_pilot : int
        Pilot particles (independent of the estimate's particles).
    target_acceptance : float or None
        ``None`` uses the kernel's default (0.8 for HAIS, 0.65 HMC, 0.3 Metropolis).
    refresh : float or None
        Momentum refresh fraction gamma in (0, 1] for HAIS; ``None`` randomizes half the
        momentum power per unit time, ``1 - 2**-step_size``.
    adapt_schedule : bool
        Re-space the schedule to equal thermodynamic length from the pilot's estimates of
        Var(log ratio) along the path (:func:`equal_length_schedule`), then freeze it.
    """

    step_size: float | None = None
    mass_matrix: str = "adapt"
    num_bands: int = 8
    num_pilot: int = 256
    target_acceptance: float | None = None
    refresh: float | None = None
    adapt_schedule: bool = False


@dataclass
class AISResult:
    """Raw output of :func:`run_ais` (NumPy only); :mod:`pymc_anneal.io` turns it into data."""

    positions: np.ndarray  # (chains, draws, d)
    log_weights: np.ndarray  # (chains, draws)
    betas: np.ndarray  # (K + 1,)
    step_stats: dict[str, np.ndarray]  # name -> (chains, K)
    step_size: np.ndarray  # (K,)
    inv_mass: np.ndarray  # (K, d)
    log_base_normalizer: float
    timings: dict[str, float] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------
# graph building


def _logsumexp_rows(x):
    m = pt.max(x, axis=1, keepdims=True)
    m = pt.switch(pt.isfinite(m), m, 0.0)
    return pt.log(pt.exp(x - m).sum(axis=1)) + m[:, 0]


def _state_inputs(kernel: Kernel, num_dims: int, num_particles: int | None, dtype: str):
    inputs = []
    for name in kernel.state_type._fields:
        matrix = name in ("position", "momentum") or name.startswith("grad")
        shape = (num_particles, num_dims) if matrix else (num_particles,)
        inputs.append(pt.tensor(name, dtype=dtype if name == "position" else "float64", shape=shape))
    return inputs


def _build_chunk_function(
    path: Path, kernel: Kernel, backend: str, num_particles: int | None,
    num_chains: int | None, num_steps: int | None,
):
    """Compile ``(rng, per-step params, state, log_weight, num_chains) -> (rng, state, ...)``.

    ``num_particles``, ``num_chains`` and ``num_steps`` are static (baked into the graph)
    when given, as JAX needs; otherwise symbolic, so one compiled function serves every
    batch size and chunk length.
    """
    d = path.num_dims
    rng = random_generator_type("rng")
    gibbs = isinstance(path, GibbsPath)
    if gibbs and num_particles is None:
        d = None  # one compiled function serves every model size of this structure
    beta, delta_beta, step_size, refresh = (pt.tensor(n, dtype="float64", shape=(num_steps,))
                                            for n in ("beta", "delta_beta", "step_size", "refresh"))
    inv_mass = pt.tensor("inv_mass", dtype="float64", shape=(num_steps, d))
    momentum_scale = pt.tensor("momentum_scale", dtype="float64", shape=(num_steps, d))
    state_in = _state_inputs(kernel, d, num_particles, path.dtype if gibbs else "float64")
    param_names = sorted(path.parameters)
    # static parameter shapes where the other sizes are static too (JAX), else symbolic
    param_in = [pt.tensor(name, dtype=path.parameters[name].dtype,
                          shape=path.parameters[name].shape if num_particles is not None
                          else (None,) * path.parameters[name].ndim) for name in param_names]
    log_weight = pt.tensor("log_weight", dtype="float64", shape=(num_particles,))
    chains_input = pt.lscalar("num_chains")
    num_chains_graph = chains_input if num_chains is None else pt.constant(num_chains, dtype="int64")
    num_state = len(state_in)

    def one_step(beta_k, delta_k, eps_k, gamma_k, inv_mass_k, scale_k, rng_k, *carry):
        state = kernel.state_type(*carry[:num_state])
        log_w, chains = carry[num_state], carry[num_state + 1]
        params = dict(zip(param_names, carry[num_state + 2:]))
        if gibbs:
            # log f_{beta_k}(x) - log f_{beta_{k-1}}(x): the beta-free products (and what
            # else the path shares) are merged with the ones the Gibbs sweep below needs, so
            # they are computed once per step. (beta_k - delta_k equals beta_{k-1} to within
            # one rounding.)
            increment = path.log_increment(state.position, beta_k, delta_k, params)
            increment = pt.switch(pt.isnan(increment), -np.inf, increment)
            slope = pt.switch(delta_k > 0, increment / pt.switch(delta_k > 0, delta_k, 1.0), 0.0)
        else:
            log_ratio = state.log_ratio
            increment = pt.switch(pt.isfinite(log_ratio), delta_k * log_ratio, -np.inf)
        log_w = log_w + pt.switch(delta_k > 0, increment, 0.0)
        step_params = {"step_size": eps_k, "inv_mass": inv_mass_k, "momentum_scale": scale_k,
                       "refresh": gamma_k, **params}
        rng_k, state, info = kernel.step(rng_k, state, beta_k, step_params)
        per_chain = log_w.reshape((chains, -1))
        lse = _logsumexp_rows(per_chain)
        lse2 = _logsumexp_rows(2.0 * per_chain)
        log_z = lse - pt.log(per_chain.shape[1].astype("float64"))
        ess = pt.switch(pt.isfinite(lse), pt.exp(2.0 * lse - lse2), 0.0)
        accept = info.acceptance_rate.reshape((chains, -1)).mean(axis=1)
        diverge = info.is_divergent.reshape((chains, -1)).sum(axis=1)
        # Var_{beta_k}(log ratio) per chain, from the weighted particles: the schedule's
        # "speed" (thermodynamic length element sd * d beta) used by the adaptive schedule
        weights = pt.exp(per_chain - lse[:, None])
        # (for Gibbs paths, the slope at the pre-transition particles, equally valid
        # under the updated weights, and free of another matrix product)
        ratio = (slope if gibbs else state.log_ratio).reshape((chains, -1))
        ratio = pt.switch(pt.isfinite(ratio) & (weights > 0), ratio, 0.0)
        mean = (weights * ratio).sum(axis=1)
        ratio_var = (weights * (ratio - mean[:, None]) ** 2).sum(axis=1)
        ratio_var = pt.switch(pt.isfinite(lse), ratio_var, 0.0)
        return (rng_k, *state, log_w, accept, diverge.astype("int64"), log_z, ess, ratio_var)

    outputs = pytensor.scan(
        one_step,
        sequences=[beta, delta_beta, step_size, refresh, inv_mass, momentum_scale],
        outputs_info=[rng, *state_in, log_weight, None, None, None, None, None],
        non_sequences=[num_chains_graph, *param_in],
        return_updates=False,
    )
    rng_out, *rest = outputs
    final_state = [o[-1] for o in rest[:num_state]]
    final_log_w = rest[num_state][-1]
    stats = rest[num_state + 1:]
    inputs = [rng, beta, delta_beta, step_size, refresh, inv_mass, momentum_scale,
              *state_in, log_weight, chains_input, *param_in]
    return compile_function(inputs, [rng_out, *final_state, final_log_w, *stats], backend)


def _build_init_function(path: Path, kernel: Kernel, backend: str):
    if isinstance(path, GibbsPath):  # the Gibbs state is the position alone
        return None
    position = pt.matrix("position", dtype="float64")
    params = {name: pt.tensor(name, dtype=value.dtype, shape=(None,) * value.ndim)
              for name, value in sorted(path.parameters.items())}
    point = path.evaluate(position, gradients=kernel.needs_gradients, params=params)
    outputs = [point.log_base, point.log_ratio]
    if kernel.needs_gradients:
        outputs += [point.grad_log_base, point.grad_log_ratio]
    return compile_one_off([position, *params.values()], outputs, backend)


_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_COMPILED_BY_STRUCTURE: dict = {}


def _compiled(
    path: Path, kernel: Kernel, backend: str, num_particles: int, num_chains: int, num_steps: int
) -> tuple[CompiledFunction, CompiledFunction]:
    """Compiled (init, chunk) functions, reused across calls for the same path object."""
    if isinstance(path, GibbsPath):  # parameters are inputs: share by structure
        cache = _COMPILED_BY_STRUCTURE.setdefault((path.structure, path.dtype), {})
    else:  # an owner holds e.g. its own loop and that of every Gaussian base fitted to it
        owner = path if path.cache_owner is None else path.cache_owner
        cache = _COMPILED.setdefault(owner, {}).setdefault(path.structure, {})
    static = (num_particles, num_chains, num_steps) if backend == "jax" else (None, None, None)
    key = (kernel.structure, backend, static)
    if backend == "jax" and path.parameters:
        key += (tuple((k, v.shape) for k, v in sorted(path.parameters.items())),)
    if key not in cache:
        init = cache.get((kernel.structure, backend, "init"))
        if init is None:
            init = cache[(kernel.structure, backend, "init")] = _build_init_function(path, kernel, backend)
        cache[key] = (init, _build_chunk_function(path, kernel, backend, *static))
    return cache[key]


# ---------------------------------------------------------------------------------------
# running


class _Runner:
    """Holds compiled functions and runs chunks of steps on NumPy state."""

    def __init__(self, path, kernel, backend, num_particles, num_chains, chunk_length):
        self.path, self.kernel, self.backend = path, kernel, backend
        self.chunk_length = chunk_length if backend == "jax" else None
        self.init_fn, self.chunk_fn = _compiled(path, kernel, backend, num_particles, num_chains,
                                                chunk_length)
        self.parameters = [path.parameters[k] for k in sorted(path.parameters)]

    def initial_state(self, positions, inv_mass0, rng):
        if self.init_fn is None:
            return {"position": np.asarray(positions, dtype=self.path.dtype)}
        values = self.init_fn(positions, *self.parameters)
        point = dict(zip(("log_base", "log_ratio", "grad_log_base", "grad_log_ratio"), values))
        state = {"position": positions}
        for name in self.kernel.state_type._fields:
            if name == "momentum":
                state[name] = rng.standard_normal(positions.shape) / np.sqrt(inv_mass0)
            elif name != "position":
                state[name] = point[name]
        return state

    def run(self, rng, params, state, log_w, num_chains):
        fields = self.kernel.state_type._fields
        length = params["beta"].size
        if self.chunk_length is not None and length < self.chunk_length:
            params = _pad(params, self.chunk_length)
        out = self.chunk_fn(
            rng, params["beta"], params["delta_beta"], params["step_size"], params["refresh"],
            params["inv_mass"], params["momentum_scale"], *[state[f] for f in fields], log_w,
            np.int64(num_chains), *self.parameters,
        )
        rng = out[0]
        new_state = dict(zip(fields, out[1:1 + len(fields)]))
        log_w = out[1 + len(fields)]
        accept, diverge, log_z, ess, ratio_var = (np.asarray(o)[:length]
                                                  for o in out[2 + len(fields):])
        return rng, new_state, log_w, {"acceptance_rate": accept, "divergences": diverge,
                                       "log_z": log_z, "ess": ess, "log_ratio_var": ratio_var}


def _pad(params, length):
    """Pad per-step parameters with exact no-op steps (JAX needs a static chunk length).

    A step with ``delta_beta = 0``, ``step_size = 0`` and ``refresh = 0`` leaves the position,
    the log weight and the HAIS momentum exactly unchanged (HMC accepts the zero-length move
    and the momentum's double negation cancels; Metropolis proposes the current point). Plain
    HMC redraws its momentum, which it never reads before drawing it again. A Gibbs sweep
    has no step size: a padded step is one more sweep at the last temperature, which leaves
    that temperature's distribution invariant and the weights unchanged, so it costs time
    but not correctness.
    """
    extra = length - params["beta"].size
    fill = {"beta": params["beta"][-1], "delta_beta": 0.0, "step_size": 0.0, "refresh": 0.0,
            "inv_mass": params["inv_mass"][-1], "momentum_scale": 1.0}
    return {k: np.concatenate([v, np.broadcast_to(fill[k], (extra, *v.shape[1:]))])
            for k, v in params.items()}


def _step_params(betas, step_size, inv_mass, refresh, kernel) -> dict[str, np.ndarray]:
    """Per-step parameter arrays for steps 1..K."""
    step_size = np.asarray(step_size, dtype=np.float64)
    if refresh is None:
        refresh = default_refresh(step_size)
    refresh = np.broadcast_to(np.asarray(refresh, dtype=np.float64), step_size.shape).copy()
    previous = np.concatenate([inv_mass[:1], inv_mass[:-1]])
    return {
        "beta": betas[1:].copy(),
        "delta_beta": np.diff(betas),
        "step_size": step_size,
        "refresh": refresh,
        "inv_mass": inv_mass,
        "momentum_scale": np.sqrt(previous / inv_mass),
    }


def _slice(params, start, stop):
    return {k: v[start:stop] for k, v in params.items()}


def _bands(num_steps: int, num_bands: int) -> list[tuple[int, int]]:
    edges = np.unique(np.linspace(0, num_steps, min(num_bands, num_steps) + 1).round().astype(int))
    return list(zip(edges[:-1], edges[1:]))


def _weighted_variance(positions, log_w):
    w = np.exp(log_w - np.max(log_w))
    w = w / w.sum()
    mean = w @ positions
    return w @ (positions - mean) ** 2


def _tune(runner, betas, options: TuningOptions, kernel, rng, progress):
    """Pilot pass: per-band step size and mass matrix, frozen for the main run."""
    path = runner.path
    num_steps, d = betas.size - 1, path.num_dims
    target = options.target_acceptance or kernel.target_acceptance
    bands = _bands(num_steps, options.num_bands)
    step_size = np.ones(num_steps)
    inv_mass = np.ones((num_steps, d))
    base_var = (np.ones(d) if path.base_scale is None else np.asarray(path.base_scale) ** 2)

    ratio_var = np.full(num_steps, np.nan)
    if kernel.name == "gibbs" and not options.adapt_schedule:  # nothing to tune
        return step_size, inv_mass, ratio_var
    if options.step_size is not None and options.mass_matrix != "adapt" and not options.adapt_schedule:
        fixed = base_var if options.mass_matrix == "base" else np.ones(d)
        return np.full(num_steps, float(options.step_size)), np.tile(fixed, (num_steps, 1)), ratio_var

    np_rng, fn_rng = rng.spawn(2)
    positions = path.sample_base(np_rng, options.num_pilot)
    log_w = np.zeros(options.num_pilot)
    state = runner.initial_state(positions, np.ones(d), np_rng)
    eps = float(options.step_size or (0.5 if kernel.has_momentum else 1.0) * d ** -0.25)
    for start, stop in bands:
        if options.mass_matrix == "adapt":
            var = _weighted_variance(state["position"], log_w)
            var = np.where(np.isfinite(var) & (var > 0), var, 1.0)
            inv_mass[start:stop] = np.maximum(var, 1e-12 * var.max())
        else:
            inv_mass[start:stop] = base_var if options.mass_matrix == "base" else 1.0
        if "momentum" in state:  # fresh momentum for the pilot's new mass matrix
            state["momentum"] = np_rng.standard_normal(state["position"].shape) / np.sqrt(inv_mass[start])
        trial_len = min(stop - start, 20)
        for _ in range(6 if options.step_size is None else 0):
            step_size[start:stop] = eps
            params = _slice(_step_params(betas, step_size, inv_mass, options.refresh, kernel),
                            start, start + trial_len)
            fn_rng, _, _, stats = runner.run(fn_rng, params, state, log_w, 1)
            accept = float(stats["acceptance_rate"].mean())
            if abs(accept - target) < 0.1:
                break
            eps *= float(np.clip(np.exp(3.0 * (accept - target)), 0.25, 2.0))
        step_size[start:stop] = eps
        params = _slice(_step_params(betas, step_size, inv_mass, options.refresh, kernel), start, stop)
        fn_rng, state, log_w, band_stats = runner.run(fn_rng, params, state, log_w, 1)
        ratio_var[start:stop] = band_stats["log_ratio_var"][:, 0]
        if not np.any(np.isfinite(log_w)):
            raise AnnealingError(
                "every pilot particle has zero weight (log-likelihood -inf or NaN) during "
                "tuning; check that the likelihood is finite where the prior puts its mass."
            )
        index = systematic_resample(log_w, log_w.size, np_rng)
        state = {k: v[index] for k, v in state.items()}
        log_w = np.zeros_like(log_w)
        progress(stop)
    return step_size, inv_mass, ratio_var


def equal_length_schedule(betas: np.ndarray, ratio_var: np.ndarray, num_steps: int,
                          mix: float = 0.1) -> np.ndarray:
    r"""Re-space a schedule to equal thermodynamic length.

    With perfect transitions the variance of the log weights is
    :math:`\sum_k (\Delta\beta_k)^2 \operatorname{Var}_{\beta_k}(\ell)`; for a fixed number
    of steps it is smallest when every step has the same length
    :math:`\Delta\beta_k \operatorname{sd}_{\beta_k}(\ell)`. ``ratio_var`` holds the pilot's
    estimates on the grid ``betas[1:]``; a fraction ``mix`` of each step keeps the original
    spacing, so no region of the path is left without steps when an estimate is poor.
    """
    sd = np.sqrt(np.where(np.isfinite(ratio_var) & (ratio_var > 0), ratio_var, 0.0))
    floor = 1e-3 * (np.median(sd[sd > 0]) if np.any(sd > 0) else 1.0)
    length = np.maximum(sd, floor) * np.diff(betas)
    length = (1.0 - mix) * length / length.sum() + mix * np.diff(betas)
    cumulative = np.concatenate([[0.0], np.cumsum(length)])
    cumulative /= cumulative[-1]
    new = np.interp(np.linspace(0.0, 1.0, num_steps + 1), cumulative, betas)
    new[0], new[-1] = 0.0, 1.0
    return new


def run_ais(
    path: Path,
    *,
    kernel: str = "hais",
    betas: np.ndarray,
    draws: int,
    chains: int,
    rng: np.random.Generator,
    backend: str = "numba",
    tuning: TuningOptions | None = None,
    num_leapfrog_steps: int = 1,
    num_chunks: int = 20,
    progressbar: bool = True,
    label: str | None = None,
) -> AISResult:
    """Run forward AIS on ``path``; see :func:`pymc_anneal.sample_ais` for the options.

    ``label`` names the run in the progress bar (default: the path's name).
    """
    tuning = tuning or TuningOptions()
    if kernel not in KERNELS:
        raise AnnealingError(f"unknown kernel {kernel!r}; must be one of {sorted(KERNELS)}.")
    if (kernel == "gibbs") != isinstance(path, GibbsPath):
        raise AnnealingError(
            f"kernel {kernel!r} cannot run on this path: the 'gibbs' kernel needs a path with "
            "Gibbs conditionals (an RBM), and paths without them need one of "
            "['hais', 'hmc', 'metropolis']."
        )
    kernel_obj = KERNELS[kernel](path, **({"num_leapfrog_steps": num_leapfrog_steps}
                                          if kernel in ("hais", "hmc") else {}))
    num_steps = betas.size - 1
    num_particles = draws * chains
    timings = {}
    t0 = time.perf_counter()
    chunks = np.unique(np.linspace(0, num_steps, min(num_chunks, num_steps) + 1).round().astype(int))
    bands = _bands(num_steps, tuning.num_bands)
    runner = _Runner(path, kernel_obj, backend, num_particles, chains, int(np.diff(chunks).max()))
    pilot = runner
    if backend == "jax":
        pilot = _Runner(path, kernel_obj, backend, tuning.num_pilot, 1,
                        int(max(b - a for a, b in bands)))
    timings["compile"] = time.perf_counter() - t0

    from pymc_anneal._progress import annealing_progress

    with annealing_progress(progressbar, label or path.name, num_steps) as progress:
        progress("tuning", 0)
        t1 = time.perf_counter()
        pilot_rng, base_rng, run_rng = rng.spawn(3)
        step_size, inv_mass, ratio_var = _tune(
            pilot, betas, tuning, kernel_obj, pilot_rng,
            lambda done: progress("tuning", done),
        )
        if tuning.adapt_schedule:
            pilot_betas = betas
            betas = equal_length_schedule(pilot_betas, ratio_var, num_steps)
            # each new step takes the tuned parameters of the pilot step at its beta
            index = np.searchsorted(pilot_betas[1:], betas[1:], side="left").clip(0, num_steps - 1)
            step_size, inv_mass = step_size[index], inv_mass[index]
        timings["tuning"] = time.perf_counter() - t1
        progress("annealing", 0)
        t2 = time.perf_counter()
        params = _step_params(betas, step_size, inv_mass, tuning.refresh, kernel_obj)
        chain_rngs = base_rng.spawn(chains)
        positions = np.concatenate([path.sample_base(r, draws) for r in chain_rngs])
        state = runner.initial_state(positions, inv_mass[0], base_rng)
        log_w = np.full(num_particles, float(path.log_base_normalizer))
        stats: dict[str, list] = {}
        for start, stop in zip(chunks[:-1], chunks[1:]):
            run_rng, state, log_w, chunk_stats = runner.run(
                run_rng, _slice(params, start, stop), state, log_w, chains)
            for name, value in chunk_stats.items():
                stats.setdefault(name, []).append(value)
            progress("annealing", stop)
        timings["sampling"] = time.perf_counter() - t2
    step_stats = {name: np.concatenate(v, axis=0).T for name, v in stats.items()}  # (chains, K)
    step_stats["log_z"] = step_stats["log_z"] + path.log_base_normalizer
    log_w = np.asarray(log_w).reshape(chains, draws)
    return AISResult(
        positions=np.asarray(state["position"]).reshape(chains, draws, path.num_dims),
        log_weights=log_w,
        betas=betas,
        step_stats=step_stats,
        step_size=step_size,
        inv_mass=inv_mass,
        log_base_normalizer=float(path.log_base_normalizer),
        timings=timings,
        settings={"kernel": kernel, "backend": backend, "num_steps": num_steps,
                  "num_leapfrog_steps": num_leapfrog_steps if kernel in ("hais", "hmc") else 0,
                  "mass_matrix": tuning.mass_matrix, "num_bands": tuning.num_bands,
                  "num_pilot": tuning.num_pilot, "tuned_step_size": tuning.step_size is None,
                  "ess": effective_sample_size(log_w)},
    )
