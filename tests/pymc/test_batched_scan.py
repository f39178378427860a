"""A ``pytensor.scan`` in a model, vectorized over particles as one batched scan
(:mod:`pymc_anneal.pymc.batched_scan`).

PyTensor vectorizes a ``Scan`` as a ``Blockwise``: one scan per particle, a Python-speed
loop on Numba (posteriordb's garch11: 3.2 s for one evaluation of value and gradient at
5,000 particles, against 0.054 s batched) that JAX cannot trace. The batched scan changes
the layout only, so its numbers must be PyMC's: the log prior, log-likelihood and gradient
at wide random points, against ``model.compile_logp()`` / ``compile_dlogp()`` (the
helpers of ``test_log_density.py``), for every kind of scan input and output a model uses:
sequences (with taps), a recurrent state (one tap or several), a per-step output, an
initial state or a recursion that does not depend on the particle, a vector state (an
HMM's forward algorithm).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import apply_ancestors, graph_inputs
from pytensor.scan.op import Scan
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.special import xlog1py, xlogy

from pymc_anneal.pymc.adapter import model_path
from pymc_anneal.pymc.batched_scan import vectorized_scans
from tests.pymc.test_log_density import _assert_same, _ours, _points, _reference

Y = np.array([0.3, 1.1, 0.4, -0.2, 0.9, 1.4, 0.8, -0.5, 0.1, 0.6])


def _garch():
    """A GARCH(1,1) variance recursion (posteriordb's garch11, in small): a state, a
    sequence and particle-dependent constants, the initial state a constant."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        a0 = pm.HalfNormal("a0", 1.0)
        a1 = pm.Uniform("a1", 0.0, 1.0)
        b1 = pm.Uniform("b1", 0.0, 1.0)

        def step(y_prev, sigma_prev, a0, a1, b1, mu):
            return pt.sqrt(a0 + a1 * (y_prev - mu) ** 2 + b1 * sigma_prev**2)

        sigmas = pytensor.scan(step, sequences=[pt.as_tensor(Y[:-1])],
                               outputs_info=[pt.as_tensor(np.float64(0.5))],
                               non_sequences=[a0, a1, b1, mu], return_updates=False)
        sigma = pm.Deterministic("sigma", pt.concatenate([[np.float64(0.5)], sigmas]))
        pm.Normal("y", mu, sigma, observed=Y)
    return model


def _ar2():
    """A state with two taps (t-2, t-1), a sequence read at two taps, and the per-step
    log density as a second output of the scan (no state)."""
    with pm.Model() as model:
        phi = pm.Normal("phi", 0.0, 0.5, shape=2)
        s = pm.HalfNormal("s", 1.0)

        def step(y_prev, y_t, m2, m1, phi, s):
            mean = phi[0] * m1 + phi[1] * m2 + 0.5 * y_prev
            return mean, pm.logp(pm.Normal.dist(mean, s), y_t)

        (_, terms) = pytensor.scan(
            step, sequences=[dict(input=pt.as_tensor(Y), taps=[-1, 0])],
            outputs_info=[dict(initial=pt.as_tensor(np.array([0.1, -0.2])), taps=[-2, -1]),
                          None],
            non_sequences=[phi, s], return_updates=False)
        pm.Potential("log_likelihood", terms.sum())
    return model


def _map_and_fixed_state():
    """A scan with a state that no particle changes (a running sum of the data) beside a
    per-step output that depends on the particle: the state is carried for every
    particle alike."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)

        def step(y_t, total, mu):
            new = total + y_t
            return new, pm.logp(pm.Normal.dist(mu + 0.1 * new, 1.0), y_t)

        (_, terms) = pytensor.scan(step, sequences=[pt.as_tensor(Y)],
                                   outputs_info=[pt.as_tensor(np.float64(0.0)), None],
                                   non_sequences=[mu], return_updates=False)
        pm.Potential("log_likelihood", terms.sum())
    return model


def _hmm():
    """An HMM's forward algorithm (posteriordb's hmm_example, in small): a vector state of
    log probabilities, a transition matrix and emission means that depend on the particle."""
    with pm.Model() as model:
        rows = pm.Dirichlet("rows", a=np.ones(2), shape=(2, 2))
        means = pm.Normal("means", np.array([-1.0, 1.0]), 1.0, shape=2)
        log_rows = pt.log(rows)

        def step(y_t, log_alpha, log_rows, means):
            emit = pm.logp(pm.Normal.dist(means, 1.0), y_t)
            return pm.math.logsumexp(log_alpha[:, None] + log_rows, axis=0) + emit

        init = pt.log(np.full(2, 0.5)) + pm.logp(pm.Normal.dist(means, 1.0), Y[0])
        alphas = pytensor.scan(step, sequences=[pt.as_tensor(Y[1:])], outputs_info=[init],
                               non_sequences=[log_rows, means], return_updates=False)
        pm.Potential("log_likelihood", pm.math.logsumexp(alphas[-1]))
    return model


MODELS = {"garch": _garch, "ar2": _ar2, "map_and_fixed_state": _map_and_fixed_state,
          "hmm": _hmm}


def _batched_graph(model):
    mp = model_path(model)
    x = pt.matrix("x", dtype="float64")
    return mp.path.build_log_densities(x)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_one_scan_over_the_batch(name):
    """No ``Blockwise`` of a ``Scan`` is left: one scan runs every particle."""
    graph = _batched_graph(MODELS[name]())
    ops = [node.op for node in apply_ancestors(graph)]
    assert any(isinstance(op, Scan) for op in ops)
    assert not any(isinstance(op, Blockwise) and isinstance(op.core_op, Scan) for op in ops)


@pytest.mark.parametrize("name", [  # PyMC's reference compiles a scan's gradient: 10-40 s
    pytest.param(n, marks=pytest.mark.slow) for n in ["ar2", "garch", "hmm",
                                                       "map_and_fixed_state"]])
def test_batched_scans_give_pymcs_log_density(name):
    """Log prior, log-likelihood and gradient at 64 wide points (scales 1, 10, 100), to
    1e-10 relative, in Python mode (the one-off functions)."""
    _check_model(name, "python")


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["numba", "c"])
@pytest.mark.parametrize("name", ["garch", "hmm"])
def test_batched_scans_give_pymcs_log_density_compiled(name, backend):
    _check_model(name, backend)


def _check_model(name, backend):
    """As ``test_log_density._check``, on this file's models."""
    model = MODELS[name]()
    mp = model_path(model)
    points = _points(mp, seed=sum(map(ord, name)))
    ref_prior, ref_like, ref_grad = _reference(model, mp, points)
    with pytensor.config.change_flags(floatX="float64"):
        prior, like, grad = _ours(mp, points, backend)
    _assert_same(prior, ref_prior, f"{name} log prior ({backend})")
    _assert_same(like, ref_like, f"{name} log-likelihood ({backend})")
    ok = np.isfinite(ref_prior + ref_like)
    _assert_same(grad[ok], ref_grad[ok], f"{name} gradient ({backend})", at_least=True)


def test_elsewhere_pytensor_vectorizes_a_scan_as_before():
    """Outside the package's own graphs the registration changes nothing: PyTensor's
    ``vectorize_graph`` of a scan is its ``Blockwise``, and inside
    :func:`vectorized_scans` one batched scan with the same values."""
    a = pt.scalar("a", dtype="float64")
    states = pytensor.scan(lambda s, a: a * s + 1.0, outputs_info=[pt.as_tensor(np.float64(1.0))],
                           non_sequences=[a], n_steps=4, return_updates=False)
    batch = pt.vector("batch", dtype="float64")
    plain = vectorize_graph(states[-1], replace={a: batch})
    assert any(isinstance(n.op, Blockwise) and isinstance(n.op.core_op, Scan)
               for n in apply_ancestors([plain]))
    with vectorized_scans():
        batched = vectorize_graph(states[-1], replace={a: batch})
    assert not any(isinstance(n.op, Blockwise) for n in apply_ancestors([batched]))
    values = np.array([0.5, -1.0, 2.0])
    expected = [sum(v**k for k in range(5)) for v in values]  # 1 + a + ... + a^4
    for graph in (plain, batched):
        np.testing.assert_allclose(graph.eval({batch: values}), expected, rtol=1e-14)


def _stacked_terms(nmax=40, k=(7, 3, 9)):
    """posteriordb's Survey in small: an unknown population size summed out by a
    ``pt.stack`` of one term per size, a constant where the size is impossible."""
    with pm.Model() as model:
        theta = pm.Uniform("theta", lower=0, upper=1)
        parts = []
        for n in range(1, nmax + 1):
            if n < max(k):
                parts.append(-1e10)
                continue
            terms = [pt.gammaln(n + 1) - pt.gammaln(ki + 1) - pt.gammaln(n - ki + 1)
                     + ki * pt.log(theta) + (n - ki) * pt.log(1 - theta) for ki in k]
            parts.append(np.log(1.0 / nmax) + pt.add(*terms))
        pm.Potential("mixture", pm.math.logsumexp(pt.stack(parts)))
    return model


def test_a_stack_of_mixed_terms_is_batched_in_linear_size():
    """A ``pt.stack`` of scalars, some batched and some constant, costs the batched graph a
    number of nodes linear in its entries: PyTensor's own broadcasts each entry against
    every other (n(n - 1) nodes; on posteriordb's Survey, 500 entries, the model's path was
    never built). Its values are PyMC's, with the gradient compiled alongside as in the loop
    (a stack built of ExpandDims let PyTensor lift them through ``log(1 - theta)``, shared
    with the gradient, and ``stabilize`` no longer matched it: -1e10 where PyMC's is -763)."""
    model = _stacked_terms()
    one = len(list(apply_ancestors([model.datalogp])))
    batched = len(list(apply_ancestors(_batched_graph(model))))
    assert batched < 2 * one, (one, batched)
    mp = model_path(model)
    points = _points(mp, seed=5)
    _, ref_like, ref_grad = _reference(model, mp, points)
    with pytensor.config.change_flags(floatX="float64"):
        _, like, grad = _ours(mp, points, "python")
    _assert_same(like, ref_like, "a stack of mixed terms")
    _assert_same(grad, ref_grad, "its gradient", at_least=True)


def test_a_stack_of_weights_anneals_on_jax():
    """A mixture's weights ``pt.stack([theta, 1 - theta])``: the stack's entries are joined
    as rows of length 1, so the gradient of the join splits by constant sizes. Joined end
    to end (each entry raveled), the sizes were the number of particles, which JAX's
    ``Split`` cannot take from inside the loop: the loop went to Numba
    (posteriordb's low_dim_gauss_mix_collapse: 80 s against 30 s on JAX, warm), and
    ``backend="jax"`` was refused. The estimate is the quadrature's over ``theta``."""
    from scipy import integrate, stats

    import pymc_anneal as pa

    y = np.concatenate([np.random.default_rng(7).normal(-1.0, 1.0, 6),
                        np.random.default_rng(8).normal(2.0, 1.0, 14)])
    with pm.Model() as model:
        theta = pm.Beta("theta", 2.0, 2.0)
        pm.Mixture("y", w=pt.stack([theta, 1 - theta]),
                   comp_dists=[pm.Normal.dist(-1.0, 1.0), pm.Normal.dist(2.0, 1.0)], observed=y)

    def log_integrand(t):
        return stats.beta(2, 2).logpdf(t) + np.sum(np.logaddexp(
            np.log(t) + stats.norm(-1, 1).logpdf(y), np.log1p(-t) + stats.norm(2, 1).logpdf(y)))

    top = max(log_integrand(t) for t in np.linspace(0.01, 0.99, 99))
    exact = top + np.log(integrate.quad(lambda t: np.exp(log_integrand(t) - top), 0, 1,
                                        epsabs=0, epsrel=1e-12)[0])
    idata = pa.sample_ais(model=model, backend="jax", base="prior", num_steps=100, draws=500,
                          chains=2, random_seed=3, progressbar=False)
    assert idata.attrs["backend"] == "jax" and "backend_fallback" not in idata.attrs
    est = pa.log_evidence(idata)
    assert abs(est.log_evidence - exact) < 4 * est.standard_error, (est, exact)


def _mixture():
    """A normal mixture (PyMC's ``logsumexp`` over its components) beside the three other
    symbolic ops that PyTensor does not vectorize: ``logaddexp``, ``xlogy``, ``xlog1py``."""
    with pm.Model() as model:
        w = pm.Dirichlet("w", a=np.ones(3))
        mu = pm.Normal("mu", np.array([-2.0, 0.0, 2.0]), 1.0, shape=3)
        pm.NormalMixture("y", w=w, mu=mu, sigma=1.0, observed=Y)
        s = pm.HalfNormal("s", 1.0)
        pm.Potential("extra", pt.logaddexp(s, mu).sum() + xlogy(Y[:3], s).sum()
                     + xlog1py(w, s).sum())
    return model


@pytest.mark.parametrize("name", ["hmm", "mixture"])
def test_symbolic_ops_are_batched_whole(name):
    """``logsumexp``, ``logaddexp``, ``xlogy`` and ``xlog1py`` (PyTensor's symbolic ops,
    which it vectorizes as a ``Blockwise``: a Python loop over the particles outside JAX,
    inside every step of a scan: posteriordb's hmm_drive_0 spent 78 s of its Laplace fit
    there) are batched whole, the particles' axes added to theirs."""
    model = _mixture() if name == "mixture" else MODELS[name]()
    graph = _batched_graph(model)
    nodes = list(apply_ancestors(graph))
    for node in list(nodes):
        if isinstance(node.op, Scan):
            nodes += apply_ancestors(node.op.inner_outputs)
    names = {type(n.op).__name__ for n in nodes}
    assert "LogSumExp" in names
    blockwise = {type(n.op.core_op).__name__ for n in nodes if isinstance(n.op, Blockwise)}
    assert not blockwise & {"LogSumExp", "LogAddExp", "XLogY", "XLog1PY"}, blockwise


def _core_cases():
    rng = np.random.default_rng(41)
    m, v, s = (pt.matrix("m", dtype="float64"), pt.vector("v", dtype="float64"),
               pt.scalar("s", dtype="float64"))
    values = {m: rng.normal(size=(3, 4)), v: rng.uniform(0.1, 2.0, size=4),
              s: np.float64(0.7)}
    return [
        ("logsumexp rows", pt.logsumexp(m, axis=0), values, [m]),
        ("logsumexp all", pt.logsumexp(m), values, [m]),
        ("logsumexp last, keepdims", pt.logsumexp(m, axis=-1, keepdims=True), values, [m]),
        # a batched input of fewer core axes than the output's: its batch axis must not
        # meet the matrix's first axis
        ("logaddexp", pt.logaddexp(m, v, s), values, [v]),
        ("logaddexp, two batched", pt.logaddexp(m, v), values, [m, v]),
        ("xlogy", xlogy(v, m ** 2), values, [v]),
        ("xlog1py", xlog1py(s, v), values, [s, v]),
    ]


@pytest.mark.parametrize("case", range(7))
def test_batched_symbolic_ops_give_each_particles_value(case):
    """Each row of the batched op is the op at that row's inputs (a batch of 5; the others
    fixed), and no ``Blockwise`` is built."""
    label, out, values, batched = _core_cases()[case]
    rng = np.random.default_rng(case)
    replace = {x: pt.tensor(f"{x.name}_batch", dtype="float64", shape=(None, *x.type.shape))
               for x in batched}
    draws = {x: values[x] + rng.normal(size=(5, *np.shape(values[x]))) ** 2 for x in batched}
    with vectorized_scans():
        vectorized = vectorize_graph(out, replace=replace)
    assert not any(isinstance(n.op, Blockwise) for n in apply_ancestors([vectorized])), label
    inputs = [x for x in graph_inputs([out]) if x in values]
    fixed = [x for x in inputs if x not in replace]
    got = pytensor.function([*replace.values(), *fixed], vectorized, mode="FAST_COMPILE")(
        *[draws[x] for x in replace], *[values[x] for x in fixed])
    core = pytensor.function(inputs, out, mode="FAST_COMPILE")
    for i in range(5):
        want = core(*[draws[x][i] if x in replace else values[x] for x in inputs])
        np.testing.assert_allclose(got[i], want, rtol=1e-14, err_msg=label)
