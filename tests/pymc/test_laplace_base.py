"""``sample_ais(base="laplace")`` and ``base="auto"``'s choice of it (issue 41, section 1):
annealing from a Gaussian at the mode found by L-BFGS (:mod:`pymc_anneal.pymc.laplace`),
mixed with 10 % of the prior.

Ground truth: closed-form evidences (a linear model with a wide prior, where the prior's
path is long; a normal-inverse-gamma regression, whose posterior is not Gaussian) and a
logistic regression's evidence by quadrature, within 4 reported standard errors; a fit made
deliberately poor costs variance, never bias (the defensive share); a posterior whose
optimizer census finds two modes keeps the prior, whose estimate is checked against
quadrature.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import integrate, special, stats

import pymc_anneal as pa
from pymc_anneal.diagnostics import HEAVY_TAIL_K
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.pymc import adapter, bases, laplace
from tests import analytic
from tests.pymc.test_sampling_auto_base import _bimodal

KW = dict(draws=200, chains=2, progressbar=False)


def _within(idata, exact, k=4.0):
    est = pa.log_evidence(idata)
    assert abs(est.log_evidence - exact) < k * est.standard_error, (est, exact)
    return est


def test_auto_takes_the_laplace_base_where_the_prior_is_wide(monkeypatch):
    """A wide prior (sd 100) and 200 observations: the prior's path is long; the Laplace
    base's pilot asks for a few dozen temperatures, and ``auto`` takes it. Without the
    prediction from the prior draws' spread (:func:`test_a_path_predicted_long_builds_no_
    prior_loop` takes it), the prior's pilot runs and stops where the Laplace base's pilot
    is certain to run (its K so far above ``AUTO_CENSUS_STEPS``, or above
    ``AUTO_LAPLACE_STEPS`` for this much data), so ``prior_num_steps`` is its K there; the
    whole pilot would ask for more. (Importance sampling from the fit, which passes its
    check here, is switched off: ``test_importance.py`` takes it.)"""
    monkeypatch.setattr(bases, "AUTO_IMPORTANCE", False)
    monkeypatch.setattr(bases, "predicted_prior_steps", lambda *args: None)
    target = analytic.linear_regression(num_features=3, n=200, prior_sd=100.0)
    idata = pa.sample_ais(model=target.build(), random_seed=3, **KW)
    assert idata.attrs["base"] == "laplace", dict(idata.attrs)
    assert idata.attrs["prior_pilot"].startswith("stopped after ")
    assert idata.attrs["laplace_num_steps"] < idata.attrs["prior_num_steps"]
    assert idata.attrs["prior_num_steps"] > bases.AUTO_LAPLACE_STEPS
    assert idata.attrs["num_steps"] == idata.attrs["laplace_num_steps"]
    assert "Laplace base's pilot" in idata.attrs["base_reason"]
    _within(idata, target.log_evidence)


def test_a_path_predicted_long_builds_no_prior_loop(monkeypatch):
    """The same wide prior: the log-likelihood's spread at the build's prior draws predicts
    a long path from the prior (:func:`~pymc_anneal.pymc.bases.predicted_prior_steps`), so
    the Laplace base's loop and pilot come first and the prior's loop is never built; the
    estimate is the closed form's. (Importance sampling from the fit is switched off.)"""
    from pymc_anneal.driver import cache
    from pymc_anneal.pymc.adapter import model_path

    monkeypatch.setattr(bases, "AUTO_IMPORTANCE", False)
    target = analytic.linear_regression(num_features=3, n=200, prior_sd=100.0, seed=11)
    model = target.build()
    built = []
    compiled_loop = cache.compiled_loop
    monkeypatch.setattr(cache, "compiled_loop",
                        lambda path, *a, **k: built.append(path) or compiled_loop(path, *a, **k))
    idata = pa.sample_ais(model=model, random_seed=4, **KW)
    assert idata.attrs["base"] == "laplace", dict(idata.attrs)
    assert idata.attrs["prior_pilot"].startswith("not run: the log-likelihood's spread")
    assert "prior_num_steps" not in idata.attrs
    assert idata.attrs["laplace_num_steps"] < idata.attrs["prior_num_steps_predicted"]
    assert model_path(model).path not in built and built  # the Laplace base's loop only
    _within(idata, target.log_evidence)


def _linear_case(rng):
    d = int(rng.integers(1, 7))
    return analytic.linear_regression(
        num_features=d, n=int(rng.integers(20, 300)), seed=int(rng.integers(1000)),
        prior_sd=float(np.exp(rng.uniform(np.log(3.0), np.log(300.0)))),
        noise_sd=float(rng.uniform(0.5, 2.0)))


@pytest.mark.parametrize("seed", range(3))
def test_the_prediction_is_about_a_lower_bound_of_the_prior_pilot(seed):
    """On random linear models (d 1-6, 20-300 observations, prior sd 3-300), the K predicted
    from the spread at the build's prior draws is at most the prior's whole pilot's (up to
    the pilot's own noise) and not far below it: the decision it serves (the Laplace base
    first) is taken only where the prior's path is long."""
    import dataclasses

    from pymc_anneal.driver import RunOptions
    from pymc_anneal.driver.run import run_pilot
    from pymc_anneal.driver.tuning import AUTO_PILOT_STEPS, AUTO_VARIANCE
    from pymc_anneal.pymc.adapter import model_path
    from pymc_anneal.schedules import make_schedule

    options = RunOptions()
    options = options.replace(tuning=dataclasses.replace(options.tuning,
                                                         auto_variance=AUTO_VARIANCE))
    rng = np.random.default_rng(20261128 + seed)
    for _ in range(2):
        target = _linear_case(rng)
        mp = model_path(target.build())
        predicted = bases.predicted_prior_steps(mp.prior_log_lik_spread, mp.path.num_dims,
                                                AUTO_VARIANCE)[0]
        pilot = run_pilot(mp.path, betas=make_schedule("power", AUTO_PILOT_STEPS), draws=200,
                          chains=2, rng=np.random.default_rng(seed), options=options)
        measured = pilot.schedule(options.tuning)[0].size - 1
        assert predicted <= 1.25 * measured and measured <= 10 * predicted, (
            target.name, predicted, measured)


def test_the_fit_differences_a_missing_gradient_up_to_a_bound(monkeypatch):
    """A log density without a gradient (a NumPy function wrapped as an op) is optimized
    with central differences in place of its gradient (``laplace_gradient`` names the op),
    and ``base="laplace"`` gets the closed-form evidence; beyond
    ``MAX_DIFFERENCE_DIMS`` the base is refused naming the op and the bound, before
    anything runs (it was a raw error from inside PyTensor, then a refusal at every d)."""
    model, exact = _numpy_likelihood_wide(50, 10.0)
    idata = pa.sample_ais(model=model, base="laplace", random_seed=1, **KW)
    assert "normal_log_likelihood" in idata.attrs["laplace_gradient"]
    _within(idata, exact)
    monkeypatch.setattr(laplace, "MAX_DIFFERENCE_DIMS", 0)
    with pytest.raises(AnnealingError, match="the optimizer needs the log density's gradient"
                                             ".*normal_log_likelihood.*MAX_DIFFERENCE_DIMS"):
        pa.sample_ais(model=_numpy_likelihood_wide(50, 10.0)[0], base="laplace",
                      random_seed=1, **KW)


def test_central_differences_match_the_gradient_at_random_points():
    """The differenced log density (:class:`laplace._DifferencedLogDensity`) against the
    log density's own gradient, on a 6-d model with gradients (a logistic regression with
    a free prior scale), at 200 points of N(0, 3^2) in the unconstrained space (scales up
    to e^9, log densities to -1e6): the same values, and gradients within the
    differences' error: 1e-6 relative (truncation) plus the rounding of the two values,
    ``8 eps |log pi| / h`` (measured: at most 6 % of that over five seeds); at
    ``gradient=False`` the values alone."""
    rng = np.random.default_rng(20261130)
    X = rng.normal(size=(40, 4))
    y = rng.integers(0, 2, size=40)
    with pm.Model() as model:
        tau = pm.HalfNormal("tau", 2.0)
        beta = pm.Normal("beta", 0.0, tau, shape=4)
        nu = pm.Gamma("nu", 2.0, 0.5)
        pm.Bernoulli("y", logit_p=X @ beta + pm.math.log(nu), observed=y)
    path = adapter.model_path(model).path
    exact = laplace._log_density_function(path)
    assert exact.differenced is None
    fn = exact.fn
    differenced = laplace._DifferencedLogDensity(lambda x: fn(x)[:1], path.num_dims, "test")
    points = rng.normal(0.0, 3.0, size=(200, path.num_dims))
    values, grads = exact(points)
    d_values, d_grads = differenced(points)
    np.testing.assert_allclose(d_values, values, rtol=1e-12)
    step = laplace.DIFFERENCE_STEP * np.maximum(1.0, np.abs(points))
    rounding = 8 * np.finfo(float).eps * np.maximum(1.0, np.abs(values))[:, None] / step
    assert np.all(np.abs(d_grads - grads) <= 1e-6 * np.maximum(1.0, np.abs(grads)) + rounding)
    only, nothing = differenced(points, gradient=False)
    np.testing.assert_array_equal(only, values)
    assert np.all(np.isnan(nothing))


@pytest.mark.parametrize("case", ["nig", "logistic"])
def test_laplace_base_on_non_gaussian_posteriors(case):
    target = (analytic.nig_regression() if case == "nig" else analytic.logistic_regression())
    idata = pa.sample_ais(model=target.build(), base="laplace", random_seed=5, **KW)
    assert idata.attrs["base"] == "laplace"
    _within(idata, target.log_evidence)


def test_a_poor_fit_costs_variance_not_bias(monkeypatch):
    """The fit moved three posterior standard deviations off and made half as wide: the
    run needs more temperatures, and the estimate stays right (the geometric path from a
    normalized base, whose defensive share, the prior, covers the posterior)."""
    target = analytic.normal_mean()
    fit = laplace.fit_modes

    def poor(*args, **kwargs):
        modes, info = fit(*args, **kwargs)
        return [(v, m + 3.0 * np.sqrt(np.diag(c)), c / 4.0) for v, m, c in modes], info

    monkeypatch.setattr(laplace, "fit_modes", poor)
    # and kept poor: the mean-field fit that would replace it (variational_modes) left out
    monkeypatch.setattr(laplace, "variational_modes", lambda path, modes, rng: (modes, 0))
    idata = pa.sample_ais(model=target.build(), base="laplace", num_steps=100, draws=500,
                          chains=2, random_seed=7, progressbar=False)
    _within(idata, target.log_evidence)


@pytest.mark.parametrize("seed", range(2))
def test_the_defensive_share_leaves_the_first_band_its_step(seed):
    """A Gaussian posterior 100 times narrower than its prior: from the Laplace base every
    band's distribution is nearly the fit's, so every band's step is about the same. The
    base's defensive 10 % of prior draws, thousands of the fit's deviations out, had set
    the first band's inverse mass for all: its step was 0.002 against 0.91 at the end
    (seeds 0-2), its temperatures wasted (``tuning.MASS_OUTLIER_SCALES``)."""
    rng = np.random.default_rng(0)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 100, shape=5)
        pm.Normal("y", mu, 1, observed=rng.normal(size=(200, 5)) + np.arange(5))
    idata = pa.sample_ais(model=model, base="laplace", num_steps=64, random_seed=seed, **KW)
    step = idata["annealing_stats"]["step_size"].values[0]
    assert step[0] > 0.5 * step[-1], (step[0], step[-1])


def test_two_modes_found_get_a_component_each(monkeypatch):
    """The census finds both modes of the bimodal posterior; the base has a Gaussian at
    each, and the estimate is the quadrature's. (Its four observations make the prior's run
    cheap: ``AUTO_LAPLACE_WORK`` is set to 0 so that the Laplace base is built and piloted.)"""
    monkeypatch.setattr(bases, "AUTO_LAPLACE_WORK", 0)
    model, exact = _bimodal()
    idata = pa.sample_ais(model=model, random_seed=11, **KW)
    assert idata.attrs["base"] == "laplace", dict(idata.attrs)
    assert idata.attrs["laplace_modes"] == 2
    np.testing.assert_allclose(idata.attrs["laplace_mode_weights"], 0.5, atol=0.05)
    _within(idata, exact)


def test_fit_finds_both_modes():
    model, _ = _bimodal()
    from pymc_anneal.pymc.adapter import model_path

    path = model_path(model).path
    starts = np.array([[-3.0], [3.0], [0.5]])
    mean, cov, info = laplace.fit_laplace(path, starts, np.random.default_rng(0))
    assert info["laplace_modes"] >= 2
    assert abs(abs(mean[0]) - 2.0) < 0.05


def test_the_fit_evaluates_at_most_a_batch_of_points_at_once(monkeypatch):
    """The Hessian's 2d points go in batches of EVALUATION_BATCH (posteriordb's ldaK5, d =
    15,570, would need gigabytes in one), and the batches change nothing: the fit's mean and
    covariance are the conjugate posterior's, as with one batch."""
    from pymc_anneal.pymc.adapter import model_path

    rng = np.random.default_rng(7)
    d, y = 5, rng.normal(size=(3, 5))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0, shape=d)
        pm.Normal("y", mu, 0.5, observed=y)
    path = model_path(model).path
    precision = 1 / 2.0**2 + y.shape[0] / 0.5**2
    exact_mean = (y.sum(axis=0) / 0.5**2) / precision
    sizes = []
    compile_repeated = laplace.compile_repeated

    def recording(inputs, outputs):
        fn = compile_repeated(inputs, outputs)
        return lambda points: sizes.append(len(points)) or fn(points)

    monkeypatch.setattr(laplace, "compile_repeated", recording)
    fits = {}
    for batch in (3, 2 * d):
        monkeypatch.setattr(laplace, "EVALUATION_BATCH", batch)
        sizes.clear()
        fits[batch] = laplace.fit_laplace(path, np.zeros((1, d)), np.random.default_rng(0),
                                          num_starts=1)
        assert max(sizes) == batch and sum(sizes) > 2 * d  # the Hessian's 2d points, batched
    for mean, cov, _ in fits.values():
        np.testing.assert_allclose(mean, exact_mean, atol=1e-5)
        np.testing.assert_allclose(cov, np.eye(d) / precision, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(fits[3][1], fits[2 * d][1], rtol=1e-12, atol=1e-15)


def test_laplace_base_refuses_annealed_discrete_variables():
    with pm.Model() as model:
        k = pm.Poisson("k", 3.0)
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu + k, 1.0, observed=[3.2])
    with pytest.raises(AnnealingError, match=r'base="laplace" covers continuous coordinates'):
        pa.sample_ais(model=model, base="laplace", discrete="anneal", random_seed=1, **KW)


def _unequal_modes(d: int, narrow_sd: float, narrow_share: float, separation: float,
                   start_narrow: bool = False):
    """``x ~ N(0, 3^2 I_d)`` and a likelihood that is a mixture of a broad Gaussian (sd 1)
    and a narrow one (``narrow_sd``) ``separation`` apart along the diagonal, weighted so
    that the narrow mode holds ``narrow_share`` of the posterior mass. Tempering from the
    prior sees the broad mode only (Woodard, Schmidler & Huber 2009). Exact evidence:
    ``sum_k w_k N(c_k; 0, (9 + s_k^2) I)``. ``start_narrow``: the model's initial point
    (a start of the optimizer's census) at the narrow mode, as a user's ``initval``."""
    half = np.full(d, separation / 2)
    centres, sds = (half, -half), (1.0, narrow_sd)
    log_mass = [stats.multivariate_normal(np.zeros(d), (9.0 + s**2) * np.eye(d)).logpdf(c)
                for c, s in zip(centres, sds)]
    log_w = [np.log(1 - narrow_share) - log_mass[0], np.log(narrow_share) - log_mass[1]]
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 3.0, shape=d, initval=-half if start_narrow else None)
        terms = [lw + pm.logp(pm.Normal.dist(c, s), x).sum()
                 for lw, c, s in zip(log_w, centres, sds)]
        pm.Potential("likelihood", pt.logaddexp(*terms))
    return model, float(np.logaddexp(log_w[0] + log_mass[0], log_w[1] + log_mass[1]))


@pytest.mark.parametrize("d, narrow_sd, narrow_share, separation, seed", [
    (2, 0.3, 0.9, 4.0, 21), (3, 0.3, 0.75, 4.0, 22)])
def test_unequal_width_modes_get_a_component_each(d, narrow_sd, narrow_share, separation,
                                                  seed, monkeypatch):
    """Issue 41, section 2: two modes of unequal width. The census (L-BFGS from the prior
    pilot's particles and the initial point) finds both; the base puts a Gaussian at each,
    weighted by its Laplace mass (here exact: the modes are Gaussian up to the prior), and
    the estimate is the closed form, where the prior's path asks for hundreds to thousands
    of temperatures. Both cases found both modes at 12 seeds of 12 (z from -2.0 to 1.7).
    A narrower mode is not always found: at sd 0.2 and separation 5 in 3-d, or sd 0.3 in
    5-d, no start lands in its basin at one seed in three, and the estimate is then
    log(1 - narrow_share) low, silently, as from the prior (docs/design.md). Without data
    the prior's run is cheap: ``AUTO_LAPLACE_WORK`` is set to 0 so that the Laplace base is
    built and piloted (the default is tested below, in
    ``test_a_cheap_prior_run_keeps_the_census``)."""
    monkeypatch.setattr(bases, "AUTO_LAPLACE_WORK", 0)
    model, exact = _unequal_modes(d, narrow_sd, narrow_share, separation)
    idata = pa.sample_ais(model=model, random_seed=seed, **KW)
    assert idata.attrs["base"] == "laplace", dict(idata.attrs)
    assert idata.attrs["laplace_modes"] == 2
    assert max(idata.attrs["laplace_mode_weights"]) == pytest.approx(narrow_share, abs=0.05)
    _within(idata, exact)


@pytest.mark.parametrize("seed", [41, 42])
def test_the_first_check_finds_unequal_width_modes(seed):
    """At the defaults, two modes of unequal width (3-d, the narrow one sd 0.25 holding 80 %,
    4.5 apart): the Laplace fit made before any loop (``AUTO_IMPORTANCE_FIRST``), started
    from tempered prior draws (``bases.tempered_starts``), finds both, and importance
    sampling from its base gets the closed form. Measured at seeds 300-323: both modes at
    24 of 24 (the fit after the prior's pilot: 20, the other 4 warned); at the harder
    sd 0.2, 5 apart: 18 of 24 (after the prior's pilot: 8, with 7 silently low), and with
    untempered prior draws as starts 8 of 24."""
    model, exact = _unequal_modes(3, 0.25, 0.8, 4.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pa.AnnealingWarning)
        idata = pa.sample_ais(model=model, random_seed=seed, **KW)
    assert idata.attrs["prior_pilot"].startswith("not run: importance sampling"), dict(
        idata.attrs)
    assert idata.attrs["laplace_modes"] == 2
    assert max(idata.attrs["laplace_mode_weights"]) == pytest.approx(0.8, abs=0.05)
    _within(idata, exact)


def test_tempered_starts_sit_where_the_likelihood_is_high():
    """``tempered_starts`` on a path whose likelihood is a narrow Gaussian far out in the
    prior (sd 0.1 at 3 prior sds): its starts are distinct draws of its pool, picked by
    tempered weights whose ESS is 5 % of the pool, so the most likely tenth of the pool
    holds more than half of them (a blind pick: a tenth); on a flat likelihood they are
    plain prior draws."""
    from pymc_anneal.driver.importance import importance_weights
    from pymc_anneal.pymc.adapter import model_path

    with pm.Model() as steep:
        x = pm.Normal("x", 0.0, 1.0, shape=2)
        pm.Potential("like", pm.logp(pm.Normal.dist(3.0, 0.1), x).sum())
    path = model_path(steep).path
    starts = bases.tempered_starts(path, np.random.default_rng(0), 24)
    assert starts.shape == (24, 2) and len(np.unique(starts, axis=0)) == 24
    pool = path.sample_base(np.random.default_rng(0), bases.FIRST_POOL)  # the same draws
    assert all(any(np.array_equal(s, p) for p in pool) for s in starts)
    top = np.quantile(importance_weights(path, pool), 0.9)
    assert np.mean(importance_weights(path, starts) >= top) > 0.5
    # a likelihood finite in a corner only: every start there while the corner holds more
    # than 24 draws of the pool (the tempered weights are zero elsewhere, at beta 0 too),
    # and every draw there first where it holds fewer
    for corner in (0.9, 1.5):  # about 35 and 5 of 1,024 prior draws
        with pm.Model() as window:
            x = pm.Normal("x", 0.0, 1.0, shape=2)
            pm.Potential("like", pt.switch(pt.all(x > corner), 0.0, -np.inf))
        path = model_path(window).path
        pool = path.sample_base(np.random.default_rng(0), bases.FIRST_POOL)
        inside = int(np.all(pool > corner, axis=1).sum())
        starts = bases.tempered_starts(path, np.random.default_rng(0), 24)
        assert np.all(starts > corner, axis=1).sum() == min(inside, 24), (corner, inside)
    with pm.Model() as flat:
        x = pm.Normal("x", 0.0, 1.0, shape=2)
        pm.Potential("like", 0.0 * x.sum())
    path = model_path(flat).path
    starts = bases.tempered_starts(path, np.random.default_rng(0), 24)
    assert starts.shape == (24, 2) and np.abs(starts).max() < 5.0


def test_where_every_path_is_long_the_fewest_temperatures_win(monkeypatch):
    """Where the Laplace base's path is long too (more than ``AUTO_BASE_STEPS``, here 0),
    the fitted mixture of ``base="gaussian"`` is tried as well, and the base whose pilot
    asks for the fewest temperatures runs."""
    from pymc_anneal.pymc import bases

    monkeypatch.setattr(bases, "AUTO_BASE_STEPS", 0)
    monkeypatch.setattr(bases, "AUTO_IMPORTANCE", False)
    target = analytic.linear_regression(num_features=3, n=200, prior_sd=100.0)
    idata = pa.sample_ais(model=target.build(), random_seed=3, fit_steps=50, **KW)
    attrs = idata.attrs
    steps = {name: attrs[f"{name}_num_steps"] for name in ("prior", "laplace", "gaussian")}
    assert attrs["base"] == min(steps, key=lambda n: (steps[n], n != "gaussian")), attrs
    assert attrs["num_steps"] == steps[attrs["base"]]
    assert all(f"{name}: {k}" in attrs["base_reason"] for name, k in steps.items())
    _within(idata, target.log_evidence)


@pytest.mark.slow  # 21 s: the heaviest test of the fast subset
def test_a_funnel_neck_is_no_mode():
    """Centered eight schools: the optimizers run into the funnel's neck, where the density
    grows without bound, and stop where the gradient is still steep (5.7-12.4 in units of
    the curvature's scale; a mode's is 1e-5 or less). The Laplace base is not taken, with
    the reason;
    its many "modes" once made a mixture whose pilot promised K = 52-94 and whose runs needed
    1,228-2,282 temperatures and warned."""
    from tests.pymc.test_funnel import build_model

    model = build_model()
    with pytest.raises(laplace.NeckError, match="grows without bound"):
        bases._laplace_base(model, adapter.model_path(model), np.random.default_rng(0))
    # base="auto" then takes non-centred coordinates (tests/pymc/test_noncentered.py)
    idata = pa.sample_ais(model=model, random_seed=0, **KW)
    assert idata.attrs["noncentered"] == ["theta"], dict(idata.attrs)
    assert "ran into a funnel's neck" in idata.attrs["noncentered_reason"]


def _vague_regression():
    """posteriordb's dugongs, linearized: ``a, b ~ N(0, 1000)``, a precision ``tau ~
    Gamma(1e-4, 1e-4)``, 27 points. Exact evidence: ``a, b`` integrated in closed form
    (the Woodbury identity), ``log tau`` by quadrature."""
    rng = np.random.default_rng(27)
    x = np.sort(rng.uniform(1.0, 30.0, 27))
    y = 1.8 + 0.03 * x + rng.normal(0.0, 0.1, x.size)
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 1000.0)
        b = pm.Normal("b", 0.0, 1000.0)
        tau = pm.Gamma("tau", alpha=1e-4, beta=1e-4)
        pm.Normal("y", a + b * x, 1.0 / pt.sqrt(tau), observed=y)
    design, n = np.column_stack([np.ones_like(x), x]), x.size

    def log_integrand(u):  # log p(u) + log N(y; 0, 1e6 X X' + I / tau), u = log tau
        tau = np.exp(u)
        xty = design.T @ y
        inner = np.eye(2) / 1e6 + tau * design.T @ design
        log_det = -n * u + np.linalg.slogdet(np.eye(2) + tau * 1e6 * design.T @ design)[1]
        quad = tau * y @ y - tau**2 * xty @ np.linalg.solve(inner, xty)
        log_prior = stats.gamma(1e-4, scale=1e4).logpdf(tau) + u
        return log_prior - 0.5 * (n * np.log(2 * np.pi) + log_det + quad)

    grid = np.linspace(-10.0, 15.0, 501)
    peak = grid[np.argmax([log_integrand(u) for u in grid])]
    top = log_integrand(peak)
    z = integrate.quad(lambda u: np.exp(log_integrand(u) - top), -40.0, 25.0, points=[peak],
                       epsabs=0, epsrel=1e-10, limit=200)[0]
    return model, float(np.log(z) + top)


@pytest.mark.slow
def test_a_prior_pilot_far_from_the_posterior_is_no_funnel():
    """posteriordb's dugongs: a vague Gamma(1e-4, 1e-4) precision makes the prior's path
    long (K = 5,589), and its pilot's particles end 107 nats below the mode. The census's
    funnel check once measured the mode against them, called it a funnel's neck, and the
    run from a fitted mixture was 108 nats low (z = -232, warned; on dugongs itself -58 and
    -91 where bridge sampling gives -5.30). A neck is now told by the gradient at the
    optimum (still steep), not by the pilot: the Laplace base runs, and the estimate is the
    quadrature's."""
    model, exact = _vague_regression()
    idata = pa.sample_ais(model=model, random_seed=3, **KW)
    assert idata.attrs["base"] == "laplace", dict(idata.attrs)
    _within(idata, exact)


def _modes(d: int, shares, sds, centres):
    """A census of Gaussian modes, as :func:`laplace.fit_modes` returns it, whose Laplace
    masses are in proportion ``shares``."""
    modes = []
    for share, sd, centre in zip(shares, sds, centres):
        cov = sd**2 * np.eye(d)
        value = np.log(share) - 0.5 * np.linalg.slogdet(2 * np.pi * cov)[1]
        modes.append((value, np.full(d, float(centre)), cov))
    return modes


def test_missed_modes_counts_the_particles_of_each_mode():
    """The census's check (issue 41, section 2): a mode of at least 5 % of the mass that
    holds less than half its share is named, where the particles' effective number makes
    that no accident (3 binomial standard errors); weighted particles count by their
    weights."""
    rng = np.random.default_rng(5)
    modes = _modes(3, [0.6, 0.3, 0.1], [0.2, 1.0, 0.5], [-3.0, 0.0, 4.0])
    broad = rng.normal(0.0, 1.0, (300, 3))
    assert [k for k, _, _ in laplace.missed_modes(modes, broad)] == [0, 2]
    predicted, observed, ess = laplace.mode_shares(modes, broad)
    np.testing.assert_allclose(predicted, [0.6, 0.3, 0.1])
    assert observed[1] > 0.99 and ess == 300
    # every mode held in proportion: nothing missed
    held = np.concatenate([rng.normal(c, s, (n, 3)) for c, s, n in
                           [(-3.0, 0.2, 180), (0.0, 1.0, 90), (4.0, 0.5, 30)]])
    assert laplace.missed_modes(modes, held) == []
    # the narrow mode's particles present but weighted down to 1 %: missed
    log_w = np.where(held[:, 0] < -2, np.log(0.01 / 180), np.log(0.99 / 120))
    assert [k for k, _, _ in laplace.missed_modes(modes, held, log_w)] == [0]
    # four distinct particles cannot show that a 60 % mode is empty (z = -2.4)
    assert laplace.missed_modes(modes, np.repeat(broad[:4], 75, axis=0)) == []
    # a mode of 70 % held by a quarter of the particles: short; by two fifths: not
    pair = _modes(3, [0.7, 0.3], [0.3, 1.0], [-2.0, 2.0])
    for held, short in [(25, [0]), (40, [])]:
        points = np.concatenate([rng.normal(-2.0, 0.3, (held, 3)),
                                 rng.normal(2.0, 1.0, (100 - held, 3))])
        assert [k for k, _, _ in laplace.missed_modes(pair, points)] == short
    # one mode: nothing to miss
    assert laplace.missed_modes(modes[:1], broad) == []


def _report_a_long_laplace_path(monkeypatch):
    """Make the Laplace base's pilot report a long path (as where its fit is poor), so that
    ``base="auto"`` runs the prior first; the importance check made before any loop
    (``AUTO_IMPORTANCE_FIRST``), which a poor fit fails, is switched off (at seeds 1 and 15
    the fit covers both modes and its importance sampling is the run, not the census)."""
    from pymc_anneal.pymc import bases

    monkeypatch.setattr(bases, "AUTO_IMPORTANCE_FIRST", False)

    def long(*args, **kwargs):
        fit, attrs = original(*args, **kwargs)
        return fit, {**attrs, "laplace_num_steps": 10**6}

    original = bases.laplace_pilot
    monkeypatch.setattr(bases, "laplace_pilot", long)


@pytest.mark.slow
@pytest.mark.parametrize("d, narrow_sd, share, seed, reason", [
    (10, 0.3, 0.75, 1, "the prior base's run left short the mode at"),
    (11, 0.5, 0.7, 15, "the prior's pilot left short the mode at")], ids=["run", "pilot"])
def test_a_mode_left_empty_gets_the_laplace_base(d, narrow_sd, share, seed, reason,
                                                 monkeypatch):
    """Tempering's blind spot (Woodard, Schmidler & Huber 2009), a narrow mode holding most
    of the mass, where the Laplace base's pilot is made to report a long path (as where its
    fit is poor), so that the prior runs first. The census finds the mode (the model's
    initial point is there).

    ``run``: in 10-d, a mode of sd 0.3 and 75 % that the prior's pilot is made to have held
    (its check made to pass, as where its resampling multiplied the few particles that
    crossed) and the main run's 400 independent particles did not: from the prior the
    estimate is log(0.25) = -1.39 nats low, its weights healthy. The run is made again from
    the Laplace base. (Left to chance, a pilot that held such a mode and a run that did not
    came at 1 seed of 6 before a change of the pilot's streams, and at none of 16 after;
    with the check made to pass the rerun came at 14 seeds of 14.) ``pilot``: in 11-d, a
    mode of sd 0.5 and 70 % that the prior's pilot did not reach: the Laplace base runs at
    once, whatever its pilot asks. (The seed picks a case where the Laplace base's
    importance check fails, so that it anneals and the reason is the census's; elsewhere
    importance sampling from it is the run, and says so: this case came at 2 of seeds
    10-17 with the pilot's 256 particles, seeds 10 and 14, and at 2 with its 250, 10 and
    15.) Both estimates are the closed form; the weights' own warnings (a heavy tail: the
    ``run`` case's k-hat was 0.53 at 250 pilot particles) may come with them."""
    _report_a_long_laplace_path(monkeypatch)
    if reason.startswith("the prior base's run"):
        from pymc_anneal.pymc import bases

        real = bases.missed_modes
        monkeypatch.setattr(bases, "missed_modes",  # the pilot's check (factor=) passes
                            lambda *a, **k: [] if "factor" in k else real(*a, **k))
    model, exact = _unequal_modes(d, narrow_sd, share, 4.0, start_narrow=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = pa.sample_ais(model=model, random_seed=seed, **KW)
    assert all("heavy tail" in str(w.message) for w in caught), [str(w.message) for w in caught]
    assert idata.attrs["base"] == "laplace", dict(idata.attrs)
    assert idata.attrs["base_reason"].startswith(reason), idata.attrs["base_reason"]
    assert f"{100 * share:.0f} % of the posterior" in idata.attrs["base_reason"]
    _within(idata, exact)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["unequal", "bimodal"])
def test_a_mode_left_empty_is_warned_where_the_laplace_base_cannot_run(case, monkeypatch):
    """Where the Laplace base's pilot fails (JAX could not trace its path, say), the prior
    runs, and a mode of the census that its particles left empty is named in an
    ``AnnealingWarning`` (here 10-d, sd 0.3, 70 % of the mass, the model's initial point
    at it: the estimate is about log(0.3) low); where the particles hold every mode (the
    bimodal posterior's two equal modes), the run is right and says nothing of modes.
    (At sd 0.5 the prior's run reached the mode, with weights warned as unreliable, at 5
    seeds of 8: the case of this test was left to the seed; at sd 0.3 the warning came at
    6 seeds of 6, the estimate 1.16-1.29 nats low.)

    In 9 to 11 dimensions the census found such a narrow mode from the prior's particles
    and draws at 1 seed of 14 (docs/design.md): a mode never found is missed silently."""
    from pymc_anneal.pymc import bases

    def failing(*args, **kwargs):
        fit, _ = original(*args, **kwargs)
        return fit._replace(pilot=None, importance=None), {
            "laplace_reason": "its pilot failed: (in this test)"}

    original = bases.laplace_pilot
    monkeypatch.setattr(bases, "laplace_pilot", failing)
    model, exact = (_unequal_modes(10, 0.3, 0.7, 4.0, start_narrow=True) if case == "unequal"
                    else _bimodal())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = pa.sample_ais(model=model, random_seed=22, **KW)
    missed = [w for w in caught if "left short the mode at" in str(w.message)]
    assert idata.attrs["base"] != "laplace", dict(idata.attrs)
    est = pa.log_evidence(idata)
    if case == "unequal":
        assert len(missed) == 1 and issubclass(missed[0].category, pa.AnnealingWarning)
        assert "70 % of the posterior" in str(missed[0].message)
        assert est.log_evidence - exact < np.log(0.3) + 4 * est.standard_error + 0.3
    else:
        assert not missed, [str(w.message) for w in missed]
        _within(idata, exact)


def test_a_mode_of_negligible_mass_gets_no_component():
    """A local maximum 1,000 nats below the highest (hmm_drive_1's census had such modes):
    its Laplace weight underflows to zero, and the mixture refused it ("the mixture's
    weights must be positive"); it is dropped, and the estimate is the closed form (the
    dropped mode's mass is exp(-1000) of it)."""
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 100.0)
        pm.Potential("likelihood", pt.logaddexp(-((x - 40.0) ** 2) / 2,
                                                -1000.0 - (x + 40.0) ** 2 / 2))
    exact = np.log(np.sqrt(2 * np.pi)) + stats.norm(0.0, np.sqrt(10001.0)).logpdf(40.0)
    idata = pa.sample_ais(model=model, base="laplace", random_seed=8, **KW)
    assert idata.attrs["laplace_modes"] == 1
    _within(idata, exact)


def _capture_model():
    """posteriordb's Mb, in small: a matrix of capture probabilities built with
    ``pt.zeros`` and ``set_subtensor`` from a scalar free variable (an Alloc whose shape
    the particle batch enters). ``p ~ Uniform(0, 1)``, 15 Bernoulli outcomes: the exact
    evidence is the Beta function ``B(s + 1, n - s + 1)``."""
    y = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0], [0, 0, 0]], dtype=float)
    with pm.Model() as model:
        p = pm.Uniform("p", 0.0, 1.0)
        p_eff = pt.zeros(y.shape)
        for j in range(y.shape[1]):
            p_eff = pt.set_subtensor(p_eff[:, j], p)
        pm.Potential("likelihood", pt.sum(y * pt.log(p_eff) + (1 - y) * pt.log(1 - p_eff)))
    s, n = y.sum(), y.size
    return model, float(special.betaln(s + 1, n - s + 1))


def test_the_laplace_path_keeps_the_batch_shape_for_jax(monkeypatch):
    """Mb: the Laplace base's path maps whitened coordinates to the model's (mean + L z),
    whose batch size PyTensor then computed by broadcasting, and JAX cannot trace an Alloc
    of a computed shape: the Laplace pilot failed and the prior ran (60-70 s where the
    Laplace base takes 26). The map keeps the shape of ``z``; the evidence is exact.
    (Importance sampling, which builds no loop, is switched off.)"""
    pytest.importorskip("jax")
    monkeypatch.setattr(bases, "AUTO_IMPORTANCE", False)
    model, exact = _capture_model()
    idata = pa.sample_ais(model=model, base="laplace", backend="jax", random_seed=9, **KW)
    assert idata.attrs["backend"] == "jax"
    _within(idata, exact)


def test_a_laplace_loop_that_its_backend_cannot_build_runs_on_another(monkeypatch):
    """Where the run's backend cannot build the Laplace base's loop (and the user left the
    backend to the package), its pilot and run take the backend that
    :func:`~pymc_anneal.driver.cache.choose_loop` picks, with ``laplace_backend_fallback``
    in attrs, rather than leaving the Laplace base. JAX is made to refuse every fitted
    base's path here."""
    from pymc_anneal.pymc import bases

    monkeypatch.setattr(bases, "AUTO_IMPORTANCE", False)  # a loop, not importance sampling

    def refuse_fitted_bases(path, options, **kwargs):
        if "base_chol" in path.parameters and options.backend == "jax":
            assert kwargs["auto_backend"]
            return original(path, options.replace(backend="numba"), **kwargs)[0], {
                "backend_fallback": "jax -> numba: (refused in this test)"}
        return original(path, options, **kwargs)

    original = bases.choose_loop
    monkeypatch.setattr(bases, "choose_loop", refuse_fitted_bases)
    model, exact = _vague_regression()
    idata = pa.sample_ais(model=model, random_seed=4, **KW)
    assert idata.attrs["base"] == "laplace", dict(idata.attrs)
    assert idata.attrs["backend"] == "numba"
    assert idata.attrs["laplace_backend_fallback"].startswith("jax -> numba")
    _within(idata, exact)


@pytest.mark.parametrize("d, narrow_sd, narrow_share, seed", [(2, 0.3, 0.9, 21), (2, 0.4, 0.8, 23)])
def test_a_cheap_prior_run_keeps_the_census(d, narrow_sd, narrow_share, seed, monkeypatch):
    """At the defaults, the unequal-width modes above (no data: the prior's run is cheap,
    ``AUTO_LAPLACE_WORK``): the census is fitted without the Laplace base's loop. The prior's
    pilot reached both modes, so the prior runs; had its particles left a mode short, the
    Laplace base would have been built and run (``test_a_mode_left_empty_gets_the_laplace_base``).
    The estimate is the closed form either way. At 200 x 2 particles the bimodal path's
    check chain often misses the variance target after its two reruns (the 2-d case: 22 of
    60 seeds with the step-size search's former rule, 25 of 60 with its rule since
    2026-11-30), which says the error bar is wider than asked, and is right: that warning is
    let through here, every other fails the test. (The fit's importance check before any
    loop, ``AUTO_IMPORTANCE_FIRST``, is switched off: ``test_the_first_check_finds_unequal_
    width_modes`` takes it.)"""
    monkeypatch.setattr(bases, "AUTO_IMPORTANCE_FIRST", False)
    model, exact = _unequal_modes(d, narrow_sd, narrow_share, 4.0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message='num_steps="auto" missed its target',
                                category=pa.AnnealingWarning)
        idata = pa.sample_ais(model=model, random_seed=seed, **KW)
    assert idata.attrs["prior_num_steps"] > bases.AUTO_LAPLACE_STEPS
    assert idata.attrs["laplace_reason"].startswith("not run: the prior's path is short")
    assert idata.attrs["base"] == "prior" and "laplace_num_steps" not in idata.attrs
    _within(idata, exact)


def test_the_fit_is_compiled_once_per_path_and_reads_new_data(monkeypatch):
    """The fit's log density is compiled once per path (a repeated call fits without a
    compile), and reads ``pm.Data`` when called: after ``pm.set_data`` the fit is the new
    data's conjugate posterior, not the old one's."""
    from pymc_anneal.pymc.adapter import model_path

    compiles = []
    compile_repeated = laplace.compile_repeated
    monkeypatch.setattr(laplace, "compile_repeated",
                        lambda *args: compiles.append(1) or compile_repeated(*args))
    rng = np.random.default_rng(3)
    with pm.Model() as model:
        y = pm.Data("y", rng.normal(size=6))
        mu = pm.Normal("mu", 0.0, 2.0)
        pm.Normal("obs", mu, 0.5, observed=y)
    precision = 1 / 2.0**2 + 6 / 0.5**2
    for data in (rng.normal(size=6), rng.normal(3.0, 1.0, size=6)):
        pm.set_data({"y": data}, model=model)
        path = model_path(model).path
        mean, cov, _ = laplace.fit_laplace(path, np.zeros((1, 1)), np.random.default_rng(0),
                                           num_starts=1)
        np.testing.assert_allclose(mean, data.sum() / 0.5**2 / precision, atol=1e-5)
        np.testing.assert_allclose(cov, [[1 / precision]], rtol=1e-5)
    assert len(compiles) == 1


def _standard_normal_path(d):
    from pymc_anneal.pymc.adapter import model_path

    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0, shape=d)
        pm.Potential("nothing", 0.0 * x.sum())  # the target is the prior
    return model_path(model, "auto").path


@pytest.mark.parametrize("seed", range(4))
def test_the_width_is_the_one_that_matches_the_target(seed):
    """:func:`~pymc_anneal.pymc.laplace.choose_width` on a Gaussian target ``N(0, I_d)``
    (d from 2 to 40, drawn) given fits that are the target's covariance divided by each
    width squared, in random directions and at a random mean offset of 0.1 sd: the score
    is highest at the width that restores the target (the inclusive KL is 0 there, and
    ``d (r - 1 - log r) / 2`` for a variance ratio ``r`` elsewhere); a fit narrower
    than the widest width allows gets the widest; two equal scores go to the wider."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 41))
    path = _standard_normal_path(d)
    rotation, _ = np.linalg.qr(rng.standard_normal((d, d)))
    mean = 0.1 * rng.standard_normal(d) / np.sqrt(d)
    for width in laplace.WIDTHS:
        cov = rotation @ rotation.T / width**2
        chosen, scores = laplace.choose_width(path, mean[None], cov[None], np.ones(1), rng)
        assert chosen == width, (d, width, scores)
        assert np.argmax(scores) == laplace.WIDTHS.index(width)
    chosen, _ = laplace.choose_width(path, mean[None], np.eye(d)[None] / 9.0, np.ones(1), rng)
    assert chosen == laplace.WIDTHS[-1]
    flat = [0.0] * len(laplace.WIDTHS)
    assert max(range(len(flat)), key=lambda i: (flat[i], i)) == len(flat) - 1


def test_a_high_dimensional_fit_is_not_widened_for_nothing():
    """A 60-d linear model with a wide prior: its posterior is Gaussian, the Laplace fit is
    exact, and the base takes its width (``laplace_width`` 1.0); the run asks for the
    fewest temperatures the pilot allows (20 at seeds 2 and 3), where a base 1.5 times
    wider, the width before, sits 13 nats from this posterior (KL) and asked for
    194-200; within 4 standard errors of the closed form."""
    target = analytic.linear_regression(num_features=60, n=200, prior_sd=10.0)
    idata = pa.sample_ais(model=target.build(), base="laplace", random_seed=2, **KW)
    assert idata.attrs["laplace_width"] == 1.0, dict(idata.attrs)
    scores = idata.attrs["laplace_width_scores"]
    assert scores[0] == max(scores)
    assert idata.attrs["num_steps"] <= 40
    _within(idata, target.log_evidence)


def test_the_optimizers_run_together_as_they_would_alone():
    """:func:`~pymc_anneal.pymc.laplace.minimize_together` gives each start what SciPy's
    L-BFGS-B gives it alone (random Rosenbrock-like valleys of random dimension and
    shift), in as many batched calls as its longest optimizer needs; an objective that
    raises ends every optimizer's thread and the error reaches the caller."""
    import threading

    from scipy.optimize import minimize

    rng = np.random.default_rng(41)
    d = int(rng.integers(2, 6))
    shift = rng.normal(size=d)

    def one(x):
        z = x - shift
        value = np.sum(100.0 * (z[1:] - z[:-1] ** 2) ** 2 + (1.0 - z[:-1]) ** 2)
        grad = np.zeros(d)
        grad[:-1] = -400.0 * z[:-1] * (z[1:] - z[:-1] ** 2) - 2.0 * (1.0 - z[:-1])
        grad[1:] += 200.0 * (z[1:] - z[:-1] ** 2)
        return value, grad

    calls = []

    def batched(points):
        calls.append(len(points))
        pairs = [one(x) for x in points]
        return np.array([v for v, _ in pairs]), np.array([g for _, g in pairs])

    starts = list(shift + rng.normal(scale=2.0, size=(7, d)))
    together = laplace.minimize_together(batched, starts)
    for start, fit in zip(starts, together):
        alone = minimize(one, start, jac=True, method="L-BFGS-B", options={"maxiter": 2000})
        np.testing.assert_allclose(fit.x, alone.x, rtol=1e-12, atol=1e-12)
        assert fit.nfev == alone.nfev
    assert max(calls) == len(starts) and len(calls) == max(fit.nfev for fit in together)
    assert sum(calls) == sum(fit.nfev for fit in together)

    before = threading.active_count()
    calls.clear()

    def failing(points):  # in the fifth round
        if len(calls) > 3:
            raise FloatingPointError("the model's log density failed")
        return batched(points)

    with pytest.raises(FloatingPointError, match="log density failed"):
        laplace.minimize_together(failing, starts)
    assert threading.active_count() == before and len(calls) == 4


def _numpy_likelihood_wide(n: int, prior_sd: float):
    """``y_i ~ N(mu, 1)``, ``mu ~ N(0, prior_sd)``, the log-likelihood a NumPy function
    wrapped as an op (no gradient), and the closed-form evidence."""
    import pytensor
    from scipy import stats

    y = np.random.default_rng(5).normal(3.0, 1.0, size=n)

    @pytensor.wrap_py(itypes=[pt.dscalar], otypes=[pt.dscalar])
    def normal_log_likelihood(mu):
        return np.asarray(stats.norm.logpdf(y, mu, 1.0).sum())

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, prior_sd)
        pm.Potential("log_likelihood", normal_log_likelihood(mu))
    exact = stats.multivariate_normal.logpdf(y, np.zeros(n), np.eye(n) + prior_sd**2)
    return model, exact


def test_a_fit_without_a_gradient_beyond_the_bound_leaves_the_laplace_base_out(monkeypatch):
    """Beyond ``MAX_DIFFERENCE_DIMS``, the census of a log density without a gradient fails
    with its reason, and ``base="auto"``'s Laplace pilot then reports it instead of raising
    (it raised PyTensor's raw ``NotImplementedError`` from inside the fit where the prior's
    path was long)."""
    from pymc_anneal.driver import RunOptions
    from pymc_anneal.pymc.adapter import model_path
    from pymc_anneal.schedules import make_schedule

    monkeypatch.setattr(laplace, "MAX_DIFFERENCE_DIMS", 0)
    model, _ = _numpy_likelihood_wide(300, 100.0)
    mp = model_path(model)
    found, attrs = bases.laplace_pilot(model, mp, RunOptions(kernel="metropolis"),
                                       make_schedule("power", 64), 100, 2,
                                       np.random.default_rng(1), None, False)
    assert found is None
    assert attrs["laplace_reason"].startswith("the fit failed: the optimizer needs the log "
                                              "density's gradient")
    assert "normal_log_likelihood" in attrs["laplace_reason"]


@pytest.mark.filterwarnings("ignore:Numba will use object mode:UserWarning")
def test_a_long_path_without_a_gradient_takes_the_differenced_laplace_base(monkeypatch):
    """At the defaults, where the log density has no gradient: the Laplace fit, by central
    differences, comes before any loop (``AUTO_IMPORTANCE_FIRST``), importance sampling from
    it passes its check, and the estimate is the closed form's. Without that first check the
    kernel falls back to Metropolis, and the fit still comes before the prior's pilot
    (``prior_pilot`` says it was not run), with the same outcome. Before, Metropolis ran
    from the prior (about 1,000 temperatures, a minute in Numba's object mode); at 8d05e43
    the call raised PyTensor's ``NotImplementedError`` from the fit."""
    model, exact = _numpy_likelihood_wide(300, 100.0)
    idata = pa.sample_ais(model=model, random_seed=1, **KW)
    assert idata.attrs["base"] == "laplace" and idata.attrs["num_steps"] == 1
    assert idata.attrs["prior_pilot"].startswith("not run: importance sampling")
    assert "normal_log_likelihood" in idata.attrs["laplace_gradient"]
    _within(idata, exact)
    monkeypatch.setattr(bases, "AUTO_IMPORTANCE_FIRST", False)
    idata = pa.sample_ais(model=model, random_seed=1, **KW)
    assert idata.attrs["base"] == "laplace" and idata.attrs["num_steps"] == 1
    assert idata.attrs["kernel_fallback"].startswith("hais -> metropolis")
    assert idata.attrs["prior_pilot"].startswith("not run: the log density has no gradient")
    assert "normal_log_likelihood" in idata.attrs["laplace_gradient"]
    _within(idata, exact)


def _hierarchical(y, sigma_scale=1.0):
    """``z_j ~ N(0, 1)``, ``sigma ~ HalfNormal(sigma_scale)``, ``y_j ~ N(sigma z_j, 1)``: the
    non-centered hierarchical normal. Its joint mode is at a larger sigma than its mass
    (the z's lose volume as sigma grows: radon's trap), and its evidence is a 1-d integral,
    ``y_j ~ N(0, 1 + sigma^2)`` given sigma."""
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", sigma_scale)
        z = pm.Normal("z", 0.0, 1.0, shape=len(y))
        pm.Normal("y", sigma * z, 1.0, observed=y)

    def integrand(s):
        return np.exp(stats.halfnorm.logpdf(s, scale=sigma_scale)
                      + stats.norm.logpdf(y, scale=np.sqrt(1 + s * s)).sum())

    total, _ = integrate.quad(integrand, 0.0, np.inf, epsabs=0, epsrel=1e-12, limit=200)
    return model, float(np.log(total))


@pytest.mark.parametrize("num_groups, spread, seed", [(40, 0.3, 11), (60, 0.5, 12)])
def test_a_mode_away_from_the_mass_gets_the_variational_fit(num_groups, spread, seed):
    """Where the joint mode is not where the posterior's mass is (a non-centered
    hierarchical model), the mean-field fit from it (``variational_modes``) replaces its
    Laplace Gaussian: its ELBO is higher and its log sigma nearer the posterior's mean (by
    quadrature); the estimate from that base is the quadrature's."""
    y = np.random.default_rng(seed).normal(0.0, np.sqrt(1 + spread**2), num_groups)
    model, exact = _hierarchical(y)
    mp = adapter.model_path(model)
    rng = np.random.default_rng(seed)
    start = np.zeros((1, mp.path.num_dims))
    modes, _ = laplace.fit_modes(mp.path, start, rng)
    replaced, count = laplace.variational_modes(mp.path, modes, rng)
    assert count == 1
    slot = [sl for name, sl, _ in mp.value_slices if name == "sigma_log__"][0].start
    grid = np.linspace(-12.0, 3.0, 20001)  # the posterior of log sigma, by quadrature
    log_post = (stats.halfnorm.logpdf(np.exp(grid)) + grid + stats.norm.logpdf(
        y[:, None], scale=np.sqrt(1 + np.exp(2 * grid))).sum(axis=0))
    weights = np.exp(log_post - log_post.max())
    mean = float(np.sum(grid * weights) / weights.sum())
    assert abs(replaced[0][1][slot] - mean) < abs(modes[0][1][slot] - mean), (
        replaced[0][1][slot], modes[0][1][slot], mean)
    # a mean-field base is narrower than this posterior in places: at the pilot's K the
    # weights' k-hat sits near 0.5 (0.34-0.51 over six seeds of the 40-group case; in the
    # 60-group case 0.31-0.79 over seeds 1-12, one above PSIS's 0.7, and 0.34-0.71 before
    # the run went in blocks of the pilot's shape, one above), so the heavy-tail warning
    # may come, and must where k-hat is over its 1/2; the estimate must be the quadrature's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = pa.sample_ais(model=model, base="laplace", random_seed=seed, draws=500,
                              chains=2, progressbar=False)
    assert idata.attrs["laplace_variational"] == 1
    est = _within(idata, exact)
    assert all("heavy tail" in str(w.message) for w in caught), [str(w.message) for w in caught]
    assert est.pareto_k <= HEAVY_TAIL_K or caught, est


def test_a_gaussian_posterior_keeps_its_laplace_fit():
    """A correlated Gaussian posterior (a linear model, known noise): its Laplace Gaussian
    is the posterior itself, whose ELBO no mean-field Gaussian beats; it is kept."""
    target = analytic.linear_regression(num_features=4, n=30, prior_sd=3.0)
    mp = adapter.model_path(target.build())
    rng = np.random.default_rng(4)
    modes, _ = laplace.fit_modes(mp.path, np.zeros((1, mp.path.num_dims)), rng)
    state = rng.bit_generator.state
    kept, count = laplace.variational_modes(mp.path, modes, rng)
    assert count == 0
    assert kept[0][1] is modes[0][1] and kept[0][2] is modes[0][2]
    # its draws come from a stream of their own: the fit's generator is where it was, so
    # the base built after the step is the one built without it, bit for bit
    assert rng.bit_generator.state == state
    assert rng.bit_generator.seed_seq.n_children_spawned == 0
