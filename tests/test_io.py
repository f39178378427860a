"""Every result keeps its layout: groups, variables, dims, coordinates and attributes.

``tests/data/layouts.json`` was written by ``python -m tests.layout_cases`` before
:mod:`pymc_anneal.io` became the one writer of every result (issue 24); each case is run
again and its layout compared key by key (values of the attributes too, except
``versions`` and ``timings``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from pymc_anneal.estimators import pooled_mean
from pymc_anneal.io import result_attrs, schedule_name, versions
from tests.layout_cases import CASES, DATA, layout, run_case

STORED = json.loads(DATA.read_text())
FAST = ("ais", "bridge_sampling", "reverse_ais", "sandwich")
"""The cases of the fast subset (the others compile loops of their own: slow suite)."""


@pytest.mark.filterwarnings("ignore::pymc_anneal.exceptions.AnnealingWarning")
@pytest.mark.parametrize("name", [name if name in FAST else pytest.param(
    name, marks=pytest.mark.slow) for name in CASES])
def test_result_layout_is_unchanged(name):
    new, old = layout(run_case(name)), STORED[name]
    assert sorted(new) == sorted(old), name  # the groups
    for group in old:
        for part in ("variables", "coords"):
            assert new[group][part] == old[group][part], (name, group, part)
        assert new[group]["attrs"] == old[group]["attrs"], (name, group)


def test_every_result_records_the_same_provenance():
    attrs = result_attrs("ais", {"base": "prior", "model": "replaced"}, model="m",
                         kernel=None, schedule=schedule_name(np.linspace(0, 1, 3)))
    assert list(attrs) == ["inference_library", "method", "model", "schedule", "base",
                           "versions"]
    assert attrs["model"] == "replaced" and attrs["schedule"] == "custom"
    assert json.loads(attrs["versions"])["pymc_anneal"] == json.loads(versions())["pymc_anneal"]


def test_pooled_mean_of_independent_estimates():
    mean, se = pooled_mean(np.array([1.0, 2.0, 6.0]), np.array([0.3, 0.4, 1.2]))
    assert mean == 3.0 and se == pytest.approx(np.sqrt(0.09 + 0.16 + 1.44) / 3)
    mean, se = pooled_mean(np.array([1.0, -np.inf]), np.array([0.1, np.nan]))
    assert mean == -np.inf and np.isnan(se)


def test_version_has_one_home():
    import pymc_anneal
    from pymc_anneal._version import __version__

    assert pymc_anneal.__version__ is __version__
