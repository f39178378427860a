"""Results written to disk and read back are the same DataTree (issue 25, item 2).

Every result kind of :mod:`tests.layout_cases` is written with ``DataTree.to_netcdf`` (h5netcdf,
a core dependency: no extra install) and read back with ``xarray.load_datatree`` and with
``arviz.from_netcdf``: values, dims, coordinates, dtypes and attributes are identical, and
:func:`pymc_anneal.log_evidence`, :func:`pymc_anneal.compare`,
:func:`pymc_anneal.bayes_factor` and the plots give the same answers on what was read.
"""

from __future__ import annotations

import functools

import arviz as az
import numpy as np
import pytest
import xarray as xr

import pymc_anneal as pa
from tests.layout_cases import CASES, run_case
from tests.test_io import FAST


@functools.cache
def _result(name):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pa.AnnealingWarning)  # tiny runs: warnings expected
        return run_case(name)


def _round_trip(tree, path, reader):
    tree.to_netcdf(path)
    return reader(path)


def _readers():
    return {"xarray": xr.load_datatree, "arviz": az.from_netcdf}


@pytest.mark.parametrize("reader", sorted(_readers()))
@pytest.mark.parametrize("name", [name if name in FAST else pytest.param(
    name, marks=pytest.mark.slow) for name in CASES])
def test_every_result_reads_back_identical(name, reader, tmp_path):
    tree = _result(name)
    back = _round_trip(tree, tmp_path / f"{name}.nc", _readers()[reader])
    assert sorted(back.groups) == sorted(tree.groups)
    for group in tree.groups:
        # identical: same variables, values, dims, coordinates and attributes
        assert back[group].to_dataset().identical(tree[group].to_dataset()), (name, group)
        for var in tree[group].data_vars:
            assert back[group][var].dtype == tree[group][var].dtype, (name, group, var)


@pytest.mark.filterwarnings("ignore::pymc_anneal.exceptions.AnnealingWarning")
def test_a_read_result_compares_and_plots_as_the_original(tmp_path):
    """log_evidence, compare, bayes_factor and a plot on the result read from disk: the same
    numbers as on the one in memory."""
    import matplotlib

    matplotlib.use("Agg")
    one = _result("ais")
    two = pa.ais(one_model(), draws=20, chains=2, num_steps=10, random_seed=14,
                 progressbar=False, backend="numba")
    back = [_round_trip(t, tmp_path / f"{i}.nc", xr.load_datatree)
            for i, t in enumerate((one, two))]
    assert pa.log_evidence(back[0]) == pa.log_evidence(one)
    table, table_back = (pa.compare({"a": a, "b": b}) for a, b in ((one, two), back))
    assert table_back.equals(table)
    assert pa.bayes_factor(*back) == pa.bayes_factor(one, two)
    axes = pa.plots.plot_annealing(back[0])
    assert np.size(axes) > 0
    matplotlib.pyplot.close("all")


def one_model():
    from tests.layout_cases import _rbm

    return _rbm(seed=3)
