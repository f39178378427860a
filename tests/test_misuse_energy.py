"""No silent misuse (issue 40, item 5): an energy whose Z is infinite is told apart before
anything is annealed.

An improper :class:`~pymc_anneal.energy.FunctionEnergy` (flat in some direction, or with
tails heavier than :math:`r^{-d}`) used to return a finite log Z that grew with the number
of temperatures (7.2 at K = 50, 9.1 at K = 1,000), with warnings that advised more
temperatures. :func:`pymc_anneal.energy.base.check_normalizable` now looks at the energy
itself: a direction along which it does not change is refused (Z is certainly infinite),
rays along which it does not decay warn; proper energies, heavy-tailed or far wider than
the base included, pass without a word.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import pytest

import pymc_anneal as pa
import pymc_anneal.driver.run
from pymc_anneal.energy import FunctionEnergy


class _Annealed(Exception):
    """Raised where the run would start: what came before it is all a test needs."""


@pytest.fixture
def no_run(monkeypatch):
    """``pa.ais`` stops where its run would start (nothing is compiled or annealed)."""

    def stop(*args, **kwargs):
        raise _Annealed

    monkeypatch.setattr("pymc_anneal.partition.run_annealing", stop)
    monkeypatch.setattr(pymc_anneal.driver.run, "compiled_loop", stop)


FLAT = {  # Z = infinity for certain: the energy does not change along a direction
    "constant": (lambda x: 0.0 * x.sum(axis=1), 1, "float64", r"\{x0: 1\}"),
    "a coordinate unused": (lambda x: -0.5 * x[:, 0] ** 2, 2, "float64", r"\{x1: 1\}"),
    "a diagonal": (lambda x: -0.5 * (x[:, 0] - x[:, 1]) ** 2, 2, "float64",
                   r"\{x0: -?0\.707, x1: -?0\.707\}"),
    "float32": (lambda x: -0.5 * (x[:, 0] - x[:, 1]) ** 2, 2, "float32",
                r"\{x0: -?0\.707, x1: -?0\.707\}"),
    "one of 100 unused": (lambda x: -0.5 * (x[:, :99] ** 2).sum(axis=1), 100, "float64",
                          r"\{x99: 1\}"),
}


@pytest.mark.parametrize("case", sorted(FLAT))
def test_an_energy_flat_along_a_direction_is_refused_before_annealing(case, no_run):
    log_p, num_dims, dtype, direction = FLAT[case]
    model = FunctionEnergy(log_p, num_dims=num_dims, dtype=dtype)
    with pytest.raises(pa.AnnealingError, match=(
            r"FunctionEnergy 'energy' is not normalizable: log_unnormalized does not change "
            rf"along the direction v = {direction} .*its integral Z is infinite.*grows with "
            r"the number of temperatures\. Make the energy grow in every direction")):
        pa.ais(model, draws=100, chains=2, num_steps=20, progressbar=False)


HEAVY = {  # Z = infinity, but only the tails say so: a warning
    "1 / (1 + |x|)": (lambda x: -pt.log1p(pt.abs(x)).sum(axis=1), 1,
                      r"along 16 of 16 random rays from the base's center \(r\^d exp\(-E\) "
                      r"does not fall between 32,768 and 524,288 base scales\)"),
    "growing": (lambda x: 0.5 * (x**2).sum(axis=1), 1, r"along 16 of 16 random rays"),
    "flat on a half-line": (lambda x: -0.5 * x[:, 0] ** 2 - pt.softplus(x[:, 1]), 2,
                            r"along the axes \['-x1'\] \(exp\(-E\) does not fall at all\)"),
}


@pytest.mark.parametrize("case", sorted(HEAVY))
def test_an_energy_whose_tails_do_not_decay_warns_before_annealing(case, no_run):
    log_p, num_dims, where = HEAVY[case]
    model = FunctionEnergy(log_p, num_dims=num_dims)
    with pytest.raises(_Annealed), pytest.warns(pa.AnnealingWarning, match=(
            rf"FunctionEnergy 'energy' may not be normalizable: exp\(-E\) does not decay "
            rf"{where}.*so Z may be infinite\. .*more temperatures do not fix it")):
        pa.ais(model, draws=100, chains=2, num_steps=20, progressbar=False)


PROPER = {
    "normal": (lambda x: -0.5 * (x**2).sum(axis=1), 3, "float64"),
    "normal float32": (lambda x: -0.5 * (x**2).sum(axis=1), 3, "float32"),
    "Cauchy": (lambda x: -pt.log1p(x**2).sum(axis=1), 1, "float64"),
    "product of Cauchys": (lambda x: -pt.log1p(x**2).sum(axis=1), 3, "float64"),
    "Student-t, 0.05 degrees of freedom": (
        lambda x: -0.525 * pt.log1p(x[:, 0] ** 2 / 0.05), 1, "float64"),
    "30 times wider than the base": (lambda x: -0.5 * ((x / 30) ** 2).sum(axis=1), 2,
                                     "float64"),
    "narrow and far": (lambda x: -0.5 * (((x - 3) / 0.05) ** 2).sum(axis=1), 3, "float64"),
    "bimodal": (lambda x: pt.logaddexp(-0.5 * (((x - 4) / 0.3) ** 2).sum(axis=1),
                                       -0.5 * (((x + 4) / 0.3) ** 2).sum(axis=1)), 2,
                "float64"),
    "a bounded support": (lambda x: pt.switch(pt.all(pt.abs(x) < 3, axis=1), 0.0, -np.inf), 2,
                          "float64"),
    "NaN on a half-space": (lambda x: pt.log(x[:, 0]) - 0.5 * (x**2).sum(axis=1), 2,
                            "float64"),
}


@pytest.mark.parametrize("case", sorted(PROPER))
def test_a_normalizable_energy_is_neither_refused_nor_warned_about(case):
    """``filterwarnings = error``: any warning would fail the test."""
    log_p, num_dims, dtype = PROPER[case]
    model = FunctionEnergy(log_p, num_dims=num_dims, dtype=dtype)
    for options in ({}, {"base_scale": 5.0}, {"base": "full",
                                              "moments": (np.ones(num_dims),
                                                          np.eye(num_dims) * 2.0)}):
        model.annealing_path(**options)
