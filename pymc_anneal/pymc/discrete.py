r"""Discrete free variables of a PyMC model, summed out exactly.

A discrete variable whose support is finite (``Bernoulli``, ``Categorical``,
``DiscreteUniform``, ``Binomial`` and ``BetaBinomial`` with a constant ``n``) leaves the
annealing state: the log densities are log-sum-exps over its support, and annealing runs
over the continuous variables :math:`\theta` alone. This is the *summed* route of the design
notes; the tempered density is

.. math::

    \log f_\beta(\theta) = \log p(\theta) + \beta \log \sum_z p(z \mid \theta)\,
    p(y \mid z, \theta),

the prior of :math:`\theta` times the likelihood of the summed model to the power
:math:`\beta`, so :math:`\beta = 0` is the normalized prior and :math:`Z_1` is the evidence
of the original model. When a continuous prior depends on a discrete variable (a mixture
prior), :math:`p(\theta) = \sum_z p(z)\,p(\theta \mid z)` is summed the same way.

Two kinds of sums, chosen per variable:

- **per element**: a vector of labels whose elements are independent given the rest (one
  :math:`z_i` per observation, as in ``mu[z]``) is summed element by element,
  :math:`\sum_i \log \sum_k \exp(\ell_{ik})`, at cost O(n K), never :math:`K^n`. The
  independence is checked when the path is built, by changing sets of elements and checking
  that no element of the dependent log-density terms outside the set moves
  (:func:`_elementwise`);
- **jointly**: the remaining discrete variables (scalars such as a switch point, or a short
  vector of inclusion indicators) are enumerated over the product of their supports, at most
  :data:`MAX_CONFIGURATIONS` configurations.

Variables this module cannot sum (unbounded or huge supports, supports that depend on other
random variables, too many joint configurations) stay on the path with ``discrete="auto"``
and are annealed by :mod:`pymc_anneal.kernels.compound`; so do those whose sum would cost
more than :data:`SUM_BUDGET` elements per particle (:meth:`DiscreteSums.cost`, read off the
hoisted graph and the data's shapes when the path is built, :func:`check_cost`).

A joint sum costs C configurations times the graph that depends on the summed values, and
``vectorize_graph`` batches everything downstream of them. :func:`hoisted_sum` first moves
that work out: :math:`f(\mathrm{switch}(c, a, b), x) = \mathrm{switch}(c, f(a, x), f(b,
x))` where only :math:`c` depends on the summed values (a change point's rate: two logs per
particle, not C x n), then :math:`\sum_t \mathrm{switch}(c_t, a_t, b_t) = c \cdot (a - b)
+ \sum_t b_t` as one matrix product over the configurations (non-finite elements counted
apart), read off prefix sums when every configuration selects a prefix or suffix.

After annealing, the summed-out variables come back from their exact conditional
:math:`p(z \mid \theta, y)` at each final particle (:meth:`DiscreteSums.draw`), so the
posterior holds them with their integer dtype.

We measured pymc-extras' ``marginalize`` (0.15.1) as the alternative (2026-11-24, PyMC
6.4.0, PyTensor 3.3.8). Its metadata pins ``pymc<6.4`` and ``pytensor<3.4``, so depending
on it would downgrade PyMC; installed without its dependencies it imports (2.9 s) and, on
the three models of ``tests/discrete_models.py``: marginalizes the 40 mixture labels
(log density equal to ours to 1e-13; 4.5 s to marginalize and compile cold, 0.75 s warm,
against our 0.12 s to build the path); refuses the change point ("Cannot marginalize switch
due to dependent Deterministic rate"); refuses the latent Poisson count (unbounded), which
needs the annealed route anyway. Its marginalized model also mixes prior and likelihood
terms, which annealing must keep apart. So this module is ours: small, working on the
log-density graphs PyMC already gives, and our pins stay as they are
(``benchmarks/measure_pymc_extras.py`` repeats the measurement).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
from pymc.distributions.discrete import DiscreteUniformRV
from pytensor.conditional.op import IfElse
from pytensor.gradient import disconnected_grad
from pytensor.graph.basic import Constant
from pytensor.graph.replace import _vectorize_node, vectorize_graph
from pytensor.graph.traversal import ancestors, graph_inputs, io_toposort
from pytensor.tensor.basic import Alloc
from pytensor.tensor.elemwise import CAReduce, Elemwise
from pytensor.tensor.math import Dot
from pytensor.tensor.random.basic import BernoulliRV, BetaBinomialRV, BinomialRV, CategoricalRV

from pymc_anneal.backends import python_mode
from pymc_anneal.exceptions import AnnealingError

__all__ = ["MAX_CONFIGURATIONS", "MAX_SUPPORT", "SUM_BUDGET", "DiscreteSums", "SumTooCostly",
           "TooManyConfigurations", "finite_support", "is_summable"]

MAX_SUPPORT = 10_000
"""The largest support of one discrete variable (per element) that is summed exactly."""
MAX_CONFIGURATIONS = 4096
"""The most joint configurations of the jointly enumerated discrete variables."""
MULTIPLY_ADD_COST = 0.125
"""One multiply-add of a matrix product, in elements of :meth:`DiscreteSums.cost` (about
0.23 ns against 1.8 ns per elementwise element with its gradient, in the measurement of
:data:`SUM_BUDGET`)."""
SUM_BUDGET = 32_768
r"""The most elements per particle (:meth:`DiscreteSums.cost`: the nodes of the summed log
densities that depend on the summed values and on the particle) that ``discrete="auto"``
sums exactly; above it the summed variable that weighs most is annealed by the compound
kernel instead, and the path says why (``ModelPath.discrete_notes``, and an INFO log line).

Why this value (``benchmarks/measure_sum_budget.py``, JAX, 1000 particles, value and
gradient, the coal-mining model, 2026-11-26, 2 loaded cores, rough): one summed element
costs 1.8 to 4.8 ns per particle (the slope between the hoisted sum, cost 7,332, and the
plain one, 187,484), one annealed discrete coordinate 3.0 to 3.6 us per particle and step
(the compound kernel's Metropolis evaluation and its recomputation with the gradient). So
one annealed variable's step costs a sum of about 750 to 1,800 elements, about 3,400 with
the extra temperatures the annealed route needed on that model (K = 271 against 173),
where the two routes' first calls were within 20% of each other (design notes); small
graphs cost less than the slope says (the coal sums of 7,332 and 19,544 elements: 1x and
1.5x an annealed step). The budget sits about 4x above the break-even: an exact sum has
nothing to mix and draws the variable exactly. The models of the tests (costs 270 to
19,542 since a check's sum is counted, not multiplied out: the coal model's 7,332 above is
1,338 now) stay summed."""


def _constant(graph, what: str, name: str, random) -> np.ndarray:
    if any(a in random for a in ancestors([graph])):
        raise AnnealingError(
            f"the support of the discrete variable {name!r} depends on other random variables "
            f"(its {what}), so it cannot be enumerated once for all particles. Anneal it "
            f"instead (discrete='auto' or 'anneal'), or give it a fixed {what}."
        )
    # Python mode: PyTensor's default (Numba) compiles for seconds on a cold cache
    return np.asarray(graph.eval(mode=python_mode()))


def finite_support(rv, random) -> np.ndarray:
    """The values a discrete random variable can take (for every element), as a sorted int
    array; a clear error when the support is unbounded or too large to sum. ``random``: the
    model's free random variables and value variables, on which the support may not
    depend."""
    op, name = rv.owner.op, rv.name
    params = op.dist_params(rv.owner) if hasattr(op, "dist_params") else []
    if isinstance(op, BernoulliRV):
        low, high = 0, 1
    elif isinstance(op, CategoricalRV):
        p = params[0]
        k = p.type.shape[-1]
        if k is None:
            k = int(_constant(p.shape[-1], "number of categories", name, random))
        low, high = 0, int(k) - 1
    elif isinstance(op, DiscreteUniformRV):
        low = int(np.min(_constant(params[0], "lower bound", name, random)))
        high = int(np.max(_constant(params[1], "upper bound", name, random)))
    elif isinstance(op, BinomialRV | BetaBinomialRV):
        low, high = 0, int(np.max(_constant(params[0], "n", name, random)))
    else:
        raise AnnealingError(
            f"the discrete variable {name!r} ({type(op).__name__.removesuffix('RV')}) has an "
            "unbounded support, which cannot be summed out exactly. Summable discrete "
            "variables are Bernoulli, Categorical, DiscreteUniform, and Binomial or "
            "BetaBinomial with a fixed n. Anneal this one instead (discrete='auto' or "
            "'anneal'), or marginalize it analytically."
        )
    size = high - low + 1
    if size > MAX_SUPPORT:
        raise AnnealingError(
            f"the discrete variable {name!r} has {size:,} possible values ({low} to {high}), "
            f"more than the {MAX_SUPPORT:,} that can be summed exactly at every annealing "
            "step. Anneal it instead (discrete='auto' or 'anneal'), or use a coarser support."
        )
    return np.arange(low, high + 1)


class TooManyConfigurations(AnnealingError):
    """Discrete variables whose joint support is too large to enumerate (``variables``, the
    largest support first)."""

    def __init__(self, message: str, variables: tuple[str, ...]):
        super().__init__(message)
        self.variables = variables


class SumTooCostly(TooManyConfigurations):
    """Discrete variables whose exact sum would cost more per particle than
    :data:`SUM_BUDGET` (``discrete="auto"`` then anneals ``variables[0]`` and tries again)."""


def check_cost(sums: DiscreteSums, graphs, inputs, point) -> int:
    """The per-particle cost of the sums (:meth:`DiscreteSums.cost`); raises
    :class:`SumTooCostly` when it exceeds :data:`SUM_BUDGET`, naming first the variable
    whose support weighs most (the joint ones by their configurations, the per-element ones
    by support size x elements)."""
    cost = sums.cost(graphs, inputs, point)
    if cost > SUM_BUDGET:
        weights = {v.name: v.size * math.log(len(v.support)) for v in sums.joint}
        weights.update({v.name: math.log(len(v.support) * v.size) for v in sums.per_element})
        names = tuple(sorted(weights, key=lambda n: -weights[n]))
        raise SumTooCostly(
            f"summing {', '.join(names)} exactly would compute {cost:,} elements per particle "
            f"and evaluation, more than SUM_BUDGET = {SUM_BUDGET:,}: {names[0]!r} is annealed "
            "instead (discrete='sum' sums it anyway)", names)
    return cost


def is_summable(rv, random) -> bool:
    """Whether :func:`finite_support` accepts ``rv``."""
    try:
        finite_support(rv, random)
    except AnnealingError:
        return False
    return True


@dataclass(frozen=True, eq=False)
class _Var:
    value: pt.TensorVariable  # the model's value variable
    name: str
    support: np.ndarray  # (K,) in the value's dtype
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=int))

    @functools.cached_property
    def _grid(self) -> pt.TensorVariable:
        return self.grid_constant()

    def grid(self) -> pt.TensorVariable:
        """(K, *shape): every element at each support value (one constant per variable,
        so that :meth:`DiscreteSums.cost` finds the nodes that depend on it)."""
        return self._grid

    def grid_constant(self) -> pt.TensorVariable:
        k = len(self.support)
        values = np.broadcast_to(self.support.reshape((k,) + (1,) * len(self.shape)),
                                 (k, *self.shape))
        return pt.as_tensor(np.ascontiguousarray(values).astype(self.value.dtype))


def _depends(term, var: _Var) -> bool:
    return var.value in ancestors([term])


@dataclass(frozen=True, eq=False)
class DiscreteSums:
    """How a model's discrete variables are summed: per element or jointly.

    ``joint`` variables are enumerated over the product of their supports (``configs``, one
    column block per variable); ``per_element`` variables are summed element by element.
    """

    joint: tuple[_Var, ...]
    per_element: tuple[_Var, ...]
    configs: tuple[np.ndarray, ...]  # per joint variable: (C, *shape)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.joint + self.per_element)

    @classmethod
    def plan(cls, model, discrete_values, terms, check_fn, points: np.ndarray,
             point: dict) -> DiscreteSums:
        """Classify the discrete value variables. ``terms`` are the model's elementwise
        log-density terms (graphs of the discrete values and of the path's variables, the
        ``check_fn`` inputs); ``check_fn`` (:func:`compile_check`) evaluates them at a batch
        of rows, for the per-element independence check at ``points`` (P, d), exact prior
        draws of the path's variables. ``point``: an array of each value variable's shape,
        by name."""
        random = set(model.value_vars) | set(model.free_RVs)
        rvs = {model.values_to_rvs[v]: v for v in discrete_values}
        variables = []
        for rv, value in rvs.items():
            support = finite_support(rv, random).astype(value.dtype)
            shape = tuple(int(s) for s in point[value.name].shape)
            variables.append(_Var(value, value.name, support, shape))
        per_element, joint = [], []
        rng = np.random.default_rng(0)
        for v in variables:
            if v.size > 1 and _elementwise(v, variables, terms, check_fn, points, rng):
                per_element.append(v)
            else:
                joint.append(v)
        count = math.prod(len(v.support) ** v.size for v in joint)
        if count > MAX_CONFIGURATIONS:
            names = ", ".join(f"{v.name} ({len(v.support)} values"
                              + (f" x {v.size} elements)" if v.size > 1 else ")") for v in joint)
            raise TooManyConfigurations(
                f"the discrete variables {names} have {count:.3g} joint configurations, more "
                f"than the {MAX_CONFIGURATIONS} that can be summed exactly, and they cannot be "
                "summed element by element (an element's log-density terms depend on other "
                "elements or on other vector-valued discrete variables). Anneal them instead "
                "(discrete='auto' or 'anneal'), reduce their number or support, or "
                "marginalize them in the model.",
                tuple(v.name for v in sorted(joint, key=lambda v: -v.size * math.log(
                    len(v.support))))
            )
        return cls._joint(tuple(joint), tuple(per_element))

    @classmethod
    def _joint(cls, joint, per_element) -> DiscreteSums:
        if not joint:
            return cls((), per_element, ())
        grids = np.meshgrid(*[np.arange(len(v.support) ** v.size) for v in joint], indexing="ij")
        configs = []
        for v, g in zip(joint, grids):
            index = g.ravel()
            k = len(v.support)
            digits = np.stack([(index // k**j) % k for j in range(v.size)], axis=-1)
            configs.append(v.support[digits].reshape(len(index), *v.shape))
        return cls(joint, per_element, tuple(configs))

    # -- graphs ------------------------------------------------------------------------

    def _parts(self, terms, hoist: bool = False):
        """Per-particle graphs: (rest, {var: per-element logits (K, *shape)}, enumerated)
        with the joint variables still symbolic in ``rest``, which includes the per-element
        log-sum-exps. With ``hoist``, the terms that depend on joint variables only are left
        out of ``rest``: ``enumerated`` holds their sums over all configurations at once,
        (C,) graphs built by :func:`hoisted_sum`."""
        remaining = list(terms)
        logits, total = {}, []
        for v in self.per_element:
            dependent = [t for t in remaining if _depends(t, v)]
            remaining = [t for t in remaining if not _depends(t, v)]
            if not dependent:
                continue
            axes = len(v.shape)
            element = sum(t.sum(axis=tuple(range(axes, t.ndim))) if t.ndim > axes
                          else pt.broadcast_to(t, v.shape) for t in dependent)
            (grid_logits,) = vectorize_graph([element], replace={v.value: v.grid()})
            logits[v] = grid_logits
            total.append(pt.logsumexp(grid_logits, axis=0).sum())
        joint = [v.value for v in self.joint]
        enumerated = []
        if hoist and joint:
            enumerated = [hoisted_sum(t, joint, self._enumerate) for t in remaining
                          if any(_depends(t, v) for v in self.joint)]
            remaining = [t for t in remaining if not any(_depends(t, v) for v in self.joint)]
        rest = sum(t.sum() for t in remaining) + sum(total)
        return pt.as_tensor(rest, dtype="float64"), logits, enumerated

    def _enumerate(self, graph) -> pt.TensorVariable:
        """``graph`` at every joint configuration: a leading axis of length C."""
        (out,) = vectorize_graph([graph], replace=self._config_replacements())
        return out

    def marginal(self, terms, hoist: bool | None = None) -> pt.TensorVariable:
        """The per-particle log-sum-exp of the sum of ``terms`` over all discrete variables
        they depend on (a scalar graph). The joint variables' terms are summed by
        :func:`hoisted_sum` (unless ``hoist`` is False; None: :data:`HOIST`): work that
        does not depend on them is done once per particle, not once per configuration."""
        rest, _, enumerated = self._parts(terms, hoist=HOIST if hoist is None else hoist)
        if not self.joint:
            return rest
        per_config = self._enumerate(rest) + sum(enumerated)
        return pt.logsumexp(per_config)

    def conditional_logits(self, terms) -> list[pt.TensorVariable]:
        """Per-particle graphs of the unnormalized conditional log-probabilities: the joint
        configurations' (C,) (only when there are joint variables), then each per-element
        variable's (C, K, *shape) (C = 1 without joint variables)."""
        rest, logits, enumerated = self._parts(terms, hoist=HOIST)
        outputs = [rest] + [logits[v] for v in self.per_element if v in logits]
        if self.joint:
            outputs = vectorize_graph(outputs, replace=self._config_replacements())
            outputs[0] = outputs[0] + sum(enumerated)  # the hoisted terms' sums, (C,)
        else:
            outputs = [o[None] for o in outputs]
        return outputs if self.joint else outputs[1:]

    @functools.cached_property
    def _configs_constants(self) -> tuple:
        return tuple(pt.as_tensor(c.astype(v.value.dtype))
                     for v, c in zip(self.joint, self.configs))

    def _config_replacements(self):
        return dict(zip((v.value for v in self.joint), self._configs_constants))

    def cost(self, graphs, inputs, point: np.ndarray) -> int:
        """The elements computed per particle, in one evaluation of ``graphs`` (the summed
        log densities, built by :meth:`marginal`), by the nodes that depend on the summed
        values (the enumerated configurations and the per-element supports) and on the
        particle (``inputs``): the rest of the graph is evaluated by either route, and
        what depends on the data and the supports alone is computed once, not per
        particle. Read off the graph when the path is
        built: static shapes where the types have them, else the shapes evaluated in
        Python mode at ``point`` (the ``inputs``' values; shapes do not depend on them).
        A matrix product also counts the elements of its first factor (its multiply-adds),
        each as :data:`MULTIPLY_ADD_COST` elements.
        Deterministic: the same graph and data shapes give the same cost."""
        marked = set(self._configs_constants) | {v.grid() for v in self.per_element}
        particle, counted, products = set(inputs), [], []
        for node in io_toposort(list(graph_inputs(graphs)), list(graphs)):
            if any(i in marked for i in node.inputs):
                marked.update(node.outputs)
                if any(i in particle for i in node.inputs):
                    counted.extend(o for o in node.outputs if hasattr(o.type, "shape"))
                    if isinstance(getattr(node.op, "core_op", node.op), Dot):
                        products.append(node.inputs[0])  # its multiply-adds
            if any(i in particle for i in node.inputs):
                particle.update(node.outputs)
        static = {o: math.prod(o.type.shape) for o in counted + products
                  if all(s is not None for s in o.type.shape)}
        unknown = list(dict.fromkeys(o for o in counted + products if o not in static))
        if unknown:
            shapes = pytensor.function(list(inputs), [o.shape for o in unknown],
                                       on_unused_input="ignore", mode=python_mode())(*point)
            static.update({o: math.prod(int(n) for n in np.atleast_1d(s))
                           for o, s in zip(unknown, shapes)})
        return int(sum(static[o] for o in counted)
                   + MULTIPLY_ADD_COST * sum(static[o] for o in products))

    def draw(self, logits: list[np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Draw the discrete variables at each of n particles from their exact conditional,
        given the arrays of :meth:`conditional_logits` batched over particles."""
        out: dict[str, np.ndarray] = {}
        if self.joint:
            joint_logits, elem = logits[0], logits[1:]
            choice = _categorical(joint_logits, rng)  # (n,)
            for v, c in zip(self.joint, self.configs):
                out[v.name] = c[choice]
        else:
            elem = logits
            choice = np.zeros(len(elem[0]) if elem else 0, dtype=int)
        summed = [v for v in self.per_element]
        for v, lg in zip(summed, elem):
            lg = lg[np.arange(len(choice)), choice]  # (n, K, *shape)
            index = _categorical(np.moveaxis(lg, 1, -1), rng)  # (n, *shape)
            out[v.name] = v.support[index]
        return out


def _categorical(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw indices along the last axis of unnormalized log-probabilities (Gumbel-max)."""
    logits = np.where(np.isnan(logits), -np.inf, logits)
    return np.argmax(logits + rng.gumbel(size=logits.shape), axis=-1)


ELEMENTWISE_PROBES = 64
r"""Random half-subsets of a vector variable's elements changed at once by the per-element
check (:func:`_elementwise`), besides every single element of a variable of up to this many
elements: a term that depends on another element than its own is caught by each probe that
changes that element and not its own, so a hidden dependence escapes all probes at one point
with probability at most :math:`(3/4)^{64} \approx 10^{-8}`."""
ELEMENTWISE_POINTS = 8
"""Points at which the per-element check (:func:`_elementwise`) probes the terms: exact
draws of the prior of the variables on the path (never the model's initial point, where a
coupling coefficient with a symmetric prior is exactly 0 and hides the coupling), each with
its own random values of the summed variables."""
HOIST = True
"""Whether :meth:`DiscreteSums.marginal` builds the joint sum with :func:`hoisted_sum` (the
tests compare it with the plain sum)."""
_MAX_CHECK_VALUES = 20_000_000
"""The most term values one evaluation of the check computes (fewer points above it)."""


def _elementwise(var: _Var, variables, terms, check_fn, points: np.ndarray,
                 rng: np.random.Generator) -> bool:
    """Whether the terms that depend on ``var`` depend on it element by element, and on no
    other vector-valued discrete variable.

    The structure is read off the graph where it can be (a term that depends on another
    vector-valued discrete variable, or whose shape does not line up with ``var``'s, is not
    element by element); the rest is probed numerically at each of ``points`` (exact prior
    draws of the path's variables, (P, d)) with random values of the discrete variables:
    change a set of elements to other values of the support and check that no element of a
    term outside the set moves. The sets are each single element (every pair of elements,
    up to :data:`ELEMENTWISE_PROBES` elements) and :data:`ELEMENTWISE_PROBES` random halves
    (a dependence such as ``mu[z] + z[0]``, where every term moves with ``z[0]``, is found
    whichever element carries it). An element whose terms are not finite at any point
    cannot be probed, so the variable is then not summed element by element (the
    conservative choice: summed jointly, or annealed)."""
    dependent = [i for i, t in enumerate(terms) if _depends(t, var)]
    others = [v for v in variables if v is not var and v.size > 1]
    if any(_depends(terms[i], o) for i in dependent for o in others):
        return False
    for i in dependent:
        shape = terms[i].type.shape
        if len(shape) < len(var.shape) or any(
                s is not None and s != vs for s, vs in zip(shape, var.shape)):
            return False
    if len(var.support) < 2:  # a constant: nothing to change
        return True
    size = var.size
    probes = [np.eye(size, dtype=bool)[j] for j in range(size)] if size <= ELEMENTWISE_PROBES \
        else []
    probes += [rng.random(size) < 0.5 for _ in range(ELEMENTWISE_PROBES)]
    probes = np.array([p for p in probes if p.any()])
    rows_per_point = 1 + len(probes)
    num_points = int(np.clip(_MAX_CHECK_VALUES // max(rows_per_point * size, 1), 1,
                             len(points)))
    points = points[:num_points]
    flat_rows, value_rows = [], {v.name: [] for v in variables}
    for point in points:
        values = {v.name: rng.choice(v.support, size=v.shape) for v in variables}
        current = values[var.name].reshape(-1)
        flat_rows.append(np.broadcast_to(point, (rows_per_point, point.size)))
        for v in variables:
            if v is not var:
                value_rows[v.name].append(np.broadcast_to(values[v.name],
                                                          (rows_per_point, *v.shape)))
        changed = np.repeat(current[None], rows_per_point, axis=0)
        for row, changed_set in enumerate(probes, start=1):
            for j in np.flatnonzero(changed_set):  # another value of the support, at random
                changed[row, j] = rng.choice(var.support[var.support != current[j]])
        value_rows[var.name].append(changed.reshape(rows_per_point, *var.shape))
    outputs = check_fn(dependent, np.concatenate(flat_rows),
                       {k: np.concatenate(v) for k, v in value_rows.items()})
    outside = ~probes.reshape(len(probes), *var.shape)
    for out in outputs:
        out = np.asarray(out)
        if out.shape[1:1 + len(var.shape)] != var.shape:
            return False
        out = out.reshape(num_points, rows_per_point, *var.shape, -1)
        base, after = out[:, :1], out[:, 1:]
        if not np.isfinite(base).any(axis=(0, 1, -1)).all():
            return False  # an element that cannot be probed anywhere
        moved = ~np.isclose(base, after, rtol=0, atol=0, equal_nan=True)
        if (moved.any(axis=-1) & outside[None]).any():
            return False
    return True


def compile_check(terms, flat, discrete_values):
    """``check_fn`` for :meth:`DiscreteSums.plan`: ``check_fn(term_indices, positions,
    values)`` evaluates the terms at a batch of rows, positions (B, d) of the path's
    variables and each discrete variable's values (B, *shape), as arrays (B, *term shape):
    one call of the terms' graphs vectorized over the rows (or, where PyTensor cannot
    vectorize them, one call per row)."""
    cache = {}

    def compile_terms(indices):
        selected = [terms[i] for i in indices]
        batch = pt.matrix("positions", dtype=flat.dtype)
        batched = {v: pt.tensor(f"{v.name}_rows", dtype=v.dtype, shape=(None, *v.type.shape))
                   for v in discrete_values}
        try:
            outputs = vectorize_graph(selected, replace={flat: batch, **batched})
            fn = pytensor.function([batch, *batched.values()], outputs,
                                   on_unused_input="ignore", mode=python_mode())
            return fn, True
        except Exception:  # noqa: BLE001 - an op PyTensor cannot vectorize: row by row
            fn = pytensor.function([flat, *discrete_values], selected,
                                   on_unused_input="ignore", mode=python_mode())
            return fn, False

    def check_fn(indices, positions, values):
        key = tuple(indices)
        if key not in cache:
            cache[key] = compile_terms(indices)
        fn, vectorized = cache[key]
        rows = len(positions)
        ordered = [values[v.name] for v in discrete_values]
        if vectorized:
            outputs = fn(positions, *ordered)
            return [np.broadcast_to(o, (rows, *np.shape(o)[np.ndim(o) - terms[i].ndim:]))
                    if np.ndim(o) == terms[i].ndim else np.asarray(o)
                    for o, i in zip(outputs, indices)]
        per_row = [fn(positions[r], *[v[r] for v in ordered]) for r in range(rows)]
        return [np.stack([row[k] for row in per_row]) for k in range(len(indices))]

    return check_fn


# -- hoisting work out of the joint sum ----------------------------------------------------


class _NotHoisted(Exception):
    """A graph :func:`hoisted_sum` cannot rebuild (the plain sum is used)."""


def _branch_switch(var, dependent: set):
    """``(c, a, b)`` when ``var`` is ``switch(c, a, b)`` whose condition depends on the summed
    variables and whose branches do not; else None."""
    node = var.owner
    if (node is None or not isinstance(node.op, Elemwise)
            or not isinstance(node.op.scalar_op, ps.Switch)):
        return None
    c, a, b = node.inputs
    if c in dependent and a not in dependent and b not in dependent:
        return c, a, b
    return None


def _lifted(node, inputs, dependent: set):
    """The switch that replaces the elementwise ``node`` on ``inputs``, or None."""
    if _is_full_all(node) and inputs[0] in dependent:
        branch = _branch_switch(inputs[0], dependent)
        shape = inputs[0].type.shape
        if branch is None or any(s is None for s in shape):
            return None
        c, a, b = branch
        false = [1.0 - x.astype("float64") for x in (a, b)]  # all() <=> no False selected
        return pt.eq(_selected_sum(c, *false, shape, finite_branches=True), 0)
    if not isinstance(node.op, Elemwise) or len(node.outputs) != 1:
        return None
    switches = [_branch_switch(i, dependent) if i in dependent else None for i in inputs]
    conditions = {id(sw[0]) for sw in switches if sw is not None}
    if len(conditions) != 1 or any(sw is None and i in dependent
                                   for sw, i in zip(switches, inputs)):
        return None
    c = next(sw[0] for sw in switches if sw is not None)
    branches = [node.op(*[i if sw is None else sw[k].astype(i.dtype)
                          for sw, i in zip(switches, inputs)]) for k in (1, 2)]
    lifted = pt.switch(c, *branches)
    old = node.outputs[0]
    return lifted if lifted.dtype == old.dtype and lifted.ndim == old.ndim else None


def _is_full_all(node) -> bool:
    """Whether ``node`` is ``all`` over every axis of its input (a parameter check)."""
    op = node.op
    return (isinstance(op, CAReduce) and isinstance(op.scalar_op, ps.AND)
            and (op.axis is None or len(op.axis) == node.inputs[0].ndim)
            and node.outputs[0].ndim == 0)


def _lift_switches(term, summed: list):
    r"""``term`` with every elementwise operation applied to switches on the summed values
    moved inside them: :math:`f(\mathrm{switch}(c, a, b), x) = \mathrm{switch}(c, f(a, x),
    f(b, x))` where ``c`` depends on the summed variables and ``a``, ``b`` and ``x`` do not
    (several inputs may be switches on the same ``c``). An elementwise identity, exact value
    by value; it leaves ``f(a, x)`` and ``f(b, x)`` independent of the summed variables, so
    enumerating them computes each once per particle instead of once per configuration.
    Returns the new graph and the set of its variables that depend on the summed ones."""
    dependent = set(summed)
    new = {}
    for node in io_toposort(list(graph_inputs([term])), [term]):
        inputs = [new.get(i, i) for i in node.inputs]
        depends = any(i in dependent for i in inputs)
        lifted = _lifted(node, inputs, dependent) if depends else None
        if lifted is not None:
            outputs = [lifted]
        elif all(i is j for i, j in zip(inputs, node.inputs)):
            outputs = node.outputs
        else:
            outputs = node.op.make_node(*inputs).outputs
        for old, out in zip(node.outputs, outputs):
            if out.type != old.type:
                try:
                    out = old.type.filter_variable(out)
                except TypeError as exc:
                    raise _NotHoisted from exc
            new[old] = out
            if depends:
                dependent.add(out)
    return new.get(term, term), dependent


def _counts(x, base: float):
    """Each element's class as a number: 1 for -inf, ``base`` for +inf, ``base**2`` for NaN,
    0 when finite (a sum of them counts each class exactly while every count < base)."""
    return (pt.isneginf(x) + base * pt.isposinf(x) + base**2 * pt.isnan(x)).astype("float64")


def _selected_sum(c, a, b, shape, enumerate_=None, finite_branches=False):
    r""":math:`\sum \mathrm{switch}(c, a, b)` over all elements as two dot products with the
    condition, :math:`c \cdot (a - b) + \sum b` on the finite parts, plus the infinite and
    NaN elements counted the same way (by :func:`_counts`): the sum is NaN with a selected
    NaN or both infinities, else -inf or +inf with one, else the finite sum. With
    ``enumerate_`` (:meth:`DiscreteSums._enumerate`), the sums at all C configurations at
    once: the condition becomes a constant (C, size) matrix and the dots one matrix
    product per batch of particles (whose gradient is one more).

    A branch that is one value for every element (a parameter check such as a rate's
    ``early >= 0``, or a rate itself) is not broadcast into the product: its dot with the
    condition is that value times the number of selected elements,
    :math:`c \cdot (v \mathbf{1}) = v \sum_t c_t`, which is O(1) per particle and
    configuration where the product is O(size). With ``finite_branches``, the caller
    vouches that no element of ``a`` or ``b`` is infinite or NaN (a parameter check's 0/1),
    and the counting is left out."""
    size = int(np.prod(shape))
    if size**3 >= 2**52:
        raise _NotHoisted
    if c.type.shape != shape:
        c = pt.broadcast_to(c, shape)
    # a branch constant over the elements stays one value per particle
    uniform = [x.type.ndim == 0 or all(x.type.broadcastable) for x in (a, b)]
    a, b = (x.reshape(()) if one else
            (x if x.type.shape == shape else pt.broadcast_to(x, shape))
            for x, one in zip((a, b), uniform))
    if enumerate_ is not None:
        c = enumerate_(c)
        c = c.reshape((c.shape[0], size)) if len(shape) != 1 else c
    elif len(shape) != 1:
        c = c.reshape((size,))
    if len(shape) != 1:
        a, b = (x if one else x.reshape((size,)) for x, one in zip((a, b), uniform))
    c = c.astype("float64")

    def finite(x):
        return pt.switch(pt.isfinite(x), x, 0.0).astype("float64")

    base = float(size + 1)
    dot = _prefix_dot(c) if enumerate_ is not None else None
    dot = dot or (lambda x: pt.dot(c, x))
    selected = c.sum(axis=-1)  # elements where c holds (per configuration)

    def switch_sum(xa, xb):  # sum over the elements of switch(c, xa, xb)
        if not any(uniform):
            return dot(xa - xb) + xb.sum()
        on = selected * xa if uniform[0] else dot(xa)
        off = (size - selected) * xb if uniform[1] else xb.sum() - dot(xb)
        return on + off

    if finite_branches:
        return switch_sum(a.astype("float64"), b.astype("float64"))
    total = switch_sum(finite(a), finite(b))
    count = switch_sum(_counts(a, base), _counts(b, base))
    nans = pt.floor(count / base**2 + 0.5 / base**2)
    count = count - nans * base**2
    pos = pt.floor(count / base + 0.5 / base)
    neg = pt.round(count - pos * base)
    # the non-finite part adds to the finite sum (x + nan = nan, x - inf = -inf): its
    # gradient is zero, and disconnected, so that the gradient does not need the counting
    extra = pt.switch(pt.gt(nans, 0) | (pt.gt(pos, 0) & pt.gt(neg, 0)), np.nan,
                      pt.switch(pt.gt(neg, 0), -np.inf, pt.switch(pt.gt(pos, 0), np.inf, 0.0)))
    exact = total + disconnected_grad(extra)
    # with no infinite or NaN element nothing is counted: exact == total
    all_finite = pt.isfinite(a).all() & pt.isfinite(b).all()
    return shortcut(all_finite, total, exact)


class _Shortcut(IfElse):
    """``shortcut(holds, fast, exact)``: the value of ``exact``, taken from ``fast`` (not
    computed) where ``holds``, the caller vouching that ``fast == exact`` there. Batched
    over particles (``vectorize_graph``), it is one branch for the whole batch:
    ``fast`` when ``holds`` for every particle, else ``exact``; so the exact graph's work
    (the non-finite counting of :func:`_selected_sum`, a third of the coal model's
    evaluation) runs only for a batch that needs it. JAX and Numba put the branches in a
    conditional (PyTensor's ``introduce_lazy_ifelse``), the C backend's lazy linker skips
    the branch not taken, and Python mode computes both.

    Its gradient is an elementwise selection, not another conditional: IfElse's own
    would put ``zeros_like`` of a batch-sized array in a branch, whose shape JAX cannot
    read there (a traced operand of ``lax.cond``)."""

    def __init__(self):
        super().__init__(n_outs=1, name="shortcut")

    def pullback(self, ins, outputs, grads):
        holds, (g,) = ins[0], grads
        zero = pt.zeros((), dtype=g.dtype)
        return [holds.zeros_like(dtype="float64"), pt.switch(holds, g, zero),
                pt.switch(holds, zero, g)]


def shortcut(holds, fast, exact):
    """See :class:`_Shortcut` (``holds`` a scalar, ``fast`` and ``exact`` one type)."""
    return _Shortcut()(holds, fast, exact)


@_vectorize_node.register(_Shortcut)
def _vectorize_shortcut(op, node, holds, fast, exact):
    if fast.type.ndim != exact.type.ndim or fast.type.broadcastable != exact.type.broadcastable:
        fast, exact = pt.broadcast_arrays(fast, exact)
    return [shortcut(pt.all(holds), fast, exact)]


def _prefix_dot(matrix):
    r"""``x -> matrix @ x`` through prefix sums when ``matrix`` (C, n) is a constant whose
    rows each select a prefix or a suffix of the elements (a change point's
    :math:`t \le s` or :math:`t > s`): with :math:`P_i = \sum_{t < i} x_t`, a prefix row
    of length :math:`i` gives :math:`P_i` and a suffix row from :math:`i` gives
    :math:`P_n - P_i`, O(n + C) per particle instead of O(nC). None for other matrices
    (a condition on data that ``pm.set_data`` may change is not a constant)."""
    if not all(isinstance(v, Constant) for v in graph_inputs([matrix])):
        return None
    rows = np.asarray(matrix.eval(mode=python_mode()), dtype=bool)
    n = rows.shape[1]
    ones = rows.sum(axis=1)
    positions = np.arange(n)
    prefix = (rows == (positions[None] < ones[:, None])).all(axis=1)
    suffix = (rows == (positions[None] >= (n - ones)[:, None])).all(axis=1)
    if not (prefix | suffix).all():
        return None
    index = np.where(prefix, ones, n - ones)
    sign = np.where(prefix, 1.0, -1.0)
    whole = np.where(prefix, 0.0, 1.0)

    gather = np.maximum(index - 1, 0)  # P_i = cumsum(x)[i - 1], and P_0 = 0
    sign = np.where(index > 0, sign, 0.0)

    def dot(x):  # no concatenate: JAX's gradient of one splits at traced sizes
        sums = pt.cumsum(x)
        return sign * sums[gather] + whole * sums[n - 1]

    return dot


def _hoisted_total(x, dependent: set, enumerate_):
    """The sum of all elements of ``x`` (a lifted term) at every joint configuration, (C,),
    with the switches on the summed values turned into matrix products
    (:func:`_selected_sum`), through a switch whose condition is one value for the whole
    array (a parameter check) and a broadcast to the array's own shape."""
    shape = x.type.shape
    if any(s is None for s in shape):
        return enumerate_(x.sum())
    branch = _branch_switch(x, dependent)
    if branch is not None:
        return _selected_sum(*branch, shape, enumerate_)
    node = x.owner
    if node is not None and isinstance(node.op, Alloc) and node.inputs[0].type.shape == shape:
        return _hoisted_total(node.inputs[0], dependent, enumerate_)  # a no-op broadcast
    if (node is not None and isinstance(node.op, Elemwise)
            and isinstance(node.op.scalar_op, ps.Switch)
            and all(node.inputs[0].type.broadcastable)):
        k, a, b = node.inputs
        a = a if a.type.shape == shape else pt.broadcast_to(a, shape)
        return pt.switch(enumerate_(k.reshape(())), _hoisted_total(a, dependent, enumerate_),
                         enumerate_(pt.broadcast_to(b, shape).sum()))
    return enumerate_(x.sum())


def hoisted_sum(term, summed: list, enumerate_) -> pt.TensorVariable:
    """The sum of all elements of ``term``, a graph of the jointly ``summed`` value
    variables, at each of their C configurations (``enumerate_(graph)``: ``graph`` at every
    configuration, :meth:`DiscreteSums._enumerate`), built so that what does not depend on
    them is computed once per particle: elementwise operations on a ``switch`` on the
    summed values (a change point's rate) move inside it (:func:`_lift_switches`), and the
    sum of such a switch becomes matrix products with its condition
    (:func:`_selected_sum`). Equal to the plain enumeration value for value (the tests
    check it at random points of several models); a graph it cannot rebuild is enumerated
    plainly. Returns a (C,) graph (or a scalar, when nothing depends on the summed
    values)."""
    try:
        lifted, dependent = _lift_switches(term, summed)
        return pt.as_tensor(_hoisted_total(lifted, dependent, enumerate_)).astype("float64")
    except _NotHoisted:
        return enumerate_(term.sum()).astype("float64")
