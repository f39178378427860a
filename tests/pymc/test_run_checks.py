"""Inputs that only a run can expose (issue 23, "silent acceptances"): a log-likelihood that
is NaN where the prior puts mass, and a chain whose particles all have zero weight.

The checks (:func:`pymc_anneal.pymc.sampling.check_run_weights`) are tested on synthetic runs
first (no compile: deterministic and fast), then once each through ``sample_ais`` on the
issue's reproducers. Bad inputs refused before any run are catalogued in
``tests/test_bad_inputs.py``.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_anneal as pa
from pymc_anneal.driver import AnnealingRun
from pymc_anneal.energy import FunctionEnergy
from pymc_anneal.pymc.adapter import model_path
from pymc_anneal.pymc.sampling import check_run_weights, nan_log_density

SEED = 20261125


@pytest.fixture(scope="module")
def sqrt_model():
    """The issue's reproducer: the likelihood's mean sqrt(th) is NaN for th < 0, half the
    prior."""
    with pm.Model() as model:
        th = pm.Normal("th", 0.0, 1.0)
        pm.Normal("y", pt.sqrt(th), 1.0, observed=[0.3, 0.5])
    return model


@pytest.fixture(scope="module")
def narrow_uniform():
    """The issue's reproducer: a likelihood that is zero (-inf, on purpose) on all but 0.8%
    of the prior."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Uniform("y", mu - 0.01, mu + 0.01, observed=[0.3])
    return model


def synthetic_run(positions, log_weights) -> AnnealingRun:
    log_weights = np.asarray(log_weights, dtype=np.float64)
    chains, draws = log_weights.shape
    positions = np.asarray(positions, dtype=np.float64).reshape(chains, draws, -1)
    return AnnealingRun(positions=positions, log_weights=log_weights, betas=np.array([0.0, 1.0]), step_stats={},
                        parameters={}, log_base_normalizer=0.0)


def caught(call) -> list[str]:
    """The AnnealingWarnings' messages of ``call()`` (a synthetic run of a few particles
    also warns about its low ESS)."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        call()
    assert all(issubclass(w.category, pa.AnnealingWarning) for w in record), record
    return [str(w.message) for w in record]


# ------------------------------------------------------------------------- synthetic runs


def test_nan_log_density_finds_the_particles_at_nan_points(sqrt_model):
    """Only zero-weight particles are evaluated; -inf (zero likelihood on purpose) is not NaN."""
    path = model_path(sqrt_model).path
    th = np.array([[-1.0, 0.5, -0.2], [2.0, -3.0, 0.1]])
    log_w = np.array([[-np.inf, 0.0, -np.inf], [-np.inf, 1.0, 0.0]])
    nan = nan_log_density(path, th[..., None], log_w)
    # particle (1, 1) sits at a NaN point but has a weight: not a zero-weight particle
    np.testing.assert_array_equal(nan, [[True, False, True], [False, False, False]])
    assert not nan_log_density(path, th[..., None], np.zeros((2, 3))).any()


def test_nan_at_some_particles_warns_with_their_fraction(sqrt_model):
    path = model_path(sqrt_model).path
    th = np.array([[-1.0, 0.5, -0.2, 0.3], [0.2, 0.4, 0.1, 0.9]])
    log_w = np.where(th < 0, -np.inf, 0.0)
    messages = caught(lambda: check_run_weights(path, synthetic_run(th, log_w)))
    assert any(re.search(r"the log-likelihood is NaN \(not -inf\) at 2 of 8 particles \(25%\), "
                         r"where the base \(for a PyMC model, the prior\) drew them.*"
                         r"restricted to where it is defined", m) for m in messages), messages


def test_zero_likelihood_on_purpose_does_not_warn(narrow_uniform):
    path = model_path(narrow_uniform).path
    mu = np.array([[0.3, 2.0, -1.0, 0.305], [0.295, 5.0, 0.3, 0.0]])
    log_w = np.where(np.abs(mu - 0.3) < 0.01, np.log(50.0), -np.inf)
    messages = caught(lambda: check_run_weights(path, synthetic_run(mu, log_w)))
    assert not [m for m in messages if "NaN" in m], messages


def test_a_chain_with_only_zero_weights_is_an_error(narrow_uniform):
    """The issue: per-chain log Z [-inf, 0.0], SE [nan, 1.0], and a pooled estimate resting on
    one particle, returned as a result."""
    path = model_path(narrow_uniform).path
    mu = np.array([[2.0, -1.0, 1.5], [0.3, 5.0, -2.0]])
    log_w = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, -np.inf]])
    with pytest.raises(pa.AnnealingError,
                       match=r"every particle of chain \[0\] \(of 2 chains of 3 particles\) has "
                             r"zero weight: the log-likelihood is -inf or NaN wherever they "
                             r"went, so its log evidence is -inf with no standard error, and the "
                             r"pooled estimate would rest on 1 particle with non-zero weight in "
                             r"the other chains\. Increase draws"):
        check_run_weights(path, synthetic_run(mu, log_w))


def test_every_weight_zero_at_nan_points_says_so(sqrt_model):
    path = model_path(sqrt_model).path
    th = -np.ones((2, 3))
    with pytest.raises(pa.AnnealingError,
                       match=r"every particle has zero weight: .*the log-likelihood is NaN "
                             r"\(not -inf\) at 6 of 6 particles \(100%\)"):
        check_run_weights(path, synthetic_run(th, np.full((2, 3), -np.inf)))


def test_an_energy_that_is_nan_somewhere_warns():
    """ais's check: log f of a FunctionEnergy that takes the log of a coordinate."""
    model = FunctionEnergy(lambda x: pt.log(x[:, 0]) - 0.5 * (x**2).sum(axis=1), num_dims=2)
    path, _ = model.annealing_path()
    x = np.array([[[1.0, 0.0], [-1.0, 0.0], [0.5, 1.0], [2.0, 0.0]]])
    log_w = np.array([[0.0, -np.inf, 0.0, 0.0]])
    messages = caught(lambda: check_run_weights(path, synthetic_run(x, log_w), subject="log f"))
    assert any(m.startswith("log f is NaN (not -inf) at 1 of 4 particles (25%)")
               for m in messages), messages


# ----------------------------------------------------------------------- through sample_ais


def test_sample_ais_warns_about_a_nan_likelihood(sqrt_model):
    """The issue's reproducer returned -2.781 +/- 0.032 without a warning: the evidence of
    the model truncated to th > 0. Now the warning counts the particles at NaN points, which
    are exactly those whose prior draw is negative (a particle never leaves a NaN)."""
    with pytest.warns(pa.AnnealingWarning, match=r"the log-likelihood is NaN") as record:
        idata = pa.sample_ais(model=sqrt_model, draws=200, chains=2, num_steps=20,
                              random_seed=SEED, progressbar=False)
    warning = next(w for w in record if "NaN" in str(w.message))
    assert warning.filename == __file__  # the caller's line, not the package's
    count = int(re.search(r"at (\d+) of 400 particles", str(warning.message)).group(1))
    th = idata["particles"]["th"].values
    assert count == int(np.sum(th < 0))
    # Binomial(400, 1/2): within 4 standard deviations of half
    assert abs(count / 400 - 0.5) < 4 * np.sqrt(0.25 / 400)


@pytest.mark.slow  # the check itself: test_a_chain_with_only_zero_weights_is_an_error
def test_sample_ais_refuses_a_chain_with_only_zero_weights(narrow_uniform):
    """With 100 draws per chain, each chain has about 0.8 particle where the likelihood is
    non-zero; this seed leaves chain 0 without one (the base draws come from NumPy, so on
    every backend)."""
    with pytest.raises(pa.AnnealingError, match=r"every particle of chain \[0\] \(of 2 chains"):
        pa.sample_ais(model=narrow_uniform, draws=100, chains=2, num_steps=20, random_seed=1,
                      progressbar=False)
