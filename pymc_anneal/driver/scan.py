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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.random.type import random_generator_type

from pymc_anneal.backends import (
    CompiledFunction,
    compile_loop,
    compile_one_off,
    static_loop_length,
    without_creation_traces,
)
from pymc_anneal.kernels.base import Kernel

__all__ = ["CompiledLoop", "build_loop", "pad_steps"]

STAT_NAMES = ("acceptance_rate", "divergences", "log_z", "ess", "log_ratio_var")
"""Per-step statistics of a chunk, each of shape (steps, chains)."""


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
    extra = [pt.as_tensor(x).astype("float64").reshape(chains).mean(axis=1)
             for x in info.extra]
    return accept, diverge.astype("int64"), log_z, ess, ratio_var, *extra


def _build_chunk(path, kernel: Kernel, backend: str, chunk_length: int | None) -> CompiledFunction:
    """Compile ``(rng, beta, delta_beta, *kernel params, *state, log_weight, *path params) ->
    (rng, *state, log_weight, *statistics)``, with ``log_weight`` of shape (chains, draws).

    One step of the loop is built here as a graph, and the backend loops it
    (:func:`pymc_anneal.backends.compile_loop`). The number of particles and chains is
    symbolic, and so is the number of steps unless ``chunk_length`` fixes it (the backend
    needs static shapes: then the path parameters' shapes are static too): one compiled
    function serves every batch size (and, for a path shared by structure, every model size).
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
    return compile_loop(rng, [beta, delta, *param_in], [*state_in, log_w],
                        list(path_in.values()), [rng_out, *new_state, new_log_w, *stats],
                        backend, chunk_length)


def _build_init(path, kernel: Kernel) -> CompiledFunction:
    """Compile ``(rng, position, *first step's kernel params, *path params) -> (rng, *state)``."""
    rng = random_generator_type("rng")
    position = pt.matrix("position", dtype=path.dtype)
    params = {p.name: (pt.dvector if p.per_dimension else pt.dscalar)(p.name)
              for p in kernel.parameters}
    path_in = _symbolic_parameters(path)
    rng_out, state = kernel.init(rng, position, params, path_in)
    # compiled at the first init: the chunk's compile (JAX's, in the background) goes first
    return compile_one_off([rng, position, *params.values(), *path_in.values()],
                           [rng_out, *state], lazy=True)


def pad_steps(parameters, arrays: dict[str, np.ndarray], length: int) -> dict:
    """Pad per-step arrays to ``length`` steps with steps that change nothing.

    A padding step has ``delta_beta = 0`` (no weight increment) and every kernel parameter at
    its declared ``no_op`` value (or its last value), which makes the transition the
    identity: for HMC a zero-length move that is accepted, whose momentum's double negation
    cancels; for Metropolis and MALA a proposal at the current point. A kernel with no
    parameters (a Gibbs sweep) runs one more sweep at the last temperature, which leaves
    that temperature's distribution invariant and the weights unchanged: it costs time but
    not correctness. (Plain HMC redraws its momentum, which it never reads before drawing it
    again.)
    """
    extra = length - arrays["beta"].size
    if extra <= 0:
        return arrays
    fill = {"beta": arrays["beta"][-1], "delta_beta": 0.0}
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
        nothing). ``field_dtypes``: the dtype of each state field, in loop order."""
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
        self.chunk_fn.precompile(*sequences, *state, log_w, *path_parameters)

    def run(self, rng, arrays: dict, state: dict, log_w, num_chains: int, path_parameters: list):
        """Run the steps in ``arrays`` (beta, delta_beta and the kernel's parameters).

        ``log_w`` is flat (particles,), the particles of chain c being the c-th block of
        ``particles / num_chains``. Returns ``(rng, state, log_w, stats)`` with each
        statistic of shape (steps, chains).
        """
        length = arrays["beta"].size
        num_state = len(self.field_names)
        step = self.chunk_length or max(length, 1)
        log_w = np.asarray(log_w).reshape(num_chains, -1)
        pieces: dict[str, list] = {name: [] for name in self.stat_names}
        for start in range(0, length, step):
            piece = {k: v[start:start + step] for k, v in arrays.items()}
            if self.chunk_length is not None:
                piece = pad_steps(self.parameters, piece, self.chunk_length)
            out = self.chunk_fn(
                rng, piece["beta"], piece["delta_beta"],
                *(piece[n] for n in self.parameter_names),
                *(state[f] for f in self.field_names), log_w, *path_parameters,
            )
            rng, log_w = out[0], out[1 + num_state]
            state = dict(zip(self.field_names, out[1:1 + num_state]))
            taken = min(step, length - start)
            for name, o in zip(self.stat_names, out[2 + num_state:]):
                pieces[name].append(np.asarray(o)[:taken])
        stats = {name: (np.concatenate(v) if v else np.zeros((0, num_chains)))
                 for name, v in pieces.items()}
        return rng, state, np.asarray(log_w).reshape(-1), stats


@without_creation_traces
def build_loop(path, kernel: Kernel, backend: str) -> CompiledLoop:
    """Compile the annealing loop of ``kernel`` on ``path`` (see :func:`_build_chunk`)."""
    chunk_length = static_loop_length(backend)
    return CompiledLoop(kernel.parameters, tuple(f.name for f in kernel.state),
                        _build_init(path, kernel),
                        _build_chunk(path, kernel, backend, chunk_length),
                        chunk_length, STAT_NAMES + tuple(kernel.statistics),
                        tuple(f.per_dimension for f in kernel.state))
