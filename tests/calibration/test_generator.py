"""The generator's references, each checked two ways, and the built models checked against
them (issue 23, section 3: "check each reference twice before trusting it")."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import special

from tests.calibration.generator import FAMILIES, case_from_spec, generate, generate_many

SEED = 2311

# the value-space coordinate of the one continuous variable, where the model has one
GRID_FAMILIES = {
    "normal_mean": (-50.0, 50.0),
    "gamma_poisson": (-30.0, 8.0),
    "beta_binomial": (-40.0, 40.0),
    "binomial_sigmoid": (-8.0, 8.0),
    "all_discrete": None,
}
REQUIRED_FEATURES = {
    "labels:coupled", "labels:independent", "coupling_zero_at_init",
    "discrete_depends_on_continuous", "support_from_data", "support_changes", "nobs_changes",
    "potential", "deterministic", "pm.Data", "set_data", "transform:bounded",
    "transform:positive", "transform:simplex", "funnel", "all_discrete", "unbounded_discrete",
    "quadrature:2d",
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_references_agree(family):
    """The exact reference and the independent one (quadrature, forward recursion or a prior
    Monte Carlo with its standard error) agree within the second one's tolerance."""
    case = generate(SEED, family)
    for index, log_z in enumerate(case.log_z):
        value, tolerance = case.check_log_z(index)
        assert np.isfinite(log_z)
        assert abs(value - log_z) <= tolerance, (case.name, index, value, log_z, tolerance)


def _joint_by_grid(case, index) -> float:
    """log evidence from the *built* PyMC model's own log density: its value-space logp
    (with the Jacobian) summed over every discrete configuration and integrated over the one
    continuous value coordinate by the trapezoid rule on a grid (spacing at most 0.125, under
    half the narrowest posterior scale here: the rule's error on a smooth peak is < 1e-6)."""
    model = case.build()
    if case.params.get("use_data"):
        case.set_data(model, index)
    logp = model.compile_logp(jacobian=True, mode="FAST_COMPILE")  # no C compile
    point = model.initial_point()
    names = [v.name for v in model.value_vars]
    continuous = [n for n in names if point[n].dtype.kind == "f"]
    discrete = [n for n in names if point[n].dtype.kind != "f"]
    if case.family == "binomial_sigmoid":
        supports = [np.arange(int(case.datasets[index]["n_trials"]) + 1)[:, None]]
    elif case.family == "all_discrete":
        k = case.params["num_labels"]
        supports = [np.array(np.meshgrid(*[np.arange(3)] * k, indexing="ij")).reshape(k, -1).T]
    else:
        supports = []
    configs = supports[0] if supports else [None]
    lo, hi = GRID_FAMILIES[case.family] or (0.0, 0.0)
    grid = np.linspace(lo, hi, 801 if len(configs) == 1 else 321) if continuous else np.zeros(1)
    totals = []
    for config in configs:
        if config is not None:
            shape = np.shape(point[discrete[0]])
            point[discrete[0]] = np.asarray(config, dtype=point[discrete[0]].dtype).reshape(shape)
        values = []
        for g in grid:
            if continuous:
                point[continuous[0]] = np.asarray(g)
            values.append(logp(point))
        values = np.asarray(values)
        if continuous:  # trapezoid in log space
            weights = np.full(grid.size, grid[1] - grid[0])
            weights[[0, -1]] /= 2
            totals.append(special.logsumexp(values, b=weights))
        else:
            totals.append(values[0])
    return float(special.logsumexp(totals))


@pytest.mark.parametrize("family", sorted(GRID_FAMILIES))
def test_built_model_matches_reference(family):
    """The model that the tests anneal is the model whose evidence the reference computes
    (the reference is written from the parameters, not from the PyMC graph)."""
    case = generate(SEED + 1, family)
    index = len(case.datasets) - 1  # after set_data where the case has several datasets
    assert _joint_by_grid(case, index) == pytest.approx(case.log_z[index], abs=1e-4)


def test_spec_round_trip():
    """A case rebuilt from its JSON spec (as the replay file stores it) is the same case."""
    for case in generate_many(SEED, len(FAMILIES)):
        again = case_from_spec(json.loads(json.dumps(case.spec())))
        assert again.log_z == case.log_z and again.features == case.features
        for a, b in zip(again.datasets, case.datasets, strict=True):
            assert a.keys() == b.keys()
            assert all(np.array_equal(a[k], b[k]) for k in a)


def test_generator_is_seeded():
    a, b, c = generate(5), generate(5), generate(6, generate(5).family)
    assert a.params == b.params and a.log_z == b.log_z
    assert c.log_z != a.log_z


def test_sample_covers_the_features():
    """Four cases per family exercise every feature the issue lists."""
    features = set().union(*(c.features for c in generate_many(SEED, 4 * len(FAMILIES))))
    assert REQUIRED_FEATURES <= features, sorted(REQUIRED_FEATURES - features)


def test_bad_family_is_refused():
    with pytest.raises(ValueError, match="family must be one of"):
        generate(0, "no_such_family")
