"""The package's log density is PyMC's, everywhere (issue 39, defect 1).

Every function the package compiles from a model (the one-off functions in
:func:`pymc_anneal.backends.python_mode`, and the loop's graphs on each backend) must give
``model.compile_logp()``'s numbers: the log prior (Jacobians included), the log-likelihood
(observed terms and Potentials) and the gradient. A check at the initial point proves
little: PyMC's ``stabilize`` rewrites matter in the tails (``pm.Bernoulli(logit_p=x)`` is
``log(sigmoid(x))`` as written, ``-inf`` for ``x < -745`` unless rewritten to a softplus),
so the points here are drawn from a wide distribution, far tails included, for every
distribution family the test models use.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import special
from pytensor.graph.traversal import apply_ancestors

from pymc_anneal.backends import compile_function, compile_one_off
from pymc_anneal.paths import one_off_graph
from pymc_anneal.pymc.adapter import model_path

NUM_POINTS = 64
RTOL = 1e-10


def _logistic():
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 100, shape=3)
        x = np.linspace(-3, 3, 20)
        logit = beta[0] + beta[1] * x + beta[2] * x**2
        pm.Bernoulli("y", logit_p=logit, observed=(x > 0.3).astype(int))
        pm.Binomial("k", n=5, logit_p=beta[0] - beta[1], observed=[0, 2, 5])
    return model


def _counts():
    with pm.Model() as model:
        log_rate = pm.Normal("log_rate", 0, 10)
        # bounded: at alpha = 6e8, gammaln(y + alpha) - gammaln(alpha) cancels 17 digits, and
        # NumPy's and Numba's gammaln differ there by 1e-8 relative (both 1e-8 off the exact
        # value): a question of the float library, not of the graph this file tests
        alpha = pm.Uniform("alpha", 0.1, 50.0)
        pm.Poisson("n", pm.math.exp(log_rate), observed=[0, 3, 7])
        pm.NegativeBinomial("m", mu=pm.math.exp(log_rate), alpha=alpha, observed=[1, 0, 40])
    return model


def _positive():
    with pm.Model() as model:
        g = pm.Gamma("g", 0.001, 0.001)
        ig = pm.InverseGamma("ig", 2.0, 1.0)
        ln = pm.LogNormal("ln", 0.0, 2.0)
        e = pm.Exponential("e", 1.0)
        hc = pm.HalfCauchy("hc", 2.0)
        hn = pm.HalfNormal("hn", 1.0)
        ht = pm.HalfStudentT("ht", nu=3, sigma=1.0)
        pm.Normal("y", 0.0, g * ig + ln + e + hc + hn + ht, observed=[0.5, -1.0])
    return model


def _bounded():
    with pm.Model() as model:
        b = pm.Beta("b", 0.5, 0.5)
        u = pm.Uniform("u", -2.0, 3.0)
        w = pm.Dirichlet("w", np.ones(3))
        tn = pm.TruncatedNormal("tn", 0.0, 1.0, lower=-1.0, upper=2.0)
        pm.Binomial("k", n=10, p=b, observed=7)
        pm.Normal("y", u + tn, 1.0, observed=[0.2])
        pm.Categorical("c", p=w, observed=[0, 2, 2])
    return model


def _heavy_tails_and_potential():
    with pm.Model() as model:
        mu = pm.StudentT("mu", nu=2, mu=0, sigma=10)
        c = pm.Cauchy("c", 0, 1)
        sigma = pm.HalfNormal("sigma", 3)
        pm.StudentT("y", nu=4, mu=mu + c, sigma=sigma, observed=[0.3, 12.0, -4.0])
        pm.Laplace("z", mu, sigma, observed=[1.0])
        pm.Potential("soft", -pm.math.log1pexp(mu - 3.0))  # log(1 - sigmoid(mu - 3))
    return model


def _multivariate():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5, shape=2)
        chol, _, _ = pm.LKJCholeskyCov("chol", n=2, eta=2.0, sd_dist=pm.Exponential.dist(1.0),
                                       compute_corr=True)
        pm.MvNormal("y", mu, chol=chol, observed=[[0.1, 0.2], [1.0, -1.0]])
    return model


def _underflowing_scale():
    """posteriordb's mcycle_splines, reduced: a scale ``exp(linear predictor)`` that
    underflows to 0 at a wide prior's draws, where PyMC's check ``sigma > 0`` makes the
    log-likelihood ``-inf``. The model's build checked its terms at 200 prior draws with
    the checks left in, and raised PyMC's ``ParameterValueError`` from inside PyTensor."""
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 1000.0)
        b = pm.Normal("b", 0.0, 1.0)
        pm.Normal("y", b, pm.math.exp(a), observed=[0.3, -1.2, 2.0])
    return model


def _stacked_entries():
    """posteriordb's hmm_example, reduced: the two probabilities of a state stacked as a
    vector and taken back by index, each entry's log a Jacobian-like Potential. PyMC's
    graph indexes into the stack, so ``log(1 - sigmoid(a))`` is stabilized; the package's
    batched stack was a join that nothing indexed through: ``-inf`` from ``a > 37``."""
    with pm.Model() as model:
        a = pm.Normal("a", 0, 100)
        b = pm.Normal("b", 0, 3)
        theta = pt.stack([pm.math.sigmoid(a), 1 - pm.math.sigmoid(a), pm.math.exp(b)])
        pm.Potential("jacobian", pt.log(theta[0]) + pt.log(theta[1]))
        pm.Poisson("y", theta[2], observed=[0, 2])
    return model


def _shared_under_a_vector():
    """A scalar ``1 - sigmoid(a)`` that the gradient shares, under a likelihood of several
    observations: batched, the observations' axis was lifted down to it and ``stabilize``
    no longer made ``log(1 - sigmoid(a))`` a softplus once the gradient was compiled
    beside it (``-inf`` from ``a > 37``); PyMC rewrites its cost before the gradient, and
    so does the package now (``adapter._stabilized``)."""
    with pm.Model() as model:
        a = pm.Normal("a", 0, 100)
        b = pm.Normal("b", 0, 3)
        pm.Poisson("y", pm.math.exp(b) * (1 - pm.math.sigmoid(a)), observed=[0, 2, 1])
    return model


def _logit_of_a_bounded_prior():
    """posteriordb's Mh, reduced: the log-odds of a ``Uniform(0, 1)`` parameter in a
    Binomial's ``logit_p``; the prior's bounds check shares ``sigmoid(x)`` with it. PyMC
    simplifies ``logit(sigmoid(x))`` to ``x`` in its log-likelihood; rewritten together
    with the log prior, the shared term kept an ``ExpandDims`` that stopped the
    simplification: ``log(1 / 0)`` from ``x > 37``, the log-likelihood ``-inf`` (as PyMC's
    own ``compile_logp()`` of the whole model is there)."""
    with pm.Model() as model:
        mean_p = pm.Uniform("mean_p", lower=0, upper=1)
        e = pm.Normal("e", 0, 1, shape=4)
        pm.Binomial("y", n=5, logit_p=pm.math.logit(mean_p) + e, observed=[5, 5, 4, 2])
    return model


def _unseen_individuals():
    """posteriordb's Mh, reduced further: the individuals never caught, each either absent
    (``log1p(-omega)``, expanded to their number) or present and missed, in a
    ``logsumexp``; ``omega``'s ``sigmoid`` is shared with its bounds check, so an
    ``ExpandDims`` stays above it and ``log1p(-omega)`` is ``-inf`` from
    ``omega_interval__ > 37``, in PyMC's graph as in ours. PyMC's gradient is finite there
    (its per-point rewrites cancel ``s (1 - s) / (1 - s)``); batched, it was NaN."""
    with pm.Model() as model:
        omega = pm.Uniform("omega", 0, 1)
        p = pm.Uniform("p", 0, 1)
        none_caught = pm.logp(pm.Binomial.dist(n=5, p=p), np.zeros(3, dtype=int))
        terms = pt.stack([pt.log(omega) + none_caught,
                          pt.full_like(none_caught, pt.log1p(-omega))])
        pm.Potential("unseen", pm.math.logsumexp(terms, axis=0).sum())
        pm.Binomial("seen", n=5, p=p * omega, observed=[2, 3, 1])
    return model


def _simplex():
    """The calibration's Dirichlet-multinomial: rewritten, the log density of a
    ``Dirichlet``'s simplex transform takes the ``logsumexp`` of a join of a particle's
    values and a constant, which ``vectorize_graph`` batched as a ``Blockwise``: its
    gradient split the particles' gradient with batched sizes, which JAX cannot trace."""
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(3))
        pm.Multinomial("c", n=10, p=w, observed=[3, 5, 2])
    return model


def survey(nmax: int = 140, k=(9, 12)):
    """posteriordb's Survey, reduced: the log-likelihood of each population size ``n`` in
    a Python loop of scalar terms (a constant below the largest count), stacked and summed
    by ``logsumexp``. The package lifts the stack into vector ops (``pymc/stacks.py``);
    its integer constants ``n - k`` are int8 below 128 and int16 above."""
    with pm.Model() as model:
        theta = pm.Uniform("theta", 0, 1)
        terms = []
        for n in range(1, nmax + 1):
            if n < max(k):
                terms.append(-1e10)
                continue
            lp = np.log(1.0 / nmax)
            for ki in k:
                lp = lp + (pt.gammaln(n + 1) - pt.gammaln(ki + 1) - pt.gammaln(n - ki + 1)
                           + ki * pt.log(theta) + (n - ki) * pt.log(1 - theta))
            terms.append(lp)
        pm.Potential("mixture", pm.math.logsumexp(pt.stack(terms)))
    return model


MODELS = {"logistic": _logistic, "counts": _counts, "positive": _positive,
          "bounded": _bounded, "heavy_tails_and_potential": _heavy_tails_and_potential,
          "multivariate": _multivariate, "underflowing_scale": _underflowing_scale,
          "stacked_entries": _stacked_entries, "shared_under_a_vector": _shared_under_a_vector,
          "logit_of_a_bounded_prior": _logit_of_a_bounded_prior, "simplex": _simplex,
          "unseen_individuals": _unseen_individuals, "survey": survey}


def _points(mp, seed: int) -> np.ndarray:
    """Wide points in the unconstrained space: a third each at scales 1, 10 and 100 (the
    last far in every tail: exp of the log-transformed ones over- and underflows)."""
    rng = np.random.default_rng(seed)
    d = mp.path.num_dims
    scales = np.repeat([1.0, 10.0, 100.0], -(-NUM_POINTS // 3))[:NUM_POINTS]
    return rng.standard_normal((NUM_POINTS, d)) * scales[:, None]


def _reference(model, mp, points):
    """PyMC's own numbers, one point at a time: log prior (Jacobians), log-likelihood
    (observed terms and Potentials) and the gradient of their sum."""
    prior = model.compile_logp(vars=model.free_RVs, jacobian=True)
    like = model.compile_logp(vars=[*model.observed_RVs, *model.potentials])
    dlogp = model.compile_dlogp(jacobian=True)

    def point(x):
        return {name: x[s].reshape(shape) for name, s, shape in mp.value_slices}

    def flat_grad(p):
        g = dlogp(p)  # raveled in value_vars order
        return np.asarray(g, dtype=float)

    rows = [(prior(point(x)), like(point(x)), flat_grad(point(x))) for x in points]
    return (np.array([r[0] for r in rows]), np.array([r[1] for r in rows]),
            np.stack([r[2] for r in rows]))


def _ours(mp, points, backend):
    # on JAX with the points' shape static, as the loop traces its step (a length computed
    # from an unknown number of particles is a traced value there, which JAX refuses)
    shape = points.shape if backend == "jax" else (None, None)
    x = pt.tensor("x", dtype="float64", shape=shape)
    if backend == "compiled once":  # a one-off graph: the path's densities as one op
        with one_off_graph():
            log_prior, log_lik = mp.path.build_log_densities(x)
        assert any(type(node.op).__name__ == "_DensitiesOp"
                   for node in apply_ancestors([log_prior, log_lik]))
    else:
        log_prior, log_lik = mp.path.build_log_densities(x)
    grad = pt.grad((log_prior + log_lik).sum(), x)
    if backend in ("python", "compiled once"):
        fn = compile_one_off([x], [log_prior, log_lik, grad])
    else:
        fn = compile_function([x], [log_prior, log_lik, grad], backend)
    return [np.asarray(v) for v in fn(points)]


def _assert_same(ours, ref, what, at_least=False):
    """``ours`` equals PyMC's ``ref`` to :data:`RTOL` where ``ref`` is finite, and is
    non-finite exactly where ``ref`` is; with ``at_least`` (gradients) ``ours`` may be
    finite where ``ref`` is not (PyMC's gradient is NaN in a few far tails where the
    stabilized graph's is not: Beta's log-odds at -300)."""
    ours, ref = np.asarray(ours, dtype=float), np.asarray(ref, dtype=float)
    finite, ref_finite = np.isfinite(ours), np.isfinite(ref)
    assert np.all(finite >= ref_finite) and (at_least or np.all(finite == ref_finite)), (
        f"{what}: finite at {finite.mean():.0%} of the points, PyMC's at "
        f"{ref_finite.mean():.0%}")
    if at_least:
        ours, ref = np.where(ref_finite, ours, ref), ref
    both = np.isfinite(ref)
    np.testing.assert_array_equal(ours[~both], ref[~both], err_msg=what)
    scale = np.abs(ref[both])
    if ref.ndim == 2:  # gradients: relative to the largest component at that point
        scale = np.broadcast_to(np.max(np.abs(np.where(np.isfinite(ref), ref, 0)), axis=1,
                                       keepdims=True), ref.shape)[both]
    err = np.abs(ours[both] - ref[both])
    assert np.all(err <= RTOL * np.maximum(scale, 1e-300)), (
        f"{what}: largest relative difference {np.max(err / np.maximum(scale, 1e-300)):.3g}")


def _check(name, backend, build=None):
    model = (build or MODELS[name])()
    mp = model_path(model)
    points = _points(mp, seed=sum(map(ord, name)))
    ref_prior, ref_like, ref_grad = _reference(model, mp, points)
    prior, like, grad = _ours(mp, points, backend)
    _assert_same(prior, ref_prior, f"{name} log prior ({backend})")
    _assert_same(like, ref_like, f"{name} log-likelihood ({backend})")
    ok = np.isfinite(ref_prior + ref_like)
    _assert_same(grad[ok], ref_grad[ok], f"{name} gradient ({backend})", at_least=True)
    return ref_like


COMPILED_ONCE_FAST = {"logistic", "heavy_tails_and_potential", "underflowing_scale"}
"""The models whose "compiled once" check is in the fast subset (1-2 s each); the others'
(3-6 s each) run in the full suite."""


@pytest.mark.parametrize("name,how", [
    pytest.param(name, how, id=f"{name}-{how}",
                 marks=() if how == "python" or name in COMPILED_ONCE_FAST else pytest.mark.slow)
    for name in sorted(MODELS) for how in ("python", "compiled once")])
def test_one_off_functions_give_pymcs_log_density(name, how):
    """Python mode (the package's one-off functions: initial points, checks, the pilot's
    guards) against ``model.compile_logp()`` at wide random points; "compiled once": the
    op that answers in the one-off graphs (the loops' inits, the Laplace fit's objective),
    its pullback included."""
    _check(name, how)


def test_a_failed_parameter_check_is_minus_inf_as_in_pymc():
    """Where ``exp(a)`` underflows (a < -745), PyMC's log-likelihood is ``-inf`` (its check,
    rewritten to a switch); the package's is too, at such points and at the model's own
    build (which evaluates the terms at 200 prior draws, a quarter of them there), rather
    than an error from inside PyTensor."""
    model = _underflowing_scale()
    mp = model_path(model)  # raised ParameterValueError: sigma > 0
    rng = np.random.default_rng(3)
    points = np.column_stack([rng.uniform(-1000.0, 50.0, 64), rng.standard_normal(64)])
    ref_prior, ref_like, _ = _reference(model, mp, points)
    prior, like, _ = _ours(mp, points, "python")
    assert np.isneginf(ref_like).any() and np.isfinite(ref_like).any()
    _assert_same(like, ref_like, "underflowing scale log-likelihood")
    _assert_same(prior, ref_prior, "underflowing scale log prior")


def test_logistic_likelihood_is_finite_where_pymcs_is():
    """The dogs model's failure, reduced: under a N(0, 100) prior most points make some
    logit below -745; PyMC's likelihood is finite there, so the package's must be."""
    ref_like = _check("logistic", "python")
    assert np.isfinite(ref_like).all()


@pytest.mark.parametrize("backend", ["jax", pytest.param("numba", marks=pytest.mark.slow),
                                     pytest.param("c", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", ["logistic", "positive", "heavy_tails_and_potential",
                                  "stacked_entries", "shared_under_a_vector",
                                  "logit_of_a_bounded_prior", "simplex",
                                  "unseen_individuals", "survey"])
def test_compiled_functions_give_pymcs_log_density(name, backend):
    """The loop's backends compile the same graphs with their own rewrites."""
    if backend == "jax":
        pytest.importorskip("jax")
    with pytensor.config.change_flags(floatX="float64"):
        _check(name, backend)



def _label_under_a_shared_term():
    """:func:`_shared_under_a_vector` with a discrete label in the rate: the discrete paths
    (the label summed out, or annealed on the path) built their graphs from the model's
    terms without PyMC's rewrites, so ``log(1 - sigmoid(a))`` was ``-inf`` from ``a > 37``
    (at 8 % of these points with the label summed, 14 % with it annealed; PyMC's
    nowhere)."""
    with pm.Model() as model:
        a = pm.Normal("a", 0, 100)
        b = pm.Normal("b", 0, 3)
        z = pm.Bernoulli("z", 0.3)
        pm.Poisson("y", pm.math.exp(b + z) * (1 - pm.math.sigmoid(a)), observed=[0, 2, 1])
    return model


def _label_indexes_a_stack():
    """A Potential that indexes a stack of probabilities by the discrete label:
    ``log(stack([sigmoid(a), 1 - sigmoid(a)])[z])``. PyMC's graph (one label at a time)
    indexes through the stack, so ``stabilize`` sees ``log(1 - sigmoid(a))``; the summed
    label is a vector of labels, which no rewrite indexes through, so the gradient in
    ``a`` was NaN from ``a > 37`` (``0 * NaN``: the unchosen entry's ``0 / 0``)."""
    with pm.Model() as model:
        a = pm.Normal("a", 0, 100)
        b = pm.Normal("b", 0, 3)
        z = pm.Bernoulli("z", 0.3)
        probabilities = pt.stack([pm.math.sigmoid(a), 1 - pm.math.sigmoid(a)])
        pm.Potential("pick", pt.log(probabilities[z]))
        pm.Poisson("y", pm.math.exp(b + z), observed=[0, 2, 1])
    return model


def _discrete_reference(model, mp, points, route):
    """PyMC's numbers on a discrete path, one point at a time: with the label summed out,
    the log prior of ``a, b`` and the log of the sum over the label of its pmf times the
    likelihood (the gradient the posterior-weighted mean of the labels' gradients); with
    it annealed, the log prior of all three and the likelihood at the point's label."""
    continuous = [model["a"], model["b"]]
    total, dlogp = model.compile_logp(), model.compile_dlogp(vars=continuous)
    prior = model.compile_logp(vars=continuous + ([model["z"]] if route == "anneal" else []))
    like = model.compile_logp(vars=[*model.observed_RVs, *model.potentials])
    rows = []
    for x in points:
        point = {name: x[s].reshape(shape) for name, s, shape in mp.value_slices}
        if route == "anneal":
            point["z"] = point["z"].astype(int)
            rows.append((prior(point), like(point), np.asarray(dlogp(point))))
            continue
        by_label = [{**point, "z": np.array(k)} for k in (0, 1)]
        logs = np.array([total(p) for p in by_label])
        weights = np.exp(logs - special.logsumexp(logs))
        grad = sum(w * np.asarray(dlogp(p)) for w, p in zip(weights, by_label) if w > 0)
        rows.append((prior(point | {"z": np.array(0)}),
                     special.logsumexp(logs) - prior(point | {"z": np.array(0)}), grad))
    return (np.array([r[0] for r in rows]), np.array([r[1] for r in rows]),
            np.stack([r[2] for r in rows]))


@pytest.mark.parametrize("backend", ["python", "jax"])
@pytest.mark.parametrize("route", ["sum", "anneal"])
@pytest.mark.parametrize("build", [_label_under_a_shared_term, _label_indexes_a_stack],
                         ids=["shared_term", "indexed_stack"])
def test_discrete_paths_give_pymcs_log_density(route, backend, build):
    """The paths of a model with a discrete variable, summed out or annealed, go through
    PyMC's rewrites as the continuous path does (``adapter._stabilized``)."""
    if backend == "jax":
        pytest.importorskip("jax")
    model = build()
    mp = model_path(model, discrete=route)
    points = _points(mp, seed=41)
    if route == "anneal":  # the label's coordinate takes its values, 0 and 1
        column = [s for name, s, _ in mp.value_slices if name == "z"][0]
        points[:, column] = np.random.default_rng(42).integers(0, 2, (len(points), 1))
    ref_prior, ref_like, ref_grad = _discrete_reference(model, mp, points, route)
    if route == "sum" or build is _label_under_a_shared_term:  # PyMC's value finite
        assert np.isfinite(ref_prior + ref_like).all()
    prior, like, grad = _ours(mp, points, backend)
    _assert_same(prior, ref_prior, f"{route} log prior ({backend})")
    _assert_same(like, ref_like, f"{route} log-likelihood ({backend})")
    continuous = np.r_[tuple(np.arange(mp.path.num_dims)[s] for name, s, _ in mp.value_slices
                             if name != "z")]
    _assert_same(grad[:, continuous], ref_grad, f"{route} gradient ({backend})", at_least=True)
