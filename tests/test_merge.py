"""``pa.merge`` pools results into what one run with all their particles reports (issue 25,
item 3), and refuses results of different models, data or schedules with the reason.

The exact check: one run's chains split into halves and merged back give the run itself
(every group, every value), for ``sample_ais``, ``ais`` and ``batched_ais``. The statistical
check: two independently seeded runs of a model with a closed-form evidence, merged, give the
log-sum-exp of all their weights, within three of its standard errors of the truth.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import special

import pymc_anneal as pa
from pymc_anneal._digest import fingerprint
from pymc_anneal.estimators import estimate_log_z
from pymc_anneal.pymc.adapter import model_content
from tests import analytic
from tests.layout_cases import _model, _rbm, _test_points

QUIET = {"progressbar": False, "backend": "numba"}


@functools.cache
def _run(kind, seed=1, chains=4):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pa.AnnealingWarning)  # tiny runs
        if kind == "sample_ais":
            return pa.sample_ais(model=_model(), draws=30, chains=chains, num_steps=20,
                                 random_seed=seed, **QUIET)
        if kind == "ais":
            return pa.ais(_rbm(), draws=30, chains=chains, num_steps=20, random_seed=seed,
                          **QUIET)
        if kind == "batched_ais":
            model = pa.energy.LinearGenerative(np.random.default_rng(0).normal(size=(4, 2)), 0.5)
            return pa.batched_ais(model, model.sample(3, rng=1), draws=10, chains=chains,
                                  num_steps=10, random_seed=seed, **QUIET)
        if kind == "reverse_ais":
            return pa.reverse_ais(_rbm(), _test_points(), num_steps=10, draws=10,
                                  random_seed=seed, **QUIET)
    raise KeyError(kind)


def _chains(tree, which) -> xr.DataTree:
    """``tree`` with the chains ``which`` only (as a run with those chains would be)."""
    groups = {}
    for group in tree.children:
        ds = tree[group].to_dataset()
        groups[group] = ds.isel(chain=which) if "chain" in ds.dims else ds
    out = xr.DataTree.from_dict(groups)
    out.attrs.update(tree.attrs)
    for group in tree.children:
        out[group].attrs.update(tree[group].attrs)
    return out


@pytest.mark.parametrize("kind", ["sample_ais", "ais", "batched_ais"])
def test_merged_halves_are_the_whole_run(kind):
    whole = _run(kind)
    merged = pa.merge([_chains(whole, [0, 1]), _chains(whole, [2, 3])])
    assert sorted(merged.children) == sorted(whole.children)
    for group in whole.children:
        assert merged[group].to_dataset().equals(whole[group].to_dataset()), group
    assert merged.attrs["merged_from"] == 2
    if kind != "batched_ais":
        assert pa.log_evidence(merged) == pa.log_evidence(whole)


@pytest.mark.slow  # the fast subset's budget: the slow suite (CI) runs it
def test_merge_of_seeded_runs_is_the_pooled_estimate_and_covers_the_truth():
    """Two seeded runs of the conjugate normal-mean model: the merged estimate is the
    log-sum-exp of their weights over their number (to rounding), its error is that of the
    pooled weights, and the truth lies within three of it."""
    case = analytic.normal_mean()
    runs = []
    for seed in (3, 4):
        with case.build():
            runs.append(pa.sample_ais(draws=200, chains=2, num_steps=200, random_seed=seed,
                                      **QUIET))
    merged = pa.merge(runs)
    log_w = np.concatenate([np.ravel(r["particles"]["log_weight"]) for r in runs])
    est, pooled = pa.log_evidence(merged), estimate_log_z(log_w)
    assert est.log_evidence == pytest.approx(special.logsumexp(log_w) - np.log(log_w.size),
                                             rel=0, abs=1e-12)
    assert est.standard_error == pooled.standard_error and est.num_particles == 800
    assert abs(est.log_evidence - case.log_evidence) < 3 * est.standard_error
    assert est.standard_error < min(pa.log_evidence(r).standard_error for r in runs)
    assert merged.attrs["random_seed"] == "[3, 4]"


@pytest.mark.slow  # the fast subset's budget: the slow suite (CI) runs it
def test_merge_reads_results_from_disk(tmp_path):
    runs = [_run("ais", seed=s, chains=2) for s in (1, 2)]
    paths = [tmp_path / f"{i}.nc" for i in range(2)]
    for run, path in zip(runs, paths, strict=True):
        run.to_netcdf(path)
    from_disk = pa.merge([xr.load_datatree(p) for p in paths])
    in_memory = pa.merge(runs)
    for group in in_memory.children:
        assert from_disk[group].to_dataset().equals(in_memory[group].to_dataset()), group
    assert pa.log_evidence(from_disk) == pa.log_evidence(in_memory)


def _other_data():
    with pm.Model(coords={"obs": np.arange(5)}) as model:
        mu = pm.Normal("mu", 0.0, 1.5)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=np.array([0.3, -0.2, 0.5, 1.1, 0.9]), dims="obs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pa.AnnealingWarning)
        return pa.sample_ais(model=model, draws=30, chains=2, num_steps=20, random_seed=5,
                             **QUIET)


def _no_fingerprint():
    tree = _run("ais", chains=2).copy()
    del tree.attrs["model_fingerprint"]
    return tree


BAD = {
    "not a list": (lambda: _run("ais"), "takes a list of results"),
    "empty": (list, "empty list"),
    "other data": (lambda: [_run("sample_ais", chains=2), _other_data()],
                   "different models or data"),
    "other model": (lambda: [_run("ais", chains=2), _run("batched_ais", chains=2)],
                    "quantity"),
    "other generative model": (lambda: [_run("batched_ais", chains=2), _other_basis()],
                               "different models or data"),
    "other schedule": (lambda: [_run("sample_ais", chains=2), _short_schedule()],
                       "schedules differ"),
    "raise": (lambda: [_run("reverse_ais"), _run("reverse_ais", seed=2)],
              "cannot be pooled"),
    "no fingerprint": (lambda: [_no_fingerprint(), _run("ais", chains=2)],
                       "no model_fingerprint"),
}


def _other_basis():
    """batched_ais on the same test points with another basis (1e-9 apart)."""
    basis = np.random.default_rng(0).normal(size=(4, 2))
    data = pa.energy.LinearGenerative(basis, 0.5).sample(3, rng=1)
    basis[0, 0] += 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pa.AnnealingWarning)
        return pa.batched_ais(pa.energy.LinearGenerative(basis, 0.5), data, draws=10,
                              chains=2, num_steps=10, random_seed=2, **QUIET)


def _short_schedule():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pa.AnnealingWarning)
        return pa.sample_ais(model=_model(), draws=30, chains=2, num_steps=10, random_seed=2,
                             **QUIET)


FAST_BAD = ("not a list", "empty", "raise", "no fingerprint", "other schedule")
"""The refusals of the fast subset; the others compile loops of their own (slow suite)."""


@pytest.mark.parametrize("case", [c if c in FAST_BAD else pytest.param(c, marks=pytest.mark.slow)
                                  for c in sorted(BAD)])
def test_merge_refuses_what_cannot_be_pooled(case):
    make, match = BAD[case]
    with pytest.raises(pa.AnnealingError, match=match):
        pa.merge(make())


def test_fingerprint_follows_the_model_and_its_data_not_object_ids():
    """The same model built twice has one fingerprint; other observed values, or
    ``pm.set_data``, give another; an energy model's weights are part of it."""
    def build(y, x=(1.0, 2.0)):
        with pm.Model() as m:
            data = pm.Data("x", np.array(x))
            mu = pm.Normal("mu", 0, 1)
            pm.Normal("y", mu * data, 1.0, observed=np.array(y))
        return m

    digests = {fingerprint(model_content(build([0.3, 0.5]))) for _ in range(2)}
    assert len(digests) == 1
    model = build([0.3, 0.5])
    assert fingerprint(model_content(build([0.3, 0.6]))) not in digests
    with model:
        pm.set_data({"x": np.array([1.0, 3.0])})
    assert fingerprint(model_content(model)) not in digests
    rbm = _rbm()
    weights = rbm.W.copy()
    weights[0, 0] += 1e-9
    other = pa.energy.BernoulliRBM(weights, rbm.visible_bias, rbm.hidden_bias)
    assert fingerprint(rbm.content()) == fingerprint(_rbm().content())
    assert fingerprint(other.content()) != fingerprint(rbm.content())
    square, quartic = (pa.energy.FunctionEnergy(f, num_dims=2) for f in (
        lambda x: -0.5 * (x**2).sum(axis=-1), lambda x: -0.25 * (x**4).sum(axis=-1)))
    assert fingerprint(square.content()) != fingerprint(quartic.content())


@pytest.mark.slow  # the fast subset's budget: the slow suite (CI) runs it
def test_fingerprint_is_the_same_in_another_process():
    """Results from other processes (or machines) merge: no address enters the digest (a
    PyMC graph holds object-dtype constants, whose bytes are pointers)."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys; sys.path.insert(0, {root!r})\n"
            "from pymc_anneal._digest import fingerprint\n"
            "from pymc_anneal.pymc.adapter import model_content\n"
            "from tests.layout_cases import _model, _rbm\n"
            "print(fingerprint(model_content(_model())), fingerprint(_rbm().content()))")
    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, "-c", code.format(root=root)], capture_output=True,
                         text=True, timeout=300, check=True, cwd=root).stdout.split()
    assert out == [fingerprint(model_content(_model())), fingerprint(_rbm().content())]


def test_merge_refuses_a_run_given_twice(tmp_path):
    """Issue 40, item 3: ``merge([r, r])`` pooled a run with itself (the standard error fell
    by sqrt 2, the chains looked in agreement). Repeated particles are refused, by result
    and chain, also from a copy read back from disk, or overlapping parts of one run."""
    run = _run("sample_ais", chains=2)
    match = (r"result 1 repeats the particles of result 0 \(its chains \[0, 1\] are chains "
             r"\[0, 1\] of result 0\): the same run given twice, or run twice with the same "
             r"random_seed \('1'\)")
    with pytest.raises(pa.AnnealingError, match=match):
        pa.merge([run, run])
    run.to_netcdf(tmp_path / "run.nc")
    with pytest.raises(pa.AnnealingError, match=r"result 2 repeats the particles of result 0"):
        pa.merge([run, _run("sample_ais", seed=2, chains=2), xr.load_datatree(tmp_path / "run.nc")])
    whole = _run("ais")
    with pytest.raises(pa.AnnealingError, match=r"result 1 repeats the particles of result 0 "
                                                r"\(its chains \[0\] are chains \[2\]"):
        pa.merge([_chains(whole, [0, 1, 2]), _chains(whole, [2, 3])])


def test_merge_refuses_runs_of_different_draws_or_groups():
    """Issue 40, item 8: runs of different ``draws`` raised xarray's AlignmentError."""
    run = _run("sample_ais", chains=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pa.AnnealingWarning)  # tiny runs
        fewer = pa.sample_ais(model=_model(), draws=20, chains=2, num_steps=20, random_seed=2,
                              **QUIET)
    with pytest.raises(pa.AnnealingError, match=r"result 1 has 20 draws per chain where result "
                                                r"0 has 30\..*run them with draws=30"):
        pa.merge([run, fewer])
    extra = _run("sample_ais", seed=2, chains=2).copy()
    extra["log_likelihood"] = xr.Dataset({"y": (("chain", "draw"), np.zeros((2, 30)))})
    with pytest.raises(pa.AnnealingError, match=r"result 1 has the groups \[.*'log_likelihood'"
                                                r".*\] where result 0 has \["):
        pa.merge([run, extra])
