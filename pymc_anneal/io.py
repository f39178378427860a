"""Every result's layout and attributes, as ArviZ data (an :class:`xarray.DataTree`).

This module writes every result of the package; the entry points compute, it lays out.
All results share their attributes (:func:`result_attrs`): ``inference_library``,
``method``, the run's settings that apply (``quantity``, ``kernel``, ``backend``,
``num_steps``, ``schedule``, ``random_seed``, ``model``, ``timings``, ...) and
``versions``; an attribute whose value is ``None`` is left out. AIS results also carry
``model_fingerprint`` (:func:`pymc_anneal._digest.fingerprint` of the model and its data), which
:func:`pymc_anneal.merge` checks.

**AIS** (:func:`to_datatree`: :func:`pymc_anneal.sample_ais`, :func:`pymc_anneal.ais`;
DESIGN §3):

- ``posterior``: equally weighted draws (chain, draw), resampled per chain from the final
  particles by systematic resampling, so ArviZ summaries are valid as they stand;
- ``particles``: the raw final particles (chain, draw) with their ``log_weight``;
- ``sample_stats`` (chain): ``log_marginal_likelihood``, ``log_marginal_likelihood_se``, the
  weight ``ess`` and ``pareto_k`` of each chain, plain float arrays;
- ``annealing_stats`` (chain, step): ``beta``, ``acceptance_rate``, ``divergences``, running
  ``log_marginal_likelihood`` and weight ``ess`` after each step, and the kernel's scalar
  per-step parameters (``step_size``, ``refresh``, ...);
- attributes: method, kernel, schedule, number of steps, backend, seed, timings, versions.

**Per-point test log-likelihoods** (:func:`point_estimates_tree`:
:func:`pymc_anneal.batched_ais`, :func:`pymc_anneal.reverse_ais`): ``sample_stats`` over
``point`` (``log_likelihood``, ``log_likelihood_se``, ``ess``, and the test-set average
``mean_log_likelihood`` with ``mean_log_likelihood_se``, pooled by
:func:`pymc_anneal.estimators.pooled_mean`), ``particles`` (``log_weight`` per point,
[chain,] draw), and for a forward run (``batched_ais``) each point's ``pareto_k`` and
``annealing_stats`` (``beta``, the tuned per-step parameters, ``acceptance_rate``).

**Brackets over K**: :func:`sandwich_tree` (:func:`pymc_anneal.sandwich`, ``sample_stats``
over ``num_steps``) and :func:`bdmc_tree` (:func:`pymc_anneal.bdmc`: ``sample_stats`` over
``num_steps`` [and ``dataset``], ``observed_data`` and ``true_parameters`` over
``dataset``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import xarray as xr

from pymc_anneal._version import __version__
from pymc_anneal.driver import AnnealingRun
from pymc_anneal.estimators import (
    LogZEstimate,
    estimate_log_z,
    pareto_k,
    systematic_resample,
)

__all__ = ["bdmc_tree", "load_array_backends", "path_attrs", "point_estimates_tree",
           "result_attrs", "sandwich_tree", "schedule_name", "to_datatree", "versions"]


def versions() -> str:
    """The versions of pymc_anneal and its stack, as JSON (a result attribute)."""
    import arviz_base
    import pymc
    import pytensor

    return json.dumps({"pymc_anneal": __version__, "pymc": pymc.__version__,
                       "pytensor": pytensor.__version__, "arviz_base": arviz_base.__version__})


def schedule_name(schedule) -> str:
    """The attribute ``schedule``: a named schedule's name, ``"custom"`` for an array."""
    return schedule if isinstance(schedule, str) else "custom"


def result_attrs(method: str, *more: Mapping, **fields) -> dict:
    """The attributes of a result: ``inference_library``, ``method``, ``fields``, then the
    mappings ``more`` (a later key replaces an earlier one) and ``versions``, less those
    whose value is ``None``."""
    attrs = {"inference_library": "pymc_anneal", "method": method, **fields}
    for extra in more:
        attrs.update(extra)
    attrs["versions"] = versions()
    return {k: v for k, v in attrs.items() if v is not None}


def path_attrs(path) -> dict:
    """A path's scalar ``info`` (its base and the like), as result attributes."""
    return {k: v for k, v in path.info.items() if isinstance(v, str | int | float)}


def load_array_backends() -> None:
    """Make a one-element Dataset: xarray's first one imports its array backends (Dask's,
    where it is installed: 0.2 s), which a result's first Dataset would otherwise pay (a
    job for a wait: :func:`~pymc_anneal.backends.add_waiting_jobs`)."""
    xr.Dataset({"x": ("x", np.zeros(1))})


def _tree(groups: dict[str, xr.Dataset], attrs: dict) -> xr.DataTree:
    tree = xr.DataTree.from_dict(groups)
    tree.attrs.update(attrs)
    return tree


def _dataset(variables: dict[str, np.ndarray], dims: dict[str, list[str]],
             coords: dict) -> xr.Dataset:
    data_vars = {}
    for name, value in variables.items():
        value = np.asarray(value)
        var_dims = list(dims.get(name, []))
        var_dims += [f"{name}_dim_{i}" for i in range(len(var_dims), value.ndim)]
        data_vars[name] = (var_dims, value)
    used = {d for _, (ds, _) in data_vars.items() for d in ds}
    return xr.Dataset(data_vars, coords={k: v for k, v in coords.items() if k in used})


def to_datatree(
    result: AnnealingRun,
    variables: dict[str, np.ndarray],
    *,
    var_dims: dict[str, list[str]] | None = None,
    coords: dict | None = None,
    rng: np.random.Generator,
    attrs: dict | None = None,
) -> xr.DataTree:
    """Assemble the DataTree of an AIS run.

    ``variables`` maps names to arrays of shape (chains, draws, ...) for the final particles
    (already in the user's parametrization); ``attrs`` are added to the run's settings (a
    value of ``None`` removes a setting).
    """
    chains, draws = result.log_weights.shape
    coords = {"chain": np.arange(chains), "draw": np.arange(draws),
              "step": np.arange(1, result.betas.size), **(coords or {})}
    sample_dims = {name: ["chain", "draw", *(var_dims or {}).get(name, [])] for name in variables}

    index = np.stack([systematic_resample(result.log_weights[c], draws, rng)
                      for c in range(chains)])
    resampled = {name: np.take_along_axis(
        v, index.reshape(chains, draws, *([1] * (v.ndim - 2))), axis=1)
        for name, v in variables.items()}

    per_chain = [estimate_log_z(result.log_weights[c]) for c in range(chains)]
    sample_stats = {
        "log_marginal_likelihood": np.array([e.log_z for e in per_chain]),
        "log_marginal_likelihood_se": np.array([e.standard_error for e in per_chain]),
        "ess": np.array([e.ess for e in per_chain]),
        "pareto_k": np.array([pareto_k(result.log_weights[c]) for c in range(chains)]),
    }
    num_steps = result.betas.size - 1
    step_stats = {
        "beta": np.broadcast_to(result.betas[1:], (chains, num_steps)),
        **{name: np.broadcast_to(value, (chains, num_steps))
           for name, value in result.parameters.items() if value.ndim == 1},
        "acceptance_rate": result.step_stats["acceptance_rate"],
        "divergences": result.step_stats["divergences"],
        "log_marginal_likelihood": result.step_stats["log_z"],
        "ess": result.step_stats["ess"],
        **{name: value for name, value in result.step_stats.items()  # a kernel's own
           if name not in ("acceptance_rate", "divergences", "log_z", "ess", "log_ratio_var")},
    }
    step_dims = {name: ["chain", "step"] for name in step_stats}
    settings = {k: v for k, v in result.settings.items() if k != "ess"}
    timings = {"timings": json.dumps({k: round(v, 4) for k, v in result.timings.items()})}
    tree = _tree({
        "posterior": _dataset(resampled, sample_dims, coords),
        "particles": _dataset({**variables, "log_weight": result.log_weights},
                              {**sample_dims, "log_weight": ["chain", "draw"]}, coords),
        "sample_stats": _dataset(sample_stats, {k: ["chain"] for k in sample_stats}, coords),
        "annealing_stats": _dataset(step_stats, step_dims, coords),
    }, result_attrs("ais", settings, timings, attrs or {}))
    for group in ("posterior", "particles", "sample_stats", "annealing_stats"):
        tree[group].attrs.update({"inference_library": "pymc_anneal", "method": "ais"})
    return tree


def point_estimates_tree(
    log_w: np.ndarray,
    estimates: list[LogZEstimate],
    mean: float,
    mean_se: float,
    *,
    attrs: dict,
    extra: dict | None = None,
    run: AnnealingRun | None = None,
) -> xr.DataTree:
    """Assemble the DataTree of per-point test log-likelihoods.

    ``log_w`` (point, draw) or (point, chain, draw) are the final log weights, ``estimates``
    each point's pooled estimate, ``mean`` and ``mean_se`` the test-set average and its
    standard error, ``extra`` more ``sample_stats`` variables (``(dims, values)``); with
    ``run``, the forward run that gave the weights (:func:`pymc_anneal.batched_ais`), each
    point's ``pareto_k`` and the ``annealing_stats`` group too.
    """
    dims = ("point", "draw") if log_w.ndim == 2 else ("point", "chain", "draw")
    coords = {name: np.arange(size) for name, size in zip(dims, log_w.shape)}
    stats = {
        "log_likelihood": ("point", np.array([e.log_z for e in estimates])),
        "log_likelihood_se": ("point", np.array([e.standard_error for e in estimates])),
        "ess": ("point", np.array([e.ess for e in estimates])),
        **({"pareto_k": ("point", np.array([pareto_k(w) for w in log_w]))}
           if run is not None else {}),
        "mean_log_likelihood": ((), mean), "mean_log_likelihood_se": ((), mean_se),
        **(extra or {}),
    }
    groups = {"sample_stats": xr.Dataset(stats, coords={"point": coords["point"]}),
              "particles": xr.Dataset({"log_weight": (dims, log_w)}, coords=coords)}
    if run is not None:
        groups["annealing_stats"] = xr.Dataset({
            "beta": ("step", run.betas[1:]),
            **{name: ("step", value) for name, value in run.parameters.items() if value.ndim == 1},
            "acceptance_rate": (("chain", "step"), run.step_stats["acceptance_rate"]),
        }, coords={"step": np.arange(1, run.betas.size), "chain": coords["chain"]})
    return _tree(groups, attrs)


def sandwich_tree(steps, columns: dict[str, np.ndarray], attrs: dict) -> xr.DataTree:
    """Assemble the DataTree of :func:`pymc_anneal.sandwich`: ``columns`` over ``num_steps``
    (the numbers of temperatures ``steps``) in ``sample_stats``."""
    stats = xr.Dataset({name: ("num_steps", value) for name, value in columns.items()},
                       coords={"num_steps": np.array(steps)})
    return _tree({"sample_stats": stats}, attrs)


def bdmc_tree(steps, pooled: dict, per_dataset: dict, data: dict, truth: dict,
              attrs: dict) -> xr.DataTree:
    """Assemble the DataTree of :func:`pymc_anneal.bdmc`: ``pooled`` over ``num_steps`` and
    ``per_dataset`` over (``num_steps``, ``dataset``) in ``sample_stats``; the simulated
    ``data`` in ``observed_data`` and parameters ``truth`` in ``true_parameters``, each with
    a leading ``dataset`` dimension."""
    num_datasets = next(iter(per_dataset.values())).shape[1]
    coords = {"num_steps": np.array(steps), "dataset": np.arange(num_datasets)}
    stats = xr.Dataset(
        {**{name: ("num_steps", value) for name, value in pooled.items()},
         **{name: (("num_steps", "dataset"), value) for name, value in per_dataset.items()}},
        coords=coords)

    def with_datasets(values):
        return xr.Dataset({name: (("dataset", *(f"{name}_dim_{i}" for i in range(v.ndim - 1))), v)
                           for name, v in values.items()},
                          coords={"dataset": coords["dataset"]})

    return _tree({"sample_stats": stats, "observed_data": with_datasets(data),
                  "true_parameters": with_datasets(truth)}, attrs)
