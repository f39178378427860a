r"""An HMC mutation kernel with persistent momentum for PyMC's own SMC sampler.

PyMC's :func:`pymc.sample_smc` ships independent and random-walk Metropolis mutation
kernels. :class:`HMCKernel` plugs a gradient-based one into the same sampler::

    import pymc as pm
    from pymc_anneal import HMCKernel

    with model:
        idata = pm.sample_smc(kernel=HMCKernel, n_steps=10)
    idata.sample_stats["log_marginal_likelihood"]

Each SMC stage (Del Moral et al. 2006) reweights the particles from :math:`\beta_{t-1}` to
:math:`\beta_t` (PyMC picks :math:`\beta_t` so the weights' ESS is ``threshold`` times
the number of particles and accumulates the evidence from these weights), resamples them,
and then *mutates* them with ``n_steps`` transitions that leave the tempered posterior
:math:`p(\theta)\, p(y \mid \theta)^{\beta_t}` invariant. Here a transition is the
Hamiltonian move of Sohl-Dickstein & Culpepper (2012): one (or ``num_leapfrog_steps``)
leapfrog step(s), a Metropolis accept/reject, and a *partial* momentum refresh, on the
extended state :math:`(\theta, v)` with :math:`v \sim \mathcal N(0, M)`
(see :mod:`pymc_anneal.kernels.hmc`).

Persistent momentum
    Every particle carries its momentum from one transition to the next *and across
    stages*: when PyMC resamples the particles, the momenta are resampled with the same
    indices. The momentum's marginal :math:`\mathcal N(0, M)` does not depend on
    :math:`\beta`, so the incremental weights (likelihood ratios of the positions) and
    therefore the evidence estimate are unchanged; the particles just keep moving in the
    direction they were going, which suppresses random-walk behaviour.

Adaptation (standard adaptive SMC, from the current particles, before each mutation)
    The diagonal inverse mass matrix :math:`M^{-1}` is set to the particles' variances.
    When it changes, each momentum is multiplied by
    :math:`\sqrt{M^{-1}_{\rm old} / M^{-1}_{\rm new}}`, which maps
    :math:`\mathcal N(0, M_{\rm old})` exactly onto :math:`\mathcal N(0, M_{\rm new})`.
    The step size is multiplied by :math:`\exp(\bar a - a^\star)` where :math:`\bar a` is
    the previous stage's mean acceptance probability and :math:`a^\star` the target
    (``target_accept``, default 0.8). The refresh fraction defaults to
    :math:`\gamma = 1 - 2^{-\epsilon}` (half the momentum power randomized per unit
    simulation time). As in any adaptive SMC, tuning from the particles makes the evidence
    estimate consistent rather than exactly unbiased; the bias is :math:`O(1/N)`.

All ``n_steps`` transitions of a stage, for all particles at once, run inside one compiled
PyTensor ``scan`` (compiled once per process and reused across stages and chains).

References
----------
Sohl-Dickstein, J. & Culpepper, B. J. (2012). Hamiltonian annealed importance sampling for
partition function estimation. arXiv:1205.1925.
Del Moral, P., Doucet, A. & Jasra, A. (2006). Sequential Monte Carlo samplers.
*Journal of the Royal Statistical Society B* 68(3), 411-436.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.model import modelcontext
from pymc.smc.kernels import SMC_KERNEL, SMCSettings, SMCStats
from pytensor.graph.basic import Variable
from pytensor.tensor.random.type import random_generator_type

from pymc_anneal.backends import CompiledFunction, compile_function
from pymc_anneal.driver.cache import fallback_backend
from pymc_anneal.driver.scan import (
    BackendUnsupportedError,
    backend_message,
    jax_failure,
    jax_obstacle,
)
from pymc_anneal.driver.tuning import step_arrays
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.kernels import StepParameter, build_hmc_kernel
from pymc_anneal.kernels.compound import build_kernel as build_compound_kernel
from pymc_anneal.kernels.hmc import REFRESH
from pymc_anneal.pymc.adapter import model_path
from pymc_anneal.validation import check_backend, check_count, missing_gradient

__all__ = ["HMCKernel"]

_LOG = logging.getLogger(__name__)

_MIN_STEP_SIZE = 1e-8
_MAX_STEP_SIZE = 1e3


def _build_mutation_graph(
    model: pm.Model, num_leapfrog_steps: int, n_steps: int, draws: int
) -> tuple[list[Variable], list[Variable], int, tuple[StepParameter, ...]]:
    """Symbolic inputs and outputs of one SMC mutation stage (not compiled), the number of
    dimensions and the kernel's parameter declarations.

    Inputs ``(rng, position (N, d), momentum (N, d), beta, *one value per kernel parameter,
    in the order the kernel declares them)``; outputs ``(rng, position, momentum,
    log_prior, log_likelihood, mean acceptance per particle (N,), divergences per particle
    (N,))``. Log densities and gradients at the starting positions are computed inside the
    graph, so nothing but positions and momenta needs to travel between stages. The
    number of transitions and the particles' shape are constants of the graph: every stage
    has the same, and JAX compiles only loops of a static length over arrays of static
    shape. As in the annealing driver, the graph reads no kernel parameter by name.
    """
    # every free variable stays on the path, in PyMC's particle layout: discrete ones as
    # integer coordinates, moved by the compound kernel's Metropolis steps
    path = model_path(model, "anneal").path
    if path.discrete_dims:
        kernel = build_compound_kernel(path, inner="hais", num_leapfrog_steps=num_leapfrog_steps)
    else:
        kernel = build_hmc_kernel(
            path, persistent_momentum=True, num_leapfrog_steps=num_leapfrog_steps
        )
    rng = random_generator_type("rng")
    shape = (draws, path.num_dims)
    position = pt.tensor("position", dtype="float64", shape=shape)
    momentum = pt.tensor("momentum", dtype="float64", shape=shape)
    beta = pt.dscalar("beta")
    params = {p.name: pt.tensor(p.name, dtype="float64",
                                shape=(path.num_dims,) if p.per_dimension else ())
              for p in kernel.parameters}

    # the kernel's state at the particles, with their persistent momenta (the momentum the
    # kernel would draw is not used)
    _, state0 = kernel.init(rng, position, params, {})
    state0 = state0._replace(momentum=momentum)
    num_state = len(state0)

    def one_step(rng_k, *args):
        carry, (beta_, *values) = args[:num_state], args[num_state:]
        state = kernel.state_type(*carry)
        rng_k, state, info = kernel.step(rng_k, state, beta_,
                                         dict(zip(kernel.parameter_names, values)), {})
        return (rng_k, *state, info.acceptance_rate, info.is_divergent.astype("int64"))

    outputs = pytensor.scan(
        one_step,
        outputs_info=[rng, *state0, None, None],
        non_sequences=[beta, *params.values()],
        n_steps=n_steps,
        return_updates=False,
    )
    rng_out, *rest = outputs
    final = kernel.state_type(*(o[-1] for o in rest[:num_state]))
    acceptance, divergent = rest[num_state], rest[num_state + 1]
    inputs = [rng, position, momentum, beta, *params.values()]
    outs = [
        rng_out,
        final.position,
        final.momentum,
        final.log_base,
        final.log_ratio,
        acceptance.mean(axis=0),
        divergent.sum(axis=0),
    ]
    return inputs, outs, path.num_dims, kernel.parameters


def _mutation_graph(model: pm.Model, num_leapfrog_steps: int, n_steps: int, draws: int):
    """:func:`_build_mutation_graph`, with a log density without a gradient refused by name
    (HMC needs one; PyTensor's own error would come from deep inside the kernel's graph)."""
    try:
        return _build_mutation_graph(model, num_leapfrog_steps, n_steps, draws)
    except (NotImplementedError, TypeError) as error:  # NullTypeGradError is a TypeError
        cause = missing_gradient(model_path(model, "anneal").path)
        if cause is None:
            raise
        raise AnnealingError(
            f"HMCKernel needs the gradient of the model's log density, and it has none: "
            f"{cause}. Use one of PyMC's own SMC kernels, which need none "
            "(pm.sample_smc's default, pm.smc.kernels.IMH, or pm.smc.kernels.MH), or "
            "pymc_anneal.sample_ais (its default kernel then is random-walk Metropolis), or "
            "give the op a gradient (its pullback).") from error


def _stage_parameters(parameters, num_dims: int, tuned: dict[str, Any],
                     fixed: dict[str, float]) -> dict[str, np.ndarray]:
    """One SMC stage's value of each kernel parameter, from the kernel's declarations.

    A parameter with a tuning rule (``"acceptance"``, ``"variance"``) takes ``tuned[rule]``,
    one the user fixed takes ``fixed[name]``, a derived one is derived from the others
    (:func:`pymc_anneal.driver.tuning.step_arrays`, with one step), and any other keeps its
    declared default. Within a stage the mass matrix is constant, so a parameter derived
    from its change between steps (HAIS's momentum scale) is 1; between stages the kernel
    rescales the momenta itself.
    """
    values = {}
    for p in parameters:
        value = tuned[p.tuning] if p.tuning in tuned else p.initial(num_dims)
        values[p.name] = np.asarray(value, dtype=np.float64)[None]
    arrays = step_arrays(parameters, np.zeros(2), values, fixed)
    return {p.name: arrays[p.name][0] for p in parameters}


class HMCKernel(SMC_KERNEL):
    r"""SMC mutation by Hamiltonian Monte Carlo with persistent momentum.

    Use it as ``pm.sample_smc(kernel=HMCKernel, **kernel_kwargs)``; the keyword arguments
    below are passed through :func:`pymc.sample_smc`. The model must have proper priors and
    observed data. Discrete free variables are moved exactly after each HMC transition, by a
    draw from their tempered conditional (supports of up to 32 values) or a Metropolis step
    (:mod:`pymc_anneal.kernels.compound`), instead of the rounding of PyMC's own kernels.

    Parameters
    ----------
    draws, start, model, random_seed, threshold, compile_kwargs
        As for :class:`pymc.smc.kernels.SMC_KERNEL` (filled in by :func:`pymc.sample_smc`).
    n_steps : int, default 10
        HMC transitions per SMC stage.
    step_size : float, optional
        Initial leapfrog step size, in units of the particles' standard deviations (the
        mass matrix is adapted). Defaults to :math:`0.5\,d^{-1/4}`; adapted every stage.
    target_accept : float, default 0.8
        Target mean acceptance probability of the step-size adaptation, in (0, 1).
    refresh : float, optional
        Momentum refresh fraction :math:`\gamma \in (0, 1]` (1 = fresh momentum every
        transition, i.e. plain HMC). Defaults to :math:`1 - 2^{-\epsilon}` for the current
        step size :math:`\epsilon`.
    num_leapfrog_steps : int, default 1
        Leapfrog steps per transition (1 in Sohl-Dickstein & Culpepper 2012).
    mutation_backend : {"numba", "c", "jax", "auto"}, default "numba"
        PyTensor backend that compiles the mutation ``scan`` (Numba, as PyMC's own SMC).
        JAX only with ``cores=1``: ``pm.sample_smc`` runs chains in forked processes when
        ``cores > 1``, and JAX, which is not fork-safe, can hang there (the kernel raises
        instead). A model that JAX cannot trace (a ``pytensor.scan`` in the likelihood, a
        shape computed inside the graph, an op without a JAX implementation) runs on Numba
        under ``"auto"`` (the setting ``backend_fallback`` says why) and is refused under
        ``"jax"``.

    Notes
    -----
    Per-stage statistics in ``idata.sample_stats``: ``log_marginal_likelihood`` (NaN until
    the last stage, like PyMC's kernels), ``beta``, ``mean_accept_rate``, ``step_size``
    (the one used in that stage's mutation), ``refresh`` and ``divergences`` (summed over
    particles and transitions).

    The evidence estimate is PyMC's SMC estimate, a product over stages of mean incremental
    weights (Del Moral et al. 2006); the HMC transitions leave
    :math:`p(\theta)\,p(y\mid\theta)^{\beta}\,\mathcal N(v; 0, M)` invariant, and the
    momentum factor is the same at every temperature, so it cancels from the weights.

    References
    ----------
    Sohl-Dickstein, J. & Culpepper, B. J. (2012). Hamiltonian annealed importance sampling
    for partition function estimation. arXiv:1205.1925.
    Del Moral, P., Doucet, A. & Jasra, A. (2006). Sequential Monte Carlo samplers.
    *Journal of the Royal Statistical Society B* 68(3), 411-436.
    """

    stats_dtypes_shapes: dict[str, tuple[type, list]] = {
        "log_marginal_likelihood": (float, []),
        "beta": (float, []),
        "mean_accept_rate": (float, []),
        "step_size": (float, []),
        "refresh": (float, []),
        "divergences": (int, []),
    }

    def __init__(
        self,
        draws: int = 2000,
        start: dict | None = None,
        model: pm.Model | None = None,
        random_seed: Any = None,
        threshold: float = 0.5,
        compile_kwargs: dict | None = None,
        *,
        n_steps: int = 10,
        step_size: float | None = None,
        target_accept: float = 0.8,
        refresh: float | None = None,
        num_leapfrog_steps: int = 1,
        mutation_backend: str = "numba",
    ) -> None:
        self.n_steps = check_count("n_steps", n_steps, 1)
        self.num_leapfrog_steps = check_count("num_leapfrog_steps", num_leapfrog_steps, 1)
        if step_size is not None and not (np.isfinite(step_size) and step_size > 0):
            raise AnnealingError(
                f"step_size must be a positive finite number or None (adaptive default), "
                f"got {step_size!r}."
            )
        if not 0.0 < target_accept < 1.0:
            raise AnnealingError(
                f"target_accept must lie strictly between 0 and 1, got {target_accept!r}; "
                "0.8 is a good value for HMC with persistent momentum."
            )
        if refresh is not None and not 0.0 < refresh <= 1.0:
            raise AnnealingError(
                f"refresh must lie in (0, 1] (1 = full momentum refresh), got {refresh!r}; "
                "or pass None for the default 1 - 0.5**step_size."
            )
        self.mutation_backend = check_backend(mutation_backend)
        self._auto_backend = mutation_backend is None or str(mutation_backend).lower() == "auto"
        self.backend_fallback: str | None = None
        self._creator_pid = os.getpid()
        self.initial_step_size = None if step_size is None else float(step_size)
        self.target_accept = float(target_accept)
        self.fixed_refresh = None if refresh is None else float(refresh)

        super().__init__(
            draws=draws,
            start=start,
            model=model,
            random_seed=random_seed,
            threshold=threshold,
            compile_kwargs=compile_kwargs,
        )
        # The symbolic graph is built here (so model errors surface immediately) and
        # pickled to worker processes; it is compiled lazily in ``setup_kernel``.
        self._graph_inputs, self._graph_outputs, self.num_dims, self._parameters = (
            _mutation_graph(modelcontext(model), self.num_leapfrog_steps, self.n_steps,
                            self.draws))
        obstacle = jax_obstacle(self._graph_outputs) if self.mutation_backend == "jax" else None
        if obstacle is not None:  # certain from the graph: before anything is compiled
            self._fall_back(BackendUnsupportedError(
                backend_message("jax", obstacle, argument="mutation_backend",
                                what="the SMC mutation"), backend="jax",
                cause=obstacle))
        self._stage_values: dict[str, np.ndarray] = {}
        self._mutate_fn: CompiledFunction | None = None
        self._fn_rng: Any = None
        self.momentum: np.ndarray | None = None
        self.inv_mass: np.ndarray | None = None
        self.step_size: float = np.nan
        self.refresh: float = np.nan
        self.chain_acc_rate: np.ndarray | None = None
        self.divergences: int = 0

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_mutate_fn"] = None  # compiled code is not picklable: recompiled in the worker
        state["_fn_rng"] = None
        return state

    # ------------------------------------------------------------------ helpers

    def _particle_inv_mass(self, fallback: np.ndarray | None) -> np.ndarray:
        var = np.var(self.tempered_posterior, axis=0)
        good = np.isfinite(var) & (var > 0)
        if not good.all():
            if fallback is None:
                fallback = np.ones_like(var)
            var = np.where(good, var, fallback)
        return np.maximum(var, 1e-12 * var.max())

    def _fall_back(self, failure: BackendUnsupportedError, error: Exception | None = None):
        """JAX cannot compile the mutation: Numba (else C) under ``mutation_backend="auto"``
        (logged at INFO, recorded in ``backend_fallback``), else ``failure`` is raised."""
        if not self._auto_backend:
            raise failure from error
        fallback = fallback_backend()
        self.backend_fallback = f"{self.mutation_backend} -> {fallback}: {failure.cause}"
        _LOG.info("JAX cannot compile the SMC mutation (%s): using mutation_backend %r",
                  failure.cause, fallback)
        self.mutation_backend, self._mutate_fn = fallback, None

    def _compile(self) -> CompiledFunction:
        if self._mutate_fn is None:
            try:
                self._mutate_fn = compile_function(
                    self._graph_inputs, self._graph_outputs, self.mutation_backend
                )
            except Exception as error:  # noqa: BLE001 - read by _jax_failure, else raised
                self._fall_back(self._jax_failure(error), error)
                return self._compile()
        return self._mutate_fn

    def _call(self, *args):
        """The compiled mutation on ``args``; JAX traces it at its first call, where a graph
        that it cannot trace fails (then as :meth:`_fall_back` says)."""
        try:
            return self._compile()(*args)
        except Exception as error:  # noqa: BLE001 - read by _jax_failure, else raised
            self._fall_back(self._jax_failure(error), error)
            return self._compile()(*args)

    def _jax_failure(self, error: Exception) -> BackendUnsupportedError:
        """``error`` as the failure of JAX to compile the mutation; ``error`` itself is
        raised where it is no such failure."""
        failure = (jax_failure(error, argument="mutation_backend", what="the SMC mutation")
                   if self.mutation_backend == "jax" else None)
        if failure is None:
            raise error
        return failure

    # ------------------------------------------------------------------ SMC_KERNEL API

    def setup_kernel(self) -> None:
        """Compile the mutation (once per process) and draw the initial momenta."""
        if self.mutation_backend == "jax" and os.getpid() != self._creator_pid:
            raise AnnealingError(
                'mutation_backend="jax" cannot run in the worker processes that '
                "pm.sample_smc starts when cores > 1: JAX is not fork-safe and can hang "
                'there. Pass cores=1, or mutation_backend="numba".')
        if self.tempered_posterior.ndim != 2 or self.tempered_posterior.shape[1] != self.num_dims:
            raise AnnealingError(
                f"the SMC particles have shape {self.tempered_posterior.shape}, but the model "
                f"has {self.num_dims} unconstrained dimensions; was the model changed after "
                "the kernel was created? Create the kernel (call pm.sample_smc) again."
            )
        self._compile()
        self.tempered_posterior = np.ascontiguousarray(self.tempered_posterior, dtype=np.float64)
        self._fn_rng = np.random.default_rng(self.rng.integers(2**63))
        self.inv_mass = self._particle_inv_mass(None)
        self.momentum = self.rng.standard_normal(self.tempered_posterior.shape) / np.sqrt(
            self.inv_mass
        )
        self.step_size = (
            0.5 * self.num_dims**-0.25 if self.initial_step_size is None else self.initial_step_size
        )
        self.refresh = np.nan
        self.chain_acc_rate = None
        self.divergences = 0

    def resample(self) -> None:
        """Resample particles (PyMC) and their momenta with the same indices."""
        super().resample()
        self.momentum = self.momentum[self.resampling_indexes]

    def tune(self) -> None:
        """Adapt the mass matrix to the particles and the step size to the acceptance."""
        if self.chain_acc_rate is not None:
            self.step_size *= float(np.exp(self.chain_acc_rate.mean() - self.target_accept))
            self.step_size = float(np.clip(self.step_size, _MIN_STEP_SIZE, _MAX_STEP_SIZE))
        new_inv_mass = self._particle_inv_mass(self.inv_mass)
        # maps N(0, M_old) exactly onto N(0, M_new), M = diag(1 / inv_mass)
        self.momentum = self.momentum * np.sqrt(self.inv_mass / new_inv_mass)
        self.inv_mass = new_inv_mass
        fixed = {} if self.fixed_refresh is None else {REFRESH.name: self.fixed_refresh}
        self._stage_values = _stage_parameters(
            self._parameters, self.num_dims,
            {"acceptance": self.step_size, "variance": self.inv_mass}, fixed)
        self.refresh = float(self._stage_values[REFRESH.name])

    def mutate(self) -> None:
        """Run ``n_steps`` HMC transitions at the current beta on all particles."""
        if self._fn_rng is None:
            self._fn_rng = np.random.default_rng(self.rng.integers(2**63))
        out = self._call(
            self._fn_rng,
            np.ascontiguousarray(self.tempered_posterior, dtype=np.float64),
            np.ascontiguousarray(self.momentum, dtype=np.float64),
            np.float64(self.beta),
            *(self._stage_values[p.name] for p in self._parameters),
        )
        self._fn_rng = out[0]
        position, momentum, log_prior, log_lik, acceptance, divergent = (
            np.array(o) for o in out[1:]
        )
        self.tempered_posterior = position
        self.momentum = momentum
        self.prior_logp = log_prior
        self.likelihood_logp = log_lik
        self.tempered_posterior_logp = log_prior + self.beta * log_lik
        self.chain_acc_rate = acceptance
        self.divergences = int(divergent.sum())

    def sample_stats(self) -> SMCStats:
        return {
            "log_marginal_likelihood": self.log_marginal_likelihood if self.beta == 1 else np.nan,
            "beta": self.beta,
            "mean_accept_rate": float(self.chain_acc_rate.mean()),
            "step_size": self.step_size,
            "refresh": self.refresh,
            "divergences": self.divergences,
        }

    def sample_settings(self) -> SMCSettings:
        return {
            "_n_draws": self.draws,
            "threshold": self.threshold,
            "_n_tune": self.n_steps,
            "n_steps": self.n_steps,
            "num_leapfrog_steps": self.num_leapfrog_steps,
            "target_accept": self.target_accept,
            "initial_step_size": (
                0.5 * self.num_dims**-0.25 if self.initial_step_size is None
                else self.initial_step_size
            ),
            "mutation_backend": self.mutation_backend,
            **({"backend_fallback": self.backend_fallback} if self.backend_fallback else {}),
        }
