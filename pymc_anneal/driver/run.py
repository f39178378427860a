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

import contextlib
import copy
import itertools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pymc_anneal.backends import interruptible, loops_reuse_pilot_shape
from pymc_anneal.driver.cache import compiled_loop
from pymc_anneal.driver.checkpoint import Checkpoint, Stage
from pymc_anneal.driver.memory import check_run_memory
from pymc_anneal.driver.options import RunOptions
from pymc_anneal.driver.scan import CompiledLoop
from pymc_anneal.driver.tuning import (
    Pilot,
    auto_cap_message,
    auto_miss_message,
    needs_pilot,
    step_arrays,
    tune,
)
from pymc_anneal.estimators import effective_sample_size, prefetch_pareto_fit
from pymc_anneal.exceptions import warn
from pymc_anneal.kernels import Kernel, resolve_kernel
from pymc_anneal.validation import (
    check_backend,
    check_choice,
    check_fixed_parameters,
    check_initial_positions,
)

__all__ = ["DIRECTIONS", "AnnealingRun", "check_run", "run_annealing", "run_pilot"]

DIRECTIONS = ("forward", "backward")

MAX_BLOCKED_STEPS = 500
"""The most temperatures of a pass that goes through the pilot's loop in blocks
(:func:`_block`); a longer pass compiles its own shape. A call over fewer particles pays
the loop's fixed cost per step more often: at 640 temperatures (a warm second call, JAX on
two cores, 2026-11-30) posteriordb's seeds_centered (26 parameters, 21 observations) took
3.60 s in blocks against 2.83 s whole, Rate_3 0.26 against 0.18 s, so the blocks lose about
a compile's worth (0.3-1.2 s) near 500 temperatures on cheap models; on radon's 90-d model
(919 observations) they won at any length (14.9 against 21.1 s: a block's intermediates
stay in the cache)."""


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


@interruptible()  # Ctrl-C stops the run, even when Python would lose it
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
    checkpoint: Checkpoint | None = None,
    pilot: Pilot | None = None,
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
    checkpoint : Checkpoint, optional
        Where this call's state is written after every chunk, and read from to resume
        (:mod:`pymc_anneal.driver.checkpoint`; the entry points open it).
    pilot : Pilot, optional
        The pilot :func:`run_pilot` ran for this very call (same path, schedule, options and
        ``rng``), used instead of running it again; the result is the same.
    """
    from pymc_anneal._progress import annealing_progress

    plan = _plan(path, options or RunOptions(), direction, draws, chains, initial_positions,
                 num_chunks, num_steps=betas.size - 1)
    stage = Stage(checkpoint)
    tuning = plan.options.tuning
    t0 = time.perf_counter()
    loop = None if stage.done else _compile(path, plan)
    timings = {"compile": time.perf_counter() - t0}
    with annealing_progress(plan.options.progressbar, label or path.name,
                            betas.size - 1) as progress, _interrupted(checkpoint):
        t1 = time.perf_counter()
        pilot_rng, base_rng, run_rng = rng.spawn(3)
        pilot = stage.pilot() or pilot
        if pilot is None:
            progress("tuning", 0)
            pilot = Pilot(betas, *tune(
                loop, path, betas, tuning,
                tuning.target_acceptance or plan.kernel.target_acceptance, pilot_rng,
                lambda done: progress("tuning", done)))
        stage.keep_pilot(pilot)
        betas, values, length = pilot.schedule(tuning)
        if length is not None and (too_long := auto_cap_message(
                length, tuning.auto_variance, pilot.inefficiency)):
            warn(too_long)  # before the run: it can take long, and will miss its target
        timings["tuning"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        run, realized, reruns = _passes(loop, path, plan, pilot, (betas, values),
                                        (base_rng, run_rng), rng, progress, stage)
        timings["sampling"] = time.perf_counter() - t2
    if realized is not None:
        message = auto_miss_message(run.num_steps, realized, tuning.auto_variance,
                                    plan.num_particles, draws)
        if message:
            warn(message)
    auto = None if length is None else {
        "thermodynamic_length": length, "auto_variance": tuning.auto_variance,
        "inefficiency": pilot.inefficiency, "auto_reruns": reruns,
        **({"auto_check_variance": realized} if realized is not None else {})}
    return _result(path, plan, run, timings, auto)


def run_pilot(path, *, betas: np.ndarray, draws: int, chains: int, rng: np.random.Generator,
              options: RunOptions | None = None, label: str | None = None,
              enough: Callable[[float, float], bool] | None = None) -> Pilot:
    """The pilot (:func:`~pymc_anneal.driver.tuning.tune`) that :func:`run_annealing` with
    the same arguments runs first, on its own: what it measures (the path's thermodynamic
    length, the kernel's inefficiency, the K that ``num_steps="auto"`` would choose:
    :meth:`Pilot.schedule`) can decide how to run before anything else is run. ``rng`` is
    not advanced (a copy spawns the streams that :func:`run_annealing` will spawn), so
    passing the pilot as its ``pilot=`` gives what a call without it gives, bit for bit.

    ``enough(length, inefficiency)``, asked after each band but the last with what the
    pilot measured so far, stops it there when it returns True (the decision it serves is
    made: the pilot's ``stopped_at`` says where, and such a pilot tunes no run). The same
    call without ``enough``, or one that never stops, gives the whole pilot, bit for bit.
    """
    from pymc_anneal._progress import annealing_progress

    plan = _plan(path, options or RunOptions(), "forward", draws, chains, None, 1,
                 num_steps=betas.size - 1)
    # a pilot that may stop serves a decision, often against this path's run (the
    # Laplace base's loop runs instead): its run's shape is compiled only once the pilot
    # has run whole, not beside it, where it would take a core from the pilot
    loop, tuning = _compile(path, plan, run_shape=enough is None), plan.options.tuning
    pilot_rng = copy.deepcopy(rng).spawn(3)[0]  # run_annealing's first stream
    done, stopped = [0], []
    def tuned(stop):
        done[0] = stop
        progress("tuning", stop)

    def stop(length, inefficiency):
        if enough(length, inefficiency):
            stopped.append(done[0])
        return bool(stopped)

    with annealing_progress(plan.options.progressbar, label or path.name,
                            betas.size - 1) as progress:
        found = tune(loop, path, betas, tuning,
                     tuning.target_acceptance or plan.kernel.target_acceptance, pilot_rng,
                     tuned, None if enough is None else stop)
    if enough is not None and not stopped:
        _precompile_run(loop, path, plan)
    return Pilot(betas, *found, stopped_at=stopped[0] if stopped else None)


def _passes(loop, path, plan: _Plan, pilot: Pilot, schedule, rngs, rng, progress,
            stage: Stage) -> tuple[_Pass, float | None, int]:
    """The run's passes: the first through ``schedule``; with a check chain, repeats while
    its weights ask for more temperatures (never the reported chains': that would bias
    them low). A stored stage resumes where it stopped: the RNG streams of the passes
    before it are spawned again, in the same order, and its state is restored."""
    tuning = plan.options.tuning
    reruns, realized = stage.pass_index, stage.realized
    for _ in range(reruns):  # the streams that the stored pass and those before it drew
        rngs = rng.spawn(2)
    if reruns:
        schedule = stage.pass_schedule()
    run = _anneal(loop, path, plan, *schedule, *rngs, progress, stage, reruns)
    while plan.check and not stage.done:
        realized, repeat = pilot.rerun(run.num_steps, run.log_w[plan.num_particles:],
                                       tuning.auto_variance, reruns)
        if repeat is None:
            break
        reruns += 1
        run = _anneal(loop, path, plan, *repeat, *rng.spawn(2), progress, stage, reruns)
    stage.finish(realized)
    return run, realized, reruns


@contextlib.contextmanager
def _interrupted(checkpoint: Checkpoint | None):
    """On an exception, write the last completed chunk's state (writes are throttled); on
    Ctrl-C, also say where the checkpoint stands and how to resume. Then stop."""
    try:
        yield
    except BaseException as error:
        if checkpoint is None:
            raise
        with contextlib.suppress(Exception):  # a failing disk: the error that came first
            checkpoint.flush()
        if isinstance(error, KeyboardInterrupt):
            print(f"Interrupted. The checkpoint {checkpoint.path} holds the run up to its last "
                  "completed chunk: call again with the same arguments (and the same "
                  "checkpoint) to resume.", file=sys.stderr)
        raise


@dataclass(frozen=True)
class _Plan:
    """A run's checked inputs: what every pass of it shares."""

    options: RunOptions
    kernel: Kernel
    backend: str
    direction: str
    draws: int
    chains: int
    check: bool  # one more chain, whose weights decide a repeat (num_steps="auto")
    initial_positions: np.ndarray | None
    path_parameters: list
    num_chunks: int
    block: int | None = None  # particles per loop call (the pilot's shape), else all

    @property
    def run_chains(self) -> int:
        return self.chains + int(self.check)

    @property
    def num_particles(self) -> int:
        """The reported particles (the check chain's come after them)."""
        return self.draws * self.chains


def _plan(path, options: RunOptions, direction: str, draws: int, chains: int,
          initial_positions, num_chunks: int, num_steps: int = 1) -> _Plan:
    """Check a run's inputs (its memory too, before anything is allocated) and build its
    kernel."""
    backend = check_backend(options.backend)
    kernel = check_run(path, options, draws=draws, chains=chains, num_steps=num_steps,
                       direction=direction)
    direction = check_choice("direction", direction, DIRECTIONS)
    check = options.tuning.auto_variance is not None and direction == "forward"
    initial_positions = check_initial_positions(
        initial_positions, direction=direction, shape=(draws * chains, path.num_dims),
        dtype=path.dtype, own_base_draws=check)
    return _Plan(options, kernel, backend, direction, draws, chains, check, initial_positions,
                 [path.parameters[k] for k in sorted(path.parameters)], num_chunks,
                 _block(kernel, options, backend, draws, num_steps))


def _block(kernel: Kernel, options: RunOptions, backend: str, draws: int,
           num_steps: int) -> int | None:
    """The particles per loop call of a run: the pilot's ``num_pilot`` where the loop is
    compiled for the pilot's shape, it divides every chain's ``draws`` and the backend
    runs blocks of that shape as fast as the whole
    (:func:`~pymc_anneal.backends.loops_reuse_pilot_shape`): the run then needs no compile
    of its own, unless a pass is longer than :data:`MAX_BLOCKED_STEPS` (``num_steps``:
    the schedule's, whose length ``"auto"`` chooses later, pass by pass). Else None: all
    particles in each call."""
    tuning = options.tuning
    if num_steps > MAX_BLOCKED_STEPS and tuning.auto_variance is None:
        return None
    if (draws % tuning.num_pilot or not needs_pilot(kernel.parameters, tuning)
            or not loops_reuse_pilot_shape(backend)):
        return None
    return tuning.num_pilot


def check_run(path, options: RunOptions, *, draws: int, chains: int, num_steps: int,
              direction: str = "forward") -> Kernel:
    """Check that a run of ``path`` fits in memory (and that its kernel and fixed values
    are valid) before the caller computes or allocates anything for it: an entry point
    whose run comes after other work (a fitting run, test points repeated per particle)
    calls it first, so that a run that cannot fit is refused at once. Returns the kernel."""
    direction = check_choice("direction", direction, DIRECTIONS)
    kernel = resolve_kernel(path.default_kernel if options.kernel is None else options.kernel,
                            path, **options.kernel_options)
    check_fixed_parameters(options.tuning.fixed, kernel)
    check = options.tuning.auto_variance is not None and direction == "forward"
    check_run_memory(path, kernel, draws=draws, chains=chains, run_chains=chains + check,
                     num_steps=num_steps)
    return kernel


def _compile(path, plan: _Plan, run_shape: bool = True) -> CompiledLoop:
    """The compiled loop, its compiles for the run's shapes and the pilot's started (JAX
    compiles per shape, in the background while the pilot runs); the run's shape only
    with ``run_shape`` (:func:`_precompile_run`)."""
    loop = compiled_loop(path, plan.kernel, plan.backend)
    field_dtypes = [f.dtype or path.dtype for f in plan.kernel.state]
    if needs_pilot(plan.kernel.parameters, plan.options.tuning):  # first: it runs first
        loop.precompile(plan.options.tuning.num_pilot, 1, path.num_dims, field_dtypes,
                        plan.path_parameters)
    if run_shape:
        _precompile_run(loop, path, plan)
    return loop


def _precompile_run(loop: CompiledLoop, path, plan: _Plan) -> None:
    """Start the compile of the run's shape (in the background where the loop compiles per
    shape); none where the run goes in blocks of the pilot's shape."""
    if plan.block is not None:
        return
    field_dtypes = [f.dtype or path.dtype for f in plan.kernel.state]
    loop.precompile(plan.draws * plan.run_chains, plan.run_chains, path.num_dims,
                    field_dtypes, plan.path_parameters)


@dataclass
class _Pass:
    """One pass of the main run through its schedule."""

    betas: np.ndarray  # in run order
    arrays: dict[str, np.ndarray]
    state: dict
    log_w: np.ndarray
    stats: dict[str, list]

    @property
    def num_steps(self) -> int:
        return self.betas.size - 1


def _start(path, plan: _Plan, betas: np.ndarray, values: dict, base_rng):
    r"""A pass's schedule and values in run order, and its particles' starting positions and
    log weights: the base's draws (one generator per chain) and :math:`\log Z_0` forward;
    the given states and 0 backward, where step j runs at :math:`\beta_{K-j}` with the
    values tuned there (:math:`\beta_0`: :math:`\beta_1`'s)."""
    if plan.direction == "forward":
        chain_rngs = base_rng.spawn(plan.run_chains)  # spawned even when unused: same streams
        positions = plan.initial_positions
        if positions is None:
            positions = np.concatenate([path.sample_base(r, plan.draws) for r in chain_rngs])
        log_w = np.full(plan.draws * plan.run_chains, float(path.log_base_normalizer))
        return betas, values, positions, log_w
    order = np.maximum(np.arange(betas.size - 1)[::-1] - 1, 0)
    return (betas[::-1].copy(), {k: v[order] for k, v in values.items()},
            plan.initial_positions, np.zeros(plan.num_particles))


def _anneal(loop: CompiledLoop | None, path, plan: _Plan, betas: np.ndarray, values: dict,
            base_rng, run_rng, progress, stage: Stage, pass_index: int = 0) -> _Pass:
    """Anneal all chains (the check chain included) through ``betas``, chunk by chunk,
    writing ``stage`` after each chunk (or resuming from its stored state)."""
    num_steps = betas.size - 1
    progress("annealing", 0, num_steps)
    run_betas, run_values, positions, log_w = _start(path, plan, betas, values, base_rng)
    tuned = loop.parameters if loop is not None else plan.kernel.parameters
    arrays = step_arrays(tuned, run_betas, run_values, plan.options.tuning.fixed)
    stored = stage.resume(pass_index)
    if stored is None:
        base_rng, state = loop.init(base_rng, positions, {k: v[0] for k, v in arrays.items()},
                                    plan.path_parameters)
        stats: dict[str, list] = {}
        done = 0
    else:
        state, log_w, run_rng = stored["state"], stored["log_w"], stored["rng"]
        stats = {k: [v] for k, v in stored["stats"].items()}
        done = stored["done_steps"]
        progress("annealing", done)
    chunks = _chunks(num_steps, plan.num_chunks, loop.chunk_length if loop else None)
    block = plan.block if num_steps <= MAX_BLOCKED_STEPS else None
    prefetch_pareto_fit()  # the weight check's import, while the loop runs
    for start, stop in itertools.pairwise(chunks):
        if stop <= done:
            continue
        run_rng, state, log_w, chunk_stats = loop.run(
            run_rng, {k: v[start:stop] for k, v in arrays.items()}, state, log_w,
            plan.run_chains, plan.path_parameters, block=block)
        for name, value in chunk_stats.items():
            stats.setdefault(name, []).append(value)
        stage.save_pass(pass_index, betas, values, state, log_w, stats, run_rng, stop)
        progress("annealing", stop)
    return _Pass(run_betas, arrays, state, np.asarray(log_w), stats)


def _result(path, plan: _Plan, run: _Pass, timings: dict, auto: dict | None) -> AnnealingRun:
    """The reported chains of the last pass (the check chain, the last, is dropped: the
    result holds the chains that did not decide), with the run's settings."""
    chains, draws, d = plan.chains, plan.draws, path.num_dims
    step_stats = {name: np.concatenate(v, axis=0).T[:chains] for name, v in run.stats.items()}
    if plan.direction == "forward":
        step_stats["log_z"] = step_stats["log_z"] + path.log_base_normalizer
    log_w = run.log_w[:plan.num_particles].reshape(chains, draws)
    tuning, kernel = plan.options.tuning, plan.kernel
    settings = {"kernel": kernel.name, "kernel_structure": repr(kernel.structure),
                "backend": plan.backend, "num_steps": run.num_steps,
                "direction": plan.direction, "mass_matrix": tuning.mass_matrix,
                "num_bands": tuning.num_bands, "num_pilot": tuning.num_pilot, **(auto or {}),
                "tuned": ",".join(sorted(p.name for p in kernel.parameters
                                         if p.tuning and p.name not in tuning.fixed)),
                "ess": effective_sample_size(log_w)}
    return AnnealingRun(
        positions=np.asarray(run.state["position"])[:plan.num_particles].reshape(chains, draws,
                                                                                 d),
        log_weights=log_w,
        betas=run.betas,
        step_stats=step_stats,
        parameters={k: v for k, v in run.arrays.items() if k not in ("beta", "delta_beta")},
        log_base_normalizer=float(path.log_base_normalizer),
        direction=plan.direction,
        timings=timings,
        settings=settings,
    )
