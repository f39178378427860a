r"""A PyMC model as an annealing :class:`~pymc_anneal.paths.Path`.

The base is the prior in PyMC's unconstrained value space, :math:`\log f_0 =`
``model.varlogp`` (free variables' log densities plus the transforms' log-Jacobians, so
:math:`Z_0 = 1`), and the log ratio is ``model.datalogp`` (observed log-likelihood plus
Potentials). The value variables are raveled into one vector in ``model.value_vars`` order
and the graphs vectorized over a leading particle axis with ``vectorize_graph``.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.continuous import Flat, HalfFlat
from pymc.initial_point import make_initial_point_expression
from pymc.pytensorf import compile as compile_pymc
from pymc.pytensorf import find_rng_nodes, join_nonshared_inputs, reseed_rngs
from pytensor.graph.replace import vectorize_graph

from pymc_anneal.backends import compile_one_off
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.paths import Path

__all__ = ["ModelPath", "model_path"]


@dataclass(frozen=True, eq=False)
class ModelPath:
    """A model's annealing path plus what is needed to map particles back to variables."""

    path: Path
    value_names: tuple[str, ...]
    value_slices: tuple[tuple[str, slice, tuple[int, ...]], ...]
    signature: tuple
    output_names: tuple[str, ...]
    output_graph: tuple  # graphs of the ravelled vector (symbol ``flat_input``)
    flat_input: pt.TensorVariable
    _output_functions: dict = field(default_factory=dict, repr=False)

    def to_variables(self, positions: np.ndarray, backend: str) -> dict[str, np.ndarray]:
        """Map particles (chains, draws, d) in value space to the model's variables
        (free variables on their constrained scale, and Deterministics)."""
        fn = self._output_functions.get(backend)
        if fn is None:
            batch = pt.matrix("batch", dtype="float64")
            outputs = vectorize_graph(list(self.output_graph), replace={self.flat_input: batch})
            fn = self._output_functions[backend] = compile_one_off([batch], outputs, backend)
        chains, draws, d = positions.shape
        values = fn(positions.reshape(chains * draws, d))
        return {name: np.asarray(v).reshape(chains, draws, *np.shape(v)[1:])
                for name, v in zip(self.output_names, values)}


def _check_model(model: pm.Model) -> None:
    if not model.free_RVs:
        raise AnnealingError(
            "the model has no free random variables, so there is nothing to integrate; "
            "the evidence is just the likelihood of the data."
        )
    discrete = [v.name for v in model.value_vars if v.dtype.startswith(("int", "uint", "bool"))]
    if discrete:
        raise AnnealingError(
            f"the model has discrete free variables {discrete}. HMC annealing needs continuous "
            "variables: marginalize them out (e.g. pm.Mixture, or pymc_extras' "
            "marginalize) or make them observed."
        )
    improper = [rv.name for rv in model.free_RVs
                if isinstance(rv.owner.op, (type(Flat.rv_op), type(HalfFlat.rv_op)))]
    if improper:
        raise AnnealingError(
            f"the priors of {improper} are improper (Flat/HalfFlat), so the marginal likelihood "
            "is undefined (it depends on an arbitrary constant). Give them proper priors, "
            "e.g. pm.Normal with a wide sigma or pm.HalfNormal."
        )
    if not model.observed_RVs and not model.potentials:
        raise AnnealingError(
            "the model has no observed data (no observed= variables and no Potentials), so its "
            "evidence is 1 (log evidence 0) by definition; add observed data to compare models."
        )


def _signature(model: pm.Model) -> tuple:
    return (
        tuple(v.name for v in model.value_vars),
        tuple(v.name for v in model.observed_RVs),
        tuple(v.name for v in model.potentials),
        tuple(v.name for v in model.deterministics),
        tuple(id(v) for v in model.value_vars),
    )


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def model_path(model: pm.Model) -> ModelPath:
    """Build (or reuse) the annealing path of ``model``; validates the model first."""
    _check_model(model)
    signature = _signature(model)
    cached = _CACHE.get(model)
    if cached is not None and cached.signature == signature:
        return cached
    result = _build(model, signature)
    _CACHE[model] = result
    return result


def _build(model: pm.Model, signature: tuple) -> ModelPath:
    initial_point = model.initial_point()
    (log_prior, log_lik), flat = join_nonshared_inputs(
        initial_point, [model.varlogp, model.datalogp], model.value_vars
    )
    num_dims = int(sum(np.size(initial_point[v.name]) for v in model.value_vars))

    def build_log_densities(position):
        lp, ll = vectorize_graph([log_prior, log_lik], replace={flat: position})
        return lp, ll

    # exact prior draws in value space, in value_vars order (no initvals: see NOTES)
    draw_exprs = make_initial_point_expression(
        free_rvs=model.free_RVs,
        rvs_to_transforms=model.rvs_to_transforms,
        initval_strategies={},
        default_strategy="prior",
        return_transformed=True,
    )
    flat_draw = pt.concatenate([pt.as_tensor(e).ravel().astype("float64") for e in draw_exprs])
    draw_rngs = find_rng_nodes([flat_draw])
    draw_fn = compile_pymc(inputs=[], outputs=flat_draw, random_seed=False)  # compiled once

    def sample_base(rng: np.random.Generator, num_draws: int) -> np.ndarray:
        reseed_rngs(draw_rngs, rng.integers(2**63, size=4))
        draws = np.stack([draw_fn() for _ in range(num_draws)])
        return np.asarray(draws, dtype=np.float64).reshape(num_draws, num_dims)

    slices, start = [], 0
    for v in model.value_vars:
        shape = tuple(np.shape(initial_point[v.name]))
        size = int(np.prod(shape, dtype=int))
        slices.append((v.name, slice(start, start + size), shape))
        start += size

    rvs = list(model.free_RVs) + list(model.deterministics)
    names = tuple(rv.name for rv in rvs)
    value_graphs = model.replace_rvs_by_values(rvs)
    outputs, flat_out = join_nonshared_inputs(initial_point, value_graphs, model.value_vars)

    base_scale = _prior_scale(sample_base, num_dims)
    path = Path(
        num_dims=num_dims,
        build_log_densities=build_log_densities,
        sample_base=sample_base,
        log_base_normalizer=0.0,
        base_scale=base_scale,
        name=model.name or "model",
    )
    return ModelPath(path, tuple(v.name for v in model.value_vars), tuple(slices), signature,
                     names, tuple(outputs), flat_out)


def _prior_scale(sample_base, num_dims: int) -> np.ndarray:
    draws = sample_base(np.random.default_rng(0), 200)
    if not np.all(np.isfinite(draws)):
        raise AnnealingError(
            "prior draws contain non-finite values in the unconstrained space; check the "
            "priors' parameters."
        )
    scale = draws.std(axis=0)
    return np.where(scale > 0, scale, 1.0)
