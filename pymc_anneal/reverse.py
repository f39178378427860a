r"""Reverse AIS (RAISE): conservative test log-likelihoods of energy models.

AIS estimates :math:`\log Z` from below, so the test log-likelihood
:math:`\log f(v) - \log \hat Z` it implies is an *over*-estimate, often without any sign of
trouble. RAISE (Burda, Grosse & Salakhutdinov 2015, Algorithm 2) estimates each test
point's probability under the *annealing model* — the distribution of the last state of
the forward AIS chain — with a chain run backwards from the test point:

.. math:: w = \frac{f_K(v)}{Z_0} \prod_{k=0}^{K-1} \frac{f_k(x_k)}{f_{k+1}(x_k)},
          \qquad x_K = v,\quad x_k \sim \tilde T_{k+1}(\cdot \mid x_{k+1}),

where :math:`\tilde T_{k+1}` is the reversal of the transition at :math:`\beta_{k+1}` (which
leaves :math:`p_{k+1}` invariant). Derivation: the forward chain
:math:`p_0(x_0)\prod_k T_k(x_k \mid x_{k-1})` has the annealing model as the marginal of
:math:`x_K`; the reverse chain started at :math:`x_K = v` proposes :math:`x_{0:K-1}`, and
with :math:`\tilde T_k(x' \mid x) = T_k(x \mid x')\,p_k(x')/p_k(x)` the ratio of the two
joint densities telescopes to :math:`w`. So :math:`E[w] = p_{\rm ann}(v)`, and
:math:`\log \overline{w}` is a stochastic *lower* bound on :math:`\log p_{\rm ann}(v)`, which
tends to :math:`\log p(v)` as K grows. (The paper's Algorithm 2 writes the transition of
step k as :math:`\tilde T_k`; it must be the reversal of the transition *into*
:math:`x_{k+1}`, the one at :math:`\beta_{k+1}`, for the weight to telescope.)

Here the hidden units are summed out (the state is the visible vector, as in the forward
AIS of :func:`pymc_anneal.ais`), and a Gibbs sweep :math:`v \to h \to v'` is reversible with
respect to :math:`p_k(v)`, so :math:`\tilde T_k = T_k`: the reverse chain is the driver's
backward run (:func:`pymc_anneal.driver.run_annealing`) from :math:`x = v`, after one (or
``num_mixing_steps``) sweep(s) at :math:`\beta = 1`. AIS and RAISE then estimate the same
annealing model, and their gap bounds the error of both.

RAISE is conservative for :math:`p_{\rm ann}`, which tends to :math:`p` as K grows; at small
K the annealing model is closer to the base and can give *more* mass than the model to
points the model finds unlikely. Measured on a 12x8 RBM: for test points drawn from the
model RAISE at K = 10 sat 0.05 nat below the exact average, for random binary vectors
0.4 nat *above* it. Use test data like the training data, and look at the gap as K grows.

References
----------
Burda, Y., Grosse, R. B. & Salakhutdinov, R. (2015). Accurate and conservative estimates
of MRF log-likelihood using reverse annealing. *AISTATS*.
Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from pymc_anneal.backends import interruptible
from pymc_anneal.driver import check_run, run_annealing, run_options
from pymc_anneal.driver.checkpoint import open_checkpoint
from pymc_anneal.driver.memory import check_num_steps_budget
from pymc_anneal.estimators import estimate_log_z, pooled_mean
from pymc_anneal.exceptions import AnnealingError, AnnealingWarning, warn
from pymc_anneal.io import (
    path_attrs,
    point_estimates_tree,
    result_attrs,
    sandwich_tree,
    schedule_name,
)
from pymc_anneal.partition import forward_schedule
from pymc_anneal.pymc.sampling import AUTO_PILOT_STEPS
from pymc_anneal.schedules import make_schedule
from pymc_anneal.validation import (
    check_choice,
    check_count,
    check_counts,
    check_num_steps,
    check_random_seed,
)

__all__ = ["AGREEMENT", "bracket_kind", "reverse_ais", "sandwich", "sandwich_verdict"]


def _check_energy_model(function: str, model) -> None:
    from pymc_anneal.energy import EnergyModel

    if not isinstance(model, EnergyModel):
        raise AnnealingError(f"{function} needs an energy model from pymc_anneal.energy "
                             f"(a BernoulliRBM, GaussianRBM or DeepBoltzmannMachine), got "
                             f"{type(model).__name__}.")


def _test_data(model, data) -> np.ndarray:
    """The model's checked test points, at least one."""
    test = model.check_data(data)
    if test.shape[0] < 1:
        raise AnnealingError("data must have at least one row (test point), got shape "
                             f"{test.shape}.")
    return test


@interruptible()  # Ctrl-C stops the call, even when Python would lose it
def reverse_ais(
    model,
    data,
    *,
    num_steps: int | str | None = "auto",
    draws: int = 100,
    schedule="linear",
    base: str | None = None,
    base_data=None,
    moments=None,
    num_mixing_steps: int = 1,
    subsample: int | None = None,
    control_variate: str = "unit",
    log_z=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    checkpoint=None,
    dlogz: float | None = None,
) -> xr.DataTree:
    r"""Conservative (RAISE) estimates of the test log-likelihoods :math:`\log p(v)`.

    For every row of ``data``, ``draws`` reverse chains run from the test point down the
    schedule, all points in one compiled loop; each point's estimate is a stochastic lower
    bound on its log-probability under the annealing model (see the module docstring).
    Pair it with the AIS estimate ``model.log_likelihood(data, log_z)`` on the same
    schedule: AIS over-estimates test log-likelihoods, RAISE under-estimates them.

    Parameters
    ----------
    model : EnergyModel
        A model whose annealing path has Gibbs conditionals: a
        :class:`~pymc_anneal.energy.BernoulliRBM` or :class:`~pymc_anneal.energy.GaussianRBM`
        (Algorithm 2: the posterior over the hidden units is exact), or a
        :class:`~pymc_anneal.energy.DeepBoltzmannMachine` (Algorithm 3: a heating run
        with the test point clamped first draws the top layer, see
        :mod:`pymc_anneal.energy.dbm`; the attribute ``algorithm`` says which).
    data : array (N, num_dims)
        The test points (binary for a BernoulliRBM).
    num_steps : int or "auto", default "auto"
        Number of temperatures K (``None`` when ``schedule`` is an array), or ``"auto"``:
        the reverse chains run through the temperatures that a forward
        ``num_steps="auto"`` run on the same path ends with (:func:`pymc_anneal.ais`, with
        ``draws`` particles in one chain, plus its check chain: K of equal thermodynamic
        length). The forward run's particles are dropped: only its schedule is kept. A reverse chain from a test point like the model's samples sees about the
        forward weights' variance, so each point's standard error is about the forward
        run's for ``draws`` particles. The attribute ``num_steps`` records K.
    draws : int, default 100
        Reverse chains per test point.
    schedule : str or array, default "linear"
        As in :func:`pymc_anneal.ais`.
    base, base_data, moments
        The annealing path's base, as ``base``, ``data`` and ``moments`` of
        :func:`pymc_anneal.ais` (``base_data``: the training data for a base-rate base).
    num_mixing_steps : int, default 1
        Sweeps at :math:`\beta = 1` from the test point before the chain anneals down (the
        reversal of the annealing model's last transition; more make a valid, longer one).
    subsample : int, optional
        Run RAISE on a random subsample of this many test points only, and estimate the
        average over all of ``data`` with :math:`\log f(v)` as a control variate (Burda et
        al. 2015, §4): :math:`\overline{\log f}_{\rm all} + \overline{(\log \hat p -
        \alpha \log f)}_{\rm sub}` (with :math:`\alpha \overline{\log f}_{\rm all}`). Since
        :math:`\log p(v) - \log f(v) = -\log Z` is the same for every point, the subsample's
        spread nearly vanishes: a few points give the whole test set's average.
    control_variate : {"unit", "fitted"}, default "unit"
        :math:`\alpha = 1`, or the least-squares slope of :math:`\log \hat p` on
        :math:`\log f` over the subsample.
    log_z : float, EvidenceEstimate or xarray.DataTree, optional
        An estimate of :math:`\log Z` on the same path: the result of
        :func:`pymc_anneal.ais` (or its :func:`pymc_anneal.log_evidence`), or a float known
        exactly (standard error 0). With it, the AIS-implied average
        :math:`\overline{\log f(v)} - \log \hat Z` is set against RAISE's, and an
        :class:`~pymc_anneal.AnnealingWarning` is raised when RAISE lies above it beyond the
        tolerance :data:`AGREEMENT` and three combined standard errors (an inverted
        bracket, see :func:`bracket_kind`): RAISE errs low for the annealing model, so it is
        then the annealing model that over-rates the test data at this K; increase
        ``num_steps``. The attribute ``bracket`` records the classification.
    random_seed, progressbar, backend, checkpoint
        As in :func:`pymc_anneal.ais`.
    dlogz : float, optional
        With ``num_steps="auto"``: the target standard error of each test point's estimate
        (of ``draws`` reverse chains); K is chosen by the forward run for this target, as
        ``dlogz`` of :func:`pymc_anneal.ais` for ``draws`` particles.

    Returns
    -------
    xarray.DataTree
        ``sample_stats``: per test point (dimension ``point``) ``log_likelihood`` and its
        standard error ``log_likelihood_se``, and the test-set average
        ``mean_log_likelihood`` with ``mean_log_likelihood_se`` (the estimates' error, not
        the spread of the test set); ``particles``: the reverse ``log_weight`` per point and
        draw. With ``subsample``, ``point`` indexes the subsample (``data_index`` gives
        the rows of ``data``), the mean is the control-variate estimate over all rows, its
        standard error includes the subsampling error, and ``variance_reduction`` is the
        subsample variance of :math:`\log \hat p` over that of the control-variate
        residual.

    References
    ----------
    Burda, Y., Grosse, R. B. & Salakhutdinov, R. (2015). Accurate and conservative
    estimates of MRF log-likelihood using reverse annealing. *AISTATS*.

    Examples
    --------
    >>> import numpy as np, pymc_anneal as pa
    >>> from pymc_anneal.energy import BernoulliRBM
    >>> rng = np.random.default_rng(0)
    >>> rbm = BernoulliRBM(rng.normal(0, 1, (6, 4)), np.zeros(6), np.zeros(4))
    >>> test = (rng.random((5, 6)) < 0.5).astype(float)
    >>> result = pa.reverse_ais(rbm, test, num_steps=200, draws=50, random_seed=1,
    ...                         progressbar=False)
    >>> exact = rbm.log_likelihood(test, rbm.exact_log_z()).mean()
    >>> raise_ = result["sample_stats"]["mean_log_likelihood"].item()
    >>> bool(raise_ < exact + 3 * result["sample_stats"]["mean_log_likelihood_se"].item())
    True
    """
    arguments = dict(locals())
    _check_energy_model("reverse_ais", model)
    num_steps, dlogz = check_num_steps(num_steps, schedule, dlogz)
    draws = check_count("draws", draws, 2)
    check_num_steps_budget(num_steps, draws=draws)  # before the schedule
    auto = num_steps == "auto"
    betas = make_schedule(schedule, AUTO_PILOT_STEPS if auto else num_steps)
    num_mixing_steps = check_count("num_mixing_steps", num_mixing_steps, 1)
    options = run_options(backend=backend, progressbar=progressbar)
    test = _test_data(model, data)
    control_variate = check_choice("control_variate", control_variate, ("unit", "fitted"))
    ais_log_z = None if log_z is None else _ais_log_z(log_z)
    ckpt, random_seed = open_checkpoint(checkpoint, model.content, {
        **arguments, "log_z": ais_log_z}, random_seed)
    rng, seed_attr = check_random_seed(random_seed)
    path_rng, rng = rng.spawn(2)
    all_log_f = _log_f(model, test, path_rng)
    index, rng = _subsample(test.shape[0], subsample, rng)
    test, log_f = test[index], all_log_f[index]
    path, options = _raise_path(model, options, path_rng, base=base, data=base_data,
                                moments=moments)
    check_run(path, options, draws=draws, chains=test.shape[0],  # before the repeats below
              num_steps=betas.size - 1 + num_mixing_steps, direction="backward")
    if auto:  # a forward run's schedule; the reverse run is independent of its weights
        size_rng, rng = rng.spawn(2)
        betas = forward_schedule(path, options, schedule, draws=draws, chains=1, dlogz=dlogz,
                                 rng=size_rng, checkpoint=ckpt, label=model.name)
    algorithm, initial, offset, rng = _reverse_start(model, path, test, log_f, betas, draws,
                                                     rng, options, ckpt)
    mixed = np.concatenate([betas, np.ones(num_mixing_steps)])
    run = run_annealing(path, betas=mixed, draws=draws, chains=test.shape[0], rng=rng,
                        options=options, direction="backward",
                        initial_positions=initial.astype(path.dtype),
                        label=f"{model.name} (RAISE)", checkpoint=ckpt)
    log_w = run.log_weights + offset  # (points, draws)
    estimates = [estimate_log_z(row) for row in log_w]
    log_lik = np.array([e.log_z for e in estimates])
    log_lik_se = np.array([e.standard_error for e in estimates])
    if not np.all(np.isfinite(log_lik)):
        raise AnnealingError("some test points got zero weight on every reverse chain "
                             f"(points {np.flatnonzero(~np.isfinite(log_lik))[:5].tolist()}); "
                             "check that they lie in the model's support.")
    (mean, mean_se), extra = pooled_mean(log_lik, log_lik_se), {}
    if subsample is not None:
        mean, mean_se, extra = _control_variate(log_lik, log_lik_se, log_f, all_log_f,
                                                control_variate)
        extra["data_index"] = ("point", index)
    num_steps = int(betas.size - 1)
    bracket = None if ais_log_z is None else _bracket(
        float(all_log_f.mean()) - ais_log_z[0], ais_log_z[1], float(mean), float(mean_se),
        num_steps)
    attrs = result_attrs(
        "raise", path_attrs(path), quantity="test_log_likelihood",
        kernel=run.settings["kernel"], backend=options.backend, num_steps=num_steps,
        num_mixing_steps=num_mixing_steps, num_test_points=int(all_log_f.size),
        algorithm=algorithm, bracket=bracket,
        control_variate=control_variate if subsample is not None else None,
        schedule=schedule_name(schedule), random_seed=seed_attr, model=model.name)
    return point_estimates_tree(log_w, estimates, mean, mean_se, extra=extra, attrs=attrs)


def _raise_path(model, options, rng, **base):
    """The annealing path of RAISE (one with Gibbs conditionals) and ``options`` with its
    kernel."""
    path, kernel = model.annealing_path(rng=rng, **base)
    if "gibbs_sweep" not in path.capabilities:
        raise AnnealingError(
            f"RAISE needs a model whose hidden units can be summed out and resampled from "
            f"their conditionals (an RBM's Gibbs sweep); {type(model).__name__} "
            f"{model.name!r} has none. Estimate its log Z with pymc_anneal.ais instead.")
    return path, options.replace(kernel=kernel)


def _subsample(num_points: int, subsample: int | None, rng: np.random.Generator):
    """The rows of the test data that RAISE runs on (all, or a random ``subsample`` of
    them, sorted), and the generator left for the runs."""
    if subsample is None:
        return np.arange(num_points), rng
    subsample = check_count("subsample", subsample, 2)
    if subsample > num_points:
        raise AnnealingError(f"subsample must be at most the number of test points, "
                             f"{num_points}, got {subsample}.")
    sub_rng, rng = rng.spawn(2)
    return np.sort(sub_rng.choice(num_points, size=subsample, replace=False)), rng


def _reverse_start(model, path, test, log_f, betas, draws, rng, options, checkpoint=None):
    """Where the reverse chains start: ``(algorithm, initial positions (points * draws, d),
    log weight offset per point (points, 1) or (points, draws), the generator left)``.

    Algorithm 2 (Burda et al. 2015): the test points themselves (exact draws of h | v
    start the reverse chain), offset by ``log f(v) - log Z_0``. Algorithm 3 (an intractable
    posterior, a deep Boltzmann machine): a forward run over the hidden part with the test
    point clamped ends in the states the reverse chain starts from, offset by
    ``log p0(v) + log w_heat``.
    """
    if not callable(getattr(model, "heating", None)):
        return (2, np.repeat(test, draws, axis=0),
                (log_f - path.log_base_normalizer)[:, None], rng)
    heat_rng, rng = rng.spawn(2)
    heat_path, start, log_p0 = model.heating(path, test, draws, heat_rng)
    heat = run_annealing(heat_path, betas=betas, draws=draws, chains=test.shape[0],
                         rng=heat_rng, options=options, initial_positions=start,
                         label=f"{model.name} (RAISE, heating)", checkpoint=checkpoint)
    return (3, heat.positions.reshape(test.shape[0] * draws, -1),
            log_p0[:, None] + heat.log_weights, rng)


def _bracket(ais_mean: float, ais_se: float, mean: float, mean_se: float,
             num_steps: int) -> str:
    """The bracket of AIS's and RAISE's averages (:func:`bracket_kind`); an
    :class:`~pymc_anneal.AnnealingWarning` (for the caller of :func:`reverse_ais`) when it
    is inverted."""
    bracket = bracket_kind(ais_mean, ais_se, mean, mean_se)
    if bracket == "inverted":
        warn(
            f"RAISE's average test log-likelihood, {mean:.3f} +/- "
            f"{mean_se:.3f}, lies above the AIS-implied value {ais_mean:.3f} +/- "
            f"{ais_se:.3f} beyond the errors (K={num_steps}): RAISE errs low for "
            "the annealing model, so at this K the annealing model over-rates the test "
            "data and the estimate cannot be trusted. Increase num_steps.")
    return bracket


def _ais_log_z(log_z) -> tuple[float, float]:
    """``(log Z, its standard error)`` from ``reverse_ais``'s ``log_z`` argument."""
    from pymc_anneal.evidence import EvidenceEstimate, log_evidence

    if isinstance(log_z, xr.DataTree):
        quantity = log_z.attrs.get("quantity")
        if quantity != "log_partition_function":
            raise AnnealingError(
                "log_z must be the result of pymc_anneal.ais on the same model (attribute "
                f"quantity 'log_partition_function'), got a DataTree with quantity {quantity!r}.")
        log_z = log_evidence(log_z)
    if isinstance(log_z, EvidenceEstimate):
        value, se = log_z.log_evidence, log_z.standard_error
    elif isinstance(log_z, int | float | np.floating | np.integer) and not isinstance(log_z, bool):
        value, se = float(log_z), 0.0
    else:
        raise AnnealingError(
            "log_z must be a float, a pymc_anneal.EvidenceEstimate or the DataTree of "
            f"pymc_anneal.ais, got {type(log_z).__name__}.")
    if not (np.isfinite(value) and np.isfinite(se) and se >= 0):
        raise AnnealingError(f"log_z must be finite with a finite standard error >= 0, got "
                             f"{value} +/- {se}.")
    return value, float(se)


def _control_variate(log_lik, log_lik_se, log_f, all_log_f, kind):
    """The control-variate estimate of the full test set's average from a subsample, its
    standard error (subsampling, with the finite-population correction, plus RAISE's own
    error) and the variance reduction against the plain subsample mean."""
    n, total = log_lik.size, all_log_f.size
    alpha = 1.0
    if kind == "fitted" and np.var(log_f) > 0:
        alpha = float(np.cov(log_lik, log_f)[0, 1] / np.var(log_f, ddof=1))
    residual = log_lik - alpha * log_f
    mean = alpha * all_log_f.mean() + residual.mean()
    spread = residual.var(ddof=1)
    se = np.sqrt((1.0 - n / total) * spread / n + np.sum(log_lik_se**2) / n**2)
    reduction = log_lik.var(ddof=1) / spread if spread > 0 else np.inf
    return mean, se, {"variance_reduction": ((), reduction), "control_variate_alpha": ((), alpha)}


AGREEMENT = 0.1
"""The sandwich calls AIS and RAISE in agreement when their gap is below this many nats (and
three times their combined standard error is below it too)."""

NOISE_SES = 3.0
"""A gap is beyond the noise when it exceeds this many combined standard errors."""


def bracket_kind(ais: float, ais_se: float, raise_: float, raise_se: float,
                 tolerance: float = AGREEMENT) -> str:
    r"""Classify an AIS / RAISE pair of estimates of the same test log-likelihood.

    With :math:`g = \text{ais} - \text{raise}` and :math:`s = \sqrt{\text{ais\_se}^2 +
    \text{raise\_se}^2}`:

    - ``"disagree"``: :math:`g > \text{tolerance}` and :math:`g > 3s` (the bracket is open
      beyond the noise: K is too small);
    - ``"inverted"``: :math:`-g > \text{tolerance}` and :math:`-g > 3s` (RAISE above AIS
      beyond the noise: the annealing model over-rates the test data at this K);
    - ``"agree"``: :math:`|g| \le \text{tolerance}` and :math:`3s \le \text{tolerance}`;
    - ``"noisy"``: otherwise (the gap is within three standard errors, and those are too
      wide to show agreement within ``tolerance``).

    A gap far beyond the noise is judged however large the noise is.
    """
    gap, noise = ais - raise_, NOISE_SES * float(np.hypot(ais_se, raise_se))
    if abs(gap) > tolerance and abs(gap) > noise:
        return "disagree" if gap > 0 else "inverted"
    if abs(gap) <= tolerance and noise <= tolerance:
        return "agree"
    return "noisy"


def sandwich_verdict(ais: float, ais_se: float, raise_: float, raise_se: float,
                     tolerance: float = AGREEMENT, *, num_steps: int | None = None) -> str:
    """The sandwich's verdict in words (see :func:`bracket_kind` for the rule).

    Parameters
    ----------
    ais, ais_se : float
        The AIS estimate of the average test log-likelihood and its standard error.
    raise_, raise_se : float
        The RAISE estimate and its standard error.
    tolerance : float, default AGREEMENT
        The gap (nats) below which the two agree.
    num_steps : int, optional
        K, named in the words when given.
    """
    kind = bracket_kind(ais, ais_se, raise_, raise_se, tolerance)
    gap, se = ais - raise_, float(np.hypot(ais_se, raise_se))
    at = f"at K={num_steps}, " if num_steps is not None else ""
    where = (f"{at}AIS gives {ais:.3f} +/- {ais_se:.3f} and RAISE {raise_:.3f} "
             f"+/- {raise_se:.3f} (gap {gap:.3f} nats, {abs(gap) / se if se > 0 else np.inf:.1f}"
             " combined standard errors)")
    if kind == "agree":
        return (f"AIS and RAISE agree: {where}, within {tolerance} nats and their errors. "
                "Both estimates can be trusted.")
    if kind == "disagree":
        return (f"AIS and RAISE disagree: {where}. The true average test log-likelihood "
                "most likely lies between them; AIS over-estimates it and RAISE "
                "under-estimates it. Increase num_steps until the gap closes.")
    if kind == "inverted":
        return (f"RAISE is above AIS: {where}, beyond their errors. The bracket is "
                "inverted: at this K the annealing model over-rates the test data, and "
                "neither estimate can be trusted. Increase num_steps (K) until RAISE falls "
                "below AIS, and check that the test data resemble the training data.")
    return (f"Too noisy to judge: {where}; the gap is within {NOISE_SES:g} combined standard "
            f"errors ({NOISE_SES * se:.3f}), which exceed the agreement tolerance {tolerance} "
            "nats. Increase draws (and ais_draws).")


@interruptible()  # Ctrl-C stops the call, even when Python would lose it
def sandwich(
    model,
    data,
    *,
    num_steps="auto",
    draws: int = 100,
    ais_draws: int = 1000,
    ais_chains: int = 4,
    schedule="linear",
    base: str | None = None,
    base_data=None,
    moments=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    dlogz: float | None = None,
) -> xr.DataTree:
    r"""AIS and RAISE on the same schedules: the test log-likelihood bracketed, against K.

    For each number of temperatures K, :func:`pymc_anneal.ais` estimates :math:`\log Z`
    (its test log-likelihood :math:`\overline{\log f(v)} - \log \hat Z` errs high) and
    :func:`reverse_ais` the test log-likelihoods directly (erring low). Their gap bounds the
    error of both; it closes as K grows.

    Parameters
    ----------
    model : EnergyModel
        A :class:`~pymc_anneal.energy.BernoulliRBM`, :class:`~pymc_anneal.energy.GaussianRBM`
        or :class:`~pymc_anneal.energy.DeepBoltzmannMachine` (whose :math:`\log f(v)`, for the
        AIS side, is exact for a small top layer and importance-sampled otherwise).
    data : array (N, num_dims)
        Test points.
    num_steps : int, sequence of int or "auto", default "auto"
        The values of K, or ``"auto"``: one K, the one the AIS run chooses
        (:func:`pymc_anneal.ais` with ``num_steps="auto"``), and RAISE through the same
        temperatures (those of the AIS run, of equal thermodynamic length).
    draws : int, default 100
        RAISE chains per test point.
    ais_draws, ais_chains : int, default 1000 and 4
        AIS particles per chain, and chains.
    schedule, base, base_data, moments, random_seed, progressbar, backend
        As in :func:`reverse_ais` (AIS gets ``base_data`` as its ``data``).
    dlogz : float, optional
        With ``num_steps="auto"``: the AIS run's target standard error of :math:`\log Z`
        (``dlogz`` of :func:`pymc_anneal.ais`).

    Returns
    -------
    xarray.DataTree
        ``sample_stats`` over ``num_steps``: ``ais`` and ``ais_se`` (the AIS estimate of
        the average test log-likelihood), ``raise`` and ``raise_se``, and ``gap``
        (``ais - raise``), and ``ais_warning`` (whether AIS raised an
        :class:`~pymc_anneal.AnnealingWarning` at that K: expected at small K, where the
        gap shows the same thing; the warnings are recorded here rather than raised); the
        attribute ``verdict`` says in words what the gap at the largest K means
        (:func:`sandwich_verdict`: agreement, an open bracket, an inverted one or too noisy
        to judge). :func:`pymc_anneal.plots.plot_sandwich` draws it.

    References
    ----------
    Burda, Y., Grosse, R. B. & Salakhutdinov, R. (2015). Accurate and conservative
    estimates of MRF log-likelihood using reverse annealing. *AISTATS*, Figure 4.
    """
    from pymc_anneal.evidence import log_evidence
    from pymc_anneal.partition import ais

    auto = isinstance(num_steps, str) and num_steps == "auto"
    steps = [num_steps] if isinstance(num_steps, str) else check_counts("num_steps", num_steps, 1)
    check_num_steps(steps[-1], schedule, dlogz)  # a bad name, an array with "auto", dlogz
    _check_energy_model("sandwich", model)
    rng, seed_attr = check_random_seed(random_seed)
    test = _test_data(model, data)
    log_f = float(np.mean(_log_f(model, test, np.random.default_rng(0))))
    rows = []
    common = {"schedule": schedule, "base": base, "moments": moments,
              "progressbar": progressbar, "backend": backend}
    for i, k in enumerate(steps):
        ais_rng, raise_rng = rng.spawn(2)
        if not auto:
            raised = reverse_ais(model, test, num_steps=k, draws=draws, base_data=base_data,
                                 random_seed=raise_rng, **common)["sample_stats"]
        with warnings.catch_warnings(record=True) as caught:  # small K: expected, recorded
            warnings.simplefilter("always", AnnealingWarning)
            result = ais(model, num_steps=k, draws=ais_draws, chains=ais_chains,
                         data=base_data, random_seed=ais_rng, dlogz=dlogz, **common)
            forward = log_evidence(result)
        for w in caught:
            if not issubclass(w.category, AnnealingWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if auto:  # RAISE on the temperatures that AIS chose
            betas = result["annealing_stats"]["beta"].values[0]
            steps[i] = betas.size
            raised = reverse_ais(model, test, num_steps=None, draws=draws,
                                 base_data=base_data, random_seed=raise_rng,
                                 **{**common, "schedule": np.concatenate([[0.0], betas])}
                                 )["sample_stats"]
        rows.append((log_f - forward.log_evidence, forward.standard_error,
                     raised["mean_log_likelihood"].item(),
                     raised["mean_log_likelihood_se"].item(),
                     any(issubclass(w.category, AnnealingWarning) for w in caught)))
    ais_ll, ais_se, raise_ll, raise_se, warned = (np.array(c) for c in zip(*rows))
    return sandwich_tree(steps, {
        "ais": ais_ll, "ais_se": ais_se, "raise": raise_ll, "raise_se": raise_se,
        "gap": ais_ll - raise_ll, "ais_warning": warned,
    }, result_attrs(
        "ais_raise_sandwich", quantity="mean_test_log_likelihood", model=model.name,
        schedule=schedule_name(schedule), random_seed=seed_attr, backend=backend,
        verdict=sandwich_verdict(ais_ll[-1], ais_se[-1], raise_ll[-1], raise_se[-1],
                                 num_steps=steps[-1])))


def _log_f(model, data, rng) -> np.ndarray:
    """``log f(v)`` per row: exact where the model can, else its importance-sampled estimate
    (a deep Boltzmann machine with a large top layer, Burda et al. 2015 §5.2)."""
    try:
        return model.log_unnormalized_numpy(data)
    except AnnealingError:
        if not callable(getattr(model, "estimate_log_unnormalized", None)):
            raise
        return model.estimate_log_unnormalized(data, rng=rng)[0]
