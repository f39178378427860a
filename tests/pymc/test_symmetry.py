"""Label switching (``pymc/symmetry.py``): the exchangeable labels read from the graph, the
labels' maps against PyMC's own transforms, the invariance check, and the evidence of
label-switched mixtures against its exact sum over the data's assignments."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pymc as pm
import pytensor
import pytest
from scipy.special import gammaln, logsumexp

import pymc_anneal as pa
from pymc_anneal.exceptions import AnnealingError, AnnealingWarning
from pymc_anneal.pymc import adapter, bases, laplace
from pymc_anneal.pymc.symmetry import (
    find_symmetry,
    fold,
    is_invariant,
    label_symmetries,
    unfold,
)


def _mixture(y, labels, sigma, tau, alpha=1.0, mu_scales=None, free_sigma=False):
    """A mixture of ``labels`` Normals with Dirichlet(alpha) weights and N(0, tau) means
    (``mu_scales``: each mean's own prior scale, which breaks the symmetry where they
    differ); the components' scale ``sigma`` known, or Uniform(0, 10) each."""
    with pm.Model() as model:
        w = pm.Dirichlet("w", a=np.full(labels, alpha))
        mu = pm.Normal("mu", 0.0, tau if mu_scales is None else np.asarray(mu_scales),
                       shape=labels)
        s = pm.Uniform("s", 0.0, 10.0, shape=labels) if free_sigma else sigma
        pm.NormalMixture("y", w=w, mu=mu, sigma=s, observed=y)
    return model


def _exact_log_evidence(y, labels, sigma, tau, alpha=1.0):
    """The evidence of :func:`_mixture` with a known scale, summed over every assignment
    of the data to the components: the Dirichlet-multinomial probability of the counts
    times each component's Gaussian marginal of its data (N(0, sigma^2 I + tau^2 J))."""
    y = np.asarray(y, dtype=np.float64)
    n = y.size
    z = np.array(list(itertools.product(range(labels), repeat=n)))  # (labels**n, n)
    total = np.full(len(z), gammaln(labels * alpha) - gammaln(labels * alpha + n))
    s2, t2 = sigma**2, tau**2
    for k in range(labels):
        member = z == k
        count = member.sum(axis=1)
        first = member @ y
        second = member @ y**2
        total += gammaln(alpha + count) - gammaln(alpha)
        log_det = np.where(count > 0, (count - 1) * np.log(s2) + np.log(s2 + count * t2), 0.0)
        quad = (second - t2 * first**2 / (s2 + count * t2)) / s2
        total += -0.5 * count * np.log(2 * np.pi) - 0.5 * log_det - 0.5 * quad
    return float(logsumexp(total))


def _clusters(rng, labels, per, spread=7.0, sigma=1.0):
    centres = spread * (np.arange(labels) - (labels - 1) / 2.0)
    return np.concatenate([c + sigma * rng.standard_normal(per) for c in centres])


def test_the_exact_sum_is_a_quadrature():
    """The test's exact evidence against a quadrature of the same model with two labels
    (alpha = 1: a uniform weight) on a 3-d grid over (w, mu1, mu2)."""
    y = np.array([-2.1, -1.4, 1.8, 2.6, 0.3])
    sigma, tau = 1.0, 2.0
    w = (np.arange(400) + 0.5) / 400
    mu = np.linspace(-9, 9, 181)
    dmu, dw = mu[1] - mu[0], w[1] - w[0]
    W, M1, M2 = np.meshgrid(w, mu, mu, indexing="ij", sparse=True)
    log_lik = 0.0
    for v in y:
        a = np.log(W) - 0.5 * ((v - M1) / sigma) ** 2
        b = np.log1p(-W) - 0.5 * ((v - M2) / sigma) ** 2
        log_lik = log_lik + np.logaddexp(a, b) - 0.5 * np.log(2 * np.pi * sigma**2)
    log_prior = -(M1**2 + M2**2) / (2 * tau**2) - np.log(2 * np.pi * tau**2)
    grid = logsumexp(log_lik + log_prior) + np.log(dmu * dmu * dw)
    assert grid == pytest.approx(_exact_log_evidence(y, 2, sigma, tau), abs=2e-3)


@pytest.mark.parametrize("labels", [2, 3, 4])
def test_the_maps_are_pymcs_transforms(labels):
    """At 40 random points of the path's coordinates, a permutation of the labels is the
    unconstrained value of the permuted constrained values (PyMC's simplex and interval
    transforms, and none), and the log density is invariant under it."""
    rng = np.random.default_rng(100 + labels)
    model = _mixture(rng.normal(size=7), labels, 1.0, 3.0, free_sigma=True)
    mp = adapter.model_path(model)
    symmetry = label_symmetries(model, mp)[0]
    assert set(symmetry.names) == {"w_simplex__", "mu", "s_interval__"}
    assert symmetry.labels == labels
    x = 2.0 * rng.standard_normal((40, mp.path.num_dims))
    to_constrained = pytensor.function(
        model.value_vars, model.replace_rvs_by_values([model["w"], model["mu"], model["s"]]))
    forward = {
        "w_simplex__": lambda v: np.log(v[:-1]) - np.log(v).mean(),
        "mu": lambda v: v,
        "s_interval__": lambda v: np.log(v) - np.log(10.0 - v),
    }
    evaluate = laplace._log_density_function(mp.path)
    for perm in [tuple(rng.permutation(labels)) for _ in range(3)]:
        image = symmetry.apply(x, perm)
        for row, mapped in zip(x, image):
            values = dict(zip(["w", "mu", "s"], to_constrained(*[
                row[sl].reshape(shape) for _, sl, shape in mp.value_slices])))
            for (name, sl, _), key in zip(mp.value_slices, ["w", "mu", "s"]):
                expected = forward[name](values[key][list(perm)])
                np.testing.assert_allclose(mapped[sl], expected, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(evaluate(image)[0], evaluate(x)[0], rtol=1e-10)
        # |det| = 1: the map's matrix, column by column
        matrix = symmetry.apply(np.eye(mp.path.num_dims), perm).T
        assert abs(np.linalg.det(matrix)) == pytest.approx(1.0, rel=1e-12)


def test_what_is_not_exchangeable_is_not_taken():
    """Means with different prior scales, a regression's coefficients, ordered means and
    a single variable of many labels: no candidate accepted at random points; a model
    whose mixture is exchangeable next to a coefficient vector of the same length keeps
    the mixture's variables only."""
    rng = np.random.default_rng(7)
    y = rng.normal(size=12)
    broken = _mixture(y, 3, 1.0, 3.0, mu_scales=[3.0, 3.0, 3.1])
    with pm.Model() as regression:
        beta = pm.Normal("beta", 0.0, 1.0, shape=3)
        pm.Normal("y", pm.math.dot(rng.normal(size=(12, 3)), beta), 1.0, observed=y)
    with pm.Model() as ordered:
        mu = pm.Normal("mu", 0.0, 3.0, shape=3, transform=pm.distributions.transforms.ordered,
                       initval=[-1.0, 0.0, 1.0])
        pm.NormalMixture("y", w=np.ones(3) / 3, mu=mu, sigma=1.0, observed=y)
    with pm.Model() as mixed:
        w = pm.Dirichlet("w", a=np.ones(3))
        mu = pm.Normal("mu", 0.0, 3.0, shape=3)
        beta = pm.Normal("beta", 0.0, 1.0, shape=3)
        pm.NormalMixture("y", w=w, mu=mu, sigma=1.0, observed=y)
        pm.Normal("z", pm.math.dot(rng.normal(size=(12, 3)), beta), 1.0,
                  observed=rng.normal(size=12))
    for model, expected in [(broken, None), (regression, None), (ordered, None),
                            (mixed, {"w_simplex__", "mu"})]:
        mp = adapter.model_path(model)
        evaluate = laplace._log_density_function(mp.path)
        points = 2.0 * rng.standard_normal((32, mp.path.num_dims))
        found = next((s for s in label_symmetries(model, mp)
                      if is_invariant(s, evaluate, points)), None)
        assert (None if found is None else set(found.names)) == expected


def test_images_are_the_modes_mirrors():
    """The census's mirror modes fold to one; its images are new components with the same
    Laplace mass and log density, none within one standard deviation of another: one mode
    of three labels makes six."""
    rng = np.random.default_rng(3)
    y = _clusters(rng, 3, 4)
    model = _mixture(y, 3, 1.0, 5.0)
    mp = adapter.model_path(model)
    evaluate = laplace._log_density_function(mp.path)
    starts = mp.path.sample_base(rng, 16)
    modes, _ = laplace.fit_modes(mp.path, starts, rng, num_starts=16)
    found = find_symmetry(label_symmetries(model, mp), evaluate, modes, starts, rng)
    assert found is not None and set(found.names) == {"w_simplex__", "mu"}
    folded = fold(found, modes, laplace._within_one_sd)
    assert len(folded) < len(modes)  # the census found mirror images of the same mode
    kept, note = unfold(found, folded[:1], laplace._within_one_sd)
    assert len(kept) == 6 and "3 exchangeable labels" in note
    masses = [laplace.laplace_mass(v, c) for v, _, c in kept]
    np.testing.assert_allclose(masses, masses[0], rtol=1e-9)
    values = evaluate(np.array([m for _, m, _ in kept]))[0]
    np.testing.assert_allclose(values, values[0], rtol=1e-9)
    for i, j in itertools.combinations(range(6), 2):
        assert not laplace._within_one_sd(kept[i][1], kept[j][1], kept[j][2])


def test_too_many_mirror_modes_refuse_the_laplace_base(monkeypatch):
    """Where the orbits would make more components than the base holds, the Laplace base
    is refused with the reason (a base on some mirror modes would miss the others' mass
    unseen), and ``base="auto"`` runs from the prior."""
    rng = np.random.default_rng(4)
    model = _mixture(_clusters(rng, 3, 3), 3, 1.0, 6.0)
    monkeypatch.setattr(laplace, "MAX_COMPONENTS", 5)
    mp = adapter.model_path(model)
    with pytest.raises(AnnealingError, match="invariant under relabelling.*mirror modes"):
        bases._laplace_base(model, mp, np.random.default_rng(0))
    with pytest.raises(AnnealingError, match='Use base="prior"'):
        pa.sample_ais(model=model, base="laplace", random_seed=1, progressbar=False)


@pytest.mark.parametrize("labels, per, seed", [(3, 3, 21), (4, 2, 22)])
def test_label_switched_evidence_is_exact(labels, per, seed):
    """Separated clusters, Dirichlet weights and known scales: with ``base="laplace"`` the
    base holds every mirror image (``label_symmetry``) and the estimate is the exact sum
    over the data's assignments within 4 of its standard errors, with no warning; at the
    defaults too."""
    rng = np.random.default_rng(seed)
    y = _clusters(rng, labels, per)
    sigma, tau = 1.0, 6.0
    exact = _exact_log_evidence(y, labels, sigma, tau)
    model = _mixture(y, labels, sigma, tau)
    for base in ["laplace", "auto"]:
        with warnings.catch_warnings():
            warnings.simplefilter("error", AnnealingWarning)
            idata = pa.sample_ais(model=model, base=base, random_seed=seed, progressbar=False)
        est = pa.log_evidence(idata)
        assert abs(est.log_evidence - exact) <= 4 * est.standard_error + 1e-3, (
            base, est, exact, dict(idata.attrs))
        if base == "laplace":
            assert f"{labels} exchangeable labels" in idata.attrs["label_symmetry"]
            assert idata.attrs["laplace_modes"] >= math.factorial(labels)
