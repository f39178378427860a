"""Non-centred coordinates for a funnel's Normal variables (issue 41).

A hierarchical model written centred, ``b ~ Normal(mu, sigma)`` with ``sigma`` a free
variable, has a funnel: as ``sigma`` shrinks the density of ``b`` near ``mu`` grows without
bound, and where the data say little about ``b`` the posterior's mass lies in that neck.
An optimizer runs into it (the Laplace fit has no mode there) and HMC mixes slowly in it
(posteriordb's seeds_stanified and seeds_centered: K = 9,000 from the prior, 70-190 s).
The evidence does not depend on the coordinates it is integrated in, so the path may use
``z = (b - mu) / sigma`` instead of ``b``:

    log pi(..., z) = log p_PyMC(..., b = mu + sigma z) + sum log sigma,

PyMC's own log density at the mapped point plus the log Jacobian of the map (``b`` is a
Normal's value, so it has no transform of its own: its value is itself). For a Normal
prior that is ``-z^2 / 2`` up to a constant, whatever ``sigma``: no neck. Prior draws are
the model's own draws mapped to ``z``, and particles are mapped back to ``b`` by the same
map as every output.

Only a Normal whose scale reads a free variable is a candidate (a fixed scale makes no
funnel), and the coordinates are only taken where the centred model's Laplace fit ran
into a neck (:func:`pymc_anneal.pymc.bases.noncentered_route`): where the data determine
``b`` well, the centred coordinates are the better ones, and every other model keeps its
path bit for bit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.basic import NormalRV

__all__ = ["Reparametrization", "noncentered_variables", "reparametrize"]


def noncentered_variables(model: pm.Model) -> tuple[str, ...]:
    """The names of the free variables that non-centred coordinates would change: each a
    ``pm.Normal`` without a transform whose scale depends on a free variable (decided from
    the graph, not from values)."""
    if any(v.dtype.startswith(("int", "uint", "bool")) for v in model.value_vars):
        return ()
    free = set(model.free_RVs)
    names = []
    for rv in model.free_RVs:
        if (not isinstance(rv.owner.op, NormalRV)
                or model.rvs_to_transforms.get(rv) is not None):
            continue
        _, sigma = rv.owner.op.dist_params(rv.owner)
        if any(a in free for a in ancestors([sigma])):
            names.append(rv.name)
    return tuple(names)


class Reparametrization(NamedTuple):
    """The model's value variables in non-centred coordinates."""

    value_vars: list
    """The path's inputs: the model's value variables, a ``z`` (named
    ``NAME_noncentered__``) in place of each non-centred one."""
    replace: dict
    """Each non-centred value variable of the model -> ``mu + sigma z`` in the path's
    inputs."""
    log_jacobian: pt.TensorVariable
    """``sum log sigma`` over the non-centred variables' elements, in the model's value
    variables (to be rewritten as PyMC rewrites a log density, then ``replace``d)."""
    to_path: list
    """Each path input as a graph of the model's value variables (``(b - mu) / sigma``
    for a non-centred one, the variable itself otherwise)."""


def reparametrize(model: pm.Model, names: tuple[str, ...],
                  shapes: dict[str, np.ndarray]) -> Reparametrization:
    """The non-centred coordinates of the free variables ``names``
    (:func:`noncentered_variables`); ``shapes``: a point of each value variable's shape.
    Processed in the model's order, so a location or scale that reads another non-centred
    variable reads its ``mu + sigma z``."""
    replace, value_vars, jacobians, to_path = {}, [], [], []
    for rv in model.free_RVs:
        value = model.rvs_to_values[rv]
        if rv.name not in names:
            value_vars.append(value)
            to_path.append(value)
            continue
        shape = tuple(int(n) for n in np.shape(shapes[value.name]))
        mu, sigma = model.replace_rvs_by_values(rv.owner.op.dist_params(rv.owner))
        loc, scale = pt.broadcast_to(mu, shape), pt.broadcast_to(sigma, shape)
        z = pt.tensor(name=f"{rv.name}_noncentered__", dtype=value.dtype, shape=shape)
        mapped = loc + scale * z
        replace[value] = graph_replace(mapped, replace, strict=False) if replace else mapped
        # -inf, not NaN, where the scale is not positive (PyMC's own log density is -inf)
        jacobians.append(pt.switch(scale > 0, pt.log(scale), -np.inf).sum())
        to_path.append((value - loc) / scale)
        value_vars.append(z)
    return Reparametrization(value_vars, replace, pt.add(*jacobians) if len(jacobians) > 1
                             else jacobians[0], to_path)
