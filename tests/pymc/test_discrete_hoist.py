"""The hoisted joint sum (:func:`pymc_anneal.pymc.discrete.hoisted_sum`) against the plain
one: the same log densities and gradients at many random points, on models where the
rewrite applies (change points, indicator switches, failed parameter checks in one branch)
and where it does not (the summed value as a coefficient that is 0 at the initial point),
and after ``pm.set_data``."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.replace import vectorize_graph
from scipy import special

from pymc_anneal.backends import python_mode
from pymc_anneal.pymc import discrete
from pymc_anneal.pymc.adapter import model_path
from tests import discrete_models

COAL = np.array([4, 5, 4, 0, 1, 4, 3, 4, 0, 6, 3, 3, 4, 0, 2, 6, 3, 3, 5, 4, 5, 3, 1, 4, 4, 1,
                 5, 5, 3, 4, 2, 5, 2, 2, 3, 4, 2, 1, 3, 2, 2, 1, 1, 1, 1, 3, 0, 0, 1, 0, 1, 1,
                 0, 0, 3, 1, 0, 3, 2, 2, 0, 1, 1, 1, 0, 1, 0, 1, 0, 0, 0, 2, 1, 0, 0, 0, 1, 1,
                 0, 2, 3, 3, 1, 1, 2, 1, 1, 1, 1, 2, 4, 2, 0, 0, 0, 1, 4, 0, 0, 0, 1, 0, 0, 0,
                 0, 0, 1, 0, 0, 1, 0, 1])
"""Annual coal-mining disasters in the UK, 1851-1962 (Jarrett 1979; PyMC's tutorial)."""


def coal_model(years=None):
    """PyMC's coal-mining change point (``years`` as pm.Data when given)."""
    with pm.Model() as model:
        yrs = pm.Data("years", years) if years is not None else np.arange(1851, 1963)
        s = pm.DiscreteUniform("switchpoint", lower=1851, upper=1961)
        early = pm.Exponential("early_rate", 1.0)
        late = pm.Exponential("late_rate", 1.0)
        pm.Poisson("disasters", pm.math.switch(s >= yrs, early, late), observed=COAL)
    return model


def coal_log_evidence() -> float:
    r"""The coal-mining model's exact log evidence: with Exponential(1) = Gamma(1, 1) rates,
    each switch point's term is a product of two Gamma-Poisson integrals in closed form, so
    :math:`\log p(y) = \log \frac{1}{111} \sum_s \mathrm{GP}(y_{t \le s})\,
    \mathrm{GP}(y_{t > s})`, exact to rounding (-177.79527 nat)."""
    years = np.arange(1851, 1963)
    weights = [discrete_models._gamma_poisson(COAL[years <= s], 1.0, 1.0)
               + discrete_models._gamma_poisson(COAL[years > s], 1.0, 1.0)
               for s in range(1851, 1962)]
    return float(special.logsumexp(weights) - np.log(111))


def coal_case() -> discrete_models.DiscreteCase:
    """The coal-mining model with its exact evidence (for ``benchmarks/bench_discrete.py``)."""
    return discrete_models.DiscreteCase("coal", coal_model, coal_log_evidence(), COAL)


def test_coal_log_evidence_by_quadrature():
    """The closed form against quadrature over the two rates at three switch points (the
    integrand factors into one integral per rate; quad's relative error 1e-10)."""
    from scipy import integrate, stats
    years = np.arange(1851, 1963)
    for s in (1870, 1890, 1940):
        total, closed = 0.0, 0.0
        for part in (COAL[years <= s], COAL[years > s]):
            shift = stats.poisson.logpmf(part, part.mean()).sum()
            value, _ = integrate.quad(
                lambda r, part=part, shift=shift: np.exp(
                    stats.poisson.logpmf(part, r).sum() - r - shift),
                0.0, 20.0, epsabs=0, epsrel=1e-10, points=[part.mean()])
            total += np.log(value) + shift
            closed += discrete_models._gamma_poisson(part, 1.0, 1.0)
        assert total == pytest.approx(closed, abs=1e-8)
    assert coal_log_evidence() == pytest.approx(-177.7952685761212, abs=1e-9)


def _normal_rates():
    """Rates that may be negative: the Poisson's check fails in one branch only."""
    with pm.Model() as model:
        s = pm.DiscreteUniform("s", 0, 20)
        early = pm.Normal("early", 2.0, 2.0)
        late = pm.Normal("late", 2.0, 2.0)
        pm.Poisson("y", pt.switch(np.arange(20) < s, early, late), observed=COAL[:20])
    return model


def _coefficient():
    """The summed value enters through a coefficient that is 0 at the initial point, and
    through a switch on an indicator, with two jointly summed variables."""
    rng = np.random.default_rng(2)
    with pm.Model() as model:
        k = pm.DiscreteUniform("k", -3, 3)
        z = pm.Bernoulli("z", 0.3)
        b = pm.Normal("b", 0.0, 1.0)
        a = pm.Normal("a", 0.0, 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        mu = a + b * k + pt.switch(pt.eq(z, 1), a, -a) * np.linspace(0, 1, 15)
        pm.Normal("y", mu, sigma, observed=rng.normal(size=15))
    return model


def _two_switches():
    """Two switch points with their own conditions, and a switch on both."""
    with pm.Model() as model:
        s1 = pm.DiscreteUniform("s1", 0, 12)
        s2 = pm.DiscreteUniform("s2", 0, 12)
        r = pm.Gamma("r", 2.0, 1.0, shape=3)
        t = np.arange(12)
        rate = pt.switch(t < s1, r[0], pt.switch(t < s2, r[1], r[2]))
        pm.Poisson("y", rate, observed=COAL[:12])
        pm.Normal("w", pt.switch(s1 > s2, r[0], r[1]), 1.0, observed=1.5)
    return model


def _densities(model, hoist: bool, monkeypatch):
    monkeypatch.setattr(discrete, "HOIST", hoist)
    mp = model_path(model)
    positions = pt.matrix("positions")
    log_base, log_ratio = mp.path.build_log_densities(positions)
    total = log_base + log_ratio
    # the joint configurations' conditional log-probabilities (the final draws)
    (joint,) = vectorize_graph([mp.conditional_graph[0]], replace={mp.flat_input: positions})
    fn = pytensor.function([positions], [log_base, log_ratio, pt.grad(total.sum(), positions),
                                         joint], mode=python_mode())
    return mp, fn


def _points(mp, num: int) -> np.ndarray:
    """Exact prior draws and wide random points (never the initial point alone)."""
    rng = np.random.default_rng(7)
    prior = mp.path.sample_base(rng, num)
    return np.concatenate([prior, 3.0 * rng.normal(size=prior.shape), prior[:1] * 0])


BUILDERS = {"coal": coal_model, "small change point": lambda: discrete_models.change_point(
    ).build(), "negative rates": _normal_rates, "coefficient": _coefficient,
    "two switches": _two_switches}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BUILDERS))
def test_hoisted_sum_equals_the_plain_sum(name, monkeypatch):
    """At 101 points per model (prior draws, wide normals, zeros), the log base, log ratio,
    gradient and the joint configurations' conditional log-probabilities with hoisting
    equal those without to rounding (1e-9 relative)."""
    plain_mp, plain = _densities(BUILDERS[name](), False, monkeypatch)
    _, hoisted = _densities(BUILDERS[name](), True, monkeypatch)
    x = _points(plain_mp, 50)
    for got, want in zip(hoisted(x), plain(x)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    if name == "negative rates":  # a check fails at some points, in one branch or both
        ratio = plain(x)[1]
        assert np.isneginf(ratio).any() and np.isfinite(ratio).any()


def test_hoisting_rewrites_the_change_point():
    """On the coal-mining model no Log is left on a (configurations x years) array: the
    logs of the two rates are taken once per particle."""
    mp = model_path(coal_model())
    positions = pt.matrix("positions")
    _, log_ratio = mp.path.build_log_densities(positions)
    fn = pytensor.function([positions], log_ratio, mode=python_mode())
    logs = [n for n in fn.maker.fgraph.apply_nodes
            if getattr(getattr(n.op, "scalar_op", None), "nfunc_spec", None)
            and "log" in str(n.op).lower() and n.outputs[0].ndim >= 2
            and n.outputs[0].type.shape[-1] == 112 and n.outputs[0].type.shape[-2] == 111]
    assert not logs
    # the rates' parameter check (one value per particle on each side of the switch point)
    # is counted, not broadcast into a (particles x years) @ (years x switch points) product
    products = [n for n in fn.maker.fgraph.apply_nodes
                if any(k in type(getattr(n.op, "core_op", n.op)).__name__.lower()
                       for k in ("dot", "gemm", "gemv"))]
    assert not products


def _ieee_draws(rng, shape):
    """Normal values with some -inf, +inf and NaN among them."""
    x = rng.normal(size=shape)
    special = rng.random(shape)
    x[special < 0.08] = -np.inf
    x[(special >= 0.08) & (special < 0.12)] = np.inf
    x[(special >= 0.12) & (special < 0.15)] = np.nan
    return x


@pytest.mark.parametrize("kinds", [("full", "full"), ("one", "full"), ("full", "one"),
                                   ("one", "one"), ("scalar", "one")])
def test_selected_sum_equals_numpy_at_random_points(kinds):
    """``_selected_sum`` (a sum of ``switch(c, a, b)`` through dot products and counts of
    the non-finite elements) equals NumPy's sum of the switch, NaN and infinities included,
    whether each branch varies over the elements or is one value broadcast (the counted
    shortcut), at 300 random conditions and branch values."""
    shape = (2, 3)
    types = {"full": pt.matrix, "one": lambda n: pt.tensor(n, shape=(1, 1)),
             "scalar": pt.dscalar}
    c = pt.tensor("c", shape=shape, dtype="bool")
    a, b = (types[k](n) for k, n in zip(kinds, "ab"))
    fn = pytensor.function([c, a, b], discrete._selected_sum(c, a, b, shape),
                           mode=python_mode())
    rng = np.random.default_rng(3)
    for _ in range(300):
        cv = rng.random(shape) < rng.random()
        av, bv = (_ieee_draws(rng, shape if k == "full" else (1, 1)).reshape(
            () if k == "scalar" else shape if k == "full" else (1, 1)) for k in kinds)
        with np.errstate(invalid="ignore"):  # inf - inf: NaN, as asked
            want = np.where(cv, av, bv).sum()
        np.testing.assert_allclose(fn(cv, av, bv), want, rtol=1e-12, atol=1e-12)


def _change_point_sum(n: int):
    """``_selected_sum`` of ``switch(s >= t, a_t, b_t)`` over t < n at every switch point
    s in 0..n-1 (the prefix-sum route, as in the coal model), batched over particles:
    ``(stacked, out, grads)``, where ``stacked`` (particles, 3, n) holds A, B and weights,
    and ``out`` and ``grads`` (particles, n) are the sums and the gradients of
    ``sum(weights * out)`` with respect to A and B."""
    s = pt.lscalar("s")
    a, b = pt.dvector("a"), pt.dvector("b")

    def enumerate_(graph):
        return vectorize_graph([graph], replace={s: pt.as_tensor(np.arange(n))})[0]

    one = discrete._selected_sum(pt.ge(s, pt.arange(n)), a, b, (n,), enumerate_)
    # one input, whose particle axis has no static length (as in the annealing loop)
    stacked = pt.tensor("stacked", shape=(None, 3, n), dtype="float64")
    big_a, big_b, weights = stacked[:, 0], stacked[:, 1], stacked[:, 2]
    (out,) = vectorize_graph([one], replace={a: big_a, b: big_b})
    return stacked, out, pt.grad((weights * out).sum(), [big_a, big_b])


@pytest.mark.parametrize("backend", ["python", "jax",
                                     pytest.param("numba", marks=pytest.mark.slow),
                                     pytest.param("c", marks=pytest.mark.slow)])
def test_selected_sum_batched_with_and_without_non_finite_particles(backend):
    """The counted sum batched over particles takes the shortcut (no counting) only when
    no particle of the batch has an infinite or NaN element: its values and gradients equal
    NumPy's on batches of finite particles and on batches where one or more particles have
    non-finite elements (the others' values must not change), on each backend; and on JAX
    the counting is in a conditional branch (PyTensor's ``LazyIfElse``), not computed for
    every batch."""
    from pytensor.compile.mode import get_mode

    from pymc_anneal.backends import BACKENDS

    n, particles = 7, 6
    stacked, out, grads = _change_point_sum(n)
    mode = python_mode() if backend == "python" else get_mode(BACKENDS[backend])
    fn = pytensor.function([stacked], [out, *grads], mode=mode)
    if backend == "jax":
        lazy = [node for node in fn.maker.fgraph.apply_nodes
                if type(node.op).__name__ == "LazyIfElse"]
        assert lazy, "the counting is computed eagerly"
        branch_ops = {type(getattr(m.op, "scalar_op", m.op)).__name__
                      for node in lazy for m in node.op.false_branch.fgraph.apply_nodes}
        assert "CumOp" in branch_ops, branch_ops  # the counts' prefix sums
    selected = np.arange(n)[:, None] >= np.arange(n)[None, :]  # (switch point, element)
    rng = np.random.default_rng(5)
    for trial in range(40):
        av, bv = rng.normal(size=(particles, n)), rng.normal(size=(particles, n))
        bad = rng.random(particles) < (0.0 if trial % 2 == 0 else 0.4)
        for p in np.flatnonzero(bad):
            av[p], bv[p] = _ieee_draws(rng, n), _ieee_draws(rng, n)
        with np.errstate(invalid="ignore"):
            want = np.where(selected[None], av[:, None, :], bv[:, None, :]).sum(axis=-1)
        w = np.where(np.isfinite(want), rng.normal(size=want.shape), 0.0)
        value, grad_a, grad_b = fn(np.stack([av, bv, w], axis=1))
        np.testing.assert_allclose(value, want, rtol=1e-12, atol=1e-12)
        # each element's gradient: the weights of the switch points that select it, where
        # the element is finite (a non-finite one is counted, with no gradient)
        np.testing.assert_allclose(grad_a, (w @ selected) * np.isfinite(av), atol=1e-12)
        np.testing.assert_allclose(grad_b, (w @ ~selected) * np.isfinite(bv), atol=1e-12)


def test_prefix_sums_equal_the_matrix_product():
    """``_prefix_dot`` (prefix sums read at each row's end) equals the product with the
    0/1 matrix, and its gradient equals the matrix's transpose, for consecutive and
    scattered prefix/suffix rows."""
    n = 9
    rows = {"consecutive prefixes": [np.arange(n) < k for k in range(1, n)],
            "consecutive suffixes": [np.arange(n) >= k for k in range(1, n)][::-1],
            "scattered": [np.arange(n) < 3, np.arange(n) >= 7, np.arange(n) < 5,
                          np.arange(n) >= 2]}
    rng = np.random.default_rng(4)
    for name, matrix in rows.items():
        matrix = np.asarray(matrix, dtype="float64")
        dot = discrete._prefix_dot(pt.as_tensor(matrix))
        assert dot is not None, name
        x = pt.dvector("x")
        out = dot(x)
        weights = rng.normal(size=matrix.shape[0])
        fn = pytensor.function([x], [out, pt.grad((out * weights).sum(), x)],
                               mode=python_mode())
        xv = rng.normal(size=n)
        got, grad = fn(xv)
        np.testing.assert_allclose(got, matrix @ xv, rtol=1e-12, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(grad, matrix.T @ weights, rtol=1e-12, atol=1e-12,
                                   err_msg=name)


@pytest.mark.slow
def test_hoisted_sum_follows_set_data(monkeypatch):
    """After pm.set_data moves the years, the hoisted densities equal the plain ones of a
    model built with the new years."""
    years = np.arange(1851, 1963)
    model = coal_model(years)
    model_path(model)
    with model:
        pm.set_data({"years": years + 20})
    _, moved = _densities(model, True, monkeypatch)
    plain_mp, fresh = _densities(coal_model(years + 20), False, monkeypatch)
    x = _points(plain_mp, 20)
    for got, want in zip(moved(x), fresh(x)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
