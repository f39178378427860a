"""Models that the default kernel or backend cannot run (issue 39, defects 2 and 6).

- A log density that JAX cannot trace with static shapes (a ``while`` scan in the
  likelihood; a shape computed inside the graph, as ``Mh_model``): ``backend="auto"`` runs it
  on Numba, found before anything runs, and says so in the result's attributes;
  ``backend="jax"`` is refused with the cause and the fix. A plain ``pytensor.scan`` (as
  posteriordb's ``garch11``) is batched over the particles and runs on JAX.
- A log density without a gradient (a Python function wrapped as an op, as the ODE solver of
  ``one_comp_mm_elim_abs``): ``kernel="auto"`` runs random-walk Metropolis and says so; a
  gradient kernel asked for by name is refused before anything is compiled.

Each model is tiny and has an exact evidence; the estimates must lie within 4 standard
errors of it. Seeds are fixed per test.
"""

from __future__ import annotations

import logging

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.scan.utils import until
from scipy import stats

import pymc_anneal as pa
from pymc_anneal.backends import default_backend
from pymc_anneal.exceptions import AnnealingError
from tests import analytic

needs_jax = pytest.mark.skipif(default_backend() != "jax",
                               reason="the fallback is from JAX, the default where installed")
# Numba runs an op without a Numba implementation (the wrapped function below) in Python,
# and says so
OBJECT_MODE = pytest.mark.filterwarnings("ignore:Numba will use object mode:UserWarning")
RUN = dict(draws=200, chains=2, num_steps=60, progressbar=False, num_pilot=128)
# the backend's tests run Metropolis: Numba's first compile of a loop with a scan and its
# gradient (HAIS) takes minutes on two cores, without one well under a minute
METROPOLIS = dict(RUN, kernel="metropolis")


def _within(idata, exact: float, sds: float = 4.0) -> None:
    est = pa.log_evidence(idata)
    assert abs(est.log_evidence - exact) < sds * est.standard_error + 0.02, (est, exact)


# --------------------------------------------------------------------- a scan in the likelihood

AR_Y = np.array([0.3, 1.1, 0.4, -0.2, 0.9, 1.4, 0.8])  # y_0 (given) and y_1..y_6
AR_PHI, AR_SIGMA, AR_M0, AR_TAU = 0.6, 0.7, 0.5, 1.5


def ar1_model(while_loop: bool = False) -> pm.Model:
    """AR(1) with a known coefficient and an unknown mean, its log-likelihood accumulated by
    a ``pytensor.scan`` (a recurrence, as a GARCH variance):
    ``y_t = mu + phi (y_{t-1} - mu) + e_t``, ``e_t ~ N(0, sigma)``, ``mu ~ N(m0, tau)``.
    ``while_loop``: the scan is a ``while`` loop (an ``until`` condition that never holds),
    which stays one scan per particle, and which JAX cannot convert."""
    with pm.Model() as model:
        mu = pm.Normal("mu", np.float64(AR_M0), np.float64(AR_TAU))

        def step(y_t, y_prev, total, mu):
            mean = mu + AR_PHI * (y_prev - mu)
            new = total + pm.logp(pm.Normal.dist(mean, np.float64(AR_SIGMA)), y_t)
            if while_loop:
                return new, until(pt.isnan(new))
            return new

        totals = pytensor.scan(step, sequences=[pt.as_tensor(AR_Y[1:]), pt.as_tensor(AR_Y[:-1])],
                               outputs_info=[pt.as_tensor(np.float64(0.0))],
                               non_sequences=[mu], return_updates=False)
        pm.Potential("log_likelihood", totals[-1])
    return model


def ar1_log_evidence() -> float:
    """Gaussian-linear: ``z_t = y_t - phi y_{t-1} = (1 - phi) mu + e_t``, so
    ``z ~ MVN((1 - phi) m0, sigma^2 I + tau^2 (1 - phi)^2 1 1^T)`` (the map y -> z, given
    y_0, has Jacobian 1)."""
    z = AR_Y[1:] - AR_PHI * AR_Y[:-1]
    n, a = z.size, 1.0 - AR_PHI
    cov = AR_SIGMA**2 * np.eye(n) + AR_TAU**2 * a**2 * np.ones((n, n))
    return analytic.exact_log_evidence_gaussian(z, a * AR_M0, cov)


@needs_jax
def test_scan_likelihood_runs_on_jax():
    """A scan runs every particle at once (:mod:`pymc_anneal.pymc.batched_scan`), which JAX
    traces, gradient included: the default kernel on the default backend."""
    idata = pa.sample_ais(model=ar1_model(), random_seed=3901, **RUN)
    assert idata.attrs["backend"] == "jax" and "backend_fallback" not in idata.attrs
    assert idata.attrs["kernel"] == "hais"
    _within(idata, ar1_log_evidence())


@pytest.mark.slow  # 18 s
@needs_jax
@OBJECT_MODE  # Numba runs a Blockwise of a while scan in object mode, and says so
def test_while_scan_likelihood_falls_back_from_jax(caplog):
    with caplog.at_level(logging.INFO, logger="pymc_anneal"):
        idata = pa.sample_ais(model=ar1_model(while_loop=True), random_seed=3901,
                              **METROPOLIS)
    assert idata.attrs["backend"] == "numba"
    assert idata.attrs["backend_fallback"].startswith("jax -> numba: the log density contains "
                                                      "a Scan")
    assert "kernel_fallback" not in idata.attrs and idata.attrs["kernel"] == "metropolis"
    assert any("JAX cannot compile" in r.getMessage() and r.levelno == logging.INFO
               for r in caplog.records)
    _within(idata, ar1_log_evidence())


@needs_jax
def test_while_scan_likelihood_refused_on_explicit_jax():
    with pytest.raises(AnnealingError, match=r'backend="jax" cannot compile .*Scan.*'
                                             r'backend="numba"'):
        pa.sample_ais(model=ar1_model(while_loop=True), backend="jax", random_seed=1,
                      **METROPOLIS)


# ------------------------------------------------------- a shape computed inside the graph

MASK_Y = np.array([0.8, -1.3, 0.2, 2.1, -0.4])
MASK = np.array([True, False, True, True, False])
MASK_S, MASK_M0, MASK_TAU = 0.9, 0.3, 1.2
MASK_C = np.float64(-1.7)  # log density of the mixture's component that ignores x


def masked_mixture_model(data: bool = True) -> pm.Model:
    """Mh's likelihood in small: terms picked by a boolean mask (a length known only when
    the graph runs where the mask is ``pm.Data``; with ``data=False`` a constant, which the
    rewrites fold into a constant length before the graph is batched, as in PyMC's), then
    ``full_like`` of them (an ``Alloc`` of that length) in a ``logsumexp``:
    ``p(y_i | x_i) = (N(y_i; x_i, s) + e^c) / 2`` for the masked i, ``x_i ~ N(m0, tau)``."""
    with pm.Model() as model:
        mask = pm.Data("mask", MASK) if data else MASK
        x = pm.Normal("x", np.float64(MASK_M0), np.float64(MASK_TAU), shape=MASK_Y.size)
        half = np.float64(np.log(0.5))
        terms = (half + pm.logp(pm.Normal.dist(x, np.float64(MASK_S)), MASK_Y))[mask]
        other = pt.full_like(terms, half + MASK_C)
        pm.Potential("log_likelihood",
                     pt.sum(pm.math.logsumexp(pt.stack([terms, other]), axis=0)))
    return model


def masked_mixture_log_evidence() -> float:
    y = MASK_Y[MASK]
    marginal = stats.norm.pdf(y, MASK_M0, np.hypot(MASK_S, MASK_TAU))
    return float(np.sum(np.log(0.5 * marginal + 0.5 * np.exp(MASK_C))))


@needs_jax
def test_shape_computed_in_graph_falls_back_from_jax():
    idata = pa.sample_ais(model=masked_mixture_model(), random_seed=3902, **METROPOLIS)
    assert idata.attrs["backend"] == "numba"
    fallback = idata.attrs["backend_fallback"]
    assert fallback.startswith("jax -> numba: the op ") and "computed inside the graph" in fallback
    _within(idata, masked_mixture_log_evidence())


@needs_jax
def test_a_length_known_from_constants_runs_on_jax():
    """Mh's case: its mask is a constant, so the length is too (PyMC's rewrites, which the
    package runs before batching, fold it): JAX compiles it, no fallback."""
    idata = pa.sample_ais(model=masked_mixture_model(data=False), random_seed=3902,
                          **METROPOLIS)
    assert idata.attrs["backend"] == "jax" and "backend_fallback" not in idata.attrs
    _within(idata, masked_mixture_log_evidence())


@needs_jax
def test_shape_computed_in_graph_refused_on_explicit_jax():
    with pytest.raises(AnnealingError, match=r'backend="jax" cannot compile .*computed inside '
                                             r'the graph.*backend="numba"'):
        pa.sample_ais(model=masked_mixture_model(), backend="jax", random_seed=1,
                      **METROPOLIS)


# ----------------------------------------------------------------- an op without a gradient

NORMAL = analytic.normal_mean(n=8, seed=3903)


def numpy_likelihood_model() -> pm.Model:
    """``normal_mean``'s model with its log-likelihood computed in NumPy by a wrapped Python
    function (``pytensor.wrap_py``, formerly ``as_op``: no gradient, no JAX implementation),
    added as a Potential."""
    p = NORMAL.params
    y, noise_sd = np.asarray(p["y"]), float(p["noise_sd"])

    @pytensor.wrap_py(itypes=[pt.dscalar], otypes=[pt.dscalar])
    def normal_log_likelihood(mu):
        return np.asarray(stats.norm.logpdf(y, mu, noise_sd).sum())

    with pm.Model() as model:
        mu = pm.Normal("mu", np.float64(p["prior_mean"]), np.float64(p["prior_sd"]))
        pm.Potential("log_likelihood", normal_log_likelihood(mu))
    return model


@OBJECT_MODE
def test_no_gradient_falls_back_to_metropolis(caplog):
    with caplog.at_level(logging.INFO, logger="pymc_anneal"):
        idata = pa.sample_ais(model=numpy_likelihood_model(), random_seed=3904, **RUN)
    assert idata.attrs["kernel"] == "metropolis"
    fallback = idata.attrs["kernel_fallback"]
    assert fallback.startswith("hais -> metropolis: the log density has no gradient")
    assert "normal_log_likelihood" in fallback  # the op, by its function's name
    assert any("needs gradients" in r.getMessage() and r.levelno == logging.INFO
               for r in caplog.records)
    if default_backend() == "jax":  # nor has the op a JAX implementation
        assert idata.attrs["backend"] == "numba"
        assert "has no JAX implementation" in idata.attrs["backend_fallback"]
    _within(idata, NORMAL.log_evidence)


@pytest.mark.parametrize("kernel", ["hais", "mala"])
def test_no_gradient_refused_for_gradient_kernel(kernel):
    with pytest.raises(AnnealingError, match=rf"the '{kernel}' kernel needs the gradient .*"
                                             r"normal_log_likelihood.*kernel=\"metropolis\""):
        pa.sample_ais(model=numpy_likelihood_model(), kernel=kernel, random_seed=1, **RUN)
