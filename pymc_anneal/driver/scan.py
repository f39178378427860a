r"""The annealing loop: one step as a PyTensor graph, compiled into a loop by the backend
(:func:`pymc_anneal.backends.compile_loop`), and how to call it.

One step k of the loop, on all particles of all chains at once (Neal 2001):

.. math:: \log w \mathrel{+}= \log f_{\beta_k}(x) - \log f_{\beta_k - \delta_k}(x),
          \qquad x \sim T_k(\cdot \mid x),

with the increment from the path (:meth:`weight_increment`) and the transition :math:`T_k`
from the kernel (``step``), which leaves :math:`f_{\beta_k}` invariant. A step with
:math:`\delta_k = 0` adds nothing. The kernel's per-step parameters travel through the loop
as sequences, in the order the kernel declares them; the builder reads no kernel's
parameter or state by name. Per-step statistics (acceptance, divergences, running log Z,
weight ESS and the variance of the log-density slope, per chain) are reduced inside the
loop, so no (steps x particles) array is ever stored.

**What a backend cannot compile** is refused with the reason, as early as it is known
(:func:`build_loop`, :meth:`CompiledLoop.precompile`): a gradient kernel on a log density
without a gradient (:class:`NoGradientError`, found while the step's graph is built, before
any compile), and a graph that JAX cannot trace with static shapes
(:class:`BackendUnsupportedError`): a ``pytensor.scan`` in the log density, which the loop
vectorizes over the particles (seen in the graph, before JAX compiles anything), an op
without a JAX implementation (found by PyTensor's JAX conversion), or a shape computed inside
the graph (found when JAX traces the loop, which :meth:`CompiledLoop.precompile` does before
the run). :func:`pymc_anneal.driver.cache.choose_loop` chooses another kernel or backend on
them.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.random.type import random_generator_type

from pymc_anneal.backends import (
    PADDING,
    CompiledFunction,
    compile_loop,
    compile_one_off,
    static_loop_length,
    without_creation_traces,
)
from pymc_anneal.estimators import _logsumexp
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.kernels.base import Kernel
from pymc_anneal.paths import one_off_graph
from pymc_anneal.validation import missing_gradient

__all__ = ["BLOCK_STAT_NAMES", "BackendUnsupportedError", "CompiledLoop", "NoGradientError",
           "backend_message", "build_loop", "combine_blocks", "jax_failure", "jax_obstacle",
           "pad_steps"]


class BackendUnsupportedError(AnnealingError):
    """A backend cannot compile a path's annealing loop; ``cause`` says why (for JAX: a
    ``pytensor.scan`` vectorized over the particles, an op without a JAX implementation, a
    shape computed inside the graph) and ``backend`` which one it is."""

    def __init__(self, message: str, *, backend: str, cause: str):
        super().__init__(message)
        self.backend, self.cause = backend, cause


class NoGradientError(AnnealingError):
    """A kernel that needs gradients on a log density without one; ``cause`` is PyTensor's
    reason (e.g. "pullback not implemented for ODESolveOp")."""

    def __init__(self, message: str, *, cause: str):
        super().__init__(message)
        self.cause = cause


SCAN_CAUSE = ("the log density contains a Scan (a pytensor.scan loop), vectorized over the "
              "particles, and JAX needs a scan's number of steps as a constant there")
"""Why a ``Blockwise`` of a ``Scan`` fails on JAX: PyTensor's JAX ``Blockwise`` runs its core
op under ``jnp.vectorize``, where every input, the scan's number of steps included, is a
tracer, and its JAX ``Scan`` slices its sequences with that number (``IndexError: Array slice
indices must have static start/stop/step``)."""


def jax_obstacle(outputs) -> str | None:
    """What certainly stops JAX from tracing the graph of ``outputs`` (inner graphs
    included), or None: so far a ``Scan`` vectorized over a batch (:data:`SCAN_CAUSE`). A
    walk over the graph's nodes (milliseconds); a graph it passes can still fail in JAX's
    conversion or trace (:func:`jax_failure` reads those failures)."""
    from pytensor.graph.traversal import applys_between, graph_inputs
    from pytensor.scan.op import Scan
    from pytensor.tensor.blockwise import Blockwise

    pending, seen = [list(outputs)], set()
    while pending:
        graph = pending.pop()
        for node in applys_between(list(graph_inputs(graph)), graph):
            op = node.op
            core = op.core_op if isinstance(op, Blockwise) else op
            if isinstance(op, Blockwise) and isinstance(core, Scan):
                return SCAN_CAUSE
            inner = getattr(core, "fgraph", None)  # Scan, OpFromGraph: look inside once
            if inner is not None and id(inner) not in seen:
                seen.add(id(inner))
                pending.append(list(inner.outputs))
    return None


_JAX_LINK = re.compile(r"[/\\]pytensor[/\\]link[/\\]jax[/\\]")
_NO_CONVERSION = re.compile(r"No JAX conversion for the given `Op`: (.+)")
_DYNAMIC = ("concrete", "static", "Tracer")


def _jax_ops(error: BaseException) -> list[str]:
    """The ops whose PyTensor JAX implementations ``error``'s traceback went through,
    outermost first (``jax_funcify_Alloc.<locals>.alloc`` -> ``"Alloc"``)."""
    names, tb = [], error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if _JAX_LINK.search(code.co_filename):
            match = re.match(r"jax_funcify_(\w+)", getattr(code, "co_qualname", code.co_name))
            if match and match.group(1) != "FunctionGraph":
                names.append(match.group(1))
        tb = tb.tb_next
    return names


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}".strip(": ")


def backend_message(backend: str, cause: str, detail: str | None = None, *,
                    argument: str = "backend", what: str = "this annealing loop") -> str:
    """The message of a :class:`BackendUnsupportedError`: the cause, PyTensor's or JAX's own
    words, and the fix (``argument``: the name of the caller's backend argument; ``what``:
    the compiled function)."""
    detail = f" ({detail})" if detail else ""
    return (f'{argument}="{backend}" cannot compile {what}: {cause}{detail}. Run it with '
            f'{argument}="numba" (or {argument}="c"); {argument}="auto" does so by itself.')


def jax_failure(error: BaseException, *, tracing: bool = False, argument: str = "backend",
                what: str = "this annealing loop") -> BackendUnsupportedError | None:
    """``error``, raised while PyTensor converted a graph to JAX or JAX traced it, as the
    :class:`BackendUnsupportedError` that names the op JAX could not handle; None where
    ``error`` did not come from the graph's JAX implementation (a JAX run-time error, say),
    unless ``tracing`` (the error came from tracing the loop, which fails only on the
    graph: then the cause is named as well as it can be). ``argument`` and ``what`` as for
    :func:`backend_message`."""
    if isinstance(error, AnnealingError | MemoryError):
        return None
    detail, ops = _first_line(error), _jax_ops(error)
    converting = _NO_CONVERSION.search(str(error))
    if converting:
        cause = f"the op {converting.group(1).strip()} has no JAX implementation"
    elif ops and ops[-1] == "Scan":
        cause = SCAN_CAUSE
    elif ops and any(word in str(error) for word in _DYNAMIC):
        cause = (f"the op {ops[-1]} needs a shape, an index or a number of steps that is "
                 "computed inside the graph, and JAX traces the loop with static shapes")
    elif ops:
        cause = f"JAX failed to convert or trace the op {ops[-1]}"
    elif tracing:
        cause = "JAX failed to trace the loop"
    else:
        return None
    return BackendUnsupportedError(
        backend_message("jax", cause, detail, argument=argument, what=what), backend="jax",
        cause=cause)

STAT_NAMES = ("acceptance_rate", "divergences", "log_z", "ess", "log_ratio_var")
"""Per-step statistics of a chunk, each of shape (steps, chains)."""

BLOCK_STAT_NAMES = ("log_ratio_mean",)
"""Per-step statistics that a loop computes only to combine the blocks of a chain
(:func:`combine_blocks`), and that :meth:`CompiledLoop.run` does not return: the weighted
mean of the slope, whose chain's variance needs each block's mean."""


def _logsumexp_rows(x):
    m = pt.max(x, axis=1, keepdims=True)
    m = pt.switch(pt.isfinite(m), m, 0.0)
    return pt.log(pt.exp(x - m).sum(axis=1)) + m[:, 0]


def _symbolic_parameters(path, static: bool = False):
    """Symbolic inputs for the path's parameters: of their own shapes if ``static`` (a
    backend that needs static shapes cannot compute one from a parameter's shape at run
    time), else of any."""
    return {name: pt.tensor(name, dtype=value.dtype,
                            shape=value.shape if static else (None,) * value.ndim)
            for name, value in sorted(path.parameters.items())}


def _chain_statistics(per_chain, slope, info):
    """Per-chain statistics of a step; ``per_chain`` holds the log weights as (chains,
    draws), and the per-particle values are reshaped to it (by shape, which JAX can trace)."""
    chains = per_chain.shape
    lse = _logsumexp_rows(per_chain)
    lse2 = _logsumexp_rows(2.0 * per_chain)
    log_z = lse - pt.log(per_chain.shape[1].astype("float64"))
    ess = pt.switch(pt.isfinite(lse), pt.exp(2.0 * lse - lse2), 0.0)
    accept = info.acceptance_rate.reshape(chains).mean(axis=1)
    diverge = info.is_divergent.reshape(chains).sum(axis=1)
    # Var_{beta_k}(d log f / d beta) per chain, from the weighted pre-transition particles:
    # the schedule's "speed" (thermodynamic length element sd * d beta)
    weights = pt.exp(per_chain - lse[:, None])
    ratio = slope.reshape(chains)
    ratio = pt.switch(pt.isfinite(ratio) & (weights > 0), ratio, 0.0)
    mean = (weights * ratio).sum(axis=1)
    ratio_var = (weights * (ratio - mean[:, None]) ** 2).sum(axis=1)
    ratio_var = pt.switch(pt.isfinite(lse), ratio_var, 0.0)
    mean = pt.switch(pt.isfinite(lse), mean, 0.0)
    extra = [pt.as_tensor(x).astype("float64").reshape(chains).mean(axis=1)
             for x in info.extra]
    return accept, diverge.astype("int64"), log_z, ess, ratio_var, mean, *extra


def _chunk_graph(path, kernel: Kernel, chunk_length: int | None) -> tuple:
    """One step of the loop as a graph: the arguments of
    :func:`pymc_anneal.backends.compile_loop` that loops ``(rng, beta, delta_beta, *kernel
    params, *state, log_weight, *path params) -> (rng, *state, log_weight, *statistics)``,
    with ``log_weight`` of shape (chains, draws).

    The number of particles and chains is symbolic, and so is the number of steps unless
    ``chunk_length`` fixes it (the backend needs static shapes: then the path parameters'
    shapes are static too): one compiled function serves every batch size (and, for a path
    shared by structure, every model size).
    """
    shared = path.compile_key()[0] is None
    d = None if shared else path.num_dims
    rng = random_generator_type("rng")
    beta, delta = pt.dscalar("beta"), pt.dscalar("delta_beta")
    param_in = [pt.tensor(p.name, dtype="float64", shape=(d,) if p.per_dimension else ())
                for p in kernel.parameters]
    state_in = [pt.tensor(f.name, dtype=f.dtype or path.dtype,
                          shape=(None, d) if f.per_dimension else (None,))
                for f in kernel.state]
    path_in = _symbolic_parameters(path, static=chunk_length is not None)
    log_w = pt.tensor("log_weight", dtype="float64", shape=(None, None))

    params = dict(zip(kernel.parameter_names, param_in))
    path_params = dict(path_in)
    state = kernel.state_type(*state_in)
    moving = pt.neq(delta, 0.0)
    increment = path.weight_increment(state, beta, delta, path_params).reshape(log_w.shape)
    new_log_w = log_w + pt.switch(moving, increment, 0.0)
    slope = pt.switch(moving, increment / pt.switch(moving, delta, 1.0), 0.0)
    rng_out, new_state, info = kernel.step(rng, state, beta, params, path_params)
    stats = _chain_statistics(new_log_w, slope, info)
    return (rng, [beta, delta, *param_in], [*state_in, log_w], list(path_in.values()),
            [rng_out, *new_state, new_log_w, *stats])


def _build_init(path, kernel: Kernel) -> CompiledFunction:
    """Compile ``(rng, position, *first step's kernel params, *path params) -> (rng, *state)``."""
    rng = random_generator_type("rng")
    position = pt.matrix("position", dtype=path.dtype)
    params = {p.name: (pt.dvector if p.per_dimension else pt.dscalar)(p.name)
              for p in kernel.parameters}
    path_in = _symbolic_parameters(path)
    with one_off_graph():  # a model path answers with its densities compiled once
        rng_out, state = kernel.init(rng, position, params, path_in)
    # compiled at the first init: the chunk's compile (JAX's, in the background) goes first
    return compile_one_off([rng, position, *params.values(), *path_in.values()],
                           [rng_out, *state], lazy=True)


def pad_steps(parameters, arrays: dict[str, np.ndarray], length: int) -> dict:
    """Pad per-step arrays to ``length`` steps with steps that change nothing.

    A padding step has ``delta_beta = -0.0`` (:data:`~pymc_anneal.backends.PADDING`: the JAX
    loop skips it, at no cost; read as a number it is zero, no weight increment) and every
    kernel parameter at its declared ``no_op`` value (or its last value), which makes the
    transition the identity where it runs: for HMC a zero-length move that is accepted,
    whose momentum's double negation cancels; for Metropolis and MALA a proposal at the
    current point. A kernel with no parameters (a Gibbs sweep), where the step runs (not on
    JAX), makes one more sweep at the last temperature, which leaves that temperature's
    distribution invariant and the weights unchanged: it costs time but not correctness.
    (Plain HMC redraws its momentum, which it never reads before drawing it again.)
    """
    extra = length - arrays["beta"].size
    if extra <= 0:
        return arrays
    fill = {"beta": arrays["beta"][-1], "delta_beta": PADDING}  # -0.0: the JAX loop skips it
    for p in parameters:
        fill[p.name] = arrays[p.name][-1] if p.no_op is None else p.no_op
    return {k: np.concatenate([v, np.broadcast_to(fill[k], (extra, *v.shape[1:]))])
            for k, v in arrays.items()}


@dataclass
class CompiledLoop:
    """A kernel's compiled init and chunk functions for one path structure.

    It holds no reference to the path or the kernel (whose functions close over the path):
    the compile cache keeps it as long as the path's owner lives, and the path's parameter
    values are passed to each call.
    """

    parameters: tuple  # the kernel's StepParameters, in the loop's input order
    field_names: tuple[str, ...]  # the kernel's state fields, in the loop's input order
    init_fn: CompiledFunction
    chunk_fn: CompiledFunction
    chunk_length: int | None  # static steps per call (JAX), else None (any number)
    stat_names: tuple[str, ...] = STAT_NAMES  # and the kernel's own statistics
    field_per_dimension: tuple[bool, ...] = ()  # each state field: (N, d) or (N,)
    backend: str | None = None
    failure: BackendUnsupportedError | None = field(default=None, repr=False)
    """Set when the backend failed to trace the loop: every later use raises it at once."""

    @property
    def parameter_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    def init(self, rng, positions, params: dict, path_parameters: list):
        """The kernel's state at ``positions`` (a dict), with the step's ``params``."""
        out = self.init_fn(rng, positions, *(params[n] for n in self.parameter_names),
                           *path_parameters)
        return out[0], dict(zip(self.field_names, out[1:]))

    def precompile(self, num_particles: int, num_chains: int, num_dims: int, field_dtypes,
                   path_parameters: list) -> None:
        """Start compiling the loop for a run of ``num_particles`` in ``num_chains`` chains
        (a loop that compiles per shape, JAX's, does it in the background; others need
        nothing). ``field_dtypes``: the dtype of each state field, in loop order.

        JAX traces the loop here, before the compile starts in the background: a graph that
        it cannot trace raises :class:`BackendUnsupportedError` now, before anything runs."""
        if self.failure is not None:
            raise self.failure
        if self.chunk_length is None:
            return
        def like(shape, dtype="float64"):  # only shapes and dtypes count: no allocation
            return np.broadcast_to(np.zeros((), dtype), shape)

        steps = self.chunk_length
        sequences = [like(steps), like(steps),
                     *(like((steps, num_dims) if p.per_dimension else steps)
                       for p in self.parameters)]
        state = [like((num_particles, num_dims) if per_dimension else num_particles, dtype)
                 for per_dimension, dtype in zip(self.field_per_dimension, field_dtypes)]
        log_w = like((num_chains, num_particles // num_chains))
        try:
            self.chunk_fn.precompile(*sequences, *state, log_w, *path_parameters)
        except Exception as error:  # noqa: BLE001 - a trace fails only on the graph
            failure = jax_failure(error, tracing=True) if self.backend == "jax" else None
            if failure is None:
                raise
            self.failure = failure
            raise failure from error

    def run(self, rng, arrays: dict, state: dict, log_w, num_chains: int,
            path_parameters: list, block: int | None = None):
        """Run the steps in ``arrays`` (beta, delta_beta and the kernel's parameters).

        ``log_w`` is flat (particles,), the particles of chain c being the c-th block of
        ``particles / num_chains``. Returns ``(rng, state, log_w, stats)`` with each
        statistic of shape (steps, chains).

        ``block``: where it divides each chain's particles, they go through the loop
        ``block`` at a time, one chain's block per call (chain by chain, in order), and
        each chain's statistics are combined from its blocks' (:func:`combine_blocks`):
        a loop that compiles per shape (JAX's) then runs the whole run on the shape it
        was compiled for for the pilot, which has one chain of ``block`` particles.
        """
        if self.failure is not None:
            raise self.failure
        log_w = np.asarray(log_w).reshape(num_chains, -1)
        draws = log_w.shape[1]
        pieces = self._pieces(arrays)
        if block is None or draws % block or (num_chains == 1 and block == draws):
            rng, state, log_w, stats = self._calls(rng, pieces, state, log_w,
                                                   path_parameters)
            return rng, state, log_w.reshape(-1), self._public(stats)
        states, weights, block_stats = [], [], []
        flat = log_w.reshape(-1)
        for start in range(0, flat.size, block):
            rows = slice(start, start + block)
            rng, part, part_w, part_stats = self._calls(
                rng, pieces, {k: v[rows] for k, v in state.items()},
                flat[rows].reshape(1, block), path_parameters)
            states.append(part)
            weights.append(part_w.reshape(-1))
            block_stats.append(part_stats)
        state = {k: np.concatenate([np.asarray(part[k]) for part in states])
                 for k in self.field_names}
        stats = combine_blocks(block_stats, num_chains, block)
        return rng, state, np.concatenate(weights), self._public(stats)

    def _pieces(self, arrays: dict) -> list:
        """The calls' step arrays (padded to the static length where there is one), each
        with the number of its steps that are not padding."""
        length = arrays["beta"].size
        step = self.chunk_length or max(length, 1)
        pieces = []
        for start in range(0, length, step):
            piece = {k: v[start:start + step] for k, v in arrays.items()}
            if self.chunk_length is not None:
                piece = pad_steps(self.parameters, piece, self.chunk_length)
            pieces.append((piece, min(step, length - start)))
        return pieces

    def _calls(self, rng, pieces: list, state: dict, log_w, path_parameters: list):
        """``pieces`` through the loop from ``state`` and ``log_w`` (chains, draws)."""
        num_state = len(self.field_names)
        num_chains = log_w.shape[0]
        collected: dict[str, list] = {name: [] for name in self.stat_names}
        for piece, taken in pieces:
            try:
                out = self.chunk_fn(
                    rng, piece["beta"], piece["delta_beta"],
                    *(piece[n] for n in self.parameter_names),
                    *(state[f] for f in self.field_names), log_w, *path_parameters,
                )
            except Exception as error:  # a shape not precompiled is traced at its first call
                failure = jax_failure(error) if self.backend == "jax" else None
                if failure is None:
                    raise
                self.failure = failure
                raise failure from error
            rng, log_w = out[0], out[1 + num_state]
            state = dict(zip(self.field_names, out[1:1 + num_state]))
            for name, o in zip(self.stat_names, out[2 + num_state:]):
                collected[name].append(np.asarray(o)[:taken])
        stats = {name: (np.concatenate(v) if v else np.zeros((0, num_chains)))
                 for name, v in collected.items()}
        return rng, state, np.asarray(log_w), stats

    @staticmethod
    def _public(stats: dict) -> dict:
        return {k: v for k, v in stats.items() if k not in BLOCK_STAT_NAMES}


def combine_blocks(block_stats: list[dict], num_chains: int, block: int) -> dict:
    """The per-chain statistics of chains whose particles ran in blocks of ``block``:
    ``block_stats`` holds each block's statistics, (steps, 1) each, chain by chain (every
    chain the same number of blocks). What :func:`_chain_statistics` gives on a whole
    chain, to rounding: means (the acceptance rate, a kernel's own statistics) are the
    blocks' means, divergences their sum; the log-mean-exp of the weights, their ESS
    (from each block's sums of the weights and of their squares) and the weighted variance
    of the slope (the law of total variance over the blocks, weighted by their weights'
    sums, from each block's weighted mean) are pooled exactly."""
    num_blocks = len(block_stats) // num_chains

    def stacked(name):  # (steps, chains, blocks)
        return np.concatenate([s[name] for s in block_stats], axis=1).reshape(
            -1, num_chains, num_blocks)

    pooled = {"log_z", "ess", "log_ratio_var", *BLOCK_STAT_NAMES}
    out = {name: (stacked(name).sum(axis=2) if name == "divergences"
                  else stacked(name).mean(axis=2))
           for name in block_stats[0] if name not in pooled}
    lse_b = stacked("log_z") + np.log(block)  # each block's log-sum-exp of the weights
    ess = stacked("ess")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lse = _logsumexp(lse_b, axis=2)
        finite = np.isfinite(lse)
        lse2 = _logsumexp(np.where(ess > 0, 2.0 * lse_b - np.log(ess), -np.inf), axis=2)
        out["log_z"] = lse - np.log(float(block * num_blocks))
        out["ess"] = np.where(finite, np.exp(2.0 * lse - lse2), 0.0)
        share = np.where(np.isfinite(lse_b) & finite[..., None],
                         np.exp(lse_b - np.where(finite, lse, 0.0)[..., None]), 0.0)
        mean_b = np.where(share > 0, stacked("log_ratio_mean"), 0.0)
        var_b = np.where(share > 0, stacked("log_ratio_var"), 0.0)
        mean = (share * mean_b).sum(axis=2)
        var = (share * (var_b + (mean_b - mean[..., None]) ** 2)).sum(axis=2)
    out["log_ratio_var"] = np.where(finite, var, 0.0)
    out["log_ratio_mean"] = np.where(finite, mean, 0.0)
    return out


@without_creation_traces
def build_loop(path, kernel: Kernel, backend: str) -> CompiledLoop:
    """Compile the annealing loop of ``kernel`` on ``path`` (see :func:`_chunk_graph`).

    Raises
    ------
    NoGradientError
        The kernel differentiates the log density, which has no gradient (found while the
        graphs are built, before anything is compiled).
    BackendUnsupportedError
        On JAX: a graph that JAX certainly cannot trace (:func:`jax_obstacle`, before any
        compile), or one that PyTensor cannot convert to JAX (:func:`jax_failure`). The
        warnings of a conversion that fails are dropped with it (PyTensor's "Jax
        implementation will likely fail"); those of one that works are raised again.
    """
    chunk_length = static_loop_length(backend)
    try:
        init_fn = _build_init(path, kernel)
        graph = _chunk_graph(path, kernel, chunk_length)
    except (NotImplementedError, TypeError) as error:  # NullTypeGradError is a TypeError
        cause = missing_gradient(path)
        if cause is None:
            raise
        raise NoGradientError(_no_gradient_message(path, kernel, cause),
                              cause=cause) from error
    if backend != "jax":
        chunk_fn = compile_loop(*graph, backend, chunk_length, padding=1)
    else:
        obstacle = jax_obstacle(graph[-1])
        if obstacle is not None:
            raise BackendUnsupportedError(backend_message("jax", obstacle), backend="jax",
                                          cause=obstacle)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                chunk_fn = compile_loop(*graph, backend, chunk_length, padding=1)
            except Exception as error:  # noqa: BLE001 - read by jax_failure, else raised
                failure = jax_failure(error)
                if failure is None:
                    raise
                raise failure from error
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return CompiledLoop(kernel.parameters, tuple(f.name for f in kernel.state), init_fn,
                        chunk_fn, chunk_length,
                        STAT_NAMES + BLOCK_STAT_NAMES + tuple(kernel.statistics),
                        tuple(f.per_dimension for f in kernel.state), backend)


def _no_gradient_message(path, kernel: Kernel, cause: str) -> str:
    fix = ('Use kernel="metropolis" (random-walk Metropolis needs no gradient; '
           'kernel="auto" chooses it by itself)')
    if path.discrete_dims:  # only an HMC kernel moves annealed discrete coordinates
        fix = ('The annealed discrete variables need an HMC kernel: sum them out '
               '(discrete="sum") and use kernel="metropolis"')
    return (f"the {kernel.name!r} kernel needs the gradient of the log density with respect "
            f"to the position, and this one has none: {cause}. {fix}, or give the op a "
            "gradient (its pullback).")
