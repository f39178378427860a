"""Importance sampling from the Laplace fit's base, without annealing
(:mod:`pymc_anneal.driver.importance`; ``base="auto"`` takes it where a check batch of its
own meets the run's target).

Ground truth: closed-form evidences (a linear model with a wide prior, whose prior's path
is long) within 4 reported standard errors; the mean of the importance estimates of Z over
many seeds is Z for a base made deliberately poor (unbiased whatever the base); a poor fit
fails the check and the run anneals; the decision never sees the reported draws.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pymc_anneal as pa
from pymc_anneal.driver import importance
from pymc_anneal.paths import gaussian_base_path
from pymc_anneal.pymc import adapter, bases, laplace
from tests import analytic

KW = dict(draws=500, chains=2, progressbar=False)


def _within(idata, exact, k=4.0):
    est = pa.log_evidence(idata)
    assert abs(est.log_evidence - exact) < k * est.standard_error, (est, exact)
    return est


def _assert_unbiased(path, log_evidence, seeds=300):
    """The mean over ``seeds`` of importance estimates of Z / Z (50 draws each) is 1 within
    4 of its standard errors, and that error is small enough to see a bias of a few
    tenths."""
    ratios = []
    for seed in range(seeds):
        run = importance.run_importance(path, draws=50, chains=1,
                                        rng=np.random.default_rng(seed))
        log_z = np.logaddexp.reduce(run.log_weights.ravel()) - np.log(run.log_weights.size)
        ratios.append(np.exp(log_z - log_evidence))
    ratios = np.array(ratios)
    se = ratios.std(ddof=1) / np.sqrt(ratios.size)
    assert abs(ratios.mean() - 1.0) < 4 * se, (ratios.mean(), se)
    assert se < 0.2


@pytest.mark.parametrize("seed", [1, 2])
def test_a_wide_prior_and_a_gaussian_posterior_take_importance_sampling(seed):
    """200 observations under an N(0, 100) prior: the fit's base alone meets the target, so
    the run is importance sampling (one step, no transition, no loop compiled) and its
    estimate is the closed form's, without a warning."""
    target = analytic.linear_regression(num_features=3, n=200, prior_sd=100.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pa.AnnealingWarning)
        idata = pa.sample_ais(model=target.build(), random_seed=seed, **KW)
    attrs = idata.attrs
    assert attrs["base"] == "laplace" and attrs["kernel"] == importance.KERNEL, dict(attrs)
    assert attrs["num_steps"] == 1 and attrs["base_reason"].startswith("importance sampling")
    assert attrs["backend"] == "python"
    assert idata["posterior"].sizes["draw"] == 500 and idata["posterior"].sizes["chain"] == 2
    assert np.isnan(idata["annealing_stats"]["acceptance_rate"].values).all()
    _within(idata, target.log_evidence)


def test_the_same_seed_gives_the_same_importance_result():
    target = analytic.linear_regression(num_features=2, n=100, prior_sd=100.0)
    model = target.build()
    a, b = (pa.sample_ais(model=model, random_seed=11, **KW) for _ in range(2))
    assert a.attrs["kernel"] == importance.KERNEL
    np.testing.assert_array_equal(a["particles"]["log_weight"].values,
                                  b["particles"]["log_weight"].values)


def test_switched_off_the_laplace_base_anneals():
    target = analytic.linear_regression(num_features=2, n=100, prior_sd=100.0)
    model = target.build()
    try:
        bases.AUTO_IMPORTANCE = False
        idata = pa.sample_ais(model=model, random_seed=11, **KW)
    finally:
        bases.AUTO_IMPORTANCE = True
    assert idata.attrs["kernel"] != importance.KERNEL and idata.attrs["num_steps"] >= 20
    _within(idata, target.log_evidence)


def test_a_poor_fit_fails_the_check_and_the_run_anneals(monkeypatch):
    """The fit moved three posterior standard deviations off and made half as wide: its
    importance weights fail the check, and the run anneals from it (or from the prior),
    right."""
    target = analytic.linear_regression(num_features=2, n=100, prior_sd=100.0)
    fit = laplace.fit_modes

    def poor(*args, **kwargs):
        modes, info = fit(*args, **kwargs)
        return [(v, m + 3.0 * np.sqrt(np.diag(c)), c / 4.0) for v, m, c in modes], info

    monkeypatch.setattr(laplace, "fit_modes", poor)
    # and kept poor: the mean-field fit that would replace it (variational_modes) left out
    monkeypatch.setattr(laplace, "variational_modes", lambda path, modes, rng: (modes, 0))
    idata = pa.sample_ais(model=target.build(), random_seed=3, **KW)
    assert idata.attrs["kernel"] != importance.KERNEL, dict(idata.attrs)
    assert idata.attrs["num_steps"] >= 20
    _within(idata, target.log_evidence)


def _normal_mean_posterior():
    """:func:`tests.analytic.normal_mean`: the target, its model path, and its posterior's
    mean and standard deviation (conjugate, in closed form)."""
    target = analytic.normal_mean()
    mp = adapter.model_path(target.build())
    p, y = target.params, np.asarray(target.params["y"])
    precision = 1 / p["prior_sd"] ** 2 + y.size / p["noise_sd"] ** 2
    mean = (p["prior_mean"] / p["prior_sd"] ** 2 + y.sum() / p["noise_sd"] ** 2) / precision
    return target, mp, mean, 1.0 / np.sqrt(precision)


def test_importance_estimates_are_unbiased_for_z_whatever_the_base():
    """A base 1.5 posterior sds off and 0.7 times as wide (a heavy-ish weight tail): the
    mean over 300 seeds of the importance estimates of Z / Z_exact is 1 within 4 of its
    standard errors (exact for Z, not log Z)."""
    target, mp, mean, sd = _normal_mean_posterior()
    path = gaussian_base_path(mp.path, np.array([mean + 1.5 * sd]),
                              np.array([[0.49 * sd**2]]), defensive=0.0)
    _assert_unbiased(path, target.log_evidence)  # the test can see a bias of a few tenths


def test_the_check_and_the_run_draw_apart(monkeypatch):
    """The check's batch and the reported batch are different draws: the decision cannot
    select the reported weights."""
    seen = []
    weights = importance.importance_weights

    def record(path, positions):
        seen.append(np.array(positions))
        return weights(path, positions)

    monkeypatch.setattr(importance, "importance_weights", record)
    target = analytic.linear_regression(num_features=2, n=100, prior_sd=100.0)
    idata = pa.sample_ais(model=target.build(), random_seed=5, **KW)
    assert idata.attrs["kernel"] == importance.KERNEL
    # the check weighs its first draws, then the rest; the reported batch comes last
    assert [len(x) for x in seen] == [importance.FIRST_DRAWS, 1000 - importance.FIRST_DRAWS,
                                      1000], [x.shape for x in seen]
    check, reported = np.concatenate(seen[:-1]), seen[-1]
    assert not np.isin(check, reported).any()


def test_a_bimodal_posterior_at_the_defaults_is_right_or_warned():
    """Two narrow modes at mu = +-2: the census finds both, the base has a component at
    each, and the estimate (importance sampling or annealed, whichever the check chose) is
    the quadrature's within 4 standard errors, or the call warned."""
    from tests.pymc.test_sampling_auto_base import _bimodal

    model, exact = _bimodal()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = pa.sample_ais(model=model, random_seed=6, **KW)
    warned = any(issubclass(w.category, pa.AnnealingWarning) for w in caught)
    est = pa.log_evidence(idata)
    assert warned or abs(est.log_evidence - exact) < 4 * est.standard_error, (est, exact)


def test_the_student_t_components_are_normalized_t_densities():
    """The base of :func:`~pymc_anneal.paths.mixture_base_path` with ``df``: at random
    points its log density (in the coordinates whitened by the first component) is
    SciPy's multivariate t mixture's, and its draws have the t's covariance."""
    import pytensor
    import pytensor.tensor as pt
    from scipy import stats

    from pymc_anneal.paths import mixture_base_path

    target = analytic.linear_regression(num_features=2, n=20, prior_sd=3.0)
    mp = adapter.model_path(target.build())
    rng = np.random.default_rng(0)
    means = np.array([[0.3, -0.2], [1.0, 0.5]])
    covs = np.array([[[0.5, 0.1], [0.1, 0.3]], [[0.2, 0.0], [0.0, 0.4]]])
    weights = np.array([0.7, 0.3])
    path = mixture_base_path(mp.path, means, covs, weights, defensive=0.0, df=5.0)
    z = pt.matrix("z")
    log_q = pytensor.function([z], path.evaluate(z, gradients=False).log_base)
    chol = np.linalg.cholesky(covs[0])
    points = rng.normal(size=(50, 2)) * 3
    x = means[0] + points @ chol.T  # the model's coordinates of the whitened points
    expected = np.logaddexp(*(np.log(w) + stats.multivariate_t(m, c, df=5.0).logpdf(x)
                              for w, m, c in zip(weights, means, covs)))
    expected += np.log(np.abs(np.linalg.det(chol)))  # the density carried to z
    np.testing.assert_allclose(log_q(points), expected, rtol=1e-10)
    one = mixture_base_path(mp.path, means[:1], covs[:1], weights[:1], defensive=0.0, df=5.0)
    draws = one.to_model(one.sample_base(rng, 200_000))
    np.testing.assert_allclose(np.cov(draws.T), covs[0] * 5.0 / 3.0, rtol=0.05, atol=0.01)


@pytest.mark.parametrize("seed", range(4))
def test_component_offsets_are_each_rows_factor_times_its_noise(seed):
    """:func:`~pymc_anneal.paths.component_offsets` (the mixture base's draws and the
    width's): row n is ``chols[component[n]] @ eps[n]``, at random numbers of components
    (some never drawn), dimensions and rows (none included)."""
    from pymc_anneal.paths import component_offsets

    rng = np.random.default_rng(seed)
    num, d, n = rng.integers(1, 6), rng.integers(1, 40), rng.integers(0, 300)
    chols = np.tril(rng.normal(size=(num, d, d)))
    component = rng.choice(num, size=n, p=rng.dirichlet(np.full(num, 0.3)))
    eps = rng.normal(size=(n, d))
    expected = np.array([chols[k] @ e for k, e in zip(component, eps)]).reshape(n, d)
    np.testing.assert_allclose(component_offsets(chols, component, eps), expected,
                               rtol=1e-12, atol=1e-12)


def test_student_t_importance_estimates_are_unbiased_for_z():
    """As above, with Student-t components (the base the check uses): mean of Z-hat / Z
    over 300 seeds within 4 of its standard errors of 1."""
    _assert_unbiased(_normal_mean_base(2.0, np.sqrt(0.3)), analytic.normal_mean().log_evidence)


def _normal_mean_base(shift: float, width: float, df: float = 5.0):
    """A Student-t base for :func:`tests.analytic.normal_mean`'s posterior, its centre
    ``shift`` posterior sds off and its scale ``width`` times the posterior's."""
    from pymc_anneal.paths import mixture_base_path

    _, mp, mean, sd = _normal_mean_posterior()
    return mixture_base_path(mp.path, np.array([[mean + shift * sd]]),
                             np.array([[[(width * sd) ** 2]]]), np.array([1.0]),
                             defensive=0.0, df=df)


def test_the_first_draws_decide_nothing_that_all_draws_would_not(monkeypatch):
    """The check's first stage (:data:`~pymc_anneal.driver.importance.FIRST_DRAWS` draws,
    failing at :data:`~pymc_anneal.driver.importance.HOPELESS` times the target) gives the
    decision of the whole batch: at 40 random bases, from a near fit to a hopeless one
    (0-6 posterior sds off, 0.2-3 times as wide), the same as the check without it, on the
    same draws; and some of them pass, some fail in the first stage, some after it."""
    rng = np.random.default_rng(2026)
    cases = [(rng.uniform(0.0, 6.0), np.exp(rng.uniform(np.log(0.2), np.log(3.0))))
             for _ in range(40)]
    staged, whole = [], []
    for i, (shift, width) in enumerate(cases):
        path = _normal_mean_base(shift, width)
        kw = dict(draws=1000, chains=4, target_variance=0.7)
        staged.append(importance.importance_check(path, rng=np.random.default_rng(i), **kw))
        with monkeypatch.context() as m:
            m.setattr(importance, "HOPELESS", np.inf)
            whole.append(importance.importance_check(path, rng=np.random.default_rng(i),
                                                     **kw))
    for case, a, b in zip(cases, staged, whole):
        assert a["passed"] == b["passed"], (case, a["reason"], b["reason"])
    early = ["not evaluated" in c["reason"] for c in staged]
    passed = [c["passed"] for c in staged]
    assert any(passed) and any(early) and sum(early) < len(passed) - sum(passed), (
        sum(passed), sum(early))


def test_a_hopeless_base_is_weighed_on_its_first_draws_only(monkeypatch):
    """A base far from the posterior: the check evaluates the first
    :data:`~pymc_anneal.driver.importance.FIRST_DRAWS` draws' densities and fails there,
    saying so."""
    rows = []
    weights = importance.importance_weights

    def counted(path, positions):
        rows.append(len(positions))
        return weights(path, positions)

    monkeypatch.setattr(importance, "importance_weights", counted)
    check = importance.importance_check(_normal_mean_base(6.0, 0.3), draws=1000, chains=4,
                                        rng=np.random.default_rng(0), target_variance=0.7)
    assert not check["passed"] and rows == [importance.FIRST_DRAWS], (rows, check)
    assert "first 500 of 4000" in check["reason"] and "not evaluated" in check["reason"]


def test_importance_sampling_follows_set_data():
    """The compiled log densities are cached per path: after ``pm.set_data`` the weights
    are the new data's, and each estimate is its closed form (a normal mean under an
    N(0, 100^2) prior; the marginal of y is N(0, I + 100^2 11^T))."""
    import pymc as pm
    from scipy import stats

    def exact(y):
        cov = np.eye(y.size) + 100.0**2 * np.ones((y.size, y.size))
        return stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y)

    rng = np.random.default_rng(21)
    first, second = rng.normal(3.0, 1.0, 40), rng.normal(-6.0, 1.0, 40)
    with pm.Model() as model:
        y = pm.Data("y", first)
        mu = pm.Normal("mu", 0.0, 100.0)
        pm.Normal("obs", mu, 1.0, observed=y)
    for data in (first, second):
        with model:
            pm.set_data({"y": data})
        idata = pa.sample_ais(model=model, random_seed=7, base="laplace", **KW)
        assert idata.attrs["kernel"] == importance.KERNEL, dict(idata.attrs)
        _within(idata, exact(data))


def test_a_short_path_takes_importance_sampling_before_any_loop(monkeypatch):
    """A conjugate normal mean: the prior's path is short (not predicted long), and the
    Laplace fit's importance check, made before any loop is built
    (``bases.AUTO_IMPORTANCE_FIRST``), passes: no loop is compiled, not even the prior's,
    ``prior_pilot`` says why, and the estimate is the closed form's."""
    from pymc_anneal.driver import cache

    target = analytic.normal_mean()
    built = []
    compiled_loop = cache.compiled_loop
    monkeypatch.setattr(cache, "compiled_loop",
                        lambda path, *a, **k: built.append(path) or compiled_loop(path, *a, **k))
    idata = pa.sample_ais(model=target.build(), random_seed=5, **KW)
    attrs = idata.attrs
    assert attrs["kernel"] == importance.KERNEL and attrs["base"] == "laplace", dict(attrs)
    assert attrs["prior_pilot"].startswith("not run: importance sampling"), dict(attrs)
    assert "prior_num_steps" not in attrs and "prior_num_steps_predicted" not in attrs
    assert not built
    _within(idata, target.log_evidence)


def test_a_failed_first_check_leaves_the_run_as_without_it(monkeypatch):
    """Where the check made before any loop fails (forced here), the fit is dropped and the
    prior's pilot chooses: the very run that ``AUTO_IMPORTANCE_FIRST = False`` makes, bit
    for bit (the fit and its check draw from streams of their own)."""
    target = analytic.normal_mean()
    model = target.build()
    monkeypatch.setattr(bases, "AUTO_IMPORTANCE_FIRST", False)
    without = pa.sample_ais(model=model, random_seed=5, **KW)
    monkeypatch.setattr(bases, "AUTO_IMPORTANCE_FIRST", True)
    checked, check = [], bases.importance_check

    def failing(*args, **kwargs):
        found = check(*args, **kwargs)
        checked.append(found["passed"])
        return {**found, "passed": False}

    monkeypatch.setattr(bases, "importance_check", failing)
    first = pa.sample_ais(model=model, random_seed=5, **KW)
    assert checked == [True], checked  # it would have passed: the check ran, first
    assert first.attrs["base"] == without.attrs["base"] == "prior", dict(first.attrs)
    assert first.attrs["num_steps"] == without.attrs["num_steps"] > 1
    np.testing.assert_array_equal(first["particles"]["log_weight"].values,
                                  without["particles"]["log_weight"].values)
