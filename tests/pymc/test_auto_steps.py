r"""``num_steps="auto"``: the pilot's thermodynamic length against its exact value on a
Gaussian path, the rule K = L^2 / sigma^2, closed-form evidences at the auto-sized K, and
bad input."""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
import pytest
from scipy import integrate

import pymc_anneal as pa
from pymc_anneal.driver import RunOptions, TuningOptions, run_annealing
from pymc_anneal.driver.tuning import (
    AUTO_MAX_RERUNS,
    AUTO_MAX_STEPS,
    AUTO_MIN_STEPS,
    AUTO_RERUN_FACTOR,
    auto_miss_message,
    auto_num_steps,
    auto_rerun_steps,
    thermodynamic_length,
)
from pymc_anneal.estimators import estimate_log_z
from pymc_anneal.kernels import Info, Kernel, StateField
from pymc_anneal.pymc.sampling import AUTO_VARIANCE
from pymc_anneal.schedules import make_schedule
from tests import analytic
from tests.gaussian_paths import DEFAULT as GAUSSIAN


def test_length_and_rule():
    betas = np.linspace(0.0, 1.0, 11)
    assert thermodynamic_length(betas, np.full(10, 4.0)) == pytest.approx(2.0)
    assert thermodynamic_length(betas, np.r_[np.full(5, 4.0), np.full(5, np.nan)]) == pytest.approx(1.0)
    assert auto_num_steps(10.0, 0.2) == 500
    assert auto_num_steps(0.1, 0.2) == AUTO_MIN_STEPS
    assert auto_num_steps(1e4, 0.2) == AUTO_MAX_STEPS
    assert auto_num_steps(float("inf"), 0.2) == AUTO_MAX_STEPS
    assert auto_num_steps(10.0, 0.2, inefficiency=3.0) == 1500
    assert auto_num_steps(10.0, 0.2, inefficiency=0.5) == 500  # never below perfect mixing
    assert auto_num_steps(10.0, 0.2, inefficiency=float("nan")) == 500  # unmeasured: 1


def test_repeat_rule_and_miss_message():
    """log(N/ESS) of the check weights against 1.7 x the target: K scaled by the miss,
    never past the cap nor after AUTO_MAX_RERUNS repeats; a run that stands off target
    gets a message naming the target and what was reached."""
    even = np.zeros(100)
    assert auto_rerun_steps(100, even, 0.7, 0) == (pytest.approx(0.0, abs=1e-12), None)
    two = np.r_[np.zeros(50), np.full(50, -np.inf)]  # ESS 50 of 100: log 2 = 0.69
    assert auto_rerun_steps(100, two, 0.2, 0) == pytest.approx((np.log(2), 347))
    assert auto_rerun_steps(100, two, 0.2, AUTO_MAX_RERUNS)[1] is None
    assert auto_rerun_steps(AUTO_MAX_STEPS, two, 0.2, 0)[1] is None
    assert auto_rerun_steps(19_000, two, 0.2, 0)[1] == AUTO_MAX_STEPS
    assert auto_miss_message(AUTO_MAX_STEPS, 0.7 * AUTO_RERUN_FACTOR, 0.7, 400, 200) is None
    message = auto_miss_message(AUTO_MAX_STEPS, 0.01, 1e-9, 400, 200)
    assert "cap of 20,000 temperatures" in message and "target 1e-09" in message
    # sqrt(expm1(v) / N) for the variance reached and the target
    assert "For 400 particles that is a standard error of about 0.005 against the 1.6e-06" \
        in message
    assert "after 2 repeats" in auto_miss_message(800, 2.0, 0.7, 400, 200)


def _exact_length(gaussian):
    r"""\int_0^1 sd_beta(l) d beta: l(x) = x^T A x + b^T x + c is quadratic, so under
    p_beta = N(mu, S) its variance is 2 tr(A S A S) + (2 A mu + b)^T S (2 A mu + b)."""
    target_precision = np.linalg.inv(gaussian.target_cov)
    a = 0.5 * (np.diag(gaussian.base_scale**-2.0) - target_precision)
    b = target_precision @ gaussian.target_mean

    def sd(beta):
        mu, s = gaussian.moments(beta)
        g = 2 * a @ mu + b
        return np.sqrt(2 * np.trace(a @ s @ a @ s) + g @ s @ g)

    return integrate.quad(sd, 0.0, 1.0)[0]


def _expected_steps(settings) -> int:
    """K by the rule from a run's measured length and inefficiency (when it did not rerun)."""
    assert settings["auto_reruns"] == 0
    return auto_num_steps(settings["thermodynamic_length"], settings["auto_variance"],
                          settings["inefficiency"])


def test_pilot_measures_the_thermodynamic_length():
    """The pilot's estimate (256 particles on 256 linear steps, each step's spread from 256
    draws: a few % of noise, averaged over the steps; the left Riemann sum adds a bias
    below 1%) is within 10% of the exact length, and K follows the rule."""
    run = run_annealing(GAUSSIAN.path, betas=make_schedule("linear", 256), draws=200, chains=2,
                        rng=np.random.default_rng(3),
                        options=RunOptions(progressbar=False,
                                           tuning=TuningOptions(auto_variance=AUTO_VARIANCE)))
    exact = _exact_length(GAUSSIAN)
    length = run.settings["thermodynamic_length"]
    assert length == pytest.approx(exact, rel=0.1)
    assert run.settings["num_steps"] == _expected_steps(run.settings) == run.betas.size - 1
    # the check chain that judged the run is not in the result
    assert run.log_weights.shape == (2, 200)
    assert run.positions.shape == (2, 200, GAUSSIAN.path.num_dims)
    assert {v.shape for v in run.step_stats.values()} == {(2, run.settings["num_steps"])}
    assert run.settings["auto_check_variance"] <= AUTO_RERUN_FACTOR * AUTO_VARIANCE


class _ExactState(NamedTuple):
    position: pt.TensorVariable


def _exact_draws_kernel(path):
    """A 'transition' that draws p_beta exactly (independent of the state): perfect mixing."""
    base_precision = np.diag(GAUSSIAN.base_scale**-2.0)
    target_precision = np.linalg.inv(GAUSSIAN.target_cov)
    target_shift = target_precision @ GAUSSIAN.target_mean

    def init(rng, position, params, path_params):
        return rng, _ExactState(position)

    def step(rng, state, beta, params, path_params):
        precision = (1.0 - beta) * base_precision + beta * target_precision
        cov = pt.linalg.inv(precision)
        mean = pt.dot(cov, beta * target_shift)
        chol = pt.linalg.cholesky(0.5 * (cov + cov.T))
        rng, z = pt.random.normal(size=state.position.shape, rng=rng, return_next_rng=True)
        ones = pt.ones(state.position.shape[0])
        return rng, _ExactState(mean + pt.dot(z, chol.T)), Info(ones, ones > 0, ones < 0)

    return Kernel(name="exact", state_type=_ExactState, state=(StateField("position"),),
                  parameters=(), init=init, step=step, target_acceptance=0.5,
                  structure=("exact",))


def test_inefficiency_is_one_for_exact_draws_and_grows_with_lag():
    """The pilot's inefficiency (realized variance of the band log weights over its value
    under perfect mixing) is about 1 for a kernel that draws p_beta exactly, and large for
    HAIS with a step size too small to keep up with the moving target."""
    options = TuningOptions(auto_variance=AUTO_VARIANCE)
    exact = run_annealing(GAUSSIAN.path, betas=make_schedule("linear", 256), draws=200, chains=2,
                          rng=np.random.default_rng(4),
                          options=RunOptions(kernel=_exact_draws_kernel, progressbar=False,
                                             tuning=options))
    # each band's log(N/ESS) comes from 256 particles: about 10% noise, pooled over 8 bands
    assert 1.0 <= exact.settings["inefficiency"] < 1.3, exact.settings["inefficiency"]
    slow = run_annealing(GAUSSIAN.path, betas=make_schedule("linear", 256), draws=200,
                         chains=2, rng=np.random.default_rng(4),
                         options=RunOptions(progressbar=False, tuning=TuningOptions(
                             auto_variance=AUTO_VARIANCE, fixed={"step_size": 0.02})))
    assert slow.settings["inefficiency"] > 5.0, slow.settings["inefficiency"]
    assert slow.settings["num_steps"] > 4 * exact.settings["num_steps"]


def test_a_run_that_misses_the_target_is_repeated(monkeypatch):
    """If the pilot under-rates the lag (here: told that the kernel mixes perfectly, with a
    step size fixed at a fifth of what the pilot tunes), the main run's weights miss the
    target variance and the run is repeated with more temperatures until its check chain
    meets it; the last run's estimate (its other chains) is within its error of the exact
    log Z = 0."""
    from pymc_anneal.driver import run as run_module

    real_tune = run_module.tune

    def optimistic_tune(*args, **kwargs):
        values, ratio_var, _, positions = real_tune(*args, **kwargs)
        return values, ratio_var, 1.0, positions

    monkeypatch.setattr(run_module, "tune", optimistic_tune)
    run = run_annealing(GAUSSIAN.path, betas=make_schedule("linear", 256), draws=500,
                        chains=2, rng=np.random.default_rng(5),
                        options=RunOptions(progressbar=False, tuning=TuningOptions(
                            auto_variance=AUTO_VARIANCE, fixed={"step_size": 0.15})))
    assert 1 <= run.settings["auto_reruns"] <= AUTO_MAX_RERUNS
    first_k = auto_num_steps(run.settings["thermodynamic_length"], AUTO_VARIANCE)
    assert run.settings["num_steps"] > AUTO_RERUN_FACTOR * first_k
    assert run.settings["auto_check_variance"] <= AUTO_RERUN_FACTOR * AUTO_VARIANCE
    est = estimate_log_z(run.log_weights.ravel())
    assert run.log_weights.shape == (2, 500)
    assert abs(est.log_z) < 3 * est.standard_error + 0.02


def test_an_unreachable_dlogz_warns(normal_mean, monkeypatch):
    """dlogz = 1e-9 asks for a target variance of 4e-15 (N = 200): K hits the cap and the
    run says that it missed, from the caller's line. (The cap is lowered from 20,000 to
    400 to keep the test fast; the rule reads it at call time.)"""
    from pymc_anneal.driver import tuning

    monkeypatch.setattr(tuning, "AUTO_MAX_STEPS", 400)
    with pytest.warns(pa.AnnealingWarning,
                      match=r'num_steps="auto"') as caught:
        idata = pa.sample_ais(model=normal_mean.build(), draws=100, chains=2, dlogz=1e-9,
                              random_seed=1, progressbar=False)
    # said first before the run, from the pilot's K, then after it, from the check chain
    assert [str(w.message)[:31] for w in caught] == ['num_steps="auto": the pilot put',
                                                     'num_steps="auto" missed its tar']
    assert re.search(r"at about [\d,]+ \(thermodynamic length .*above the cap of 400 ",
                     str(caught[0].message))
    assert str(caught[1].message).startswith('num_steps="auto" missed its target: at the cap '
                                             "of 400 ")
    assert caught[0].filename == caught[1].filename == __file__
    assert idata.attrs["num_steps"] == 400
    assert idata.attrs["auto_check_variance"] > AUTO_RERUN_FACTOR * idata.attrs["auto_variance"]


@pytest.fixture(scope="module")
def normal_mean():
    return analytic.normal_mean()


def test_auto_evidence_within_its_error_and_dlogz(normal_mean):
    """On the prior's path (from the default base this posterior takes importance sampling
    from the Laplace fit: ``tests/pymc/test_importance.py``)."""
    model = normal_mean.build()
    idata = pa.sample_ais(model=model, num_steps="auto", base="prior", random_seed=1,
                          progressbar=False)
    est = pa.log_evidence(idata)
    err = est.log_evidence - normal_mean.log_evidence
    assert abs(err) < 3 * max(est.standard_error, est.chain_sd) and abs(err) < 0.05
    assert idata.attrs["num_steps"] == _expected_steps(idata.attrs)
    assert idata.attrs["auto_variance"] == AUTO_VARIANCE
    # a tight dlogz lowers the target variance (log1p(N dlogz^2) with N = 400) and adds steps
    tight = pa.sample_ais(model=model, draws=200, chains=2, num_steps="auto", dlogz=0.01,
                          base="prior", random_seed=1, progressbar=False)
    assert tight.attrs["auto_variance"] == pytest.approx(np.log1p(400 * 0.01**2))
    assert tight.attrs["num_steps"] > idata.attrs["num_steps"]


def test_auto_is_the_default(normal_mean):
    """A call without ``num_steps`` sizes the run itself: the attributes show the measured
    length and the K the rule gives for it (on the prior's path: from the default base this
    posterior takes importance sampling, one step)."""
    idata = pa.sample_ais(model=normal_mean.build(), draws=200, chains=2, random_seed=3,
                          base="prior", progressbar=False)
    assert idata.attrs["num_steps"] == _expected_steps(idata.attrs)
    assert idata["annealing_stats"]["beta"].shape == (2, idata.attrs["num_steps"])


@pytest.mark.slow
def test_auto_evidence_on_a_10d_regression():
    target = analytic.linear_regression(num_features=10, n=50)
    idata = pa.sample_ais(model=target.build(), num_steps="auto", random_seed=2,
                          progressbar=False)
    est = pa.log_evidence(idata)
    err = est.log_evidence - target.log_evidence
    assert abs(err) < 3 * max(est.standard_error, est.chain_sd) and abs(err) < 0.05


def test_auto_bad_input(normal_mean):
    model = normal_mean.build()
    with pytest.raises(pa.AnnealingError, match='dlogz is the target error of num_steps="auto"'):
        pa.sample_ais(model=model, num_steps=100, dlogz=0.1, progressbar=False)
    with pytest.raises(pa.AnnealingError, match="give a schedule name"):
        pa.sample_ais(model=model, num_steps="auto", schedule=np.linspace(0, 1, 5),
                      progressbar=False)
    with pytest.raises(pa.AnnealingError, match="dlogz"):
        pa.sample_ais(model=model, num_steps="auto", dlogz=0.0, progressbar=False)
    with pytest.raises(pa.AnnealingError, match="num_steps"):
        pa.sample_ais(model=model, num_steps="many", progressbar=False)
    with pytest.raises(pa.AnnealingError, match="its extra check chain needs them too"):
        run_annealing(GAUSSIAN.path, betas=make_schedule("linear", 16), draws=10, chains=2,
                      rng=np.random.default_rng(0),
                      initial_positions=np.zeros((20, GAUSSIAN.path.num_dims)),
                      options=RunOptions(progressbar=False,
                                           tuning=TuningOptions(auto_variance=AUTO_VARIANCE)))

