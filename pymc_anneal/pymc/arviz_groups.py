r"""The ArviZ groups that ``pm.sample`` writes, added to a result of :func:`sample_ais`.

A result of :func:`pymc_anneal.sample_ais` holds the evidence (``sample_stats``), the
weighted particles and the ``posterior`` group: draws resampled from the particles in
proportion to their weights, equally weighted, in the model's space. The groups added here
are the ones ArviZ's model-checking tools read, written by PyMC's own machinery so that they
match what ``pm.sample`` writes for the same model:

- ``observed_data``: the observed values, with the model's dims and coords
  (:func:`pymc.backends.arviz.find_observations`).
- ``constant_data``: the model's ``pm.Data`` containers that are not observations
  (:func:`pymc.backends.arviz.find_constants`).
- ``log_likelihood`` (on request): the pointwise log-likelihood
  :math:`\log p(y_i \mid \theta^{(c, d)})` of every observed variable at every posterior draw,
  dims ``(chain, draw, *obs dims)``, as ``pm.sample(idata_kwargs={"log_likelihood": True})``
  and :func:`pymc.compute_log_likelihood` write it.

With ``log_likelihood``, :func:`arviz.loo` estimates the expected log pointwise predictive
density :math:`\mathrm{elpd}_{loo} = \sum_i \log p(y_i \mid y_{-i})` by Pareto-smoothed
importance sampling over the posterior draws, and :func:`arviz.compare` ranks models by it,
beside their evidence :math:`\log p(y \mid M)` (:func:`pymc_anneal.compare`). The two answer
different questions: the evidence is the prior predictive probability of the whole data set,
LOO the posterior predictive probability of each point given the others.

Resampled draws repeat particles; PSIS-LOO treats each draw as one posterior sample, which is
right for an equally weighted sample, but the repeats lower its effective size, so the
Pareto :math:`\hat k` of LOO is higher than for as many independent draws.

References
----------
Vehtari, A., Gelman, A. & Gabry, J. (2017). Practical Bayesian model evaluation using
leave-one-out cross-validation and WAIC. *Statistics and Computing* 27, 1413-1432.
Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11, 125-139.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import xarray as xr
from pymc.backends.arviz import (
    coords_and_dims_for_inferencedata,
    dict_to_dataset,
    find_constants,
    find_observations,
)

from pymc_anneal.exceptions import AnnealingError

__all__ = ["add_arviz_groups"]


def _data_group(values: dict, model: pm.Model, attrs: dict) -> xr.Dataset | None:
    """A dataset without sample dims of ``values`` (name -> array), with the model's dims."""
    if not values:
        return None
    coords, dims = coords_and_dims_for_inferencedata(model)
    dataset = dict_to_dataset(values, coords=coords, dims=dims, sample_dims=[])
    # a scalar pm.Data stays a scalar (as pm.sample writes it), not an array of one value
    for name, value in values.items():
        if np.ndim(value) == 0 and f"{name}_dim_0" in dataset.sizes:
            dataset = dataset.squeeze(f"{name}_dim_0", drop=True)
    return dataset.assign_attrs(attrs)


def add_arviz_groups(
    tree: xr.DataTree,
    model: pm.Model,
    *,
    log_likelihood: bool = False,
    backend: str | None = None,
) -> xr.DataTree:
    r"""Add ``observed_data``, ``constant_data`` and, on request, ``log_likelihood``.

    Parameters
    ----------
    tree : xarray.DataTree
        Result of :func:`pymc_anneal.sample_ais` on ``model`` (it needs the ``posterior``
        group for ``log_likelihood``).
    model : pymc.Model
        The model that ``tree`` was sampled from.
    log_likelihood : bool, default False
        Add the pointwise log-likelihood of every observed variable at the posterior draws
        (:func:`pymc.compute_log_likelihood`), for :func:`arviz.loo` and
        :func:`arviz.compare`.
    backend : str, optional
        PyTensor backend that evaluates the log-likelihood (``"numba"``, ``"c"``, ``"jax"``);
        PyMC's default by default.

    Returns
    -------
    xarray.DataTree
        A new tree with the groups added (a group the model has nothing for, such as
        ``constant_data`` of a model without ``pm.Data``, is left out). ``tree`` is unchanged.

    Raises
    ------
    AnnealingError
        ``tree`` is not a DataTree with a ``posterior`` group while ``log_likelihood`` is
        requested, or the model has no observed variable to take it of.

    References
    ----------
    Vehtari, A., Gelman, A. & Gabry, J. (2017). Practical Bayesian model evaluation using
    leave-one-out cross-validation and WAIC. *Statistics and Computing* 27, 1413-1432.

    Examples
    --------
    >>> import arviz as az  # doctest: +SKIP
    >>> result = add_arviz_groups(pa.sample_ais(model=model), model,  # doctest: +SKIP
    ...                           log_likelihood=True)
    >>> az.loo(result)  # doctest: +SKIP
    """
    if not isinstance(tree, xr.DataTree):
        raise AnnealingError(
            f"add_arviz_groups needs the DataTree returned by pymc_anneal.sample_ais, got "
            f"{type(tree).__name__}.")
    if not isinstance(model, pm.Model):
        raise AnnealingError(
            f"add_arviz_groups needs the pymc.Model the result was sampled from, got "
            f"{type(model).__name__}.")
    attrs = {k: tree.attrs[k] for k in ("inference_library", "method") if k in tree.attrs}
    groups = {"observed_data": _data_group(find_observations(model), model, attrs),
              "constant_data": _data_group(find_constants(model), model, attrs)}
    if log_likelihood:
        groups["log_likelihood"] = _log_likelihood(tree, model, attrs, backend)
    result = tree.copy()
    for name, dataset in groups.items():
        if dataset is not None:
            result[name] = dataset
    return result


def _log_likelihood(tree: xr.DataTree, model: pm.Model, attrs: dict,
                    backend: str | None) -> xr.Dataset:
    """The pointwise log-likelihood at the posterior draws, by PyMC's own function."""
    if "posterior" not in tree.children:
        raise AnnealingError(
            "log_likelihood=True needs the 'posterior' group that sample_ais writes; the tree "
            f"has groups {sorted(tree.children)}. Pass the result of sample_ais.")
    if not model.observed_RVs:
        raise AnnealingError(
            "log_likelihood=True needs a model with observed variables; this model has none "
            f"(free variables {[rv.name for rv in model.free_RVs]}). Leave log_likelihood "
            "False for a model without data.")
    dataset = pm.compute_log_likelihood(tree, model=model, extend_inferencedata=False,
                                        progressbar=False, backend=backend)
    return dataset.assign_attrs(attrs)
