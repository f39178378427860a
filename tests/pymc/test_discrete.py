r"""Discrete free variables summed out of a PyMC model's path (:mod:`pymc_anneal.pymc.discrete`).

Ground truth: the summed log densities against brute-force enumeration of every
configuration with PyMC's own joint logp; closed-form evidences (a change-point model, a sum
over switch points of Gamma-Poisson integrals; an all-discrete model); a mixture written with
explicit Bernoulli labels against the same mixture as ``pm.NormalMixture``, integrated by
quadrature; the exact conditional draws against enumerated conditional probabilities
(chi-square); bad input.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import special, stats

import pymc_anneal as pa
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.pymc.adapter import model_path
from tests import discrete_models


def _mixed_model(prior_depends_on_label: bool):
    rng = np.random.default_rng(0)
    with pm.Model() as model:
        c = pm.Categorical("c", p=[0.2, 0.3, 0.5])
        center = pt.as_tensor([-1.0, 0.0, 1.5])[c] if prior_depends_on_label else 0.0
        mu = pm.Normal("mu", center, 1.0, shape=2)
        w = pm.Beta("w", 2, 2)
        z = pm.Bernoulli("z", w, shape=7)
        s = pm.DiscreteUniform("s", 0, 4)
        pm.Deterministic("shift", 0.1 * s)
        pm.Normal("y", mu[z] + 0.1 * s + 0.2 * c, 1.0, observed=rng.normal(size=7))
    return model


def _enumerated_log_joint(model, point):
    """log sum over every (c, z, s) of the model's joint log density at a continuous point."""
    logp = model.compile_logp()
    terms = [logp({**point, "c": c, "z": np.array(z), "s": s})
             for c in range(3) for z in itertools.product([0, 1], repeat=7) for s in range(5)]
    return special.logsumexp(terms)


@pytest.mark.parametrize("prior_depends_on_label", [False, True])
def test_summed_densities_match_enumeration(prior_depends_on_label):
    model = _mixed_model(prior_depends_on_label)
    mp = model_path(model)
    assert [v.name for v in mp.sums.per_element] == ["z"]
    assert {v.name for v in mp.sums.joint} == {"c", "s"}
    positions = pt.matrix("positions")
    log_base, log_ratio = mp.path.build_log_densities(positions)
    fn = pytensor.function([positions], [log_base, log_ratio], mode="FAST_COMPILE")
    x = np.random.default_rng(1).normal(size=(3, mp.path.num_dims))
    base, ratio = fn(x)
    for i in range(3):
        point = {"mu": x[i, :2], "w_logodds__": x[i, 2]}
        assert base[i] + ratio[i] == pytest.approx(_enumerated_log_joint(model, point), abs=1e-9)
    if not prior_depends_on_label:  # the base is then the continuous prior alone
        prior = model.compile_logp(vars=[model["mu"], model["w"]])
        point = {"mu": x[0, :2], "w_logodds__": x[0, 2], "c": 0, "z": np.zeros(7, int), "s": 0}
        assert base[0] == pytest.approx(prior(point))


def test_labels_are_summed_per_element():
    """40 labels (2^40 configurations) with a switch point: the labels are summed element by
    element inside the enumeration of the switch point, and the densities still match a
    direct computation of the per-element sums."""
    rng = np.random.default_rng(2)
    y = rng.normal(size=40)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2, shape=2)
        z = pm.Bernoulli("z", 0.3, shape=40)
        s = pm.DiscreteUniform("s", 0, 3)
        pm.Normal("y", mu[z] + 0.5 * s, 1.0, observed=y)
    mp = model_path(model)
    assert [v.name for v in mp.sums.per_element] == ["z"]
    assert [v.name for v in mp.sums.joint] == ["s"]
    positions = pt.matrix("positions")
    fn = pytensor.function([positions], mp.path.build_log_densities(positions),
                           mode="FAST_COMPILE")
    x = rng.normal(size=(2, 2))
    base, ratio = fn(x)
    for i in range(2):
        per_s = []
        for s_value in range(4):
            mean = x[i][:, None] + 0.5 * s_value  # (2, 40): label 0 and label 1
            per_element = np.logaddexp(np.log(0.7) + stats.norm.logpdf(y, mean[0], 1.0),
                                       np.log(0.3) + stats.norm.logpdf(y, mean[1], 1.0))
            per_s.append(np.log(0.25) + per_element.sum())
        assert ratio[i] == pytest.approx(special.logsumexp(per_s), rel=1e-10)
        assert base[i] == pytest.approx(stats.norm.logpdf(x[i], 0, 2).sum())


@pytest.mark.parametrize("hidden", [0, 7, 11])
def test_a_label_that_every_term_reads_is_not_summed_per_element(hidden):
    """y_i ~ N(mu[z_i] + 0.3 z_h, 1): every term depends on the label z_h too, so summing
    element by element would be wrong; the check must find z_h wherever it sits (the old
    check probed 4 random elements and missed it most of the time). The labels are then
    summed jointly (2^12 configurations), which the densities confirm by enumeration."""
    rng = np.random.default_rng(3)
    y = rng.normal(size=12)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2, shape=2)
        z = pm.Bernoulli("z", 0.3, shape=12)
        pm.Normal("y", mu[z] + 0.3 * z[hidden], 1.0, observed=y)
    mp = model_path(model, "sum")  # "auto" anneals it: the sum costs 12x SUM_BUDGET
    assert [v.name for v in mp.sums.joint] == ["z"] and not mp.sums.per_element
    positions = pt.matrix("positions")
    fn = pytensor.function([positions], mp.path.build_log_densities(positions)[1],
                           mode="FAST_COMPILE")
    x = rng.normal(size=(1, 2))
    labels = np.array(list(itertools.product([0, 1], repeat=12)))  # (4096, 12)
    means = x[0][labels] + 0.3 * labels[:, [hidden]]
    log_joint = (stats.norm.logpdf(y, means, 1.0).sum(axis=1)
                 + np.where(labels, np.log(0.3), np.log(0.7)).sum(axis=1))
    assert fn(x)[0] == pytest.approx(special.logsumexp(log_joint), rel=1e-10)


def _check(est, exact):
    error = est.log_evidence - exact
    assert abs(error) < 3 * est.standard_error + 1e-12, (error, est)
    assert abs(error) < 0.05, (error, est)


@pytest.mark.slow
def test_label_mixture_matches_normal_mixture_by_quadrature():
    """A two-component mixture with 40 explicit Bernoulli labels (where pm.sample_smc was
    15 nats off) against the same mixture as pm.NormalMixture, integrated on a grid."""
    case = discrete_models.label_mixture()
    with case.build():
        idata = pa.sample_ais(random_seed=6, progressbar=False)
    _check(pa.log_evidence(idata), case.log_evidence)
    z_draws = idata["posterior"]["z"]
    assert z_draws.dtype.kind == "i" and z_draws.shape == (4, 1000, 40)


def test_all_discrete_model_is_summed_exactly():
    with pm.Model() as model:
        z = pm.Bernoulli("z", 0.3, shape=3)
        c = pm.Categorical("c", [0.2, 0.8])
        pm.Normal("y", z.sum() + c, 1.0, observed=[1.0, 2.0])
        idata = pa.sample_ais(draws=4000, chains=2, random_seed=7, progressbar=False)
    logp = model.compile_logp()
    configs = [(z, c) for z in itertools.product([0, 1], repeat=3) for c in range(2)]
    log_joint = np.array([logp({"z": np.array(z), "c": c}) for z, c in configs])
    est = pa.log_evidence(idata)
    assert est.log_evidence == pytest.approx(special.logsumexp(log_joint), abs=1e-10)
    assert est.standard_error == 0.0
    # the draws come from the exact posterior: chi-square over the 16 configurations
    post = idata["posterior"]
    z = post["z"].values.reshape(-1, 3)
    c = post["c"].values.ravel()
    index = {cfg: i for i, cfg in enumerate(configs)}
    counts = np.bincount([index[(tuple(zi), ci)] for zi, ci in zip(z, c)], minlength=16)
    expected = special.softmax(log_joint) * len(c)
    assert stats.chisquare(counts, expected).pvalue > 1e-3


def test_conditional_draws_follow_the_exact_conditional():
    """At fixed continuous values, the per-element labels and the jointly enumerated switch
    come back from p(z, s | theta, y) (chi-square on the switch and on one label's
    conditional given it)."""
    rng = np.random.default_rng(8)
    y = rng.normal(size=40)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2, shape=2)
        pm.Bernoulli("z", 0.3, shape=40)
        s = pm.DiscreteUniform("s", 0, 3)
        pm.Normal("y", mu[model["z"]] + 0.5 * s, 1.0, observed=y)
    mp = model_path(model)
    theta = np.array([-0.5, 1.0])
    draws = mp.draw_discrete(np.tile(theta, (20_000, 1)), np.random.default_rng(9))
    per_s, label_p = [], []
    for s_value in range(4):
        mean = theta[:, None] + 0.5 * s_value
        log0 = np.log(0.7) + stats.norm.logpdf(y, mean[0], 1.0)
        log1 = np.log(0.3) + stats.norm.logpdf(y, mean[1], 1.0)
        per_s.append(np.logaddexp(log0, log1).sum())
        label_p.append(special.expit(log1 - log0))
    counts = np.bincount(draws["s"], minlength=4)
    assert stats.chisquare(counts, special.softmax(per_s) * 20_000).pvalue > 1e-3
    for s_value in (int(np.argmax(counts)),):
        chosen = draws["z"][draws["s"] == s_value][:, 5]
        p = label_p[s_value][5]
        observed = np.bincount(chosen, minlength=2)
        assert stats.chisquare(observed, [len(chosen) * (1 - p), len(chosen) * p]).pvalue > 1e-3


def test_unsummable_discrete_variables_get_clear_errors():
    """With discrete="sum"; the default ("auto") anneals these instead."""
    with pm.Model() as huge:
        k = pm.DiscreteUniform("k", 0, 10**9)
        pm.Normal("y", k * 1e-9, 1.0, observed=[0.1])
    with pytest.raises(AnnealingError, match=r"'k' has 1,000,000,001 possible values"):
        model_path(huge, "sum")
    with pm.Model() as unbounded:
        n = pm.Poisson("n", 3.0)
        pm.Binomial("y", n, 0.5, observed=[2])
    with pytest.raises(AnnealingError, match=r"'n' \(Poisson\) has an unbounded support"):
        model_path(unbounded, "sum")
    with pm.Model() as dependent:
        m = pm.Bernoulli("m", 0.5)
        pm.DiscreteUniform("k", 0, 2 + m)
        pm.Normal("y", 0.0, 1.0, observed=[0.1])
    with pytest.raises(AnnealingError, match="depends on other random variables"):
        model_path(dependent, "sum")
    with pm.Model() as coupled:  # 2^20 joint configurations, not separable by element
        mu = pm.Normal("mu", 0, 1)
        z = pm.Bernoulli("z", 0.5, shape=20)
        pm.Normal("y", mu + z.sum(), 1.0, observed=[0.1])
    with pytest.raises(AnnealingError, match="cannot be summed element by element"):
        model_path(coupled, "sum")


def test_auto_route_anneals_what_it_cannot_sum():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        pm.DiscreteUniform("k", 0, 10**9)
        z = pm.Bernoulli("z", 0.5, shape=20)
        pm.Bernoulli("b", 0.5, shape=3)
        pm.Normal("y", mu + z.sum() + model["b"], 1.0, observed=[0.1, 0.2, 0.3])
    mp = model_path(model)
    assert set(mp.summed) == {"b"}  # b: 8 joint configurations; z: 2^20, coupled
    names = {name for name, sl, _ in mp.value_slices
             if set(mp.path.discrete_dims) & set(range(sl.start, sl.stop))}
    assert names == {"k", "z"}
    assert mp.path.num_dims == 1 + 1 + 20


def test_routes_without_discrete_support_refuse_them():
    with pm.Model() as model:
        pm.Normal("mu", 0, 1)
        pm.Bernoulli("z", 0.5)
        pm.Normal("y", model["mu"] + model["z"], 1.0, observed=[0.1])
    with pytest.raises(AnnealingError, match=r"discrete free variables \['z'\], which bdmc"):
        pa.bdmc(model, num_steps=[10])


# -- the annealed route: discrete variables stay on the path ----------------------------


def _log_prior(z, gibbs: bool):
    """Binomial(5, 0.4) (a finite support: exact Gibbs) or Poisson(3) (Metropolis)."""
    if gibbs:
        inside = (z >= 0) & (z <= 5)
        zc = pt.clip(z, 0, 5)
        log_p = (pt.gammaln(6.0) - pt.gammaln(zc + 1) - pt.gammaln(6 - zc)
                 + zc * np.log(0.4) + (5 - zc) * np.log(0.6))
        return pt.switch(inside, log_p, -np.inf)
    return pt.switch(z >= 0, z * np.log(3.0) - 3.0 - pt.gammaln(pt.maximum(z, 0) + 1), -np.inf)


def _compound_chain(beta: float, steps: int, num: int, seed: int, gibbs: bool):
    """Run the compound kernel at a fixed beta on x ~ N(0, 1) and an integer z with
    f_beta(z) = prior(z) Binomial(2 | z, 1/2)^beta, from z = 2 for every particle."""
    from pymc_anneal.kernels.compound import build_kernel
    from pymc_anneal.paths import Path

    def log_densities(position):
        x, z = position[:, 0], position[:, 1]
        log_base = -0.5 * x**2 - 0.5 * np.log(2 * np.pi) + _log_prior(z, gibbs)
        log_ratio = pt.switch(z >= 2, pt.log(z * (z - 1) / 2) + z * np.log(0.5), -np.inf)
        return log_base, log_ratio

    path = Path(num_dims=2, build_log_densities=log_densities,
                sample_base=lambda rng, n: np.c_[rng.normal(size=n), rng.poisson(3.0, n)],
                base_scale=np.array([1.0, np.sqrt(3.0)]), discrete_dims=(1,),
                discrete_supports=((0, 5),) if gibbs else ())
    kernel = build_kernel(path)
    params = {"step_size": pt.constant(0.8), "refresh": pt.constant(0.5),
              "inv_mass": pt.constant(np.ones(2)), "momentum_scale": pt.constant(np.ones(2)),
              "discrete_moves": pt.constant(1.0)}
    rng = pytensor.shared(np.random.default_rng(seed))
    position = pt.matrix("position")
    rng_1, state = kernel.init(rng, position, params, {})
    fields = [pt.as_tensor(f) for f in state]
    symbols = [f.type() for f in fields]
    rng_2, new, info = kernel.step(rng, kernel.state_type(*symbols), pt.constant(beta), params, {})
    init = pytensor.function([position], fields, updates={rng: rng_1}, mode="FAST_COMPILE")
    step = pytensor.function(symbols, [*new, info.acceptance_rate, *info.extra],
                             updates={rng: rng_2}, mode="FAST_COMPILE")
    values = init(np.c_[np.zeros(num), np.full(num, 2.0)])
    for _ in range(steps):
        *values, accept, discrete_accept = step(*values)
    return values[0], accept, discrete_accept


@pytest.mark.parametrize("gibbs", [False, True], ids=["metropolis", "gibbs"])
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
def test_compound_kernel_reaches_and_keeps_the_tempered_target(beta, gibbs):
    """From z = 2 everywhere, 150 compound steps at a fixed beta give the exact tempered
    conditional of z (chi-square) and x ~ N(0, 1) (KS); at beta = 0 that is the prior.
    Unbounded z (Poisson prior) moves by Metropolis, bounded z (Binomial(5) prior) by
    exact Gibbs."""
    position, accept, discrete_accept = _compound_chain(
        beta, steps=150 if not gibbs else 30, num=4000, seed=int(10 * beta) + 5 * gibbs,
        gibbs=gibbs)
    z = position[:, 1]
    assert np.all(z == np.round(z)) and z.min() >= 0
    support = np.arange(40)
    log_p = (stats.binom.logpmf(support, 5, 0.4) if gibbs
             else stats.poisson.logpmf(support, 3.0))
    log_lik = np.where(support >= 2, stats.binom.logpmf(2, np.maximum(support, 2), 0.5), -np.inf)
    log_p = log_p + (beta * log_lik if beta > 0 else 0.0)
    p = special.softmax(log_p)
    top = 9  # pool the tail into one cell
    observed = np.r_[np.bincount(z.astype(int), minlength=top)[:top], np.sum(z >= top)]
    expected = np.r_[p[:top], p[top:].sum()] * len(z)
    keep = expected > 0
    assert observed[~keep].sum() == 0
    assert stats.chisquare(observed[keep], expected[keep]).pvalue > 1e-3
    assert stats.kstest(position[:, 0], "norm").pvalue > 1e-3
    assert np.mean(accept) > 0.3  # the continuous part moves too
    if gibbs:  # z is independent of x: E[1 - p(current z)] = 1 - sum p^2 at stationarity
        expected_leave = 1.0 - np.sum(p**2)
        se = np.std(discrete_accept) / np.sqrt(discrete_accept.size)
        assert abs(np.mean(discrete_accept) - expected_leave) < 5 * se + 1e-3
    else:
        assert 0.05 < np.mean(discrete_accept) < 1.0


# one compound step from exact draws of a coupled tempered target: x | z ~ N(z / 2, 1)
# a priori, y = 1 observed with y ~ N(x + 0.3 z, 1), so x and z are dependent at every beta
COUPLED_Y, SHIFT, LOAD = 1.0, 0.5, 0.3


@functools.cache
def _coupled_path(gibbs: bool):
    """One path per move, so that its compiled loop serves every beta (a loop input)."""
    from pymc_anneal.paths import Path

    def log_densities(position):
        x, z = position[:, 0], position[:, 1]
        log_base = (_log_prior(z, gibbs) - 0.5 * (x - SHIFT * z) ** 2
                    - 0.5 * np.log(2 * np.pi))
        log_ratio = -0.5 * (COUPLED_Y - x - LOAD * z) ** 2 - 0.5 * np.log(2 * np.pi)
        return log_base, log_ratio

    return Path(num_dims=2, build_log_densities=log_densities,
                sample_base=lambda rng, n: np.zeros((n, 2)),
                base_scale=np.array([1.0, np.sqrt(3.0)]), discrete_dims=(1,),
                discrete_supports=((0, 5),) if gibbs else ())


def _coupled_exact(beta: float, gibbs: bool):
    """The tempered target's z-marginal (on 0..59) and x | z's means and variance."""
    z = np.arange(60)
    log_p = stats.binom.logpmf(z, 5, 0.4) if gibbs else stats.poisson.logpmf(z, 3.0)
    mean_z = SHIFT * z
    # integral over x of N(x; z/2, 1) N(y; x + 0.3 z, 1)^beta, up to a constant in z
    log_p = log_p - beta * (mean_z + LOAD * z - COUPLED_Y) ** 2 / (2 * (1 + beta))
    p = special.softmax(log_p)
    cond_mean = (mean_z + beta * (COUPLED_Y - LOAD * z)) / (1 + beta)
    return p, cond_mean, 1.0 / (1 + beta)


def _compound_steps(draws, beta, steps, seed, gibbs):
    """``steps`` compound transitions at ``beta`` through the compiled loop (the default
    backend; JAX pads each call with no-op steps, which must change nothing)."""
    from pymc_anneal.driver.cache import compiled_loop
    from pymc_anneal.kernels.compound import build_kernel

    path = _coupled_path(gibbs)
    kernel = build_kernel(path)
    loop = compiled_loop(path, kernel, "auto")
    arrays = {"beta": np.full(steps, beta), "delta_beta": np.zeros(steps),
              "step_size": np.full(steps, 0.7), "refresh": np.full(steps, 0.5),
              "inv_mass": np.ones((steps, 2)), "momentum_scale": np.ones((steps, 2)),
              "discrete_moves": np.ones(steps)}
    rng = np.random.default_rng(seed)
    rng, state = loop.init(rng, draws, {k: v[0] for k, v in arrays.items()}, [])
    _, state, _, stats_ = loop.run(rng, arrays, state, np.zeros(len(draws)), 1, [])
    return np.asarray(state["position"]), stats_


@pytest.mark.parametrize("gibbs", [False, True], ids=["metropolis", "gibbs"])
@pytest.mark.parametrize("beta", [0.0, 0.4, 1.0])
def test_one_compound_step_keeps_a_coupled_tempered_target(beta, gibbs):
    """Start from 20,000 exact draws of f_beta(x, z) (z from its marginal, x | z Gaussian),
    apply one compound step at beta: z's distribution (chi-square), x's (KS against the
    exact mixture) and the coupling (x's mean within each common z) are unchanged, and at
    beta = 0 z is drawn from its prior. The same draws stepped at another beta drift away,
    and the test sees it (the check has power)."""
    p, cond_mean, cond_var = _coupled_exact(beta, gibbs)
    rng = np.random.default_rng(int(10 * beta) + 7 * gibbs)
    n = 20_000
    z = rng.choice(p.size, size=n, p=p)
    x = cond_mean[z] + np.sqrt(cond_var) * rng.standard_normal(n)
    after, step_stats = _compound_steps(np.c_[x, z.astype(float)], beta, 1, 3, gibbs)
    z1, x1 = after[:, 1], after[:, 0]
    assert np.all(z1 == np.round(z1)) and z1.min() >= 0
    assert np.mean(z1 != z) > 0.05 and np.mean(x1 != x) > 0.3  # the step moves both

    def chi2_pvalue(values, probs):
        top = int(np.searchsorted(np.cumsum(probs), 0.995))  # pool the tail
        observed = np.r_[np.bincount(values.astype(int), minlength=top)[:top],
                         np.sum(values >= top)]
        expected = np.r_[probs[:top], probs[top:].sum()] * len(values)
        return stats.chisquare(observed, expected).pvalue

    def mixture_cdf(t):
        return np.sum(p * stats.norm.cdf((np.asarray(t)[:, None] - cond_mean)
                                         / np.sqrt(cond_var)), axis=1)

    assert chi2_pvalue(z1, p) > 1e-3
    assert stats.kstest(x1, mixture_cdf).pvalue > 1e-3
    for value in np.argsort(p)[-3:]:  # the three most likely z: x | z keeps its mean
        inside = x1[z1 == value]
        assert abs(inside.mean() - cond_mean[value]) < 4 * np.sqrt(cond_var / inside.size)
    if beta == 0.0:
        prior = stats.binom.pmf(np.arange(60), 5, 0.4) if gibbs else stats.poisson.pmf(
            np.arange(60), 3.0)
        assert chi2_pvalue(z1, prior / prior.sum()) > 1e-3
    rate = step_stats[f"discrete_acceptance_1"][0, 0]
    assert 0.05 < rate <= 1.0
    # power: ten steps at a far beta move the same draws off this target
    other = 1.0 if beta < 0.5 else 0.0
    moved, _ = _compound_steps(np.c_[x, z.astype(float)], other, 10, 4, gibbs)
    assert min(chi2_pvalue(moved[:, 1], p), stats.kstest(moved[:, 0], mixture_cdf).pvalue) < 1e-6


def test_all_discrete_model_can_be_annealed_alone():
    """n ~ Poisson(4) (unbounded, annealed) and y ~ Binomial(n, 1/2) observed: no continuous
    variable at all, so the transitions are the integer Metropolis steps alone. The
    evidence is a sum over n."""
    with pm.Model():
        n = pm.Poisson("n", 4.0)
        pm.Binomial("y", n, 0.5, observed=[3, 2])
        idata = pa.sample_ais(draws=500, chains=2, num_steps=300, random_seed=13,
                              progressbar=False)
    counts = np.arange(3, 200)
    exact = special.logsumexp(stats.poisson.logpmf(counts, 4.0)
                              + stats.binom.logpmf(3, counts, 0.5)
                              + stats.binom.logpmf(2, counts, 0.5))
    est = pa.log_evidence(idata)
    assert abs(est.log_evidence - exact) < 3 * max(est.standard_error, est.chain_sd), est
    assert idata.attrs["annealed_discrete"] == ["n"]
    assert 0.1 < float(idata["annealing_stats"]["n_acceptance_rate"].mean()) < 1.0


@pytest.mark.slow
def test_finite_supports_annealed_by_gibbs_alone_match_the_exact_sum():
    """An all-discrete model with small finite supports, annealed on request
    (discrete="anneal"): only exact Gibbs draws move it, and its evidence matches the sum
    that discrete="auto" computes exactly (and an enumeration here)."""
    def build():
        with pm.Model() as model:
            a = pm.Binomial("a", 5, np.float64(0.4))
            b = pm.DiscreteUniform("b", 0, 3)
            pm.Poisson("y", a + b + np.float64(1.0), observed=[3, 5])
        return model

    grid_a, grid_b = np.meshgrid(np.arange(6), np.arange(4), indexing="ij")
    rates = grid_a + grid_b + 1.0
    exact = special.logsumexp(stats.binom.logpmf(grid_a, 5, 0.4) + np.log(0.25)
                              + stats.poisson.logpmf(3, rates) + stats.poisson.logpmf(5, rates))
    summed = pa.sample_ais(model=build(), draws=100, chains=2, progressbar=False)
    # PyMC's DiscreteUniform logp is computed in float32: its log 1/4 is 3.8e-9 off
    assert pa.log_evidence(summed).log_evidence == pytest.approx(exact, abs=1e-8)
    annealed = pa.sample_ais(model=build(), discrete="anneal", draws=500, chains=2,
                             random_seed=17, progressbar=False)
    assert annealed.attrs["annealed_discrete"] == ["a", "b"]
    est = pa.log_evidence(annealed)
    assert abs(est.log_evidence - exact) < 3 * max(est.standard_error, est.chain_sd), est
    leave = float(annealed["annealing_stats"]["a_acceptance_rate"].mean())
    assert 0.2 < leave < 1.0  # the Gibbs draws do move a


def test_a_huge_finite_support_is_annealed_by_metropolis():
    """k ~ DiscreteUniform(0, 10^9) is too large to sum (or to draw by Gibbs): the default
    route anneals it with Metropolis jumps of up to its prior sd. The evidence is the
    average over k of N(0.1; k 1e-9, 1), an integral of the normal density over [0, 1]
    to within 1e-9."""
    with pm.Model():
        k = pm.DiscreteUniform("k", 0, 10**9)
        pm.Normal("y", k * 1e-9, 1.0, observed=[0.1])
        idata = pa.sample_ais(draws=500, chains=2, random_seed=19, progressbar=False)
    exact = np.log(stats.norm.cdf(0.9) - stats.norm.cdf(-0.1))
    est = pa.log_evidence(idata)
    assert idata.attrs["annealed_discrete"] == ["k"]
    assert abs(est.log_evidence - exact) < 3 * max(est.standard_error, est.chain_sd), est
    assert 0.05 < float(idata["annealing_stats"]["k_acceptance_rate"].mean()) < 1.0


def test_all_discrete_model_with_impossible_data_is_refused():
    with pm.Model():
        n = pm.DiscreteUniform("n", 0, 3)
        pm.Binomial("y", n, 0.5, observed=[5])  # 5 successes in at most 3 trials
        with pytest.raises(AnnealingError, match=r"exact log evidence of the all-discrete "
                                                 r"model is -inf: the data are impossible"):
            pa.sample_ais(progressbar=False)


@pytest.mark.slow
def test_latent_count_evidence_at_the_defaults():
    """N ~ Poisson(10) (unbounded: annealed), y_j ~ Binomial(N, p), p ~ Beta(2, 2): the
    evidence is a sum over N of Poisson-weighted Beta-Binomial terms."""
    case = discrete_models.latent_count()
    with case.build():
        idata = pa.sample_ais(random_seed=11, progressbar=False)
    _check(pa.log_evidence(idata), case.log_evidence)
    assert idata.attrs["annealed_discrete"] == ["N"]
    assert idata.attrs["kernel"] == "hais+discrete"
    rate = idata["annealing_stats"]["N_acceptance_rate"]
    assert rate.shape == (4, idata.attrs["num_steps"]) and 0.05 < float(rate.mean()) < 1.0
    assert idata["posterior"]["N"].dtype.kind == "i"


@pytest.mark.slow
def test_change_point_evidence_by_both_routes():
    """The coal-mining-disasters model of PyMC's getting-started guide in small: Poisson
    counts, a DiscreteUniform switch point, and Gamma rates; the evidence is a sum over
    switch points of two Gamma-Poisson integrals. The switch point summed out (the default)
    and annealed (discrete="anneal"): each within 3 SE and 0.05 nat of the exact evidence,
    and of each other within their joint error; the summed run's switch-point draws against
    the exact posterior mean."""
    case = discrete_models.change_point()
    with case.build():
        idata = pa.sample_ais(random_seed=5, progressbar=False)
        annealed = pa.log_evidence(pa.sample_ais(random_seed=12, progressbar=False,
                                                 discrete="anneal"))
    summed = pa.log_evidence(idata)
    _check(summed, case.log_evidence)
    _check(annealed, case.log_evidence)
    joint = np.hypot(annealed.standard_error, summed.standard_error)
    assert abs(annealed.log_evidence - summed.log_evidence) < 3 * joint
    assert idata.attrs["summed_discrete"] == ["switch"]
    post = idata["posterior"]
    assert post["switch"].dtype.kind == "i" and post["switch"].shape == (4, 1000)
    log_post = discrete_models.switch_posterior_log_weights(case.data, 2.0, 1.0)
    exact_mean = np.sum(np.arange(len(log_post)) * special.softmax(log_post))
    draws = post["switch"].values.ravel()
    assert abs(draws.mean() - exact_mean) < 5 * draws.std() / np.sqrt(summed.ess) + 0.05


@pytest.mark.slow
def test_gaussian_base_covers_the_continuous_variables_and_keeps_the_discrete_prior():
    """base="gaussian" with an annealed count: the fitted Gaussian covers p only, N keeps
    its prior as base; the evidence at the defaults is within 3 SE and 0.05 nat."""
    case = discrete_models.latent_count()
    with case.build():
        idata = pa.sample_ais(base="gaussian", random_seed=23, progressbar=False)
    _check(pa.log_evidence(idata), case.log_evidence)
    assert idata.attrs["base"] == "gaussian" and idata.attrs["annealed_discrete"] == ["N"]
    counts = idata.posterior["N"].values
    assert np.all(counts == np.round(counts)) and counts.min() >= case.data.max()


def test_gaussian_base_draws_the_discrete_variables_from_their_prior_given_the_rest():
    """lam ~ Gamma(4, 1), N ~ Poisson(lam): the base of the Gaussian-base path draws N from
    Poisson(lam) at each particle's lam (E[N | lam] = lam, Var = lam), and its log density
    is the Gaussian's plus the Poisson's."""
    from pymc_anneal.paths import gaussian_base_path

    with pm.Model() as model:
        lam = pm.Gamma("lam", 4.0, 1.0)
        pm.Poisson("N", lam)
        pm.Binomial("y", model["N"], 0.5, observed=[3])
    mp = model_path(model)
    d_lam = [sl.start for name, sl, _ in mp.value_slices if name.startswith("lam")][0]
    d_n = [sl.start for name, sl, _ in mp.value_slices if name == "N"][0]
    path = gaussian_base_path(mp.path, np.array([np.log(4.0)]), np.array([[0.25]]),
                              defensive=0.0)  # the Gaussian share alone
    z = path.sample_base(np.random.default_rng(5), 40_000)
    lam_values = np.exp(np.log(4.0) + 0.5 * z[:, d_lam])
    counts = z[:, d_n]
    assert np.all(counts == np.round(counts))
    # E[N - lam] = 0 and E[(N - lam)^2 - lam] = 0 given lam, pooled over the draws
    resid = counts - lam_values
    assert abs(resid.mean()) < 4 * resid.std() / np.sqrt(resid.size)
    excess = resid**2 - lam_values
    assert abs(excess.mean()) < 4 * excess.std() / np.sqrt(excess.size)
    positions = pt.matrix("positions")
    log_base, _ = path.build_log_densities(positions, {k: pt.as_tensor(v) for k, v
                                                       in path.parameters.items()})
    fn = pytensor.function([positions], log_base, mode="FAST_COMPILE")
    expected = (stats.norm.logpdf(z[:5, d_lam])
                + stats.poisson.logpmf(counts[:5], lam_values[:5]))
    np.testing.assert_allclose(fn(z[:5]), expected, rtol=1e-10)


def test_annealed_route_bad_input():
    with pm.Model() as tied:  # N's prior depends on a summed label: no prior base for N alone
        z = pm.Bernoulli("z", 0.5)
        n = pm.Poisson("N", 5.0 + 5.0 * z)
        pm.Normal("mu", 0.0, 1.0)
        pm.Binomial("y", n, 0.5, observed=[3])
    with pytest.raises(AnnealingError, match=r"integer coordinates \[\d\] without a base for "
                                             r"them.*use base=\"prior\""):
        pa.sample_ais(model=tied, base="gaussian", progressbar=False)
    case = discrete_models.latent_count()
    with case.build():
        with pytest.raises(AnnealingError, match="kernel must be one of.*'metropolis'"):
            pa.sample_ais(kernel="metropolis", progressbar=False)
        with pytest.raises(AnnealingError, match="discrete"):
            pa.sample_ais(discrete="round", progressbar=False)
        with pytest.raises(AnnealingError, match=r"'N' \(Poisson\) has an unbounded support"):
            pa.sample_ais(discrete="sum", progressbar=False)
