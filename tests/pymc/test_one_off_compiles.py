"""The package's one-off functions never compile with PyTensor's default backend.

PyMC's own helpers (``model.initial_point()``, ``pm.draw``, ``.eval()``) compile with the
default backend, whose C thunks cost 0.5-2 s of compiling on a cold cache for a graph of a
few nodes: at the first call in a new process, that is a user's wait for nothing. The
package's one-off functions run in Python mode (:func:`pymc_anneal.backends.python_mode`),
and only the annealing loop compiles with the chosen backend.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.maker import FunctionMaker

import pymc_anneal as pa
from pymc_anneal.pymc.adapter import initial_point
from tests.analytic import normal_mean
from tests.bridge_cases import CASES, exact_idata


def _models():
    coords = {"group": ["a", "b", "c"]}
    with pm.Model(coords=coords) as transforms:
        sigma = pm.HalfNormal("sigma", 2.0)
        p = pm.Uniform("p", -1.0, 3.0, initval=2.5)
        w = pm.Dirichlet("w", a=np.ones(4))
        cut = pm.Normal("cut", mu=[-1.0, 0.0, 1.5], sigma=2.0,
                        transform=pm.distributions.transforms.ordered)
        theta = pm.LogNormal("theta", mu=0.3, sigma=sigma, dims="group")
        k = pm.Poisson("k", mu=3.5)
        pm.Normal("y", mu=theta.sum() + p + w[0] + cut[0] + k, sigma=1.0, observed=1.2)
    with pm.Model() as data_shaped:
        x = pm.Data("x", np.arange(5.0))
        beta = pm.Normal("beta", 0.0, 1.0, shape=x.shape)
        pm.Normal("y", mu=(beta * x).sum(), sigma=1.0, observed=0.0)
    return {"transforms": transforms, "data_shaped": data_shaped}


@pytest.mark.parametrize("name", ["transforms", "data_shaped"])
def test_initial_point_is_pymcs(name):
    """Names, shapes, dtypes and values of PyMC's ``model.initial_point()``, transforms,
    an ``initval``, a discrete variable and a shape read from data included."""
    model = _models()[name]
    ours, pymcs = initial_point(model), model.initial_point()
    assert list(ours) == list(pymcs)
    for key, value in pymcs.items():
        assert np.asarray(ours[key]).dtype == np.asarray(value).dtype, key
        np.testing.assert_array_equal(ours[key], value, err_msg=key)


@pytest.fixture
def linkers(monkeypatch):
    """The linker of every function compiled while the test runs."""
    seen: list[str] = []
    original = FunctionMaker.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        seen.append(type(self.linker).__name__)

    monkeypatch.setattr(FunctionMaker, "__init__", init)
    return seen


def test_a_call_compiles_only_the_loop_with_a_backend(linkers, monkeypatch):
    """``sample_ais`` with the Laplace base (the model's initial point starts its census),
    ``bridge_sampling`` and ``bdmc``: every function but the loops' (JAX's) is Python
    mode's (PerformLinker). (The annealed route: importance sampling is switched off.)"""
    from pymc_anneal.pymc import bases

    monkeypatch.setattr(bases, "AUTO_IMPORTANCE", False)
    target = normal_mean(n=50)
    result = pa.sample_ais(model=target.build(), base="laplace", random_seed=0,
                           progressbar=False)
    assert result.attrs["base"] == "laplace" and result.attrs["backend"] == "jax"
    pa.bridge_sampling(exact_idata("beta", lp=True), CASES["beta"].build(), random_seed=1)
    with pm.Model() as small:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu=mu, sigma=1.0, observed=np.zeros(3))
    pa.bdmc(small, num_steps=2, num_mixing_steps=0, num_datasets=2, draws=10, chains=2,
            progressbar=False, random_seed=0)
    assert set(linkers) <= {"PerformLinker", "JAXLinker"}, sorted(set(linkers))
    assert "JAXLinker" in linkers and "PerformLinker" in linkers


def test_importance_sampling_compiles_no_loop(linkers):
    """Where importance sampling from the Laplace fit passes its check, the call compiles
    Python mode's functions only: no loop, on any backend."""
    from pymc_anneal.driver.importance import KERNEL

    target = normal_mean(n=50)
    result = pa.sample_ais(model=target.build(), base="laplace", random_seed=0,
                           progressbar=False)
    assert result.attrs["kernel"] == KERNEL and result.attrs["backend"] == "python"
    assert set(linkers) == {"PerformLinker"}, sorted(set(linkers))


def test_the_check_sees_a_default_backend_compile(linkers):
    """The check of the test above fails on PyMC's own initial point (its compile is the
    default backend's)."""
    with pm.Model() as model:
        pm.Normal("mu", pt.constant(0.0), 1.0)
    model.initial_point()
    assert set(linkers) - {"PerformLinker", "JAXLinker"}


def _opaque(model) -> bool:
    """Whether the model path answers a one-off graph with its compiled op."""
    from pytensor.graph.traversal import apply_ancestors

    from pymc_anneal.paths import one_off_graph
    from pymc_anneal.pymc.adapter import model_path

    x = pt.matrix("x", dtype="float64")
    with one_off_graph():
        graphs = model_path(model).path.build_log_densities(x)
    return any(type(node.op).__name__ == "_DensitiesOp" for node in apply_ancestors(graphs))


def test_the_compiled_op_only_where_it_serves():
    """A plain model's path answers one-off graphs with the op (and loops' graphs with its
    symbolic densities); a model with a scan or without a gradient gets its symbolic
    densities there too (a scan compiles to C for the fit, to Python mode for an init; a
    missing gradient is named where one is needed)."""
    from tests.pymc.test_backend_fallback import ar1_model

    plain = normal_mean(n=5).build()
    assert _opaque(plain)
    assert not _opaque(ar1_model())

    class NoGradient(pt.Op):
        def make_node(self, x):
            x = pt.as_tensor(x)
            return pytensor.graph.basic.Apply(self, [x], [x.type()])

        def perform(self, node, inputs, outputs):
            outputs[0][0] = np.asarray(-0.5 * inputs[0] ** 2)

    with pm.Model() as no_gradient:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Potential("like", NoGradient()(mu))
    assert not _opaque(no_gradient)


def test_the_compiled_op_reads_set_data():
    """The op is compiled once per model path and must follow ``pm.set_data``: after new
    values (same shape) its log-likelihood and gradient are PyMC's for the new data, at
    random points, not the old data's."""
    from pymc_anneal.backends import compile_one_off
    from pymc_anneal.paths import one_off_graph
    from pymc_anneal.pymc.adapter import model_path

    rng = np.random.default_rng(7)
    with pm.Model() as model:
        y = pm.Data("y", rng.normal(1.0, 2.0, size=6))
        mu = pm.Normal("mu", 0.0, 3.0)
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Normal("obs", mu, sigma, observed=y)
    x = pt.matrix("x", dtype="float64")
    with one_off_graph():
        lp, ll = model_path(model).path.build_log_densities(x)
    assert any(type(node.op).__name__ == "_DensitiesOp"
               for node in pytensor.graph.traversal.apply_ancestors([lp, ll]))
    fn = compile_one_off([x], [ll, pt.grad((lp + ll).sum(), x)])
    points = rng.normal(0.0, 1.5, size=(20, 2))
    old_ll, _ = fn(points)  # compiled and run on the first data
    pm.set_data({"y": rng.normal(-3.0, 0.5, size=6)}, model=model)
    like = model.compile_logp(vars=model.observed_RVs)
    dlogp = model.compile_dlogp(jacobian=True)
    ours_ll, ours_grad = fn(points)
    assert np.all(np.abs(ours_ll - old_ll) > 1e-6)  # the new data change every value
    for p, o_ll, o_grad in zip(points, ours_ll, ours_grad):
        point = {"mu": p[0], "sigma_log__": p[1]}
        np.testing.assert_allclose(o_ll, like(point), rtol=1e-10)
        np.testing.assert_allclose(o_grad, dlogp(point), rtol=1e-10, atol=1e-12)
