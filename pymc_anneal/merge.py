r"""Pool AIS results computed anywhere into one (:func:`merge`).

AIS particles are independent until the final average, so the particles of several runs of
the same model, data and schedule are the particles of one larger run: every weight is an
unbiased estimate of :math:`Z`, and the pooled estimate is the log-sum-exp of all of them
minus the log of their number, with the delta-method standard error of the pooled weights.
A merged result holds every run's chains, numbered in the order given, so
:func:`pymc_anneal.log_evidence` (and ``compare``, ``bayes_factor``, the plots) report on it
exactly what one run with all the particles would.

That holds only for *independent* particles. A run given twice (or run twice with the same
seed and settings) pools each particle with itself: the standard error falls by
:math:`\sqrt 2` with no new information and the chains look in agreement, so a chain whose
particles are those of a chain of another input is refused. The merged result keeps one
run's layout, chains by draws, so the runs must also have the same number of draws per
chain (any number of chains).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import xarray as xr

from pymc_anneal._digest import fingerprint
from pymc_anneal.estimators import estimate_log_z, pareto_k, pooled_mean
from pymc_anneal.exceptions import AnnealingError

__all__ = ["merge"]

MUST_AGREE = ("inference_library", "method", "quantity", "model_fingerprint", "direction",
              "base", "schedule", "num_steps", "kernel", "kernel_structure", "dtype",
              "num_test_points", "summed_discrete", "annealed_discrete")
"""Attributes that two results must share to be merged (where either has them)."""
PER_RUN = ("random_seed", "timings", "backend")
"""Attributes that may differ: the merged result lists each run's (a JSON list)."""


def merge(results: Sequence[xr.DataTree]) -> xr.DataTree:
    """Pool the particles of several AIS results into one result.

    Parameters
    ----------
    results : sequence of xarray.DataTree
        Results of :func:`pymc_anneal.sample_ais`, :func:`pymc_anneal.ais` or
        :func:`pymc_anneal.batched_ais` for the same model and data with the same schedule
        (fixed ``num_steps``: ``"auto"`` chooses the number of temperatures per run) and
        the same ``draws`` per chain, from different seeds, processes or machines (saved
        with ``to_netcdf`` and read back).

    Returns
    -------
    xarray.DataTree
        The layout of its inputs, with the chains of every result one after the other
        (``chain`` renumbered from 0). Per-chain and per-particle values are the inputs'
        own; pooled values (``batched_ais``' per-point estimates and their mean) are
        computed again over all particles. ``random_seed``, ``timings`` and ``backend``
        become JSON lists with one entry per result, and ``merged_from`` counts them.

    Raises
    ------
    AnnealingError
        Fewer than one result, a result that is not a per-chain AIS result (RAISE, BDMC,
        sandwich and exact sums are not particle averages), results whose model and
        data (``model_fingerprint``), schedule, kernel or settings differ (the message
        names the attribute and both values), results with different groups or numbers of
        draws per chain, or the same particles twice (a run given twice, or run twice with
        the same ``random_seed`` and settings: the message names the repeated results and
        chains).

    Examples
    --------
    >>> halves = [pa.sample_ais(model=m, num_steps=500, random_seed=s) for s in (1, 2)]
    >>> pooled = pa.merge(halves)          # doctest: +SKIP
    >>> pa.log_evidence(pooled)            # doctest: +SKIP
    """
    results = _check_results(results)
    first = results[0]
    _check_same_schedule(results)
    _check_same_layout(results)
    _check_no_repeats(results)
    groups = {}
    for group in first.children:
        datasets = [r[group].to_dataset() for r in results]
        if "chain" in datasets[0].dims:
            groups[group] = _concat_chains(datasets, group)
        elif group == "sample_stats" and "point" in datasets[0].dims:
            groups[group] = datasets[0]  # pooled per point: computed again below
        else:
            _check_identical(datasets, group)
            groups[group] = datasets[0]
    if "point" in groups["sample_stats"].dims:
        groups["sample_stats"] = _point_estimates(groups)
    tree = xr.DataTree.from_dict(groups)
    tree.attrs.update(_merged_attrs(results))
    for group in first.children:
        tree[group].attrs.update(first[group].attrs)
    return tree


def _check_results(results) -> list[xr.DataTree]:
    if isinstance(results, xr.DataTree) or not isinstance(results, Sequence):
        raise AnnealingError(
            f"merge takes a list of results (xarray.DataTree), got {type(results).__name__}: "
            "pass [result, ...].")
    results = list(results)
    if not results:
        raise AnnealingError("merge got an empty list: pass at least one result.")
    for i, r in enumerate(results):
        bad = not isinstance(r, xr.DataTree) or "particles" not in r.children \
            or "log_weight" not in r["particles"].data_vars \
            or "chain" not in r["particles"]["log_weight"].dims
        if bad:
            what = type(r).__name__ if not isinstance(r, xr.DataTree) else \
                f"a DataTree with method={r.attrs.get('method')!r}, groups {sorted(r.children)}"
            raise AnnealingError(
                f"merge pools the particles of AIS runs (sample_ais, ais, batched_ais), but "
                f"result {i} is {what}. RAISE, BDMC, sandwich, bridge sampling and exact sums "
                "are not averages of particles' weights and cannot be pooled this way.")
    for i, r in enumerate(results):
        if "model_fingerprint" not in r.attrs:
            raise AnnealingError(
                f"cannot merge: result {i} has no model_fingerprint attribute (results "
                "written before pymc_anneal recorded one), so it cannot be shown to be of the "
                "same model and data. Run it again with this version.")
    for key in MUST_AGREE:
        values = [r.attrs.get(key) for r in results]
        for i, value in enumerate(values[1:], start=1):
            if value != values[0]:
                raise AnnealingError(_disagreement(key, values[0], value, i))
    return results


def _disagreement(key, first, other, i) -> str:
    why = {"model_fingerprint": "they are of different models or data (after pm.set_data, "
                                "or another dataset)",
           "num_steps": 'their schedules differ (num_steps="auto" chooses per run: fix '
                        "num_steps to merge)"}.get(key, "their settings differ")
    return (f"cannot merge: result {i} has {key}={other!r} where result 0 has {first!r}, so "
            f"{why}. Merge only runs of the same model, data and settings that differ in "
            "their random_seed.")


def _check_same_schedule(results) -> None:
    betas = [np.asarray(r["annealing_stats"]["beta"].values) for r in results
             if "annealing_stats" in r.children]
    for i, b in enumerate(betas[1:], start=1):
        first, other = betas[0].reshape(-1, betas[0].shape[-1])[0], b.reshape(-1, b.shape[-1])[0]
        if first.shape != other.shape or not np.array_equal(first, other):
            raise AnnealingError(
                f"cannot merge: result {i}'s schedule (annealing_stats.beta, {other.size} "
                f"steps) differs from result 0's ({first.size} steps). Merge only runs "
                "through the same temperatures.")


def _check_same_layout(results) -> None:
    """Refuse results with other groups, or whose per-chain groups differ in a dimension
    other than ``chain`` (their draws per chain, say): the merged result has one layout."""
    groups = sorted(results[0].children)
    for i, r in enumerate(results[1:], start=1):
        if sorted(r.children) != groups:
            raise AnnealingError(
                f"cannot merge: result {i} has the groups {sorted(r.children)} where result 0 "
                f"has {groups}. Run them alike (the same idata_kwargs, say), or drop the "
                "extra groups from the results before merging.")
    for group in groups:
        sizes = dict(results[0][group].to_dataset().sizes)
        if "chain" not in sizes:
            continue
        for i, r in enumerate(results[1:], start=1):
            other = dict(r[group].to_dataset().sizes)
            for dim, size in sizes.items():
                if dim != "chain" and other.get(dim) != size:
                    raise AnnealingError(_layout_disagreement(group, dim, size, other.get(dim),
                                                              i))


def _layout_disagreement(group, dim, first, other, i) -> str:
    if dim == "draw":
        return (f"cannot merge: result {i} has {other} draws per chain where result 0 has "
                f"{first}. The merged result keeps one run's layout, chains by draws, so every "
                "run needs the same draws (the number of chains may differ): run them with "
                f"draws={first}.")
    return (f"cannot merge: the '{group}' group of result {i} has {dim}={other} where result "
            f"0's has {dim}={first}. Merge only runs of the same model, data and settings.")


def _check_no_repeats(results) -> None:
    """Refuse a chain whose particles (every value of its ``particles`` group, positions
    and log weights) are those of a chain of an earlier result: pooled, they would count
    each particle twice."""
    seen: dict[str, tuple[int, int]] = {}
    for i, r in enumerate(results):
        particles = r["particles"].to_dataset()
        repeats: dict[int, list[tuple[int, int]]] = {}
        for c in range(particles.sizes["chain"]):
            chain = particles.isel(chain=c)
            key = fingerprint([(str(name), np.asarray(chain[name].values))
                               for name in sorted(chain.data_vars, key=str)])
            j, c_j = seen.setdefault(key, (i, c))
            if j != i:
                repeats.setdefault(j, []).append((c, c_j))
        if repeats:
            j, pairs = next(iter(repeats.items()))
            seed = r.attrs.get("random_seed")
            seed = "" if seed is None else f" ({seed!r})"
            raise AnnealingError(
                f"cannot merge: result {i} repeats the particles of result {j} (its chains "
                f"{[c for c, _ in pairs]} are chains {[c for _, c in pairs]} of result {j}): "
                f"the same run given twice, or run twice with the same random_seed{seed} and "
                "settings. Pooling a run with itself shrinks the standard error without adding "
                "information and makes the chains look in agreement. Merge runs of different "
                "seeds (random_seed=1, 2, ... one per run, or pymc_anneal.distributed.sample_ais).")


def _check_identical(datasets, group) -> None:
    for i, ds in enumerate(datasets[1:], start=1):
        if not ds.equals(datasets[0]):  # values, dims and coordinates (not created_at)
            raise AnnealingError(
                f"cannot merge: the '{group}' group of result {i} differs from result 0's "
                f"(variables {sorted(ds.data_vars)} against {sorted(datasets[0].data_vars)}), "
                "so they are of different data. Merge only runs on the same data.")


def _concat_chains(datasets, group) -> xr.Dataset:
    """The datasets one after the other along ``chain``; a per-step value without a chain
    (``batched_ais``' tuned step sizes) is kept where every run has the same, and otherwise
    given a chain dimension (each chain its run's)."""
    shared = [name for name in datasets[0].data_vars if "chain" not in datasets[0][name].dims]
    spread = [name for name in shared
              if not all(ds[name].identical(datasets[0][name]) for ds in datasets[1:])]
    datasets = [ds.assign({name: ds[name].expand_dims(chain=ds.sizes["chain"])
                           for name in spread}) for ds in datasets]
    merged = xr.concat(datasets, dim="chain", data_vars="minimal", coords="minimal",
                       compat="override", join="override", combine_attrs="override")
    return merged.assign_coords(chain=np.arange(merged.sizes["chain"]))


def _point_estimates(groups) -> xr.Dataset:
    """``batched_ais``' per-point statistics over the pooled particles (as
    :func:`pymc_anneal.io.point_estimates_tree` computes them)."""
    log_w = np.asarray(groups["particles"]["log_weight"].transpose("point", "chain", "draw"))
    estimates = [estimate_log_z(w.ravel()) for w in log_w]
    mean, mean_se = pooled_mean([e.log_z for e in estimates],
                                [e.standard_error for e in estimates])
    old = groups["sample_stats"]
    new = {"log_likelihood": ("point", np.array([e.log_z for e in estimates])),
           "log_likelihood_se": ("point", np.array([e.standard_error for e in estimates])),
           "ess": ("point", np.array([e.ess for e in estimates])),
           "pareto_k": ("point", np.array([pareto_k(w) for w in log_w])),
           "mean_log_likelihood": ((), mean), "mean_log_likelihood_se": ((), mean_se)}
    return xr.Dataset({k: v for k, v in new.items() if k in old.data_vars},
                      coords={"point": old["point"].values}, attrs=old.attrs)


def _merged_attrs(results) -> dict:
    attrs = dict(results[0].attrs)
    for key in PER_RUN:
        values = [r.attrs.get(key) for r in results]
        if any(v is not None for v in values):
            attrs[key] = json.dumps([_plain(v) for v in values])
    attrs["merged_from"] = len(results)
    return attrs


def _plain(value):
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value.item() if isinstance(value, np.generic) else value
