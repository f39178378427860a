r"""``num_steps="auto"`` (the default) for energy models: ``ais``, ``reverse_ais`` and
``sandwich`` against enumerated log Z and test log-likelihoods, and ``dlogz``.

The closed-form tests of the other files run at the defaults too (``test_poe.py``: products
of experts with analytic Z; ``test_mcrbm.py``, ``test_dbm.py``; ``test_generative.py``:
``batched_ais`` per point against the Gaussian marginal), so they check "auto" on HMC and
per-point paths. Tolerances: three reported standard errors (the larger of the delta-method
error and the chains' spread), plus, for RAISE, the bound on its low bias at the target
variance (``_raise_bias``).
"""

from __future__ import annotations

import numpy as np
import pytest

import pymc_anneal as pa
from pymc_anneal.driver.tuning import AUTO_RERUN_FACTOR
from pymc_anneal.energy import BernoulliRBM
from pymc_anneal.pymc.sampling import AUTO_VARIANCE


def _rbm(seed=0, n_visible=8, n_hidden=5, scale=1.0):
    rng = np.random.default_rng(seed)
    return BernoulliRBM(rng.normal(0, scale, (n_visible, n_hidden)),
                        rng.normal(0, 0.5, n_visible), rng.normal(0, 0.5, n_hidden))


def _check(est, exact):
    err = est.log_evidence - exact
    assert abs(err) < 3 * max(est.standard_error, est.chain_sd), (err, est)


def _raise_bias(draws: int) -> float:
    r"""How far below :math:`\log p` RAISE's :math:`\log \overline w` of ``draws`` weights
    sits in expectation, at most, for log-normal weights of the largest variance a run
    keeps (:math:`1.7 \times 0.7`): :math:`(e^{\sigma^2} - 1) / (2\,\mathrm{draws})`."""
    return float(np.expm1(AUTO_RERUN_FACTOR * AUTO_VARIANCE) / (2 * draws))


def test_rbm_log_z_at_the_default_num_steps():
    rbm = _rbm()
    idata = pa.ais(rbm, draws=200, chains=2, random_seed=1, progressbar=False)
    _check(pa.log_evidence(idata), rbm.exact_log_z())
    attrs = idata.attrs
    assert attrs["auto_variance"] == AUTO_VARIANCE
    assert attrs["thermodynamic_length"] > 0 and attrs["inefficiency"] >= 1
    assert idata["annealing_stats"]["beta"].shape[-1] == attrs["num_steps"]


@pytest.mark.slow
def test_dlogz_buys_a_smaller_error():
    rbm = _rbm(1, scale=1.5)
    exact = rbm.exact_log_z()
    kw = {"draws": 200, "chains": 2, "random_seed": 2, "progressbar": False}
    default, tight = pa.ais(rbm, **kw), pa.ais(rbm, dlogz=0.01, **kw)
    assert tight.attrs["num_steps"] > default.attrs["num_steps"]
    assert tight.attrs["auto_variance"] == pytest.approx(np.log1p(400 * 0.01**2))
    est_default, est_tight = pa.log_evidence(default), pa.log_evidence(tight)
    _check(est_default, exact)
    _check(est_tight, exact)
    assert est_tight.standard_error < est_default.standard_error
    # the target met: the realized error within the factor a run may miss it by
    assert est_tight.standard_error < 0.01 * np.sqrt(np.expm1(
        AUTO_RERUN_FACTOR * tight.attrs["auto_variance"]) / np.expm1(
        tight.attrs["auto_variance"]))


@pytest.mark.slow
def test_reverse_ais_and_sandwich_take_k_from_a_forward_run():
    rbm = _rbm(2)
    test = rbm.sample(20, rng=3, num_steps=1, burn_in=200)  # points like the model's own
    exact = float(np.mean(rbm.log_likelihood(test, rbm.exact_log_z())))
    raised = pa.reverse_ais(rbm, test, draws=50, random_seed=4, progressbar=False)
    stats = raised["sample_stats"]
    mean, se = stats["mean_log_likelihood"].item(), stats["mean_log_likelihood_se"].item()
    assert raised.attrs["num_steps"] >= 20
    assert exact - 3 * se - _raise_bias(50) < mean < exact + 3 * se, (mean, se, exact)

    result = pa.sandwich(rbm, test, draws=50, ais_draws=200, ais_chains=2, random_seed=5,
                         progressbar=False)
    stats = result["sample_stats"]
    assert stats["num_steps"].size == 1 and int(stats["num_steps"].values[0]) >= 20
    noise = 3 * np.hypot(stats["ais_se"].values[0], stats["raise_se"].values[0])
    assert abs(stats["ais"].values[0] - exact) < 3 * stats["ais_se"].values[0] + 1e-9
    assert stats["gap"].values[0] > -noise - _raise_bias(50)
    assert not stats["ais_warning"].values[0]


def test_a_target_beyond_the_cap_is_said_before_the_run(monkeypatch):
    """Issue 27: where the pilot's K is above the cap, the call says so before it runs (the
    first warning, from the caller's line), then what the run at the cap reached. The cap is
    lowered to 50 (the rule reads it at call time) so that dlogz = 1e-4 is beyond it."""
    from pymc_anneal.driver import tuning

    monkeypatch.setattr(tuning, "AUTO_MAX_STEPS", 50)
    with pytest.warns(pa.AnnealingWarning, match=r'num_steps="auto"') as caught:
        idata = pa.ais(_rbm(), draws=100, chains=2, dlogz=1e-4, random_seed=3,
                       progressbar=False)
    first = str(caught[0].message)
    assert first.startswith('num_steps="auto": the pilot puts the temperatures needed')
    assert "above the cap of 50 (AUTO_MAX_STEPS)" in first and caught[0].filename == __file__
    assert any("missed its target: at the cap of 50 " in str(w.message) for w in caught[1:])
    assert idata.attrs["num_steps"] == 50
