"""``pymc_anneal.bridge_sampling`` and the draws it is given (issue 39).

The estimate is only as good as the draws: draws with divergent transitions, or chains whose
R-hat exceeds :data:`pymc_anneal.pymc.bridge.RHAT_LINE`, warn with what was seen and what to
do (on posteriordb's eight_schools_centered, 25 divergences and an R-hat of 1.02 gave an
estimate 0.21 nat low without a word). The fast tests build the draws by hand from exact
draws (``tests/bridge_cases.py``): a few transitions marked divergent, one chain shifted.
Draws of gradient-free samplers (Metropolis, Slice) of a model whose likelihood is an Op
without a gradient must work: bridge sampling needs only log densities. A real NUTS run of
the centered eight schools is ``slow``.
"""

from __future__ import annotations

import warnings

import arviz_base as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

import pymc_anneal as pa
from pymc_anneal.pymc import bridge
from tests import eight_schools
from tests.bridge_cases import CASES, exact_idata, log_joint, posterior

NORMAL = CASES["normal"]
NUMBA_OBJECT_MODE = "ignore:Numba will use object mode:UserWarning"
"""PyMC's Numba backend runs an Op with only a Python ``perform`` in object mode, and says
so; that is PyMC's sampler, not bridge sampling."""


def normal_draws(seed: int = 0, diverging=None, shift: float = 0.0):
    """4 x 1000 exact draws of the ``normal`` case with their ``lp``, chain 0 shifted by
    ``shift`` posterior standard deviations, and ``diverging`` (chain, draw) if given."""
    dist, _ = posterior("normal")
    mu = exact_idata("normal", seed=seed).posterior["mu"].values.copy()
    mu[0] += shift * dist.std()
    stats = {"lp": log_joint("normal", mu)}
    if diverging is not None:
        stats["diverging"] = diverging
    return az.from_dict({"posterior": {"mu": mu}, "sample_stats": stats})


def z_score(result, truth):
    est = pa.log_evidence(result)
    assert np.isfinite(est.log_evidence) and est.standard_error > 0
    return (est.log_evidence - truth) / est.standard_error


# ------------------------------------------------------------------------------ divergences


def test_divergent_draws_warn_with_their_count():
    diverging = np.zeros((4, 1000), dtype=bool)
    diverging[1, ::40] = True  # 25 of 4000, as NUTS's on eight_schools_centered
    with pytest.warns(pa.AnnealingWarning,
                      match=r"^25 of 4000 draws diverged \(sample_stats\.diverging\).*"
                            r"Reparametrize the model .*raise target_accept"):
        result = pa.bridge_sampling(normal_draws(diverging=diverging), NORMAL.build(),
                                    random_seed=1)
    assert result.attrs["num_divergences"] == 25
    assert result.attrs["warnings"] == "25 divergent draws of 4000"
    assert np.isfinite(result.attrs["log_marginal_likelihood"])
    table = pa.compare({"diverged": result, "other": pa.log_evidence(result)})
    assert table.loc["diverged", "warning_reason"] == "25 divergent draws of 4000"


def test_good_draws_raise_no_warning_and_record_zero_divergences():
    """Exact draws of one mode, no divergence: nothing to warn about (the suite turns any
    warning into an error), and the estimate covers the closed form."""
    result = pa.bridge_sampling(normal_draws(diverging=np.zeros((4, 1000), dtype=bool)),
                                NORMAL.build(), random_seed=1)
    assert result.attrs["num_divergences"] == 0 and result.attrs["warnings"] == ""
    assert result.attrs["rhat"] < bridge.RHAT_LINE
    assert abs(z_score(result, NORMAL.log_evidence)) < 4
    # draws without the statistic (exact draws, Metropolis) record none
    plain = pa.bridge_sampling(exact_idata("normal"), NORMAL.build(), random_seed=1)
    assert "num_divergences" not in plain.attrs


# ------------------------------------------------------------------------------------ R-hat


def test_chains_that_disagree_slightly_warn_naming_rhat_and_variable():
    """One chain shifted by half a posterior sd: an R-hat of 1.02 (issue 39's), below the
    old line of 1.05, above 1.01."""
    with pytest.warns(pa.AnnealingWarning,
                      match=r"^the chains did not mix \(largest R-hat 1\.02\d > 1\.01, of 'mu';"
                            r".*Run longer chains"):
        result = pa.bridge_sampling(normal_draws(shift=0.5), NORMAL.build(), random_seed=1)
    assert 1.01 < result.attrs["rhat"] < 1.05
    assert result.attrs["warnings"].startswith("chains did not mix (R-hat 1.02")
    assert "'mu'" in result.attrs["warnings"]


def test_rhat_names_the_worst_element_by_its_coordinate():
    """``a_i ~ N(0, 1)``, ``y_i ~ N(a_i, 1)``: the exact posterior is ``N(y_i / 2, 1/2)``;
    chain 0 of the school "C" element shifted. The R-hat is ArviZ's for that element."""
    import arviz_stats

    y = np.array([0.3, -1.2, 0.8])
    with pm.Model(coords={"school": ["A", "B", "C"]}) as model:
        a = pm.Normal("a", 0.0, 1.0, dims="school")
        pm.Normal("y", a, 1.0, observed=y, dims="school")
    sd = np.sqrt(0.5)
    draws = np.random.default_rng(3).normal(y / 2, sd, (4, 1000, 3))
    draws[0, :, 2] += 0.6 * sd
    idata = az.from_dict({"posterior": {"a": draws}}, dims={"a": ["school"]},
                         coords={"school": ["A", "B", "C"]})
    expected = float(arviz_stats.rhat(idata)["a"].sel(school="C"))
    assert expected > 1.01
    with pytest.warns(pa.AnnealingWarning, match=r"did not mix \(largest R-hat .*of 'a\[C\]'"):
        result = pa.bridge_sampling(idata, model, random_seed=2)
    assert result.attrs["rhat"] == pytest.approx(expected, rel=1e-12)


def test_one_chain_is_split_for_rhat():
    """ArviZ gives NaN for one chain; the halves of the chain are compared instead: a chain
    whose second half sits higher warns."""
    mu = exact_idata("normal", chains=1, draws=2000).posterior["mu"].values.copy()
    good = pa.bridge_sampling(az.from_dict({"posterior": {"mu": mu}}), NORMAL.build(),
                              random_seed=1)
    assert np.isfinite(good.attrs["rhat"]) and good.attrs["rhat"] < bridge.RHAT_LINE
    mu[0, 1000:] += 0.3 * posterior("normal")[0].std()
    with pytest.warns(pa.AnnealingWarning, match=r"did not mix \(largest R-hat .*of 'mu'"):
        pa.bridge_sampling(az.from_dict({"posterior": {"mu": mu}}), NORMAL.build(),
                           random_seed=1)


# ---------------------------------------------------------- gradient-free samplers and Ops


class NormalLogLikelihood(Op):
    """``sum_i log N(y_i; mu, noise_sd)`` in NumPy, with no gradient: an Op of the kind that
    wraps a simulator or external code. ``gradient_requests`` counts calls of
    ``pullback`` (PyTensor's gradient)."""

    __props__ = ("noise_sd",)
    gradient_requests = 0

    def __init__(self, y, noise_sd: float):
        self.y = np.asarray(y, dtype=np.float64)
        self.noise_sd = float(noise_sd)

    def make_node(self, mu):
        mu = pt.as_tensor_variable(mu).astype("float64")
        return Apply(self, [mu], [pt.dscalar()])

    def perform(self, node, inputs, outputs):
        z = (self.y - inputs[0]) / self.noise_sd
        outputs[0][0] = np.asarray(-0.5 * np.sum(z**2)
                                   - self.y.size * np.log(self.noise_sd * np.sqrt(2 * np.pi)))

    def pullback(self, inputs, outputs, cotangents):
        type(self).gradient_requests += 1
        raise NotImplementedError("NormalLogLikelihood has no gradient")


def gradient_free_model(route: str) -> pm.Model:
    """The ``normal`` case (closed-form evidence) with its likelihood through
    :class:`NormalLogLikelihood`, as a ``pm.Potential`` or a ``pm.CustomDist``'s logp."""
    p = NORMAL.params
    log_likelihood = NormalLogLikelihood(p["y"], p["noise_sd"])
    with pm.Model() as model:
        mu = pm.Normal("mu", p["prior_mean"], p["prior_sd"])
        if route == "potential":
            pm.Potential("likelihood", log_likelihood(mu))
        else:
            pm.CustomDist("y", mu, logp=lambda value, mu: log_likelihood(mu),
                          observed=np.asarray(p["y"]))
    return model


@pytest.mark.filterwarnings(NUMBA_OBJECT_MODE)
@pytest.mark.parametrize(("route", "step"), [("potential", pm.Metropolis),
                                             ("custom_dist", pm.Slice)])
def test_gradient_free_sampler_and_op_give_the_closed_form_evidence(route, step):
    """Metropolis and Slice record neither ``diverging`` nor ``lp``; the model's log
    density has no gradient, and bridge sampling never asks for one."""
    model = gradient_free_model(route)
    requests = NormalLogLikelihood.gradient_requests
    with model:
        idata = pm.sample(draws=1000, tune=1000, chains=4, cores=1, step=step(),
                          random_seed=3, progressbar=False, compute_convergence_checks=False)
    assert not {"diverging", "lp"} & set(idata["sample_stats"].data_vars)
    result = pa.bridge_sampling(idata, model, random_seed=1)
    assert NormalLogLikelihood.gradient_requests == requests
    assert abs(z_score(result, NORMAL.log_evidence)) < 4
    assert result.attrs["warnings"] == "" and "num_divergences" not in result.attrs
    with pytest.raises(NotImplementedError, match="has no gradient"):
        pt.grad(model.logp(), model.value_vars[0])  # the gradient really is missing


# ------------------------------------------------------------------------- slow: real NUTS


@pytest.mark.slow
def test_nuts_on_the_centered_eight_schools_warns_of_its_divergences():
    """The funnel of the centered eight schools makes NUTS diverge; bridge sampling says so
    (and how many), whatever else it warns about."""
    model = eight_schools.build_model(centered=True)
    idata = pm.sample(draws=1000, tune=500, chains=4, cores=1, random_seed=39, model=model,
                      progressbar=False, compute_convergence_checks=False)
    count = int(idata["sample_stats"]["diverging"].values.sum())
    assert count > 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pa.AnnealingWarning)
        result = pa.bridge_sampling(idata, model, random_seed=5)
    messages = [str(w.message) for w in caught if w.category is pa.AnnealingWarning]
    assert any(m.startswith(f"{count} of 4000 draws diverged") for m in messages), messages
    assert result.attrs["num_divergences"] == count
    assert f"{count} divergent draws of 4000" in result.attrs["warnings"]


# -------------------------------------------------------------------- draws of another model


def _issue_model(shift: float = 0.0) -> pm.Model:
    """``mu ~ N(0, 1); y ~ N(mu, 1)`` at ``[0.3, -0.2, 0.5] + shift`` (issue 40, item 10)."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=np.array([0.3, -0.2, 0.5]) + shift)
    return model


def _exact_posterior_draws(shift: float, seed: int):
    """4 x 1000 exact posterior draws of ``_issue_model(shift)``'s mu, without ``lp``."""
    y = np.array([0.3, -0.2, 0.5]) + shift
    mean, sd = y.sum() / 4.0, 0.5  # prior precision 1, three unit-noise observations
    mu = np.random.default_rng(seed).normal(mean, sd, size=(4, 1000))
    return az.from_dict({"posterior": {"mu": mu}})


def test_draws_of_another_posterior_warn_that_they_may_come_from_another_model():
    """Issue 40, item 10: draws of the posterior on y + 3, lp dropped, given with the model
    on y: a finite, wrong number, and before only a warning that blamed mixing."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pa.AnnealingWarning)
        result = pa.bridge_sampling(_exact_posterior_draws(3.0, seed=1), _issue_model(),
                                    random_seed=1)
    messages = [str(w.message) for w in caught if w.category is pa.AnnealingWarning]
    assert messages and "may come from another model or data" in messages[0]  # said first
    assert result.attrs["warnings"].startswith("draws implausible for this model")


def test_draws_of_the_model_itself_are_plausible():
    """The same check on the model's own exact draws (several seeds): no warning, and the
    closed-form evidence (-3.59496) within the error bar."""
    for seed in range(3):
        result = pa.bridge_sampling(_exact_posterior_draws(0.0, seed), _issue_model(),
                                    random_seed=seed)
        assert abs(z_score(result, -3.59496)) < 4
