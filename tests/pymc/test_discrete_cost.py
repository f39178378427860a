r"""Summing or annealing by the sum's estimated cost (:data:`~pymc_anneal.pymc.discrete.SUM_BUDGET`).

``discrete="auto"`` sums a finite discrete variable exactly while :meth:`DiscreteSums.cost`
(the elements per particle of the hoisted sum's nodes that depend on the summed values) is
at most the budget, and anneals it otherwise; the cost is read off the graph and the data's
shapes when the path is built, so the route follows ``pm.set_data``."""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
import pytest

import pymc_anneal as pa
from pymc_anneal.pymc import discrete
from pymc_anneal.pymc.adapter import model_path
from pymc_anneal.pymc.discrete import SUM_BUDGET
from tests import discrete_models
from tests.pymc.test_discrete_hoist import coal_model

SUPPORT = 8


def _scaled(n: int):
    """A categorical scale ``s`` on ``mu * (s + 1) * x`` with n data points: no switch to
    hoist, so the sum computes (support x n) elements; ``x`` and ``y`` are pm.Data."""
    with pm.Model() as model:
        x = pm.Data("x", np.linspace(0.5, 1.5, n))
        y = pm.Data("y", np.linspace(-1.0, 1.0, n))
        s = pm.Categorical("s", p=np.full(SUPPORT, 1.0 / SUPPORT))
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("obs", mu * (s + 1) * x, 1.0, observed=y, shape=x.shape)
    return model


def _cost(n: int) -> int:
    return model_path(_scaled(n), "sum").sum_cost


@functools.cache
def _sizes() -> tuple[int, int]:
    """The data sizes just under and just over the budget, from the cost's linear law
    a + b n in the data size n (measured at two sizes; the tests check its predictions)."""
    c1, c2 = _cost(10), _cost(20)
    slope = (c2 - c1) / 10
    assert slope >= SUPPORT  # at least one element per configuration and data point
    under = 10 + int((SUM_BUDGET - c1) // slope)
    return under, under + 1


def test_the_test_models_stay_summed():
    """The coal-mining model, with its years as constants or as pm.Data, costs less than
    the budget: summed, no note (tests/pymc/test_discrete.py pins the routes of the models
    of tests/discrete_models.py)."""
    for model in (coal_model(), coal_model(np.arange(1851, 1963))):
        mp = model_path(model)
        assert mp.summed and not mp.discrete_notes
        assert 0 < mp.sum_cost <= SUM_BUDGET


def test_the_budget_decides_the_route():
    """Just under the budget the variable is summed; one data point more, it is annealed
    (auto), with a note that says why; discrete="sum" still sums it."""
    under, over = _sizes()
    mp = model_path(_scaled(under))
    assert mp.summed == ("s",) and not mp.discrete_notes and not mp.path.discrete_dims
    assert mp.sum_cost <= SUM_BUDGET
    mp = model_path(_scaled(over))
    assert mp.summed == () and len(mp.path.discrete_dims) == 1
    assert len(mp.discrete_notes) == 1 and "SUM_BUDGET" in mp.discrete_notes[0]
    assert "'s' is annealed" in mp.discrete_notes[0]
    forced = model_path(_scaled(over), "sum")
    assert forced.summed == ("s",) and not forced.discrete_notes
    assert forced.sum_cost > SUM_BUDGET


def test_the_cost_does_not_depend_on_the_hoist_switch(monkeypatch):
    """The route is judged on the hoisted sum, so the tests' HOIST switch leaves it alone;
    the same model gives the same cost each time it is built."""
    costs = {model_path(coal_model()).sum_cost}
    monkeypatch.setattr(discrete, "HOIST", False)
    costs.add(model_path(coal_model()).sum_cost)
    assert len(costs) == 1


def test_the_route_follows_set_data():
    """pm.set_data that moves the data size across the budget rebuilds the path with the
    other route (the cache is keyed on the data), and back."""
    under, over = _sizes()
    model = _scaled(under)
    assert model_path(model).summed == ("s",)
    with model:
        pm.set_data({"x": np.linspace(0.5, 1.5, over), "y": np.linspace(-1.0, 1.0, over)})
    mp = model_path(model)
    assert mp.summed == () and mp.discrete_notes
    with model:
        pm.set_data({"x": np.linspace(0.5, 1.5, under), "y": np.linspace(-1.0, 1.0, under)})
    assert model_path(model).summed == ("s",)


@pytest.mark.slow
def test_a_change_point_annealed_by_the_rule_keeps_its_evidence(monkeypatch):
    """With a budget below its cost, the change point of tests/discrete_models.py is
    annealed (Gibbs draws of the switch point) and its evidence is still the exact sum,
    within 3 standard errors."""
    monkeypatch.setattr(discrete, "SUM_BUDGET", 100)
    case = discrete_models.change_point()
    with case.build():
        idata = pa.sample_ais(draws=500, chains=2, random_seed=5, progressbar=False)
    assert idata.attrs["annealed_discrete"] == ["switch"]
    assert "more than SUM_BUDGET" in idata.attrs["discrete_notes"][0]
    est = pa.log_evidence(idata)
    assert abs(est.log_evidence - case.log_evidence) < 3 * max(est.standard_error,
                                                                est.chain_sd), est
