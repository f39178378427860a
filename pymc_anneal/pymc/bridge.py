r"""``bridge_sampling``: the evidence of a PyMC model from posterior draws it already has.

Bridge sampling (Meng & Wong, 1996; the iterative scheme of Gronau et al., 2017, as in R's
``bridgesampling``). Let :math:`q(\theta) = p(y \mid \theta)\,p(\theta)` be the model's
unnormalized posterior in PyMC's unconstrained value space (the transforms' log-Jacobians
included; the density of :func:`pymc_anneal.pymc.adapter.model_path` at :math:`\beta = 1`),
:math:`Z = \int q` the evidence and :math:`g` a normalized proposal. With the optimal bridge
function, :math:`r = Z` solves

.. math::

    r = \frac{\frac{1}{N_2}\sum_j \frac{l_{2j}}{s_1 l_{2j} + s_2 r}}
             {\frac{1}{N_1}\sum_i \frac{1}{s_1 l_{1i} + s_2 r}},
    \qquad l = q / g,

with :math:`l_{1i}` at the held-out posterior draws, :math:`l_{2j}` at :math:`N_2` draws from
:math:`g`, :math:`s_1 = N_{\mathrm{eff}}/(N_{\mathrm{eff}} + N_2)`, :math:`s_2 = 1 - s_1`, where
:math:`N_{\mathrm{eff}}` is the effective sample size of :math:`\log l_1` across chains (the
draws are autocorrelated; ``bridgesampling`` uses an ESS there too). It is iterated in logs
until :math:`|\Delta \log r|` < ``tolerance``.

**Split.** Within each chain the first half of the draws fits the proposal (pooled over
chains: their mean :math:`m` and covariance :math:`LL^\top`), the second half is the
posterior side. ``proposal="normal"``: :math:`g = N(m, LL^\top)`. ``proposal="warp3"``
(Meng & Schilling, 2002; ``bridgesampling``'s warp-3): the posterior is centred, whitened
and symmetrized, :math:`\tilde q(z) = |L|\,\tfrac12[q(m + Lz) + q(m - Lz)]` (the same
:math:`Z`), bridged to :math:`g = N(0, I)`: it matches the first three moments, so skewed
posteriors (variances on the log scale, probabilities on the logit scale) cost less
error, for twice the density evaluations. ``"auto"`` is ``"warp3"``: a few thousand more
evaluations of a vectorized density cost milliseconds, and its standard error was 0.55-0.6
times ``"normal"``'s on 4 x 1000 exact draws of a Gaussian and of a logit-Beta posterior
(``benchmarks/measure_bridge_coverage.py``, 200 replicates each, 2026-11-26).

**Error** (Frühwirth-Schnatter, 2004; ``bridgesampling``'s ``error_measures``). At the
fixed point :math:`\hat r` is a ratio of two means, :math:`\bar A / \bar B` with
:math:`A_j = l_{2j}/(s_1 l_{2j} + s_2 \hat r)` (independent draws from :math:`g`) and
:math:`B_i = 1/(s_1 l_{1i} + s_2 \hat r)` (autocorrelated posterior draws); the delta method
gives

.. math::

    \operatorname{Var}(\log \hat Z) \approx \frac{\widehat{\operatorname{Var}}(A)}{N_2 \bar A^2}
    + \frac{\widehat{\operatorname{Var}}(B)}{\mathrm{ESS}(B)\, \bar B^2},

with the ESS of the :math:`B_i` across chains (``arviz_stats``, the mean's ESS from the
autocorrelations, capped at the number of draws so that antithetic chains do not shrink
the error). Both terms are bounded (:math:`A \le 1/s_1`, :math:`B \le 1/s_2`), so their
variances exist whatever the tails of :math:`q/g`.

**Measured** (2026-11-26, 2 CPU cores). Coverage of the nominal 95% interval among runs
without a warning: 94-97.5% over 200 replicates of 4 x 1000 exact draws of a Gaussian and a
logit-Beta posterior, independent or autocorrelated (ESS about 5% of the draws), either
proposal, at most 1.5% of runs warned (``benchmarks/measure_bridge_coverage.py``); 97% and
95% over 100 short NUTS runs (4 x 500 draws) of the same two models, none warned
(``benchmarks/measure_bridge_nuts_coverage.py``). On 4 x 1000 NUTS draws of five
closed-form targets up to ten parameters the error was at most 0.006 nat, for 0.01-0.04 s
of extra compute (0.2-0.5 s on the first call, which compiles the density;
``benchmarks/measure_bridge_nuts.py``). These counts of warned runs are from before the
R-hat line fell from 1.05 to 1.01 (issue 39); at 1.01 the R-hat warning flags 77% of the
200 autocorrelated exact-draw runs of the logit-Beta posterior (ESS about 5%: chains too
short to judge) and none of the independent ones; among the runs without another warning
the coverage is 94% and 95.5% (autocorrelated, independent; the seeds of
``tests/test_bridge.py::test_coverage_of_exact_draws``). The short NUTS runs were not
measured again.

**Per chain and pooled.** Each chain's held-out draws against the same proposal draws give
its own estimate and error; all chains' held-out draws together give the pooled one.

**Diagnostics** (:class:`~pymc_anneal.exceptions.AnnealingWarning`; a result without a
warning is meant to be within :math:`1.96\,\mathrm{se}` about 95% of the time). First the
draws themselves, since the estimate is only as good as they are (issue 39: on posteriordb's
eight_schools_centered, NUTS draws with 25 divergences and an :math:`\hat R` of 1.02 gave an
estimate 0.21 nat low, without a warning):

- divergent transitions: ``sample_stats.diverging`` (NUTS, HMC) has any ``True``. A
  divergence marks a region (a funnel's neck, a ridge) that the sampler could not follow,
  so the draws under-represent it and the evidence is biased by an amount no error bar
  shows. Samplers without the statistic (Metropolis, Slice) are not checked;
- the draws did not mix: the largest rank-normalized split :math:`\hat R` (Vehtari et al.,
  2021; ``arviz_stats``, as ``az.summary`` and ``pm.sample`` report it) over the elements of
  the model's continuous free variables in the posterior exceeds :data:`RHAT_LINE` (1.01,
  the line of Vehtari et al. and of ``pm.sample``'s own warning; a single chain is split in
  halves first). Chains that sit in different modes of a multimodal posterior are the
  extreme case: their pooled draws have whatever mode proportions the chains happened to
  take, and no error bar covers that. The line also flags draws too autocorrelated to
  judge (an ESS of a few per cent of the draws).

Then the estimate:

- the chains' estimates disagree: :math:`\sum_c (\hat L_c - \bar L)^2 / \bar v` exceeds the
  :math:`1 -` :data:`CHAIN_ALARM` quantile of :math:`\chi^2_{C-1}`, with :math:`\bar v` the
  chains' average posterior-side variance (the proposal-side part is shared by all chains
  and cancels in their differences; one chain's own variance rests on a one-chain ESS too
  noisy for the test) and :math:`\bar L` their mean;
- the Pareto :math:`\hat k` of the importance ratios :math:`q/g` at the proposal draws
  exceeds :data:`BRIDGE_TAIL_K` *and* the proposal-side terms :math:`A_j` rest on few
  draws (their Kish ESS is below :data:`~pymc_anneal.diagnostics.LOW_ESS_FRACTION` of
  :math:`N_2`): the proposal misses a heavy tail and barely overlaps the posterior. A heavy
  tail alone is no reason to distrust the result, since the bridge's terms are bounded:
  the logit-scale posterior of a Beta-Binomial has exponential tails against the
  proposal's Gaussian ones, so its :math:`\hat k` exceeds 0.7 in a third of runs of 4 x 1000
  exact draws whose intervals cover 95% of the time
  (``benchmarks/measure_bridge_coverage.py``);
- the iteration did not converge in ``max_iterations``.

**What no diagnostic sees.** A mode that every chain missed leaves no trace in the draws:
they are then good draws of the modes they found, and the estimate is the evidence of those
modes alone, without a warning. Only a method that does not start from the posterior draws
sees it: :func:`pymc_anneal.sample_ais` anneals from the prior, and
:func:`pymc_anneal.compare`, given both results of a model (``{"m": [ais, bridge]}``), warns
when they disagree.
"""

from __future__ import annotations

import json
import time
import weakref

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from pytensor.graph.replace import graph_replace, vectorize_graph
from scipy import stats
from scipy.linalg import solve_triangular

from pymc_anneal._digest import fingerprint
from pymc_anneal.backends import compile_one_off, compile_repeated
from pymc_anneal.diagnostics import LOW_ESS_FRACTION
from pymc_anneal.estimators import pareto_k
from pymc_anneal.exceptions import AnnealingError, warn
from pymc_anneal.io import result_attrs
from pymc_anneal.pymc.adapter import ModelPath, initial_point, model_content, model_path
from pymc_anneal.pymc.arviz_groups import add_arviz_groups
from pymc_anneal.validation import (
    check_choice,
    check_count,
    check_model,
    check_positive_float,
    check_random_seed,
)

__all__ = ["BRIDGE_TAIL_K", "CHAIN_ALARM", "MIN_HALF_DRAWS", "PROPOSALS", "RHAT_LINE",
           "bridge_sampling"]

PROPOSALS = ("auto", "normal", "warp3")
"""The proposals of :func:`bridge_sampling` (``"auto"`` is ``"warp3"``)."""
MIN_HALF_DRAWS = 100
"""Each chain needs at least twice this many draws: one half fits the proposal, the other is
the posterior side; with fewer, neither the fit nor the ESS behind the error is reliable."""
BRIDGE_TAIL_K = 0.7
r"""Above this Pareto :math:`\hat k` of the proposal-side ratios :math:`q/g` the result
warns, when the proposal-side terms also rest on few draws (module docstring). The bridge's
terms are bounded, so unlike AIS's unsmoothed weights
(:data:`pymc_anneal.diagnostics.HEAVY_TAIL_K`, 1/2) their variance does not need
:math:`k < 1/2`; PSIS's line 0.7 marks ratios whose tail the draws cannot estimate."""
CHAIN_ALARM = 1e-3
"""The false-alarm probability of the chains' disagreement test when the errors are right
(a chi-square test at the 0.1% level: rare false alarms, while chains in different modes
differ by many standard errors)."""
RHAT_LINE = 1.01
r"""Above this largest rank-normalized split :math:`\hat R` of the posterior's continuous free
variables the result warns that the chains did not mix: the line of Vehtari et al. (2021)
and of ``pm.sample``'s own warning. The line was 1.05 until issue 39, whose NUTS draws of
eight_schools_centered had an :math:`\hat R` of 1.02 and an estimate 0.21 nat low. On
exact draws of 4 x 1000 it flags about 0.5% of runs of ten independent coordinates with a
lag-one autocorrelation of 0.5, none without, and most runs whose ESS is about 5% of the
draws (as it should: such chains are too short to tell mixing from not); 200 replicates
each."""
_LP_TOLERANCE = 1e-6
"""Relative agreement asked of the model's log density and the draws' ``lp``."""
_CHUNK = 4096


def bridge_sampling(
    idata,
    model: pm.Model | None = None,
    *,
    proposal: str = "auto",
    num_proposal_draws: int | None = None,
    tolerance: float = 1e-10,
    max_iterations: int = 1000,
    random_seed=None,
) -> xr.DataTree:
    r"""Estimate the log evidence of a PyMC model from its posterior draws (bridge sampling).

    Takes the result of ``pm.sample`` (NUTS, or a gradient-free sampler such as
    ``pm.Metropolis`` or ``pm.Slice``) and the model it came from; needs no new MCMC, only
    ``2 N_2`` (``"warp3"``) or ``N + N_2`` evaluations of the model's vectorized log density,
    never its gradient (so a model with an Op that has none works). See the module docstring
    for the estimator, its error and its warnings.

    The estimate is only as good as the draws: it warns when they diverged or did not mix
    (below), but a mode that every chain missed cannot be seen in them, and the estimate is
    then that of the modes the chains found, without a warning. Where the posterior may
    have several modes, run :func:`pymc_anneal.sample_ais` too and give both results to
    :func:`pymc_anneal.compare` (``{"m": [ais, bridge]}``): it warns when they disagree.

    Parameters
    ----------
    idata : xarray.DataTree
        With a ``posterior`` group holding every free continuous variable of ``model``
        (dims ``chain``, ``draw``, then the variable's own). When ``sample_stats`` holds
        ``lp`` (PyMC's log density, Jacobians included), it is checked against the model at
        a few draws, so that draws of another model or of other data are refused.
    model : pymc.Model, optional
        The model (default: the one of the enclosing ``with`` block). Discrete variables
        with a finite support are summed out and the bridge runs over the continuous ones
        (their draws are exact draws of the continuous marginal).
    proposal : {"auto", "normal", "warp3"}
        The proposal fitted to the first half of each chain; ``"auto"`` is ``"warp3"``.
    num_proposal_draws : int, optional
        :math:`N_2`, draws from the proposal (default: as many as the posterior side).
    tolerance : float, default 1e-10
        The iteration stops when :math:`\log r` changes by less.
    max_iterations : int, default 1000
    random_seed : int, sequence of int, numpy.random.Generator, optional
        For the proposal draws.

    Returns
    -------
    xarray.DataTree
        ``sample_stats`` (``chain``): ``log_marginal_likelihood`` and
        ``log_marginal_likelihood_se`` of each chain, ``ess`` (of its posterior-side terms)
        and ``iterations``. Attributes: ``method="bridge_sampling"``,
        ``quantity="log_evidence"``, the pooled ``log_marginal_likelihood`` and its
        ``log_marginal_likelihood_se``, ``ess``, ``pareto_k``, ``rhat`` (the draws' largest,
        as ArviZ computes it), ``num_divergences`` (when the draws carry
        ``sample_stats.diverging``), ``iterations``, ``converged`` (0 or 1), ``proposal``,
        ``num_draws`` (posterior side),
        ``num_proposal_draws``, ``warnings`` (the reasons warned about, ``"; "``-joined),
        ``model_fingerprint``, ``random_seed``, ``timings``. :func:`pymc_anneal.log_evidence`
        and :func:`pymc_anneal.compare` read the pooled estimate.

    Raises
    ------
    AnnealingError
        Before computing: no ``posterior`` group, variables missing or of other shapes,
        draws whose log density is not finite or disagrees with their ``lp``, fewer than
        ``2 * MIN_HALF_DRAWS`` draws per chain, improper priors, discrete variables that
        cannot be summed out, or a model whose variables are all discrete.

    Warns
    -----
    AnnealingWarning
        When the draws have divergent transitions (fix: reparametrize, e.g. non-centered,
        or raise ``target_accept``), the chains did not mix (R-hat above
        :data:`RHAT_LINE`; fix: longer chains, a reparametrization), the chains' estimates
        disagree, the proposal misses a tail, or the iteration did not converge (module
        docstring). Each message says what was seen and what to do.
    """
    start = time.perf_counter()
    model = check_model(model)
    proposal = check_choice("proposal", proposal, PROPOSALS)
    tolerance = check_positive_float("tolerance", tolerance)
    max_iterations = check_count("max_iterations", max_iterations, 1)
    if num_proposal_draws is not None:
        num_proposal_draws = check_count("num_proposal_draws", num_proposal_draws,
                                         2 * MIN_HALF_DRAWS)
    rng, seed = check_random_seed(random_seed)
    posterior = _posterior(idata)
    mp = _bridge_path(model)
    functions = _functions(mp, model)
    draws = _unconstrained_draws(posterior, mp, functions)
    chains, num_draws, _ = draws.shape
    log_q = functions.log_density(draws.reshape(chains * num_draws, -1)).reshape(chains, -1)
    _check_log_density(idata, log_q, mp)
    implausible = _implausible_draws(model, mp, log_q, functions.log_density)
    setup = time.perf_counter()
    proposal = "warp3" if proposal == "auto" else proposal
    l1, l2 = _ratios(draws, log_q, functions.log_density, proposal,
                     num_proposal_draws, rng)
    pooled, per_chain = _estimates(l1, l2, tolerance, max_iterations)
    reasons = _draw_diagnostics(idata, posterior, [rv.name for rv in functions.rvs], pooled)
    reasons += _diagnose(l2, pooled, per_chain, max_iterations)
    reasons = implausible + reasons  # the first thing to look at, when it is there
    for _, message in reasons:
        warn(message)
    timings = {"setup": setup - start, "bridge": time.perf_counter() - setup}
    tree = _tree(pooled, per_chain, l2, draws, reasons, {
        "proposal": proposal, "model": model.name or None, "random_seed": seed,
        "model_fingerprint": fingerprint(model_content(model)),
        "summed_discrete": list(mp.summed) or None,
        "timings": json.dumps({k: round(v, 4) for k, v in timings.items()})})
    # the observed data, as sample_ais writes them: compare checks results share their data
    return add_arviz_groups(tree, model)


# ----------------------------------------------------------------------- inputs and model


def _posterior(idata, who: str = "bridge_sampling") -> xr.Dataset:
    """The posterior group of ``idata``, or a clear error (``who`` needs it)."""
    if not isinstance(idata, xr.DataTree) or "posterior" not in idata.children:
        what = (f"a DataTree with groups {sorted(idata.children)}"
                if isinstance(idata, xr.DataTree) else type(idata).__name__)
        raise AnnealingError(
            f"{who} needs the result of pm.sample (a DataTree with a 'posterior' "
            f"group of draws over chain and draw), got {what}. Run pm.sample on the model "
            "first, or pass its result.")
    posterior = idata["posterior"].to_dataset()
    if "chain" not in posterior.dims or "draw" not in posterior.dims:
        raise AnnealingError(
            f"the posterior group must have dims 'chain' and 'draw', got "
            f"{sorted(posterior.dims)}. Build it with arviz_base.from_dict (chain, draw, ...).")
    return posterior


def _bridge_path(model: pm.Model) -> ModelPath:
    """The model's path with every discrete variable summed out; the adapter refuses
    improper priors and models without data."""
    try:
        mp = model_path(model, discrete="sum")
    except AnnealingError as err:
        if not any(v.dtype.startswith(("int", "uint", "bool")) for v in model.value_vars):
            raise
        raise AnnealingError(
            f"bridge_sampling bridges over continuous variables and needs every discrete "
            f"variable summed out, which fails here: {err} Use pymc_anneal.sample_ais "
            "(discrete='anneal') for this model.") from None
    if mp.path is None:
        raise AnnealingError(
            f"every free variable of the model is discrete ({list(mp.summed)}), so its "
            f"evidence is an exact sum ({mp.exact_log_evidence:.6g}); there is nothing to "
            "bridge. pymc_anneal.sample_ais returns that sum.")
    if mp.path.postprocess is not None:  # the adapter's paths run in the value space
        raise AnnealingError("internal: the model's path does not run in its value space.")
    return mp


class _Functions:
    """The compiled functions of one :class:`ModelPath`: the log density of the path at
    :math:`\\beta = 1` and the map from constrained draws to the path's coordinates."""

    def __init__(self, mp: ModelPath, model: pm.Model):
        x = pt.matrix("x", dtype="float64")
        point = mp.path.evaluate(x, gradients=False)
        self._log_density = compile_repeated([x], [point.log_base + point.log_ratio])
        values = {v.name: v for v in model.value_vars}
        self.rvs = [model.values_to_rvs[values[name]] for name, _, _ in mp.value_slices]
        zero = mp.to_variables(np.zeros((1, 1, mp.path.num_dims)))
        self.shapes = {rv.name: tuple(np.shape(zero[rv.name])[2:]) for rv in self.rvs}
        placeholders = {rv: rv.type() for rv in self.rvs}
        parts = []
        for rv in self.rvs:
            transform = model.rvs_to_transforms.get(rv)
            value = rv if transform is None else transform.forward(rv, *rv.owner.inputs)
            parts.append(pt.as_tensor(value).ravel().astype("float64"))
        flat = graph_replace(pt.concatenate(parts), placeholders, strict=False)
        batched = {p: pt.tensor(f"{rv.name}_draws", dtype=rv.dtype,
                                shape=(None, *self.shapes[rv.name]))
                   for rv, p in placeholders.items()}
        out = vectorize_graph(flat, replace=batched)
        self._forward = compile_one_off(list(batched.values()), [out])

    def log_density(self, positions: np.ndarray) -> np.ndarray:
        """:math:`\\log q` at ``positions`` (n, d); NaN (an undefined density) becomes
        ``-inf``, zero density."""
        out = np.concatenate([np.asarray(self._log_density(positions[i:i + _CHUNK])[0])
                              for i in range(0, len(positions), _CHUNK)] or [np.zeros(0)])
        return np.where(np.isnan(out), -np.inf, out)

    def forward(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """Constrained values (n, ...) per variable to the path's coordinates (n, d)."""
        return np.asarray(self._forward(*[values[rv.name] for rv in self.rvs])[0])


_FUNCTIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Compiled functions by ModelPath: a new path (after ``pm.set_data`` changed what the cached
one depended on) compiles new ones; the functions read ``pm.Data`` when called."""


def _functions(mp: ModelPath, model: pm.Model) -> _Functions:
    functions = _FUNCTIONS.get(mp)
    if functions is None:
        functions = _FUNCTIONS[mp] = _Functions(mp, model)
    return functions


def _unconstrained_draws(posterior: xr.Dataset, mp: ModelPath, functions: _Functions,
                         min_draws: int = 2 * MIN_HALF_DRAWS,
                         needs: str = "bridge_sampling needs at least {} draws per chain (half "
                         "fit the proposal, half are the posterior side)") -> np.ndarray:
    """The posterior draws (chains, draws, d) in the path's coordinates, after checking
    their names, shapes and number (at least ``min_draws`` per chain; ``needs`` says why,
    with ``{}`` for the number)."""
    expected = {rv.name: functions.shapes[rv.name] for rv in functions.rvs}
    missing = sorted(set(expected) - set(posterior.data_vars))
    if missing:
        raise AnnealingError(
            f"the posterior lacks the model's variables {missing} (it has "
            f"{sorted(posterior.data_vars)}): these draws are not of this model. Pass the "
            "model that pm.sample ran on.")
    values = {}
    for name, shape in expected.items():
        var = posterior[name]
        array = np.asarray(var.transpose("chain", "draw", ...).values, dtype=np.float64)
        if array.shape[2:] != shape:
            raise AnnealingError(
                f"variable {name!r} has draws of shape {array.shape[2:]} but the model's "
                f"has shape {shape}: these draws are not of this model (or of other data). "
                "Pass the model that pm.sample ran on, with its data.")
        values[name] = array
    chains, num_draws = next(iter(values.values())).shape[:2]
    if num_draws < min_draws:
        raise AnnealingError(
            f"{needs.format(min_draws)}, got {num_draws}. Run pm.sample "
            "with more draws (1000 is a good default).")
    if not all(np.all(np.isfinite(v)) for v in values.values()):
        raise AnnealingError("the posterior draws contain NaN or infinite values; pass the "
                             "draws of a run that finished.")
    flat = functions.forward({k: v.reshape(chains * num_draws, *v.shape[2:])
                              for k, v in values.items()})
    return flat.reshape(chains, num_draws, -1)


def _check_log_density(idata, log_q: np.ndarray, mp: ModelPath) -> None:
    """The model's log density must be finite at every draw and, where the draws carry
    PyMC's ``lp`` (and no variable was summed out, which changes the density), agree with it
    at a few of them."""
    if not np.all(np.isfinite(log_q)):
        bad = int(np.sum(~np.isfinite(log_q)))
        raise AnnealingError(
            f"the model's log density is -inf or NaN at {bad} of {log_q.size} posterior draws: "
            "they lie outside its support, so they are not draws of this model (or of its "
            "current data). Pass the model that pm.sample ran on, with its data.")
    stats_group = idata["sample_stats"].to_dataset() if "sample_stats" in idata.children \
        else None
    if mp.summed or stats_group is None or "lp" not in stats_group.data_vars:
        return
    lp = np.asarray(stats_group["lp"].transpose("chain", "draw").values, dtype=np.float64)
    if lp.shape != log_q.shape:
        raise AnnealingError(
            f"sample_stats.lp has shape {lp.shape} but the posterior {log_q.shape}: the "
            "groups are of different runs. Pass the result of one pm.sample call.")
    index = np.unique(np.linspace(0, lp.size - 1, 8).astype(int))
    ours, theirs = log_q.ravel()[index], lp.ravel()[index]
    if not np.allclose(ours, theirs, rtol=_LP_TOLERANCE, atol=_LP_TOLERANCE):
        raise AnnealingError(
            f"the model's log density at the draws ({np.round(ours[:3], 4).tolist()} ...) "
            f"differs from their sample_stats.lp ({np.round(theirs[:3], 4).tolist()} ...): "
            "these draws are of another model or of other data (pm.set_data since?). Pass the "
            "model and data that pm.sample ran on.")


def _implausible_draws(model: pm.Model, mp: ModelPath, log_q: np.ndarray,
                       log_density) -> list[tuple[str, str]]:
    r"""A warning where the draws' log density is implausible for a posterior of ``model``:
    its median far below the model's own log density at its initial point.

    Draws of another model or data (``lp`` dropped, so :func:`_check_log_density` cannot
    compare) often lie in the support, where they give a finite, wrong number (-13.74
    against -7.42, with only a warning about mixing). For a posterior of ``d`` dimensions
    near a Gaussian, the log density at its draws is below its maximum, and so below its
    value at any point, by :math:`\chi^2_d / 2` (mean ``d/2``, sd :math:`\sqrt{d/2}`); the
    line :data:`IMPLAUSIBLE_SDS` sds above that mean, plus a nat, is crossed by the median of
    thousands of such draws essentially never, while draws of another posterior sit where the
    model's density is lower by their distance squared."""
    d = mp.path.num_dims if mp.path is not None else 0
    if d == 0:
        return []
    try:
        point = initial_point(model)
        start = np.concatenate([np.ravel(point[name]) for name, _, _ in mp.value_slices])
        at_start = float(log_density(start[None, :].astype(np.float64))[0])
    except Exception:  # noqa: BLE001 - no initial point to judge by: nothing to say
        return []
    median = float(np.median(log_q))
    line = 0.5 * d + IMPLAUSIBLE_SDS * np.sqrt(0.5 * d) + 1.0
    if not np.isfinite(at_start) or at_start - median <= line:
        return []
    message = (f"the model's log density at the posterior draws (median {median:.2f}) is far "
               f"below its value at the model's initial point ({at_start:.2f}): "
               f"{at_start - median:.1f} nats, where a posterior of {d} dimensions is at most "
               f"about {line:.1f} below any point. These draws may come from another model or "
               "data: pass the model and data that pm.sample ran on (keep sample_stats.lp in "
               "the draws, and they are checked against it).")
    return [(f"draws implausible for this model ({at_start - median:.1f} nats below its "
             "initial point)", message)]


IMPLAUSIBLE_SDS = 6.0
r"""How many standard deviations of :math:`\chi^2_d / 2` above its mean the median draw's
log density may fall below the model's initial point before :func:`_implausible_draws`
warns."""


# --------------------------------------------------------------------------- the estimator


def _ratios(draws, log_q, log_density, proposal, num_proposal, rng):
    r"""``(l1, l2)``: :math:`\log q/g` at the held-out draws (chains, n) and at the proposal
    draws (N_2,), for a proposal fitted to the first half of every chain."""
    chains, num_draws, d = draws.shape
    half = num_draws // 2
    fit = draws[:, :half].reshape(-1, d)
    mean = fit.mean(axis=0)
    cov = np.atleast_2d(np.cov(fit, rowvar=False))
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        chol = None
    if chol is None or not np.all(np.diag(chol) > 0):
        raise AnnealingError(
            "the posterior draws' covariance is singular (a coordinate that never moves, or "
            "exactly collinear ones), so no proposal can be fitted; check that the sampler "
            "moved every variable.")
    log_det = float(np.sum(np.log(np.diag(chol))))
    held = draws[:, half:].reshape(-1, d)
    num_proposal = num_proposal or held.shape[0]
    z1 = solve_triangular(chol, (held - mean).T, lower=True).T
    z2 = rng.standard_normal((num_proposal, d))

    def log_std_normal(z):
        return -0.5 * np.sum(z**2, axis=1) - 0.5 * d * np.log(2 * np.pi)

    x2 = mean + z2 @ chol.T
    if proposal == "normal":
        l1 = log_q[:, half:].ravel() + log_det - log_std_normal(z1)
        l2 = log_density(x2) + log_det - log_std_normal(z2)
    else:  # warp-3: |L| (q(m + Lz) + q(m - Lz)) / 2 against N(0, I)
        mirrored = log_density(2 * mean - held)
        l1 = (np.logaddexp(log_q[:, half:].ravel(), mirrored) - np.log(2) + log_det
              - log_std_normal(z1))
        l2 = (np.logaddexp(log_density(x2), log_density(mean - z2 @ chol.T)) - np.log(2)
              + log_det - log_std_normal(z2))
    return l1.reshape(chains, num_draws - half), l2


def _ess(values: np.ndarray) -> float:
    """The ESS of the mean of ``values`` (chains, n), at most ``values.size``; the number of
    values where it is undefined (constant values)."""
    from arviz_stats.base import array_stats

    if np.ptp(values) == 0:
        return float(values.size)
    ess = float(array_stats.ess(values, chain_axis=0, draw_axis=1, method="mean"))
    return min(ess, float(values.size)) if np.isfinite(ess) else float(values.size)


def _logmeanexp(a: np.ndarray) -> float:
    top = np.max(a)
    if not np.isfinite(top):
        return float(top)
    return float(top + np.log(np.mean(np.exp(a - top))))


def _bridge(l1: np.ndarray, l2: np.ndarray, tolerance: float, max_iterations: int,
            ess_cap: float = np.inf) -> dict:
    """The iterative estimate from held-out ratios ``l1`` (chains, n) and proposal ratios
    ``l2``, and its standard error (module docstring), with the posterior side's ESS at most
    ``ess_cap``."""
    n_eff, n2 = _ess(l1), l2.size
    log_s1, log_s2 = np.log(n_eff / (n_eff + n2)), np.log(n2 / (n_eff + n2))
    shift = float(np.median(l1))
    a1, a2 = l1.ravel() - shift, l2 - shift
    log_r, converged, iterations = 0.0, False, 0
    while iterations < max_iterations and not converged:
        iterations += 1
        new = (_logmeanexp(a2 - np.logaddexp(log_s1 + a2, log_s2 + log_r))
               - _logmeanexp(-np.logaddexp(log_s1 + a1, log_s2 + log_r)))
        converged = bool(np.isfinite(new) and abs(new - log_r) < tolerance)
        log_r = new
        if not np.isfinite(log_r):
            break
    log_z = shift + log_r
    with np.errstate(over="ignore", invalid="ignore"):
        b = np.exp(-np.logaddexp(log_s1 + l1 - log_z, log_s2))  # (chains, n)
        a = np.exp(l2 - log_z - np.logaddexp(log_s1 + l2 - log_z, log_s2))
    var_proposal = a.var(ddof=1) / (n2 * a.mean() ** 2)
    proposal_ess = float(a.sum() ** 2 / np.sum(a**2)) if np.any(a > 0) else 0.0
    ess_b = min(_ess(b), ess_cap)
    var_posterior = b.var(ddof=1) / (ess_b * b.mean() ** 2)
    se = float(np.sqrt(var_proposal + var_posterior)) if np.isfinite(log_z) else np.nan
    return {"log_z": float(log_z), "se": se, "var_posterior": float(var_posterior),
            "proposal_ess": proposal_ess,
            "ess": ess_b, "iterations": iterations, "converged": converged,
            "num_draws": int(l1.size)}


def _estimates(l1, l2, tolerance, max_iterations):
    """The pooled estimate and each chain's (its held-out draws, the same proposal draws)."""
    pooled = _bridge(l1, l2, tolerance, max_iterations)
    if not np.isfinite(pooled["log_z"]):
        raise AnnealingError(
            "the model's density is zero at every proposal draw, so bridge sampling has "
            "nothing to bridge; check the model's support against the draws.")
    # one chain's ESS, from a few hundred autocorrelated draws, is biased high (measured:
    # variances 1.65 times too small at an ESS of 5% of 500 draws); the chains' share of the
    # pooled ESS caps it
    cap = pooled["ess"] / l1.shape[0]
    per_chain = [_bridge(l1[c:c + 1], l2, tolerance, max_iterations, cap)
                 for c in range(l1.shape[0])]
    return pooled, per_chain


def _divergences(idata) -> tuple[int, int] | None:
    """``(divergent, total)`` transitions of the draws' ``sample_stats.diverging``; None when
    the sampler records none (Metropolis, Slice, exact draws)."""
    if "sample_stats" not in idata.children:
        return None
    stats_group = idata["sample_stats"].to_dataset()
    if "diverging" not in stats_group.data_vars:
        return None
    diverging = np.asarray(stats_group["diverging"].values).astype(bool)
    return int(diverging.sum()), int(diverging.size)


def _rhat(posterior: xr.Dataset, names: list[str]) -> tuple[float, str | None]:
    """The largest rank-normalized split R-hat of ``arviz_stats`` (the number ``az.summary``
    and ``pm.sample`` report) over the elements of the posterior's variables ``names``, and
    that element's label (``"tau"``, ``"theta[3]"``); NaN and None where it is undefined
    (constant draws). A single chain is split in halves first (ArviZ gives NaN for one)."""
    from arviz_stats.base import array_stats

    worst, label = float("nan"), None
    for name in names:
        var = posterior[name].transpose("chain", "draw", ...)
        values = np.asarray(var.values, dtype=np.float64)
        if values.shape[0] == 1:
            half = values.shape[1] // 2
            values = values[0, :2 * half].reshape(2, half, *values.shape[2:])
        with np.errstate(invalid="ignore", divide="ignore"):
            rhat = np.atleast_1d(np.asarray(array_stats.rhat(
                values, chain_axis=0, draw_axis=1, method="rank"), dtype=np.float64))
        if not np.any(np.isfinite(rhat)):
            continue
        flat = int(np.nanargmax(rhat))
        if np.isfinite(worst) and rhat.flat[flat] <= worst:
            continue
        worst = float(rhat.flat[flat])
        if var.ndim == 2:
            label = name
        else:
            index = np.unravel_index(flat, var.shape[2:])
            parts = [var[dim].values[i] if dim in var.coords else i
                     for dim, i in zip(var.dims[2:], index)]
            label = f"{name}[{', '.join(str(p) for p in parts)}]"
    return worst, label


def _draw_diagnostics(idata, posterior: xr.Dataset, names: list[str],
                      pooled: dict) -> list[tuple[str, str]]:
    """The reasons to distrust the draws themselves (divergences, R-hat; module docstring)
    as ``(short, message)`` pairs like :func:`_diagnose`'s; records ``num_divergences`` and
    ``rhat`` in ``pooled``."""
    reasons = []
    divergences = _divergences(idata)
    pooled["num_divergences"] = None if divergences is None else divergences[0]
    if divergences is not None and divergences[0] > 0:
        count, total = divergences
        message = (
            f"{count} of {total} draws diverged (sample_stats.diverging): the sampler could not "
            "follow the posterior's geometry there (a funnel, a narrow ridge), so the draws "
            "under-represent that region and the log evidence can be biased well beyond its "
            "standard error. Reparametrize the model (e.g. non-centered: theta = mu + tau * "
            "z with z ~ Normal(0, 1)), or raise target_accept (pm.sample(target_accept=0.95)) "
            "and sample again; pymc_anneal.sample_ais gives a second opinion.")
        reasons.append((f"{count} divergent draws of {total}", message))
    rhat, label = _rhat(posterior, names)
    pooled["rhat"] = rhat
    if rhat > RHAT_LINE:
        message = (
            f"the chains did not mix (largest R-hat {rhat:.3f} > {RHAT_LINE:g}, of {label!r}; "
            "rank-normalized split R-hat): the chains saw different parts of the posterior "
            "(or are too short to tell), whose proportions in the draws are then arbitrary, "
            "so the log evidence and its standard error are unreliable. Run longer chains "
            "(more tune and draws), reparametrize the model or raise target_accept if the "
            "sampler struggles, or use pymc_anneal.sample_ais, which does not need mixed "
            "posterior draws.")
        reasons.append((f"chains did not mix (R-hat {rhat:.3f} of {label!r} > {RHAT_LINE:g})",
                        message))
    return reasons


def _diagnose(l2, pooled, per_chain, max_iterations) -> list[tuple[str, str]]:
    """The reasons to distrust the estimate (module docstring): ``(short, message)`` pairs,
    the short one for the result's ``warnings`` attribute (and :func:`pymc_anneal.compare`'s
    ``warning_reason``), the message for the warning."""
    reasons = []
    estimates = np.array([c["log_z"] for c in per_chain])
    variances = np.array([c["var_posterior"] for c in per_chain])
    pooled["chain_p_value"] = p_value = float("nan")
    if len(per_chain) > 1 and np.all(variances > 0) and np.all(np.isfinite(estimates)):
        variance = variances.mean()  # each chain's alone rests on a noisy one-chain ESS
        statistic = float(np.sum((estimates - estimates.mean()) ** 2) / variance)
        pooled["chain_p_value"] = p_value = float(stats.chi2.sf(statistic, len(per_chain) - 1))
    if p_value < CHAIN_ALARM:
        message = (
            f"the chains disagree: their log evidence estimates "
            f"{np.round(estimates, 3).tolist()} differ by more than their standard errors "
            f"allow (chi-square test, p = {p_value:.2g} < {CHAIN_ALARM:g}): the chains saw "
            "different parts of the posterior, so the pooled error is too small. Run longer "
            "chains, or use pymc_anneal.sample_ais.")
        reasons.append((f"chains disagree (p = {p_value:.2g} < {CHAIN_ALARM:g})", message))
    pooled["pareto_k"] = k = pareto_k(l2)
    if k > BRIDGE_TAIL_K and pooled["proposal_ess"] < LOW_ESS_FRACTION * l2.size:
        message = (
            f"the importance ratios q/g at the proposal draws have a heavy tail (Pareto k-hat "
            f"{k:.2f} > {BRIDGE_TAIL_K:g}) and the proposal-side terms rest on few draws "
            f"(ESS {pooled['proposal_ess']:.0f} of {l2.size}): the posterior has heavier "
            "tails than the fitted proposal, which barely overlaps it, so the log evidence and "
            "its standard error are unreliable. Try "
            "proposal='warp3', or pymc_anneal.sample_ais.")
        short = f"heavy-tailed proposal ratios (Pareto k-hat {k:.2f} > {BRIDGE_TAIL_K:g})"
        reasons.append((short, message))
    if not pooled["converged"]:
        message = (f"the bridge iteration did not converge in {max_iterations} iterations, so "
                   "the log evidence is unreliable. Increase max_iterations.")
        reasons.append((f"bridge iteration did not converge ({max_iterations} iterations)",
                        message))
    return reasons


def _tree(pooled, per_chain, l2, draws, reasons, attrs) -> xr.DataTree:
    """The result's DataTree (see :func:`bridge_sampling`)."""
    chains = len(per_chain)
    stats_ = xr.Dataset(
        {"log_marginal_likelihood": ("chain", np.array([c["log_z"] for c in per_chain])),
         "log_marginal_likelihood_se": ("chain", np.array([c["se"] for c in per_chain])),
         "ess": ("chain", np.array([c["ess"] for c in per_chain])),
         "iterations": ("chain", np.array([c["iterations"] for c in per_chain]))},
        coords={"chain": np.arange(chains)})
    stats_.attrs.update({"inference_library": "pymc_anneal", "method": "bridge_sampling"})
    tree = xr.DataTree.from_dict({"sample_stats": stats_})
    tree.attrs.update(result_attrs(
        "bridge_sampling", quantity="log_evidence",
        log_marginal_likelihood=pooled["log_z"], log_marginal_likelihood_se=pooled["se"],
        ess=pooled["ess"], pareto_k=pooled["pareto_k"], rhat=pooled["rhat"],
        num_divergences=pooled["num_divergences"],
        proposal_ess=pooled["proposal_ess"],
        iterations=pooled["iterations"], converged=int(pooled["converged"]),
        num_draws=pooled["num_draws"], num_proposal_draws=int(l2.size),
        chain_p_value=pooled["chain_p_value"], num_dims=int(draws.shape[2]),
        warnings="; ".join(short for short, _ in reasons), **attrs))
    return tree
