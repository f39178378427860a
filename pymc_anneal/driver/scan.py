r"""The annealing loop as one compiled PyTensor ``scan``, and how to call it.

One step k of the loop, on all particles of all chains at once (Neal 2001):

.. math:: \log w \mathrel{+}= \log f_{\beta_k}(x) - \log f_{\beta_k - \delta_k}(x),
          \qquad x \sim T_k(\cdot \mid x),

with the increment from the path (:meth:`weight_increment`) and the transition :math:`T_k`
from the kernel (``step``), which leaves :math:`f_{\beta_k}` invariant. A step with
:math:`\delta_k = 0` adds nothing. The kernel's per-step parameters travel through the scan
as one structure, in the order the kernel declares them; the builder reads no kernel's
parameter or state by name. Per-step statistics (acceptance, divergences, running log Z,
weight ESS and the variance of the log-density slope, per chain) are reduced inside the
loop, so no (steps x particles) array is ever stored.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.tensor.random.type import random_generator_type

from pymc_anneal.backends import CompiledFunction, compile_function, compile_one_off
from pymc_anneal.kernels.base import Kernel

__all__ = ["CompiledLoop", "build_loop", "pad_steps"]

STAT_NAMES = ("acceptance_rate", "divergences", "log_z", "ess", "log_ratio_var")
"""Per-step statistics of a chunk, each of shape (steps, chains)."""


def _logsumexp_rows(x):
    m = pt.max(x, axis=1, keepdims=True)
    m = pt.switch(pt.isfinite(m), m, 0.0)
    return pt.log(pt.exp(x - m).sum(axis=1)) + m[:, 0]


def _symbolic_parameters(path, shaped: bool):
    """Symbolic inputs for the path's parameters (static shapes only if ``shaped``)."""
    return {name: pt.tensor(name, dtype=value.dtype,
                            shape=value.shape if shaped else (None,) * value.ndim)
            for name, value in sorted(path.parameters.items())}


def _chain_statistics(log_w, slope, info, chains):
    per_chain = log_w.reshape((chains, -1))
    lse = _logsumexp_rows(per_chain)
    lse2 = _logsumexp_rows(2.0 * per_chain)
    log_z = lse - pt.log(per_chain.shape[1].astype("float64"))
    ess = pt.switch(pt.isfinite(lse), pt.exp(2.0 * lse - lse2), 0.0)
    accept = info.acceptance_rate.reshape((chains, -1)).mean(axis=1)
    diverge = info.is_divergent.reshape((chains, -1)).sum(axis=1)
    # Var_{beta_k}(d log f / d beta) per chain, from the weighted pre-transition particles:
    # the schedule's "speed" (thermodynamic length element sd * d beta)
    weights = pt.exp(per_chain - lse[:, None])
    ratio = slope.reshape((chains, -1))
    ratio = pt.switch(pt.isfinite(ratio) & (weights > 0), ratio, 0.0)
    mean = (weights * ratio).sum(axis=1)
    ratio_var = (weights * (ratio - mean[:, None]) ** 2).sum(axis=1)
    ratio_var = pt.switch(pt.isfinite(lse), ratio_var, 0.0)
    extra = [pt.as_tensor(x).astype("float64").reshape((chains, -1)).mean(axis=1)
             for x in info.extra]
    return accept, diverge.astype("int64"), log_z, ess, ratio_var, *extra


def _build_chunk(path, kernel: Kernel, backend: str, sizes) -> CompiledFunction:
    """Compile ``(rng, beta, delta_beta, *kernel params, *state, log_weight, num_chains,
    *path params) -> (rng, *state, log_weight, *statistics)``.

    ``sizes`` = (particles, chains, steps) is static (baked into the graph, as JAX needs)
    when given; otherwise every size is symbolic, so one compiled function serves every
    batch size and chunk length (and, for a path shared by structure, every model size).
    """
    num_particles, num_chains, num_steps = sizes or (None, None, None)
    shared = path.compile_key()[0] is None
    d = None if (shared and sizes is None) else path.num_dims
    rng = random_generator_type("rng")
    beta, delta_beta = (pt.tensor(n, dtype="float64", shape=(num_steps,))
                        for n in ("beta", "delta_beta"))
    param_in = [pt.tensor(p.name, dtype="float64",
                          shape=(num_steps, d) if p.per_dimension else (num_steps,))
                for p in kernel.parameters]
    state_in = [pt.tensor(f.name, dtype=f.dtype or path.dtype,
                          shape=(num_particles, d) if f.per_dimension else (num_particles,))
                for f in kernel.state]
    path_in = _symbolic_parameters(path, shaped=sizes is not None)
    log_weight = pt.tensor("log_weight", dtype="float64", shape=(num_particles,))
    chains_in = pt.lscalar("num_chains")
    chains = chains_in if num_chains is None else pt.constant(num_chains, dtype="int64")
    num_params, num_state = len(param_in), len(state_in)
    names = kernel.parameter_names

    def one_step(beta_k, delta_k, *args):
        params = dict(zip(names, args[:num_params]))
        rng_k, *carry = args[num_params:]
        state = kernel.state_type(*carry[:num_state])
        log_w, chains_k = carry[num_state], carry[num_state + 1]
        path_params = dict(zip(path_in, carry[num_state + 2:]))
        moving = pt.neq(delta_k, 0.0)
        increment = path.weight_increment(state, beta_k, delta_k, path_params)
        log_w = log_w + pt.switch(moving, increment, 0.0)
        slope = pt.switch(moving, increment / pt.switch(moving, delta_k, 1.0), 0.0)
        rng_k, state, info = kernel.step(rng_k, state, beta_k, params, path_params)
        stats = _chain_statistics(log_w, slope, info, chains_k)
        return (rng_k, *state, log_w, *stats)

    outputs = pytensor.scan(
        one_step,
        sequences=[beta, delta_beta, *param_in],
        outputs_info=[rng, *state_in, log_weight,
                      *([None] * (len(STAT_NAMES) + len(kernel.statistics)))],
        non_sequences=[chains, *path_in.values()],
        return_updates=False,
    )
    rng_out, *rest = outputs
    final = [o[-1] for o in rest[:num_state + 1]]  # the state and the log weights
    stats = rest[num_state + 1:]
    inputs = [rng, beta, delta_beta, *param_in, *state_in, log_weight, chains_in,
              *path_in.values()]
    return compile_function(inputs, [rng_out, *final, *stats], backend)


def _build_init(path, kernel: Kernel, backend: str) -> CompiledFunction:
    """Compile ``(rng, position, *first step's kernel params, *path params) -> (rng, *state)``."""
    rng = random_generator_type("rng")
    position = pt.matrix("position", dtype=path.dtype)
    params = {p.name: (pt.dvector if p.per_dimension else pt.dscalar)(p.name)
              for p in kernel.parameters}
    path_in = _symbolic_parameters(path, shaped=False)
    rng_out, state = kernel.init(rng, position, params, path_in)
    return compile_one_off([rng, position, *params.values(), *path_in.values()],
                           [rng_out, *state], backend)


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
    chunk_length: int | None  # static steps per call (JAX), else None
    stat_names: tuple[str, ...] = STAT_NAMES  # and the kernel's own statistics

    @property
    def parameter_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    def init(self, rng, positions, params: dict, path_parameters: list):
        """The kernel's state at ``positions`` (a dict), with the step's ``params``."""
        out = self.init_fn(rng, positions, *(params[n] for n in self.parameter_names),
                           *path_parameters)
        return out[0], dict(zip(self.field_names, out[1:]))

    def run(self, rng, arrays: dict, state: dict, log_w, num_chains: int, path_parameters: list):
        """Run the steps in ``arrays`` (beta, delta_beta and the kernel's parameters).

        Returns ``(rng, state, log_w, stats)`` with each statistic of shape (steps, chains).
        """
        length = arrays["beta"].size
        if self.chunk_length is not None:
            arrays = pad_steps(self.parameters, arrays, self.chunk_length)
        out = self.chunk_fn(
            rng, arrays["beta"], arrays["delta_beta"],
            *(arrays[n] for n in self.parameter_names),
            *(state[f] for f in self.field_names), log_w, np.int64(num_chains),
            *path_parameters,
        )
        num_state = len(self.field_names)
        new_state = dict(zip(self.field_names, out[1:1 + num_state]))
        stats = {name: np.asarray(o)[:length]
                 for name, o in zip(self.stat_names, out[2 + num_state:])}
        return out[0], new_state, out[1 + num_state], stats


def build_loop(path, kernel: Kernel, backend: str, sizes=None) -> CompiledLoop:
    """Compile the annealing loop of ``kernel`` on ``path`` (see :func:`_build_chunk`)."""
    return CompiledLoop(kernel.parameters, tuple(f.name for f in kernel.state),
                        _build_init(path, kernel, backend),
                        _build_chunk(path, kernel, backend, sizes),
                        None if sizes is None else sizes[2],
                        STAT_NAMES + tuple(kernel.statistics))
