r"""Bidirectional Monte Carlo (BDMC): does a PyMC model's annealing use enough temperatures?

On data simulated from the model itself, the evidence is bracketed from both sides
(Grosse, Ghahramani & Adams 2015; Burda, Grosse & Salakhutdinov 2015):

1. draw true parameters :math:`\theta^\star` from the prior and data
   :math:`y^\star \sim p(y \mid \theta^\star)`; then :math:`\theta^\star` is an exact draw from
   the posterior :math:`p(\theta \mid y^\star)`;
2. **forward** AIS from the prior to the posterior: :math:`\log \hat Z` is a stochastic
   *lower* bound on :math:`\log p(y^\star)`;
3. **backward** AIS from :math:`\theta^\star` to the prior (reverse weights with mean
   :math:`Z_0 / Z = 1 / p(y^\star)`): :math:`-\log \overline{w}` is a stochastic *upper* bound.

Both bounds tighten as the number of temperatures K grows; their gap bounds the error of
either one (in expectation), so a small gap says that K temperatures suffice for data like
these. Both runs use :func:`pymc_anneal.sample_ais`'s kernels and unbiased tuning (a pilot
on the forward schedule).

**Several simulated datasets, and the upper bound's standard error.** Every particle of a
backward run starts at the one exact posterior draw :math:`\theta^\star`; it first makes
``num_mixing_steps`` transitions at :math:`\beta = 1` (each particle stays an exact
posterior draw, so its reverse weight stays unbiased for :math:`1/p(y^\star)` *on average
over* :math:`\theta^\star`). Given :math:`\theta^\star` the particles are not independent
draws of that average: as long as they remember their common start, the spread of their
weights misses the variation from one :math:`\theta^\star` to the next, and the particles'
delta-method standard error is too small (measured: with no mixing steps, errors of 2.7
such standard errors). One :math:`\theta^\star` cannot show that variation, so ``bdmc``
simulates ``num_datasets`` independent pairs :math:`(\theta^\star_d, y^\star_d)` and
brackets the *average* log evidence of the simulated datasets,
:math:`\bar L = \frac1D \sum_d \log p(y^\star_d)`, by the averages of the per-dataset
bounds :math:`l_d` and :math:`u_d`. The forward runs' particles are independent (drawn
from the prior), so :math:`\mathrm{se}(\bar l)^2 = \sum_d s_{l,d}^2 / D^2` with
:math:`s_{l,d}` their delta-method errors. For the upper bound, the per-dataset gaps
:math:`g_d = u_d - l_d = (u_d - \log p(y^\star_d)) - (l_d - \log p(y^\star_d))` are
independent over datasets, and the two errors in :math:`g_d` come from independent runs,
so :math:`\operatorname{Var}(u_d - \log p(y^\star_d)) \approx \operatorname{Var}(g_d) -
\overline{s_l^2}`, which the spread of the gaps estimates whatever the common start does:

.. math:: \mathrm{se}(\bar u)^2 = \max\bigl(\widehat{\operatorname{Var}}(g_d) -
          \overline{s_l^2},\ \overline{s_u^2}\bigr) / D

(:math:`s_{u,d}` the backward particles' delta-method errors, a floor). Where the bounds'
biases grow together on harder datasets the estimate errs on the wide side. With few
datasets it is itself noisy (about :math:`D - 1` degrees of freedom). The gap's standard
error is the spread of the :math:`g_d`, :math:`\mathrm{sd}(g_d)/\sqrt D`.

The simulated data enter the model as shared variables, so every dataset reuses one
compiled loop.

References
----------
Grosse, R. B., Ghahramani, Z. & Adams, R. P. (2015). Sandwiching the marginal likelihood
using bidirectional Monte Carlo. arXiv:1511.02543.
Burda, Y., Grosse, R. & Salakhutdinov, R. (2015). Accurate and conservative estimates of
MRF log-likelihood using reverse annealing. *AISTATS*.
"""

from __future__ import annotations

import hashlib
import weakref

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import xarray as xr
from pytensor.graph.replace import graph_replace

from pymc_anneal.backends import interruptible, python_mode
from pymc_anneal.driver import run_annealing, run_options_from
from pymc_anneal.driver.cache import choose_loop
from pymc_anneal.estimators import estimate_log_z
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.io import bdmc_tree, result_attrs
from pymc_anneal.pymc.adapter import model_path, refuse_discrete
from pymc_anneal.schedules import make_schedule
from pymc_anneal.validation import (
    check_count,
    check_counts,
    check_model,
    check_random_seed,
)

__all__ = ["bdmc", "simulate_data"]


def _value_space(model: pm.Model, values: dict[str, np.ndarray]) -> np.ndarray:
    """The flat value-space vector (``model.value_vars`` order) of free-RV values."""
    givens = {rv: pt.constant(np.asarray(values[rv.name]), dtype=rv.dtype)
              for rv in model.free_RVs}
    flat = []
    for rv in model.free_RVs:
        transform = model.rvs_to_transforms.get(rv)
        value = np.asarray(values[rv.name], dtype=np.float64)
        if transform is not None:
            forward = transform.forward(pt.constant(value), *rv.owner.inputs)
            forward = graph_replace(forward, givens, strict=False)
            value = np.asarray(forward.eval(mode=python_mode()), dtype=np.float64)
        flat.append(value.ravel())
    return np.concatenate(flat)


def simulate_data(model: pm.Model, rng: np.random.Generator):
    """Draw ``(theta*, y*)`` from the prior predictive and return ``(model conditioned on
    y*, theta* by free-variable name, theta* in the value space, y* by observed name)``."""
    if model.potentials:
        raise AnnealingError(
            f"the model has Potentials {[p.name for p in model.potentials]}; BDMC simulates "
            "data from the prior predictive, of which a Potential is not part. Remove them "
            "or check the number of temperatures on a model without them.")
    free, observed = list(model.free_RVs), list(model.observed_RVs)
    draws = pm.draw(free + observed, random_seed=rng, mode=python_mode())
    truth = {rv.name: np.asarray(v) for rv, v in zip(free, draws[:len(free)])}
    data = {rv.name: np.asarray(v) for rv, v in zip(observed, draws[len(free):])}
    simulated = pm.observe(model, data)
    return simulated, truth, _value_space(model, truth), data


_SIMULATORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Simulator:
    """The model conditioned on shared data (one compiled loop serves every simulated
    dataset) and a compiled map from free-variable values to the value space."""

    def __init__(self, model: pm.Model):
        free, observed = list(model.free_RVs), list(model.observed_RVs)
        self.key = _simulator_key(model)
        self.free, self.observed = free, observed
        first = pm.draw(observed, random_seed=np.random.default_rng(0), mode=python_mode())
        self.shared = {rv.name: pytensor.shared(np.asarray(v), name=f"{rv.name}_simulated")
                       for rv, v in zip(observed, first)}
        self.model = pm.observe(model, self.shared)
        inputs = [rv.type() for rv in free]
        givens = dict(zip(free, inputs))
        flat = []
        for rv, x in zip(free, inputs):
            transform = model.rvs_to_transforms.get(rv)
            value = x if transform is None else transform.forward(x, *rv.owner.inputs)
            flat.append(pt.as_tensor(value).astype("float64").ravel())
        graph = graph_replace(pt.concatenate(flat), givens, strict=False)
        self.to_value_space = pytensor.function(inputs, graph, on_unused_input="ignore",
                                                mode=python_mode())

    def simulate(self, num_datasets: int, rng: np.random.Generator):
        """``num_datasets`` draws of (theta*, y*): by name, with a leading dataset axis,
        and theta* in the value space, shape (num_datasets, d)."""
        values = pm.draw(self.free + self.observed, draws=num_datasets, random_seed=rng,
                         mode=python_mode())
        values = [np.asarray(v) for v in values]
        truth = {rv.name: v for rv, v in zip(self.free, values[:len(self.free)])}
        data = {rv.name: v for rv, v in zip(self.observed, values[len(self.free):])}
        positions = np.stack([
            np.asarray(self.to_value_space(*(truth[rv.name][i] for rv in self.free)))
            for i in range(num_datasets)])
        return truth, positions, data

    def set_data(self, data: dict[str, np.ndarray], index: int) -> None:
        for name, shared in self.shared.items():
            shared.set_value(np.asarray(data[name][index], dtype=shared.dtype))


def _simulator_key(model: pm.Model) -> tuple:
    """What a cached simulator depends on: the variables, and the values of the model's
    ``pm.Data`` (a ``pm.set_data`` since the last call builds a new one)."""
    data = []
    for var in model.data_vars:
        value = np.ascontiguousarray(var.get_value(borrow=True))
        data.append((var.name, value.dtype.str, value.shape,
                     hashlib.sha1(value.tobytes()).hexdigest()))
    return (tuple(id(rv) for rv in list(model.free_RVs) + list(model.observed_RVs)),
            tuple(data))


def _simulator(model: pm.Model) -> _Simulator:
    if model.potentials:
        raise AnnealingError(
            f"the model has Potentials {[p.name for p in model.potentials]}; BDMC simulates "
            "data from the prior predictive, of which a Potential is not part. Remove them "
            "or check the number of temperatures on a model without them.")
    cached = _SIMULATORS.get(model)
    if cached is None or cached.key != _simulator_key(model):
        cached = _SIMULATORS[model] = _Simulator(model)
    return cached


@interruptible()  # Ctrl-C stops the call, even when Python would lose it
def bdmc(
    model: pm.Model | None = None,
    *,
    num_steps=(10, 100, 1000),
    num_mixing_steps: int = 100,
    num_datasets: int = 8,
    draws: int = 250,
    chains: int = 4,
    schedule: str = "power",
    kernel="auto",
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    num_leapfrog_steps: int | None = None,
    step_size: float | None = None,
    mass_matrix: str = "adapt",
    num_tuning_bands: int = 8,
    num_pilot: int = 250,
    target_acceptance: float | None = None,
    momentum_refresh: float | None = None,
) -> xr.DataTree:
    r"""Bound the log evidence of data simulated from ``model`` from below and above.

    Simulates ``num_datasets`` independent sets of true parameters and data from the prior
    predictive, then for each dataset and each number of temperatures K runs forward AIS
    (a stochastic lower bound on :math:`\log p(y^\star)`) and backward AIS from the true
    parameters (a stochastic upper bound). The bounds are averaged over the datasets, with
    standard errors that hold whether or not the backward particles forget their common
    start (see :mod:`pymc_anneal.pymc.bdmc`). When the gap is small, K temperatures are
    enough for :func:`pymc_anneal.sample_ais` on data like these.

    Parameters
    ----------
    model : pm.Model, optional
        Defaults to the model on the context stack. Its free variables must be continuous
        with proper priors, and it must have observed variables (which are re-simulated)
        and no Potentials.
    num_steps : int or sequence of int, default (10, 100, 1000)
        The numbers of temperatures K to check (each >= 1).
    num_mixing_steps : int, default 100
        Transitions at the posterior (beta = 1) before the backward run anneals. They keep
        each particle an exact posterior draw and make the particles, which all start at the
        one true parameter, forget their common start. The upper bound's standard error
        holds without them (it comes from the spread over datasets), but it is wider.
    num_datasets : int, default 8
        Independent simulated (parameters, data) pairs (>= 2); the standard errors of the
        upper bound and of the gap come from their spread.
    draws : int, default 250
        Particles per chain, per dataset, in each direction.
    chains : int, default 4
    schedule : str, default "power"
        A named schedule (:data:`pymc_anneal.schedules.SCHEDULES`).
    kernel, random_seed, progressbar, backend, num_leapfrog_steps, step_size, mass_matrix
        As in :func:`pymc_anneal.sample_ais` (``kernel="auto"`` and ``backend="auto"``
        choose Metropolis for a log density without a gradient and Numba for a model that
        JAX cannot trace, recorded in the attributes ``kernel_fallback`` and
        ``backend_fallback``).
    num_tuning_bands, num_pilot, target_acceptance, momentum_refresh
        As in :func:`pymc_anneal.sample_ais`.

    Returns
    -------
    xarray.DataTree
        ``sample_stats`` over the dimension ``num_steps``: ``lower`` and ``upper`` (the two
        bounds on the average log evidence of the simulated datasets,
        :math:`\frac1D \sum_d \log p(y^\star_d)`), ``gap`` (``upper - lower``), and their
        standard errors ``lower_se``, ``upper_se`` and ``gap_se``; over ``num_steps`` and
        ``dataset``: the per-dataset bounds ``dataset_lower``, ``dataset_upper`` with the
        particles' delta-method errors ``dataset_lower_se``, ``dataset_upper_se`` (the
        latter too small while the backward particles remember their common start: compare
        it with ``upper_se``); ``observed_data``: the simulated data and
        ``true_parameters``: the simulated parameters, each with a leading ``dataset``
        dimension.

    References
    ----------
    Grosse, R. B., Ghahramani, Z. & Adams, R. P. (2015). Sandwiching the marginal
    likelihood using bidirectional Monte Carlo. arXiv:1511.02543.

    Examples
    --------
    >>> import pymc as pm, pymc_anneal as pa
    >>> with pm.Model():
    ...     mu = pm.Normal("mu", 0, 1)
    ...     y = pm.Normal("y", mu, 1, observed=[0.0, 0.0, 0.0])
    ...     result = pa.bdmc(num_steps=[2, 200], num_datasets=2, draws=100, chains=2,
    ...                      random_seed=1, progressbar=False)
    >>> stats = result["sample_stats"]
    >>> stats["num_steps"].values.tolist(), sorted(v for v in stats.data_vars if stats[v].ndim == 1)
    ([2, 200], ['gap', 'gap_se', 'lower', 'lower_se', 'upper', 'upper_se'])
    >>> result["observed_data"]["y"].shape  # (dataset, observation)
    (2, 3)
    """
    model = check_model(model)
    auto_kernel = isinstance(kernel, str) and kernel.lower() == "auto"
    auto_backend = backend is None or (isinstance(backend, str) and backend.lower() == "auto")
    kernel = "hais" if auto_kernel else kernel
    steps = check_counts("num_steps", num_steps, 1)
    num_mixing_steps = check_count("num_mixing_steps", num_mixing_steps, 0)
    draws = check_count("draws", draws, 2)
    chains = check_count("chains", chains, 1)
    num_datasets = check_count("num_datasets", num_datasets, 2)
    if not isinstance(schedule, str):
        raise AnnealingError(f"schedule must be a schedule's name for bdmc (one per K), got "
                             f"{type(schedule).__name__}.")
    make_schedule(schedule, 1)  # validates the name
    options = run_options_from(locals())
    refuse_discrete(model, "bdmc")
    model_path(model)  # the model's checks: proper, observed
    rng, seed_attr = check_random_seed(random_seed)
    sim_rng, rng = rng.spawn(2)
    simulator = _simulator(model)
    truth, positions, data = simulator.simulate(num_datasets, sim_rng)
    path = model_path(simulator.model).path
    options, fallbacks = choose_loop(path, options, draws=draws, chains=chains,
                                     auto_kernel=auto_kernel, auto_backend=auto_backend)
    run = {"options": options, "draws": draws, "chains": chains}
    rows = []  # per K: (lower, lower_se, upper, upper_se), each over datasets
    for k in steps:
        betas = make_schedule(schedule, k)
        # the backward run first moves at beta = 1: every particle stays an exact posterior
        # draw, and they forget their common start theta*
        mixed = np.concatenate([betas, np.ones(num_mixing_steps)])
        row = []
        for d, dataset_rng in enumerate(rng.spawn(num_datasets)):
            simulator.set_data(data, d)
            bounds, kernel_name = _bounds(path, betas, mixed, positions[d], dataset_rng, run,
                                          where=(k, d, num_datasets))
            row.append(bounds)
        rows.append(np.array(row).T)
    lower_d, lower_se_d, upper_d, upper_se_d = (np.array(c) for c in zip(*rows))  # (K, D)
    attrs = result_attrs("bdmc", fallbacks, kernel=kernel_name, backend=options.backend,
                         schedule=schedule, draws=draws, chains=chains,
                         num_datasets=num_datasets, num_mixing_steps=num_mixing_steps,
                         random_seed=seed_attr, model=model.name or None)
    per_dataset = {"dataset_lower": lower_d, "dataset_lower_se": lower_se_d,
                   "dataset_upper": upper_d, "dataset_upper_se": upper_se_d}
    return bdmc_tree(steps, _pool(lower_d, lower_se_d, upper_d, upper_se_d), per_dataset,
                     data, truth, attrs)


def _bounds(path, betas, mixed, position, rng, run: dict, *, where: tuple[int, int, int]):
    """One simulated dataset's bounds at one K: ``((lower, lower_se, upper, upper_se), the
    kernel's name)``, from a forward run on ``betas`` and a backward run on ``mixed`` from
    the true parameters ``position`` (``where``: K, the dataset and the number of them)."""
    k, d, num_datasets = where
    forward_rng, backward_rng = rng.spawn(2)
    label = f"K={k}, dataset {d + 1}/{num_datasets}"
    forward = run_annealing(path, betas=betas, rng=forward_rng,
                            label=f"{path.name} (BDMC forward, {label})", **run)
    backward = run_annealing(
        path, betas=mixed, rng=backward_rng, direction="backward",
        initial_positions=np.tile(position, (run["draws"] * run["chains"], 1)),
        label=f"{path.name} (BDMC backward, {label})", **run)
    low = estimate_log_z(forward.log_weights)
    rev = estimate_log_z(backward.log_weights)
    upper = path.log_base_normalizer - rev.log_z
    if not (np.isfinite(low.log_z) and np.isfinite(upper)):
        side = "forward" if not np.isfinite(low.log_z) else "backward"
        raise AnnealingError(
            f"with K={k} every particle of the {side} run on simulated dataset {d} has "
            "zero weight (a log-likelihood of -inf or NaN along the path); check the "
            "model's likelihood where the prior puts its mass.")
    return (low.log_z, low.standard_error, upper, rev.standard_error), forward.settings["kernel"]


def _pool(lower, lower_se, upper, upper_se) -> dict[str, np.ndarray]:
    """Average the per-dataset bounds (arrays (K, D)) and give their standard errors (see
    the module docstring): the forward runs' delta-method errors for the lower bound; for
    the upper bound the spread of the per-dataset gaps less the lower bound's share, at
    least the backward particles' own errors; the gaps' spread for the gap."""
    num = lower.shape[1]
    gaps = upper - lower
    gap_var = gaps.var(axis=1, ddof=1)
    lower_var = np.mean(lower_se**2, axis=1)
    upper_var = np.maximum(gap_var - lower_var, np.mean(upper_se**2, axis=1))
    return {"lower": lower.mean(axis=1), "lower_se": np.sqrt(lower_var / num),
            "upper": upper.mean(axis=1), "upper_se": np.sqrt(upper_var / num),
            "gap": gaps.mean(axis=1), "gap_se": np.sqrt(gap_var / num)}
