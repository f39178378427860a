"""AIS results as ArviZ data (an :class:`xarray.DataTree`).

Groups (DESIGN §3):

- ``posterior``: equally weighted draws (chain, draw), resampled per chain from the final
  particles by systematic resampling, so ArviZ summaries are valid as they stand;
- ``particles``: the raw final particles (chain, draw) with their ``log_weight``;
- ``sample_stats`` (chain): ``log_marginal_likelihood``, ``log_marginal_likelihood_se`` and
  the weight ``ess`` of each chain, plain float arrays;
- ``annealing_stats`` (chain, step): ``beta``, ``acceptance_rate``, ``divergences``, running
  ``log_marginal_likelihood`` and weight ``ess`` after each step, and the kernel's scalar
  per-step parameters (``step_size``, ``refresh``, ...);
- attributes: method, kernel, schedule, number of steps, backend, seed, timings, versions.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from pymc_anneal.driver import AnnealingRun
from pymc_anneal.estimators import estimate_log_z, pareto_k, systematic_resample

__all__ = ["to_datatree", "versions"]


def versions() -> str:
    """The versions of pymc_anneal and its stack, as JSON (a result attribute)."""
    import arviz_base
    import pymc
    import pytensor

    from pymc_anneal import __version__

    return json.dumps({"pymc_anneal": __version__, "pymc": pymc.__version__,
                       "pytensor": pytensor.__version__, "arviz_base": arviz_base.__version__})


def _dataset(variables: dict[str, np.ndarray], dims: dict[str, list[str]], coords: dict) -> xr.Dataset:
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
    """Assemble the DataTree.

    ``variables`` maps names to arrays of shape (chains, draws, ...) for the final particles
    (already in the user's parametrization).
    """
    chains, draws = result.log_weights.shape
    coords = {"chain": np.arange(chains), "draw": np.arange(draws),
              "step": np.arange(1, result.betas.size), **(coords or {})}
    sample_dims = {name: ["chain", "draw", *(var_dims or {}).get(name, [])] for name in variables}

    index = np.stack([systematic_resample(result.log_weights[c], draws, rng) for c in range(chains)])
    resampled = {name: np.take_along_axis(v, index.reshape(chains, draws, *([1] * (v.ndim - 2))), axis=1)
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
    attrs = {
        "inference_library": "pymc_anneal",
        "method": "ais",
        **{k: v for k, v in result.settings.items() if k != "ess"},
        "timings": json.dumps({k: round(v, 4) for k, v in result.timings.items()}),
        "versions": versions(),
        **(attrs or {}),
    }
    tree = xr.DataTree.from_dict({
        "posterior": _dataset(resampled, sample_dims, coords),
        "particles": _dataset({**variables, "log_weight": result.log_weights},
                              {**sample_dims, "log_weight": ["chain", "draw"]}, coords),
        "sample_stats": _dataset(sample_stats, {k: ["chain"] for k in sample_stats}, coords),
        "annealing_stats": _dataset(step_stats, step_dims, coords),
    })
    tree.attrs.update({k: v for k, v in attrs.items() if v is not None})
    for group in ("posterior", "particles", "sample_stats", "annealing_stats"):
        tree[group].attrs.update({"inference_library": "pymc_anneal", "method": "ais"})
    return tree
