r"""Discrete free variables summed out of a PyMC model's path (:mod:`pymc_anneal.pymc.discrete`).

Ground truth: the summed log densities against brute-force enumeration of every
configuration with PyMC's own joint logp; closed-form evidences (a change-point model, a sum
over switch points of Gamma-Poisson integrals; an all-discrete model); a mixture written with
explicit Bernoulli labels against the same mixture as ``pm.NormalMixture``, integrated by
quadrature; the exact conditional draws against enumerated conditional probabilities
(chi-square); bad input.
"""

from __future__ import annotations

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


def _check(est, exact):
    error = est.log_evidence - exact
    assert abs(error) < 3 * est.standard_error + 1e-12, (error, est)
    assert abs(error) < 0.05, (error, est)


@pytest.mark.slow
def test_change_point_evidence_at_the_defaults():
    """The coal-mining-disasters model of PyMC's getting-started guide in small: Poisson
    counts, a DiscreteUniform switch point, and Gamma rates. The evidence is a sum over
    switch points of two Gamma-Poisson integrals."""
    case = discrete_models.change_point()
    with case.build():
        idata = pa.sample_ais(random_seed=5, progressbar=False)
    est = pa.log_evidence(idata)
    _check(est, case.log_evidence)
    post = idata["posterior"]
    assert post["switch"].dtype.kind == "i" and post["switch"].shape == (4, 1000)
    # the switch point's posterior mean against its exact marginal
    log_post = discrete_models.switch_posterior_log_weights(case.data, 2.0, 1.0)
    exact_mean = np.sum(np.arange(len(log_post)) * special.softmax(log_post))
    draws = post["switch"].values.ravel()
    assert abs(draws.mean() - exact_mean) < 5 * draws.std() / np.sqrt(est.ess) + 0.05
    assert idata.attrs["summed_discrete"] == ["switch"]


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
    draws = mp.draw_discrete(np.tile(theta, (20_000, 1)), "c", np.random.default_rng(9))
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
    with pm.Model() as huge:
        k = pm.DiscreteUniform("k", 0, 10**9)
        pm.Normal("y", k * 1e-9, 1.0, observed=[0.1])
    with pytest.raises(AnnealingError, match=r"'k' has 1,000,000,001 possible values"):
        model_path(huge)
    with pm.Model() as unbounded:
        n = pm.Poisson("n", 3.0)
        pm.Binomial("y", n, 0.5, observed=[2])
    with pytest.raises(AnnealingError, match=r"'n' \(Poisson\) has an unbounded support"):
        model_path(unbounded)
    with pm.Model() as dependent:
        m = pm.Bernoulli("m", 0.5)
        pm.DiscreteUniform("k", 0, 2 + m)
        pm.Normal("y", 0.0, 1.0, observed=[0.1])
    with pytest.raises(AnnealingError, match="depends on other random variables"):
        model_path(dependent)
    with pm.Model() as coupled:  # 2^20 joint configurations, not separable by element
        mu = pm.Normal("mu", 0, 1)
        z = pm.Bernoulli("z", 0.5, shape=20)
        pm.Normal("y", mu + z.sum(), 1.0, observed=[0.1])
    with pytest.raises(AnnealingError, match="cannot be summed element by element"):
        model_path(coupled)


def test_routes_without_discrete_support_refuse_them():
    with pm.Model() as model:
        pm.Normal("mu", 0, 1)
        pm.Bernoulli("z", 0.5)
        pm.Normal("y", model["mu"] + model["z"], 1.0, observed=[0.1])
    with pytest.raises(AnnealingError, match=r"discrete free variables \['z'\], which bdmc"):
        pa.bdmc(model, num_steps=[10])
