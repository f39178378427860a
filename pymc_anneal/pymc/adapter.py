r"""A PyMC model as an annealing :class:`~pymc_anneal.paths.Path`.

The base is the prior in PyMC's unconstrained value space, :math:`\log f_0 =`
``model.varlogp`` (free variables' log densities plus the transforms' log-Jacobians, so
:math:`Z_0 = 1`), and the log ratio is ``model.datalogp`` (observed log-likelihood plus
Potentials). The value variables are raveled into one vector in ``model.value_vars`` order
and the graphs vectorized over a leading particle axis with ``vectorize_graph``.

Discrete free variables with a finite support are summed out of both log densities
(:mod:`pymc_anneal.pymc.discrete`), so the path runs over the continuous variables alone and
its log ratio is the log-likelihood of the summed model; their draws come back from the exact
conditionals in :meth:`ModelPath.to_variables`. A model with only discrete variables has no
path: its evidence is one exact sum (:attr:`ModelPath.exact_log_evidence`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import weakref
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.distributions.continuous import Flat, HalfFlat
from pymc.logprob.utils import local_check_parameter_to_ninf_switch
from pymc.pytensorf import compile as compile_pymc
from pymc.pytensorf import find_rng_nodes, join_nonshared_inputs, reseed_rngs, rewrite_pregrad
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.op import Op
from pytensor.graph.replace import graph_replace, vectorize_graph
from pytensor.graph.rewriting.basic import in2out
from pytensor.graph.traversal import ancestors, apply_ancestors
from pytensor.scan.op import Scan
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.random.type import RandomType

from pymc_anneal._digest import graph_content
from pymc_anneal.backends import compile_one_off, python_mode, without_creation_traces
from pymc_anneal.exceptions import AnnealingError, warn
from pymc_anneal.paths import Path, in_one_off_graph
from pymc_anneal.pymc import discrete
from pymc_anneal.pymc.batched_scan import vectorized_scans
from pymc_anneal.pymc.discrete import (
    ELEMENTWISE_POINTS,
    DiscreteSums,
    SumTooCostly,
    TooManyConfigurations,
    check_cost,
    compile_check,
    finite_support,
    is_summable,
)
from pymc_anneal.pymc.noncentered import noncentered_variables, reparametrize
from pymc_anneal.pymc.stacks import lift_stacks, through_indexed_stacks

__all__ = ["DISCRETE_ROUTES", "ModelPath", "model_path", "undefined_terms"]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class ModelPath:
    """A model's annealing path plus what is needed to map particles back to variables."""

    path: Path | None  # None when every free variable is discrete and summed out
    value_names: tuple[str, ...]  # the model's value variables (value_slices: the path's)
    value_slices: tuple[tuple[str, slice, tuple[int, ...]], ...]
    signature: tuple
    output_names: tuple[str, ...]
    output_graph: tuple  # graphs of the ravelled vector (symbol ``flat_input``)
    flat_input: pt.TensorVariable
    sums: DiscreteSums | None = None  # how discrete variables are summed out
    discrete_inputs: tuple = ()  # their value variables, inputs of output/conditional graphs
    conditional_graph: tuple = ()  # DiscreteSums.conditional_logits of the whole model
    exact_log_evidence: float | None = None  # all-discrete models: the exact sum
    sum_cost: int | None = None  # DiscreteSums.cost of the sums on the path (elements)
    discrete_notes: tuple[str, ...] = ()  # why a summable variable is annealed instead
    # the log-likelihood's spread at the build's 200 prior draws (an interquartile range in
    # standard deviations; None where the prior cannot be drawn or too few are finite)
    prior_log_lik_spread: float | None = None
    # the free variables the path holds in non-centred coordinates (pymc/noncentered.py),
    # and the map of points in the model's value space to the path's coordinates
    noncentered: tuple[str, ...] = ()
    _to_path: object = field(default=None, repr=False)
    _output_functions: dict = field(default_factory=dict, repr=False)

    def coordinates(self, points: np.ndarray) -> np.ndarray:
        """Points ``(n, d)`` in the model's value space (an initial point, prior draws) in
        the path's coordinates: themselves, but where the path is non-centred."""
        points = np.asarray(points, dtype=np.float64)
        return points if self._to_path is None else np.asarray(self._to_path(points))

    @property
    def summed(self) -> tuple[str, ...]:
        """Names of the discrete variables summed out of the path."""
        return self.sums.names if self.sums is not None else ()

    def _function(self, key, graphs):
        fn = self._output_functions.get(key)
        if fn is None:
            batch = pt.matrix("batch", dtype="float64")
            replace = {self.flat_input: batch}
            inputs = [batch]
            if key == "outputs":
                for v in self.discrete_inputs:
                    batched = pt.tensor(f"{v.name}_batch", dtype=v.dtype,
                                        shape=(None, *v.type.shape))
                    replace[v] = batched
                    inputs.append(batched)
            with vectorized_scans():
                outputs = vectorize_graph(list(graphs), replace=replace)
            fn = self._output_functions[key] = compile_one_off(inputs, outputs)
        return fn

    def draw_discrete(self, positions: np.ndarray,
                      rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Draw the summed-out variables from their exact conditional given each particle
        (n, d); arrays of shape (n, ...) with the variables' integer dtypes."""
        if self.sums is None:
            return {}
        fn = self._function("conditional", self.conditional_graph)
        out: dict[str, list] = {}
        for start in range(0, len(positions), 256):  # (C, K, n) logits per particle
            logits = [np.asarray(x) for x in fn(positions[start:start + 256])]
            for name, value in self.sums.draw(logits, rng).items():
                out.setdefault(name, []).append(value)
        return {name: np.concatenate(v) for name, v in out.items()}

    def output_function(self):
        """The compiled map of :meth:`to_variables` (compiled once per path)."""
        return self._function("outputs", self.output_graph)

    def to_variables(self, positions: np.ndarray,
                     rng: np.random.Generator | None = None) -> dict[str, np.ndarray]:
        """Map particles (chains, draws, d) in value space to the model's variables
        (free variables on their constrained scale, and Deterministics); summed-out discrete
        variables are drawn from their exact conditional with ``rng``."""
        chains, draws, d = positions.shape
        flat = positions.reshape(chains * draws, d)
        discrete = self.draw_discrete(flat, rng if rng is not None else np.random.default_rng(0))
        values = self.output_function()(flat, *[discrete[v.name] for v in self.discrete_inputs])
        return {name: np.asarray(v).reshape(chains, draws, *np.shape(v)[1:])
                for name, v in zip(self.output_names, values)}


def _is_discrete(value) -> bool:
    return value.dtype.startswith(("int", "uint", "bool"))


def refuse_discrete(model: pm.Model, what: str) -> None:
    """A clear error for routes that do not handle discrete free variables yet."""
    discrete = [v.name for v in model.value_vars if _is_discrete(v)]
    if discrete:
        raise AnnealingError(
            f"the model has discrete free variables {discrete}, which {what} does not "
            "handle; pymc_anneal.sample_ais sums finite discrete variables out exactly."
        )


def _check_model(model: pm.Model) -> None:
    if not model.free_RVs:
        raise AnnealingError(
            "the model has no free random variables, so there is nothing to integrate; "
            "the evidence is just the likelihood of the data."
        )
    improper = [rv.name for rv in model.free_RVs
                if isinstance(rv.owner.op, (type(Flat.rv_op), type(HalfFlat.rv_op)))]
    if improper:
        raise AnnealingError(
            f"the priors of {improper} are improper (Flat/HalfFlat), so the marginal likelihood "
            "is undefined (it depends on an arbitrary constant). Give them proper priors, "
            "e.g. pm.Normal with a wide sigma or pm.HalfNormal."
        )
    unbounded = _unbounded_uniforms(model)
    if unbounded:
        raise AnnealingError(
            f"the priors of {[name for name, _ in unbounded]} are Uniform on an infinite range "
            f"(bounds {[bounds for _, bounds in unbounded]}): an improper prior (density "
            "1/inf), so the marginal likelihood is undefined. Give them finite bounds, or a "
            "proper prior such as pm.Normal with a wide sigma.")
    if not model.observed_RVs and not model.potentials:
        raise AnnealingError(
            "the model has no observed data (no observed= variables and no Potentials), so its "
            "evidence is 1 (log evidence 0) by definition; add observed data to compare models."
        )
    _warn_cast_data(model)


def _unbounded_uniforms(model: pm.Model) -> list:
    """``(name, (lower, upper))`` of the free Uniform variables with a constant infinite
    bound (PyMC builds them, then fails deep inside with ``KeyError``)."""
    from pytensor.tensor.random.basic import UniformRV

    found = []
    for rv in model.free_RVs:
        if not isinstance(rv.owner.op, UniformRV):
            continue
        bounds = []
        for p in rv.owner.op.dist_params(rv.owner):
            try:
                bounds.append(float(pt.get_underlying_scalar_constant_value(p)))
            except Exception:  # noqa: BLE001 - not a constant scalar: nothing to say here
                bounds.append(None)
        if any(b is not None and np.isinf(b) for b in bounds):
            found.append((rv.name, tuple(bounds)))
    return found


def _warn_cast_data(model: pm.Model) -> None:
    """Warn where a discrete likelihood's data held in a ``pm.Data`` container are not
    integers: PyMC casts them (``[1.5, 2.2, 0.7]`` becomes ``[1, 2, 0]``), and the evidence
    would be that of other data than the user's. (Data given as an array are cast when the
    model is built; their original values are no longer at hand.)"""
    from pytensor.scalar import Cast
    from pytensor.tensor.elemwise import Elemwise

    for rv in model.observed_RVs:
        value = model.rvs_to_values.get(rv)
        node = getattr(value, "owner", None)
        if (node is None or not isinstance(node.op, Elemwise)
                or not isinstance(node.op.scalar_op, Cast)
                or not value.dtype.startswith(("int", "uint"))):
            continue
        source = node.inputs[0]
        if not isinstance(source, SharedVariable):
            continue
        data = np.asarray(source.get_value(borrow=True))
        if not data.dtype.kind == "f":
            continue
        bad = np.flatnonzero(np.isfinite(data) & (data != np.round(data)))
        if bad.size:
            shown = ", ".join(
                f"{data.flat[i]:g} at {tuple(int(k) for k in np.unravel_index(i, data.shape))}"
                for i in bad[:3])
            warn(f"the observed data of '{rv.name}' ({source.name or 'a pm.Data container'}) "
                 f"are not integers at {bad.size} of {data.size} positions ({shown}"
                 f"{', ...' if bad.size > 3 else ''}), but its distribution is discrete: PyMC "
                 f"casts them to {value.dtype}, so the evidence is that of other data than "
                 "yours. Round them as you intend, or use a continuous likelihood.")


def _shared_data(graphs) -> list:
    """The shared variables (``pm.Data``, dimension lengths, ``pytensor.shared`` values)
    that ``graphs`` read, random generators excluded, in a fixed order."""
    shared = {id(v): v for v in ancestors(graphs)
              if isinstance(v, SharedVariable) and not isinstance(v.type, RandomType)}
    return sorted(shared.values(), key=lambda v: (str(v.name), id(v)))


def _fingerprint(variables, values: bool) -> tuple:
    """Each shared variable's identity, shape and dtype, and with ``values`` a digest of
    its value."""
    out = []
    for v in variables:
        value = np.asarray(v.get_value(borrow=True))
        digest = (hashlib.blake2b(np.ascontiguousarray(value).tobytes(), digest_size=16)
                  .hexdigest() if values else None)
        out.append((id(v), str(v.name), value.shape, str(value.dtype), digest))
    return tuple(out)


def model_content(model: pm.Model) -> list:
    """What defines a model's evidence, for a result's ``model_fingerprint``
    (:func:`pymc_anneal._digest.fingerprint`): its variables' names, the operations of their
    graphs in order, and the values of every constant and data container they read (after
    ``pm.set_data``, the new ones). Object ids are left out, so the same model built again,
    in another process or on another machine, has the same content."""
    graphs = [*model.free_RVs, *model.observed_RVs, *model.potentials,
              *(model.rvs_to_values[v] for v in model.observed_RVs)]
    parts: list = [tuple(v.name for v in model.free_RVs),
                   tuple(v.name for v in model.observed_RVs),
                   tuple(v.name for v in model.potentials)]
    return parts + graph_content(graphs)


def _signature(model: pm.Model) -> tuple:
    """What a model's cached path depends on: its variables, and its data.

    The compiled log densities read shared data (``pm.Data``) when they run, so a
    continuous model's path only depends on the data's shapes (the shapes of the value
    variables may follow them) and on the values of data the prior reads (the prior's
    draws and scale). Discrete sums depend on the data's values too (supports set by a
    ``pm.Data`` n, the per-element structure, an all-discrete model's exact evidence), so a
    model with discrete free variables is keyed on every value: after ``pm.set_data`` the
    path is built again wherever a cached value could be stale."""
    discrete = any(_is_discrete(v) for v in model.value_vars)
    graphs = [*model.free_RVs, *model.observed_RVs, *model.potentials, *model.deterministics]
    prior = _shared_data(list(model.free_RVs))
    return (
        tuple(v.name for v in model.value_vars),
        tuple(v.name for v in model.observed_RVs),
        tuple(v.name for v in model.potentials),
        tuple(v.name for v in model.deterministics),
        tuple(id(v) for v in model.value_vars),
        _fingerprint(_shared_data(graphs), values=discrete),
        _fingerprint(prior, values=True),
    )


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


DISCRETE_ROUTES = ("auto", "sum", "anneal")
"""How :func:`model_path` treats discrete free variables: ``"sum"`` sums every one out
exactly (an error where that is impossible), ``"anneal"`` keeps every one on the path (moved
by the compound kernel), ``"auto"`` sums those it can and anneals the rest."""


@without_creation_traces
def model_path(model: pm.Model, discrete: str = "auto",
               noncentered: bool = False) -> ModelPath:
    """Build (or reuse) the annealing path of ``model``; validates the model first. With
    ``noncentered``, in non-centred coordinates for the variables of
    :func:`~pymc_anneal.pymc.noncentered.noncentered_variables` (a continuous model with
    such variables only: else the path as written)."""
    _check_model(model)
    names = noncentered_variables(model) if noncentered else ()
    key = (discrete, names)
    signature = (*_signature(model), *key)
    cached = _CACHE.get(model, {}).get(key)
    if cached is not None and cached.signature == signature:
        return cached
    if any(_is_discrete(v) for v in model.value_vars):
        result = _build_discrete(model, signature, discrete)
    else:
        result = _build(model, signature, names)
    _CACHE.setdefault(model, {})[key] = result
    return result


def _checks_to_ninf(graphs: list) -> list:
    """The graphs with PyMC's parameter checks (a scale > 0, a Binomial's n >= 0) turned
    into log density -inf where they fail, as in PyMC's own compiled functions: a proposal
    off the support is then rejected instead of raising inside the compiled loop (or, on
    JAX, which drops run-time checks, returning NaN)."""
    graph = FunctionGraph(outputs=list(graphs), clone=False)
    in2out(local_check_parameter_to_ninf_switch).rewrite(graph)
    return list(graph.outputs)


def _stabilized(graphs: list, summed=()) -> list:
    """The graphs rewritten as PyMC rewrites a model's cost before it takes the gradient
    (``rewrite_pregrad``: ``canonicalize`` and ``stabilize``), on the model's own graph
    (its value variables the inputs, as in PyMC's), *before* it is joined, vectorized over
    particles and differentiated, with two rewrites first that only match the per-particle
    graph. Each graph (log prior, log-likelihood) is rewritten on its own, as PyMC's
    ``compile_logp(vars=...)`` of that part: rewritten together, a term they share (the
    prior's bounds check of a ``Uniform(0, 1)``'s ``sigmoid(x)``, its log-odds in the
    likelihood: posteriordb's Mh) keeps an ``ExpandDims`` that stops ``logit(sigmoid(x))``
    becoming ``x`` (``-inf`` from ``x > 37``, as PyMC's ``compile_logp()`` of the whole
    model is).

    A term that the gradient shares (``1 - sigmoid(a)`` under a likelihood of several
    observations) is no longer stabilized once the gradient is compiled beside it: PyMC's
    ``log(1 - sigmoid(a))`` is ``-softplus(a)``, the unrewritten one ``-inf`` from ``a > 37``.
    ``pm.MvNormal(chol=L)`` computes ``cholesky(L @ L.T)``, which PyTensor's
    ``cholesky_ldotlt`` turns back into ``L`` where it knows ``L`` is lower triangular (a
    tag that vectorizing drops); left in, ``L @ L.T`` overflowed to ``inf`` (and the
    log-likelihood to ``-inf``) where PyMC's is finite. An entry taken from a stack of
    scalars (``pt.stack([sigmoid(a), 1 - sigmoid(a)])[1]``: posteriordb's hmm_example) is
    the entry itself in PyMC's graph, so ``stabilize`` sees ``log(1 - sigmoid(a))``;
    batched, the stack is a join that no rewrite indexes through. The rewritten graph has
    the static shapes of one particle's values: the caller batches it from columns of
    static width (:func:`_batched_values`), or ``vectorize_graph`` refuses to broadcast.
    Where such a stack is indexed by a discrete variable that the path sums out
    (``summed``: each a vector of its values once summed), the elementwise op above the
    index goes into the stack (:func:`~pymc_anneal.pymc.stacks.through_indexed_stacks`)."""
    from pytensor.tensor.rewriting.linalg.decomposition import cholesky_ldotlt
    from pytensor.tensor.rewriting.subtensor_lift import local_subtensor_make_vector

    graph = FunctionGraph(outputs=list(graphs), clone=False)
    in2out(cholesky_ldotlt, local_subtensor_make_vector,
           through_indexed_stacks(summed)).rewrite(graph)
    out, log_sigmoid = [], in2out(_log_sigmoid_through_dimshuffle())
    for g in graph.outputs:  # each on its own, as PyMC's compile_logp(vars=...) of that part
        part = rewrite_pregrad(FunctionGraph(outputs=[g], clone=True, copy_inputs=False))
        log_sigmoid.rewrite(part)
        out.append(lift_stacks(part).outputs[0])
    return out


def _log_sigmoid_through_dimshuffle():
    """A rewrite that gives ``log(sigmoid(x))``, ``log(1 - sigmoid(x))`` and
    ``log1p(-sigmoid(x))`` the gradient of their softplus form where a ``DimShuffle``
    stands between the log and the sigmoid, their value unchanged.

    ``stabilize``'s patterns do not look through a ``DimShuffle``, and PyTensor lifts one
    below an elementwise op only where that op has no other client: a ``sigmoid(x)`` that
    the model uses twice (a ``Uniform(0, 1)``'s bounds check, and ``log1p(-omega)``
    expanded to a vector: posteriordb's Mh) keeps its ``ExpandDims`` above it, in PyMC's
    rewritten graph as in ours, so the value is ``-inf`` from ``x > 37`` in both. PyMC's
    gradient, compiled one point at a time, cancels ``s (1 - s) / (1 - s)`` to ``s``;
    batched, it was ``0 / 0``: NaN where PyMC's is finite (Mh at 8 of 64 wide points).
    The value stays PyMC's to the last bit (the softplus form is more accurate for
    ``x > 30``, and would differ from PyMC's by up to 1e-4 there): it is
    ``f(zero_grad(u)) + (g - zero_grad(g))``, ``f(u)`` the term as written and ``g`` its
    softplus form, whose gradient is ``g``'s and whose ``g - g`` is exactly 0 (``g`` is
    finite wherever ``x`` is)."""
    from pytensor.gradient import zero_grad
    from pytensor.graph.rewriting.basic import node_rewriter
    from pytensor.scalar import basic as ps
    from pytensor.scalar.math import Sigmoid
    from pytensor.tensor.elemwise import DimShuffle, Elemwise
    from pytensor.tensor.exceptions import NotScalarConstantError
    from pytensor.tensor.math import softplus

    def scalar_op(v, kind):
        owner = v.owner
        return (owner is not None and isinstance(owner.op, Elemwise)
                and isinstance(owner.op.scalar_op, kind))

    def shuffled_sigmoid(v):
        """``DimShuffle(sigmoid(x))`` as ``DimShuffle(x)``, else None."""
        if v.owner is None or not isinstance(v.owner.op, DimShuffle):
            return None
        inner = v.owner.inputs[0]
        if not scalar_op(inner, Sigmoid):
            return None
        return v.owner.op(inner.owner.inputs[0])

    def is_one(v):
        try:
            return pt.get_underlying_scalar_constant_value(v) == 1
        except NotScalarConstantError:
            return False

    def with_gradient_of(node, stable):
        value = node.op(zero_grad(node.inputs[0]))  # the term as written, no gradient
        return [value + (stable - zero_grad(stable))]

    @node_rewriter([Elemwise])
    def log_sigmoid(fgraph, node):
        if len(node.inputs) != 1:
            return None
        [arg] = node.inputs
        if isinstance(node.op.scalar_op, ps.Log):
            x = shuffled_sigmoid(arg)
            if x is not None:  # log(sigmoid(x)) = -softplus(-x)
                return with_gradient_of(node, -softplus(-x))
            if scalar_op(arg, ps.Sub) and is_one(arg.owner.inputs[0]):
                x = shuffled_sigmoid(arg.owner.inputs[1])
                if x is not None:  # log(1 - sigmoid(x)) = -softplus(x)
                    return with_gradient_of(node, pt.second(arg, -softplus(x)))
        if isinstance(node.op.scalar_op, ps.Log1p) and scalar_op(arg, ps.Neg):
            x = shuffled_sigmoid(arg.owner.inputs[0])
            if x is not None:  # log1p(-sigmoid(x)) = -softplus(x)
                return with_gradient_of(node, -softplus(x))
        return None

    return log_sigmoid


def initial_point(model: pm.Model) -> dict[str, np.ndarray]:
    """``model.initial_point()``, its values and names, computed in Python mode: PyMC's own
    compiles its graph with PyTensor's default backend (C thunks), 0.5-2 s of compiling on a
    cold cache for a graph of a few nodes, at the first call of a new process."""
    from pymc.initial_point import make_initial_point_expression
    from pymc.pytensorf import replace_rng_nodes
    from pymc.util import get_transformed_name

    values = make_initial_point_expression(
        free_rvs=model.free_RVs, rvs_to_transforms=model.rvs_to_transforms,
        initval_strategies=dict(model.rvs_to_initial_values), jitter_rvs=None,
        default_strategy="support_point", return_transformed=True)
    values = replace_rng_nodes(values)  # PyMC's: the model's own generators stay untouched
    fn = compile_pymc(inputs=[], outputs=values, random_seed=False, mode=python_mode())
    reseed_rngs(find_rng_nodes(fn.maker.fgraph.outputs), None)
    names = [rv.name if model.rvs_to_transforms[rv] is None
             else get_transformed_name(rv.name, model.rvs_to_transforms[rv])
             for rv in model.free_RVs]
    return dict(zip(names, fn()))


def _value_shapes(model: pm.Model) -> dict[str, np.ndarray]:
    """A point of zeros with each value variable's shape: what ``join_nonshared_inputs``
    needs (only shapes matter). ``model.initial_point()`` would compile a function with
    PyTensor's default backend, which costs half a second on a cold cache; here static
    shapes are read off the types, and others (dims from coordinates) evaluated in Python
    mode from the random variables through their transforms."""
    static = [v.type.shape for v in model.value_vars]
    if all(s is not None for shape in static for s in shape):
        shapes = static
    else:
        graphs = []
        for v in model.value_vars:
            rv = model.values_to_rvs[v]
            transform = model.rvs_to_transforms.get(rv)
            value = rv if transform is None else transform.forward(rv, *rv.owner.inputs)
            graphs.append(pt.as_tensor(value).shape)
        try:
            shapes = pytensor.function([], graphs, mode=python_mode(),
                                       on_unused_input="ignore")()
        except Exception:  # noqa: BLE001 - PyMC's own way, slower but general
            point = initial_point(model)
            shapes = [np.shape(point[v.name]) for v in model.value_vars]
    return {v.name: np.zeros(tuple(int(n) for n in shape), dtype=v.dtype)
            for v, shape in zip(model.value_vars, shapes)}


def _batched_values(value_vars: list, slices: list, position) -> dict:
    """Each of a model's ``value_vars`` as its columns of the particles' ``position``
    (``(num_particles, num_dims)``; ``slices``: each variable's ``(name, columns, shape)``,
    raveled and joined in order, as PyMC's ``join_nonshared_inputs``), reshaped with the
    variable's shape as constants. Batched from a joined vector instead, the reshape's
    target is a vector whose entries no rewrite folds (``vectorize_graph`` indexes it), so
    a gradient that splits a join of those variables (the rewritten log density of a
    ``Dirichlet``) has sizes that JAX cannot trace."""
    replace = {}
    for v, (_, columns, shape) in zip(value_vars, slices):
        batched = position[:, columns.start] if shape == () else position[:, columns]
        if len(shape) > 1:
            batched = batched.reshape((-1, *shape))
        replace[v] = batched.astype(v.dtype)
    return replace


def _build(model: pm.Model, signature: tuple, noncentered: tuple[str, ...] = ()) -> ModelPath:
    initial_point = _value_shapes(model)
    log_prior, log_lik = _stabilized(_checks_to_ninf([model.varlogp, model.datalogp]))
    num_dims = int(sum(np.size(initial_point[v.name]) for v in model.value_vars))
    slices, start = [], 0
    for v in model.value_vars:
        shape = tuple(int(n) for n in np.shape(initial_point[v.name]))
        size = int(np.prod(shape, dtype=int))
        slices.append((v.name, slice(start, start + size), shape))
        start += size
    # not the model: a WeakKeyDictionary (_CACHE) value must not hold its key
    value_vars = list(model.value_vars)

    def batched(graphs, inputs, position):
        position = pt.specify_shape(position, (None, num_dims))  # see _stabilized
        with vectorized_scans():  # a scan in the model: one scan over the batch
            return vectorize_graph(graphs, replace=_batched_values(inputs, slices, position))

    def symbolic(position):
        return tuple(batched([log_prior, log_lik], value_vars, position))

    compiled = _CompiledDensities(symbolic)

    def build_log_densities(position):
        op = compiled.op() if in_one_off_graph() else None
        if op is None:
            return symbolic(position)
        lp, ll, _, _ = op(position)
        return lp, ll

    sample_base = _prior_sampler(model, [True] * len(model.free_RVs), num_dims)
    rvs = list(model.free_RVs) + list(model.deterministics)
    names = tuple(rv.name for rv in rvs)
    value_graphs = model.replace_rvs_by_values(rvs)

    spread = _check_terms(model, initial_point, sample_base, lambda x: symbolic(x)[1])
    to_path = None
    if noncentered:  # the same checks, on the model as written; then the path's coordinates
        nc = reparametrize(model, noncentered, initial_point)
        jacobian, = _stabilized([nc.log_jacobian])
        log_prior, log_lik, *value_graphs = graph_replace(
            [log_prior + jacobian, log_lik, *value_graphs], nc.replace, strict=False)
        points = pt.matrix("points", dtype="float64")
        columns = batched(nc.to_path, value_vars, points)
        to_path_fn = compile_one_off([points], [pt.concatenate(
            [c.reshape((points.shape[0], -1)) for c in columns], axis=1)])

        def to_path(x):
            return np.asarray(to_path_fn(np.asarray(x, dtype=np.float64))[0])
        slices = [(z.name, *rest) for z, (_, *rest) in zip(nc.value_vars, slices)]
        value_vars = list(nc.value_vars)
        initial_point = {z.name: np.zeros(shape) for z, (_, _, shape) in zip(value_vars, slices)}
        sample_base = _mapped_sampler(sample_base, to_path)
        compiled = _CompiledDensities(symbolic)
    outputs, flat_out = join_nonshared_inputs(initial_point, value_graphs, value_vars)
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
                     names, tuple(outputs), flat_out, prior_log_lik_spread=spread,
                     noncentered=noncentered, _to_path=to_path)


def _mapped_sampler(sample_base, to_path):
    """``sample_base``'s draws mapped by ``to_path`` (the model's value space to the
    path's coordinates); its errors (a prior that cannot be drawn) are its own."""
    def sample(rng: np.random.Generator, num_draws: int) -> np.ndarray:
        return np.asarray(to_path(sample_base(rng, num_draws)))
    return sample


class _CompiledDensities:
    """A model path's log prior and log-likelihood with their gradients, compiled once (at
    the first call of the first one-off graph that asks for them:
    :func:`~pymc_anneal.paths.one_off_graph`) and called through :class:`_DensitiesOp`.
    Each loop's init and the Laplace fit's objective were each a Python-mode compile of
    the whole model graph and its gradient (0.5-1 s on a posteriordb model, at a first
    call); now they share this one. The function reads
    ``pm.Data`` when called, as the compiles it replaces did. None where the density has
    no gradient (the symbolic graphs then serve, and say so where a gradient is needed),
    and where it holds a ``Scan`` (the fit's objective compiles that to JAX or C:
    :func:`~pymc_anneal.backends.compile_repeated`; a loop's init to Python mode, which
    runs one scan over the batch)."""

    def __init__(self, symbolic):
        self._symbolic, self._op, self._done = symbolic, None, False

    def op(self):
        if not self._done:
            self._done = True
            x = pt.matrix("x", dtype="float64")
            lp, ll = self._symbolic(x)
            n = x.shape[0]
            if any(isinstance(node.op, Scan) for node in apply_ancestors([lp, ll])):
                return None
            try:
                grads = [pt.grad(g.sum(), x, disconnected_inputs="ignore") for g in (lp, ll)]
            except (NotImplementedError, TypeError):  # no gradient (NullTypeGradError)
                return None
            outputs = [pt.broadcast_to(lp, (n,)), pt.broadcast_to(ll, (n,)), *grads]
            # compiled at its first call: a loop's init then overlaps JAX's compile
            self._op = _DensitiesOp(compile_one_off([x], outputs, lazy=True))
        return self._op


class _DensitiesOp(Op):
    """``x (n, d) -> (log prior (n,), log-likelihood (n,), their gradients (n, d) each)`` by
    a compiled function (:class:`_CompiledDensities`), with the gradient as its pullback
    (first derivatives only: the outputs' gradients are values, not graphs)."""

    def __init__(self, function):
        self.function = function

    def __eq__(self, other):  # one op per compiled function: never merged with another
        return self is other

    def __hash__(self):
        return id(self)

    def make_node(self, x):
        x = pt.as_tensor(x, dtype="float64")
        return Apply(self, [x], [pt.dvector(), pt.dvector(), pt.dmatrix(), pt.dmatrix()])

    def perform(self, node, inputs, outputs):
        for out, value in zip(outputs, self.function(inputs[0])):
            out[0] = np.asarray(value, dtype=np.float64)

    def infer_shape(self, node, input_shapes):
        (shape,) = input_shapes
        return [shape[:1], shape[:1], shape, shape]

    def pullback(self, inputs, outputs, cotangents):
        for g in cotangents[2:]:
            if not isinstance(g.type, DisconnectedType):
                raise NotImplementedError("second derivatives of a compiled model density")
        total = None
        for g, grad in zip(cotangents[:2], outputs[2:]):
            if not isinstance(g.type, DisconnectedType):
                term = g[:, None] * grad
                total = term if total is None else total + term
        return [pt.zeros_like(inputs[0]) if total is None else total]


def _build_discrete(model: pm.Model, signature: tuple, route: str) -> ModelPath:
    """The path of a model with discrete free variables: those summed out leave it; the
    continuous variables and the annealed discrete ones (``Path.discrete_dims``) stay."""
    random = set(model.value_vars) | set(model.free_RVs)
    discrete = [v for v in model.value_vars if _is_discrete(v)]
    if route == "anneal":
        summed = []
    elif route == "sum":
        summed = discrete
    else:
        summed = [v for v in discrete if is_summable(model.values_to_rvs[v], random)]
    notes = []
    while True:
        try:
            result = _build_summed(model, signature, summed, budget=route == "auto")
            return dataclasses.replace(result, discrete_notes=tuple(notes)) if notes \
                else result
        except TooManyConfigurations as exc:
            if route == "sum":
                raise
            # anneal the variable with the largest joint support (or cost), sum the rest
            summed = [v for v in summed if v.name != exc.variables[0]]
            if isinstance(exc, SumTooCostly):
                notes.append(str(exc))
                _LOG.info("%s", exc)


def _join_state(initial_point, graphs, state):
    """``graphs`` as functions of one flat float64 vector of the ``state`` values (a
    zero-size one when nothing stays on the path), with failed checks as ``-inf``."""
    if state:
        graphs, flat = join_nonshared_inputs(initial_point, graphs, state)
        if flat.dtype != "float64":  # only integers on the path: positions are float64
            position = pt.vector("flat", dtype="float64")
            graphs = graph_replace(graphs, {flat: position.astype(flat.dtype)}, strict=False)
            flat = position
    else:
        flat = pt.vector("flat", dtype="float64")
    return _checks_to_ninf(graphs), flat


def _summed_log_densities(sums, summed, prior, like, state_prior, summed_prior):
    """The path's log base and log ratio at :math:`\beta = 1` (graphs of the flat state):
    the prior and likelihood terms, with the ``summed`` variables summed out of them."""
    def total(graphs):
        return pt.add(*[t.sum() for t in graphs]) if graphs else pt.constant(0.0)

    if sums is None:
        return total(prior), total(like)
    if any(any(v in ancestors([t]) for v in summed) for t in state_prior):
        # a prior on the path depends on a summed variable: p(theta) is itself a sum
        log_base = sums.marginal(prior)
        return log_base, sums.marginal(prior + like) - log_base
    # the summed pmfs add up to one over their (whole) supports
    return total(state_prior), sums.marginal(summed_prior + like)


def _state_layout(model, state, initial_point):
    """Where each variable on the path sits in the flat state: ``(name, slice, shape)`` per
    variable, the integer coordinates, and each one's finite support ``(low, high)`` (or
    None) for the compound kernel's exact draws."""
    slices, discrete_dims, supports, start = [], [], [], 0
    random = set(model.value_vars) | set(model.free_RVs)
    for v in state:
        shape = tuple(np.shape(initial_point[v.name]))
        size = int(np.prod(shape, dtype=int))
        slices.append((v.name, slice(start, start + size), shape))
        if _is_discrete(v):
            discrete_dims.extend(range(start, start + size))
            try:  # a finite range: the compound kernel may draw it exactly
                values = finite_support(model.values_to_rvs[v], random)
                support = (int(values[0]), int(values[-1]))
            except AnnealingError:
                support = None
            supports.extend([support] * size)
        start += size
    return slices, discrete_dims, supports


def _build_summed(model: pm.Model, signature: tuple, summed: list,
                  budget: bool = False) -> ModelPath:
    """The path over the continuous and annealed discrete variables, with the discrete
    variables in ``summed`` summed out; with ``budget``, :class:`SumTooCostly` when their
    sum costs more than :data:`~pymc_anneal.pymc.discrete.SUM_BUDGET` per particle."""
    initial_point = _value_shapes(model)  # shapes are all it needs, and compile-free
    state = [v for v in model.value_vars if v not in summed]
    free = list(model.free_RVs)
    prior_terms = model.logp(vars=free, sum=False)
    like_terms = model.logp(vars=list(model.observed_RVs) + list(model.potentials), sum=False)
    # rewritten as PyMC rewrites its cost, before anything is joined or batched (as
    # _build's graphs are): each term on its own
    terms = _stabilized(_checks_to_ninf([*prior_terms, *like_terms]), summed)
    prior_terms, like_terms = terms[:len(prior_terms)], terms[len(prior_terms):]
    rvs = free + list(model.deterministics)
    value_graphs = model.replace_rvs_by_values(rvs)
    # the annealed discrete variables' distribution parameters, as functions of the values
    # of the others (to draw them given the continuous variables: base="gaussian")
    annealed = [rv for rv in free if _is_discrete(model.rvs_to_values[rv])
                and model.rvs_to_values[rv] not in summed]
    drawable = [rv for rv in annealed if isinstance(rv.owner.op, RandomVariable)]
    param_graphs = [list(model.replace_rvs_by_values(rv.owner.op.dist_params(rv.owner)))
                    for rv in drawable]
    graphs = [*prior_terms, *like_terms, *value_graphs, *(g for gs in param_graphs for g in gs)]
    graphs, flat = _join_state(initial_point, graphs, state)
    n_prior, n_terms = len(prior_terms), len(prior_terms) + len(like_terms)
    n_outputs = n_terms + len(value_graphs)
    terms, outputs = list(graphs[:n_terms]), graphs[n_terms:n_outputs]
    joined_params, start = [], n_outputs
    for gs in param_graphs:
        joined_params.append(graphs[start:start + len(gs)])
        start += len(gs)
    prior, like = terms[:n_prior], terms[n_prior:]
    point = np.concatenate([np.ravel(initial_point[v.name]).astype("float64") for v in state]
                           ) if state else np.zeros(0)
    is_summed = [model.rvs_to_values[rv] in summed for rv in free]
    sample_base = _prior_sampler(model, [not d for d in is_summed], point.size) if state \
        else None
    sums = None
    if summed:  # independence of labels is probed at exact prior draws, not one point
        points = (sample_base(np.random.default_rng(0), ELEMENTWISE_POINTS) if state
                  else np.zeros((ELEMENTWISE_POINTS, 0)))
        sums = DiscreteSums.plan(model, summed, terms, compile_check(terms, flat, summed),
                                 points, initial_point)
    state_prior = [t for t, d in zip(prior, is_summed) if not d]
    summed_prior = [t for t, d in zip(prior, is_summed) if d]
    conditional = tuple(sums.conditional_logits(terms)) if sums is not None else ()
    common = {"value_names": tuple(v.name for v in model.value_vars), "signature": signature,
              "output_names": tuple(rv.name for rv in rvs), "output_graph": tuple(outputs),
              "flat_input": flat, "sums": sums, "discrete_inputs": tuple(summed),
              "conditional_graph": conditional}
    if not state:  # the conditionals get a (zero-size) particle input to batch over
        conditional = tuple(g + flat.sum() for g in conditional)
        exact = pytensor.function([flat], sums.marginal(terms), on_unused_input="ignore",
                                  mode=python_mode())(point)
        return ModelPath(path=None, value_slices=(), exact_log_evidence=float(exact),
                         **{**common, "conditional_graph": conditional})

    log_base_1, log_ratio_1 = _summed_log_densities(sums, summed, prior, like, state_prior,
                                                    summed_prior)
    if sums is not None:  # judged on the hoisted sum, whatever the HOIST test switch
        graphs = [log_base_1, log_ratio_1] if discrete.HOIST else [sums.marginal(terms, True)]
        cost = (check_cost if budget else DiscreteSums.cost)(sums, graphs, [flat], [point])
        common["sum_cost"] = cost
    num_dims = int(point.size)

    def build_log_densities(position):
        with vectorized_scans():
            lp, ll = vectorize_graph([log_base_1, log_ratio_1], replace={flat: position})
        return lp, ll

    discrete_base, sample_discrete = _discrete_prior_base(
        model, free, prior, annealed, drawable, joined_params, summed, flat, initial_point,
        state)
    slices, discrete_dims, supports = _state_layout(model, state, initial_point)
    path = Path(num_dims=num_dims, build_log_densities=build_log_densities,
                sample_base=sample_base, log_base_normalizer=0.0,
                base_scale=_prior_scale(sample_base, num_dims), name=model.name or "model",
                discrete_dims=tuple(discrete_dims), discrete_supports=tuple(supports),
                build_discrete_base=discrete_base, sample_discrete=sample_discrete)
    return ModelPath(path=path, value_slices=tuple(slices), **common)


def _prior_sampler(model: pm.Model, keep: list[bool], num_dims: int):
    """``sample_base(rng, n) -> (n, num_dims)``: exact prior draws of the free variables
    marked in ``keep``, in the unconstrained value space, raveled in ``value_vars`` order.

    The draws come from one call of the model's forward graph with a leading batch axis of
    length n (:func:`_batched_draws`); where that graph holds something this module cannot
    batch (a distribution built from several random variables, such as a mixture), from n
    calls of the unbatched graph. Both run NumPy's samplers (PyTensor's ``FAST_COMPILE``
    mode): compiling them with Numba took 2-3 s per model, far more than the draws cost,
    and Numba has no native sampler for some distributions (DiscreteUniform). Initial values
    are ignored on purpose (see NOTES): a custom ``initval`` must not become a point mass.
    """
    draw_exprs = unconstrained_draws(model)
    flat_draw = pt.concatenate([pt.as_tensor(e).ravel().astype("float64")
                                for e, k in zip(draw_exprs, keep) if k])
    num = pt.lscalar("num_draws")
    batched = _batched_draws(flat_draw, num)
    if batched is not None:
        draw_rngs = find_rng_nodes([batched])
        draw_fn = compile_pymc(inputs=[num], outputs=batched, random_seed=False,
                               mode=python_mode())

        def draw(n):
            return draw_fn(np.int64(n))
    else:
        draw_rngs = find_rng_nodes([flat_draw])
        one_fn = compile_pymc(inputs=[], outputs=flat_draw, random_seed=False,
                              mode=python_mode())
        one_fn.trust_input = True  # no inputs to check

        def draw(n):
            return np.stack([one_fn() for _ in range(n)])

    columns = _draw_columns(model, keep)
    # the messages name the model's variables; a strong reference would keep the model alive
    # through the path cached on it (a WeakKeyDictionary's value must not hold its key)
    model_ref = weakref.ref(model)

    def raw(rng: np.random.Generator, num_draws: int) -> np.ndarray:
        reseed_rngs(draw_rngs, rng.integers(2**63, size=4))
        try:
            with np.errstate(all="ignore"):  # overflows are found by the callers, and named
                return np.asarray(draw(num_draws), dtype=np.float64).reshape(num_draws,
                                                                              num_dims)
        except Exception as error:  # noqa: BLE001 - NumPy's sampler refused a parameter
            raise AnnealingError(_failed_draw(model_ref(), error)) from error

    def sample_base(rng: np.random.Generator, num_draws: int) -> np.ndarray:
        if num_draws == 0:
            return np.zeros((0, num_dims))
        draws = raw(rng, num_draws)
        if not np.isfinite(draws).all():
            raise AnnealingError(_non_finite_draws(model_ref(), columns, draws))
        return draws

    sample_base.raw, sample_base.columns = raw, columns  # for ordered_prior_mass
    return sample_base


def _is_ordered(model: pm.Model, rv) -> bool:
    from pymc.distributions.transforms import Ordered

    return isinstance(model.rvs_to_transforms.get(rv), Ordered)


def ordered_prior_mass(model: pm.Model, mp: ModelPath, rng: np.random.Generator,
                       num_draws: int = 4000) -> dict | None:
    r"""Where the prior cannot be drawn only because of ``transform=ordered``: the prior's
    mass as written, :math:`\int p(\theta)\,d\theta` over the unconstrained space.

    An ordered variable's density as written is its unordered prior's restricted to the
    ordered region, so its mass is the probability that PyMC's forward draws (which ignore
    the transform) are ordered: the share of draws whose unconstrained value is finite.
    Returns ``{"log_prior_mass", "log_prior_mass_se", "ordered": names}``, or None where
    something else makes the draws non-finite (or nothing does)."""
    sample_base = mp.path.sample_base if mp.path is not None else None
    raw = getattr(sample_base, "raw", None)
    if raw is None:
        return None
    draws = raw(rng, num_draws)
    ordered = []
    for rv, cols in sample_base.columns:
        if np.isfinite(draws[:, cols]).all():
            continue
        if not _is_ordered(model, rv):
            return None
        ordered.append(rv.name)
    if not ordered:
        return None
    share = float(np.isfinite(draws).all(axis=1).mean())
    if share == 0.0:
        return None
    se = np.sqrt(share * (1.0 - share) / num_draws) / share  # of the log, delta method
    return {"log_prior_mass": float(np.log(share)), "log_prior_mass_se": float(se),
            "ordered": ordered}


def _draw_columns(model: pm.Model, keep: list[bool]) -> list:
    """``(free variable, column slice)`` of each kept variable in a flat prior draw."""
    shapes = _value_shapes(model)
    columns, start = [], 0
    for rv, k in zip(model.free_RVs, keep):
        if k:
            size = int(np.size(shapes[model.rvs_to_values[rv].name]))
            columns.append((rv, slice(start, start + size)))
            start += size
    return columns


def _non_finite_draws(model: pm.Model, columns: list, draws: np.ndarray) -> str:
    """Why prior draws are not finite in the unconstrained space, naming the variables,
    their transforms and their distributions' parameters, and what to do."""
    parts = []
    for rv, cols in columns:
        block = draws[:, cols]
        bad = ~np.isfinite(block)
        if not bad.any():
            continue
        value_name = model.rvs_to_values[rv].name
        if _is_ordered(model, rv):
            parts.append(
                f"'{rv.name}' has transform=ordered: PyMC draws its prior without the "
                "transform, so the draws are not ordered (their unconstrained values are "
                "NaN), and its density is not normalized over the ordered region")
            continue
        example = block[bad][0]
        parts.append(f"'{rv.name}' ({_describe_prior(rv)}): {bad.any(axis=1).sum()} of "
                     f"{len(draws)} draws have {value_name} = {example}")
    what = "; ".join(parts) or "non-finite values in the unconstrained space"
    return (f"the prior cannot be drawn in the unconstrained space, which the prior base of "
            f"AIS needs: {what}. Check the priors' parameters (a prior that overflows float64 "
            "is usually a mistake: e.g. Gamma(0.001, 0.001) puts half its mass below 1e-300); "
            "bridge sampling needs no prior draws: pymc_anneal.bridge_sampling(pm.sample(), "
            "model).")


def _failed_draw(model: pm.Model, error: Exception) -> str:
    """Which free variable's prior NumPy's sampler refused (each is drawn alone, in
    order, until one fails), with its distribution, and what was wrong."""
    culprit = None
    for rv in model.free_RVs:
        try:
            with np.errstate(all="ignore"):
                pm.draw(rv, random_seed=0, mode=python_mode())
        except Exception:  # noqa: BLE001 - this is the one
            culprit = rv
            break
    where = (f"the prior of '{culprit.name}' ({_describe_prior(culprit)})" if culprit
             is not None else "the prior")
    return (f"{where} cannot be drawn: {type(error).__name__}: {str(error).splitlines()[0]}. "
            "Check its parameters (a covariance must be symmetric positive definite, a scale "
            "positive, bounds finite and ordered).")


def _describe_prior(rv) -> str:
    """``Gamma(alpha=0.001, ...)``: the distribution of ``rv`` and its constant
    parameters (those that depend on other variables are named by them)."""
    op = rv.owner.op
    name = type(op).__name__.removesuffix("RV")
    try:
        params = op.dist_params(rv.owner)
    except Exception:  # noqa: BLE001 - a symbolic distribution: its name is enough
        return name
    shown = []
    for p in params:
        parents = [a.name for a in ancestors([p]) if a.owner is not None
                   and isinstance(a.owner.op, RandomVariable) and a.name]
        if parents:
            shown.append(f"depends on {', '.join(dict.fromkeys(parents))}")
            continue
        try:
            value = np.asarray(p.eval(mode=python_mode()) if not isinstance(p, pt.TensorConstant)
                               else p.data)
            shown.append(np.array2string(value, threshold=5, precision=4, separator=", ",
                                         max_line_width=10**6).replace("\n", ""))
        except Exception:  # noqa: BLE001
            shown.append(str(p))
    return f"{name}({', '.join(shown)})"


def unconstrained_draws(model: pm.Model) -> list:
    r"""Graphs of one joint prior draw of the model's free variables in the unconstrained
    value space (one per variable, in ``free_RVs`` order): PyMC's ancestral draws, except
    that a variable whose constrained draw can over- or underflow where its unconstrained
    value is finite is drawn in the unconstrained space directly.

    PyMC (``make_initial_point_expression``) draws the constrained value and transforms it:
    ``Gamma(0.001, 0.001)`` draws are 0.0 in float64 about half the time (its median is
    1e-304), so ``log`` of them is ``-inf``; ``LogNormal(0, sigma)`` with a heavy-tailed
    ``sigma`` overflows to ``inf``; ``Beta(0.01, 0.01)`` rounds to 0 or 1. Their log (or
    log-odds) is finite and drawn here exactly, as PyMC's transform would give it with
    infinite precision: for :math:`G \sim \mathrm{Gamma}(a + 1)` and
    :math:`U \sim \mathrm{U}(0, 1)`, :math:`G\,U^{1/a} \sim \mathrm{Gamma}(a)`, so
    :math:`\log G + \log(U) / a` is the log of a Gamma(a) draw; the inverse gamma is its
    negative, a Beta's log-odds the difference of two, a log-normal's log a normal.
    Variables that depend on such a variable see its constrained value (``exp`` of the
    draw), so the joint draw is still the prior's. Custom initial values are ignored (see
    ``_prior_sampler``).
    """
    from pymc.pytensorf import toposort_replace

    free_rvs = list(model.free_RVs)
    graph = FunctionGraph(outputs=free_rvs, clone=True)
    rvs = list(graph.outputs)
    transformed, replacements = [], []
    for original, rv in zip(free_rvs, rvs):
        transform = model.rvs_to_transforms.get(original)
        direct = _unconstrained_draw(rv, transform)
        if direct is not None:
            transformed.append(direct)
            replacements.append((rv, transform.backward(direct, *rv.owner.inputs)
                                 .astype(rv.dtype)))
        elif transform is not None:
            transformed.append(transform.forward(rv, *rv.owner.inputs))
        else:
            transformed.append(rv)
    for value in transformed + [new for _, new in replacements]:
        graph.add_output(value, import_missing=True)
    toposort_replace(graph, tuple(replacements), reverse=True)
    return [graph.outputs[len(rvs) + i] for i in range(len(rvs))]


def _unconstrained_draw(rv, transform):
    """A draw of ``rv``'s unconstrained value made in the unconstrained space (see
    :func:`unconstrained_draws`), or None where PyMC's constrained draw is kept."""
    from pymc.logprob.transforms import LogOddsTransform, LogTransform
    from pytensor.tensor.random.basic import BetaRV, GammaRV, InvGammaRV, LogNormalRV

    node = rv.owner
    op = node.op
    log_space = isinstance(transform, LogTransform) and isinstance(
        op, GammaRV | InvGammaRV | LogNormalRV)
    logit_space = isinstance(transform, LogOddsTransform) and isinstance(op, BetaRV)
    if not (log_space or logit_space):
        return None
    params = [pt.as_tensor(p).astype("float64") for p in op.dist_params(node)]
    shape = tuple(op._infer_shape(op.size_param(node), op.dist_params(node)))

    def rng():
        return pytensor.shared(np.random.default_rng())

    def log_gamma(a):  # log of a Gamma(a, 1) draw, finite for every a > 0
        _, g = pt.random.gamma(a + 1.0, scale=1.0, size=shape, rng=rng(),
                               return_next_rng=True)
        _, u = pt.random.uniform(0.0, 1.0, size=shape, rng=rng(), return_next_rng=True)
        return pt.log(g) + pt.log1p(-u) / a

    if isinstance(op, LogNormalRV):
        _, draw = pt.random.normal(params[0], params[1], size=shape, rng=rng(),
                                   return_next_rng=True)
    elif isinstance(op, GammaRV):  # (shape, scale)
        draw = pt.log(params[1]) + log_gamma(params[0])
    elif isinstance(op, InvGammaRV):  # (shape, scale): scale / Gamma(shape)
        draw = pt.log(params[1]) - log_gamma(params[0])
    else:  # Beta(a, b) = G_a / (G_a + G_b): its log-odds is log G_a - log G_b
        draw = log_gamma(params[0]) - log_gamma(params[1])
    return draw.astype(rv.dtype)


class _Unbatchable(Exception):
    """An op that consumes random generators and is neither a random variable nor an
    inner graph of them (a ``Scan`` of draws): batching it could share one stream across
    the batch."""


def _batched_draws(flat_draw, num, batched: dict | None = None):
    """``flat_draw`` (a vector: one draw of the model's forward graph) as a matrix of ``num``
    independent draws, or None where the graph holds an op this cannot batch safely.
    ``batched`` maps inputs of the graph to batched versions (one row per draw), such as a
    vector of values to a matrix of positions.

    Every ``RandomVariable`` gets ``num`` prepended to its batch shape; a parameter that is
    already batched (it depends on a random variable) gets singleton axes after its batch
    axis, so that it lines up with the variable's own batch dimensions from the right.
    PyMC's symbolic distributions (an ``OpFromGraph`` of random variables and other ops:
    ``HalfCauchy``, mixtures) are inlined and their inner graphs batched by the same rules.
    PyTensor's generic ``vectorize_graph`` cannot be used as it stands: it batches a
    random variable by the shape of its *first* parameter only. Every other op is batched by
    ``vectorize_node`` (deterministic ops: at worst PyTensor loops over the batch); where it
    cannot, this returns None. Other ops that consume random generators (a ``Scan`` of
    draws) are refused: batching them could silently share one stream across the batch.
    """
    from pytensor.compile.builders import OpFromGraph
    from pytensor.compile.rewriting import inline_ofg_node
    from pytensor.graph.replace import _vectorize_node
    from pytensor.graph.traversal import toposort
    from pytensor.tensor.random.op import RandomVariable
    from pytensor.tensor.random.type import RandomType

    batched = dict(batched or {})  # inputs already batched (a matrix of positions)

    def visit(outputs):
        for node in toposort(outputs, blockers=list(batched)):
            inputs = [batched.get(i, i) for i in node.inputs]
            if isinstance(node.op, RandomVariable):
                rng, size, *params = inputs
                old_params = node.op.dist_params(node)
                batch_ndim = node.outputs[1].ndim - node.op.ndim_supp
                aligned = []
                for new, old, core in zip(params, old_params, node.op.ndims_params):
                    if new.ndim > old.ndim:  # (num, *old shape): pad up to the batch ndim
                        missing = batch_ndim - (old.ndim - core)
                        new = pt.expand_dims(new, tuple(range(1, 1 + missing)))
                    aligned.append(new)
                shape = node.op._infer_shape(node.op.size_param(node), old_params)
                new_size = pt.stack([pt.as_tensor(num, dtype="int64"),
                                     *[pt.as_tensor(shape[i], dtype="int64")
                                       for i in range(batch_ndim)]])
                outputs_new = node.op.make_node(rng, new_size, *aligned).outputs
            elif isinstance(node.op, OpFromGraph) and any(
                    isinstance(i.type, RandomType) for i in node.inputs):
                # a symbolic distribution (PyMC's HalfCauchy: a Cauchy draw and its abs):
                # its inner graph, inlined on the node's own inputs, batched op by op,
                # each random variable in it by the rule above
                inlined = inline_ofg_node(node)
                visit(inlined)
                outputs_new = [batched.get(o, o) for o in inlined]
            elif any(isinstance(i.type, RandomType) for i in node.inputs):
                raise _Unbatchable(node)
            elif any(a is not b for a, b in zip(inputs, node.inputs)):
                new_node = _vectorize_node(node.op, node, *inputs)
                outputs_new = new_node.outputs if hasattr(new_node, "outputs") else new_node
            else:
                continue
            for old, new in zip(node.outputs, outputs_new):
                batched[old] = new

    try:
        visit([flat_draw])
        result = batched.get(flat_draw)
    except Exception:  # noqa: BLE001 - an op PyTensor cannot batch: draw one at a time
        return None
    if result is None or result.ndim != 2:
        return None
    return result


def _discrete_prior_base(model, free, prior, annealed, drawable, joined_params, summed,
                         flat, initial_point, state):
    """The annealed discrete variables' prior given the rest, as a base for them: its log
    density at a batch of positions, and a sampler that draws them (in the model's order,
    each given the values of the others) at given positions. ``(None, None)`` when the
    path has none, or when one cannot be drawn this way (a symbolic distribution, or a prior
    that depends on a summed variable)."""
    if not annealed:
        return None, None
    terms = [t for t, rv in zip(prior, free) if rv in annealed]
    params = [g for gs in joined_params for g in gs]
    if len(drawable) < len(annealed) or set(summed) & set(ancestors([*terms, *params])):
        return None, None
    log_discrete = pt.add(*[t.sum() for t in terms])

    def build_discrete_base(position):
        return vectorize_graph(log_discrete, replace={flat: position})

    starts, offset = {}, 0
    for v in state:
        size = int(np.size(initial_point[v.name]))
        starts[v.name] = (offset, offset + size)
        offset += size
    positions = pt.matrix("positions", dtype="float64")
    draw_functions = []
    for rv, params in zip(drawable, joined_params):
        op = rv.owner.op
        draw = op.make_node(pytensor.shared(np.random.default_rng()), op.size_param(rv.owner),
                            *params).outputs[1]
        num = positions.shape[0]
        batched = _batched_draws(pt.as_tensor(draw).ravel().astype("float64"), num,
                                 {flat: positions})
        if batched is None:
            return None, None
        rngs = find_rng_nodes([batched])
        fn = pytensor.function([positions], batched, mode=python_mode(),
                               on_unused_input="ignore")
        draw_functions.append((starts[model.rvs_to_values[rv].name], rngs, fn))

    def sample_discrete(rng: np.random.Generator, positions: np.ndarray) -> np.ndarray:
        positions = np.array(positions, dtype=np.float64)
        for (start, stop), rngs, fn in draw_functions:  # in order: parents come first
            reseed_rngs(rngs, rng.integers(2**63, size=4))
            positions[:, start:stop] = np.asarray(fn(positions)).reshape(len(positions), -1)
        return positions

    return build_discrete_base, sample_discrete


MIN_SPREAD_DRAWS = 50
"""The fewest of the build's 200 prior draws with a finite log-likelihood from which its
spread is recorded (``ModelPath.prior_log_lik_spread``)."""


def _check_terms(model: pm.Model, initial_point: dict, sample_base,
                 log_lik=None) -> float | None:
    """Refuse, naming them, the terms of the log-likelihood that no parameter value can make
    right, found at 200 prior draws before anything is compiled:

    - a ``pm.Potential`` that is ``+inf`` at some draw: an infinite density has no evidence,
      and AIS would drop those particles silently (a Potential ``+inf`` where ``mu > 0``
      gave the evidence of the model restricted to ``mu < 0``);
    - observed values whose log-likelihood is ``-inf`` or NaN at every draw (an ``inf`` in
      the data, a count of -1, a proportion of 1.5: outside the support), named by
      variable and position (before, "every particle has zero weight" after the pilot).

    Returns the spread of the whole log-likelihood (observations and Potentials:
    ``model.datalogp``) over the draws where it is finite, which predicts how long the
    prior's path is (:func:`~pymc_anneal.pymc.bases.predicted_prior_steps`): its
    interquartile range over 1.349 (a Gaussian's standard deviation), robust to the few
    extreme draws of a heavy-tailed prior (posteriordb's eight schools, a half-Cauchy
    scale: standard deviation 6,303, this 5.5); None where the prior cannot be drawn or
    fewer than :data:`MIN_SPREAD_DRAWS` draws are finite.

    ``log_lik``, the path's own log-likelihood of a batch of positions, is evaluated first:
    where it is finite at some draw and ``+inf`` or NaN at none, no term can be either of
    the above, and the terms are not built one by one (posteriordb's Survey: 10 s of its
    first call, its likelihood a stack of 500 scalar terms)."""
    try:
        draws = sample_base(np.random.default_rng(1), 200)
    except AnnealingError:
        return None  # the prior cannot be drawn: checked where it is
    if log_lik is not None:
        batch = pt.matrix("batch", dtype="float64")
        total = np.broadcast_to(np.asarray(
            compile_one_off([batch], [log_lik(batch)])(draws)[0], dtype=np.float64),
            (len(draws),))
        if np.isfinite(total).any() and not (np.isnan(total) | np.isposinf(total)).any():
            return _spread(total)
    observed, potentials = list(model.observed_RVs), list(model.potentials)
    values = _term_values(model, initial_point, draws)
    total = np.broadcast_to(values.pop(), (len(draws),))
    for rv, v in zip(observed, values[:len(observed)]):
        v = np.broadcast_to(v, (len(draws), *np.shape(v)[1:]))
        impossible = ~np.isfinite(v).any(axis=0) & ~np.isposinf(v).any(axis=0)
        if np.any(impossible):
            data = _observed_values(model, rv)
            where = np.argwhere(np.atleast_1d(impossible))
            shown = ", ".join(
                f"{tuple(int(k) for k in w)}"
                + (f" = {np.atleast_1d(data)[tuple(w)]:g}" if data is not None
                   and np.atleast_1d(data).shape == np.atleast_1d(impossible).shape else "")
                for w in where[:4])
            raise AnnealingError(
                f"the observed data of '{rv.name}' are impossible under the model at "
                f"{len(where)} of {np.atleast_1d(impossible).size} positions ({shown}"
                f"{', ...' if len(where) > 4 else ''}): its log-likelihood is -inf or NaN there "
                "at every one of 200 prior draws (a non-finite value, or one outside the "
                f"support of {type(rv.owner.op).__name__.removesuffix('RV')}). Fix or drop "
                "those observations, or choose a likelihood whose support holds them (where "
                "the support moves with a parameter, the prior almost never reaches the "
                "values that allow these data: widen it).")
    infinite = [(p.name, float(np.mean(np.isposinf(np.broadcast_to(v, (len(draws),))))))
                for p, v in zip(potentials, values[len(observed):])
                if np.isposinf(v).any()]
    if infinite:
        named = ", ".join(f"'{name}' (+inf at {share:.0%} of 200 prior draws)"
                          for name, share in infinite)
        raise AnnealingError(
            f"the Potential {named} is +inf: an infinite log density has no evidence (its "
            "integral diverges), so the model is not well defined there. A Potential adds a "
            "log density; a constraint is -inf where it fails and 0 where it holds, e.g. "
            "pm.Potential(name, pt.switch(condition, 0.0, -np.inf)).")
    return _spread(total)


def _term_values(model: pm.Model, initial_point: dict, draws: np.ndarray) -> list:
    """The log-likelihood's terms (each observed variable's, elementwise, then each
    Potential's) and their sum, at the rows of ``draws`` (the model's value space)."""
    observed, potentials = list(model.observed_RVs), list(model.potentials)
    terms = [pt.as_tensor(t) for t in model.logp(vars=observed + potentials, sum=False)]
    terms.append(pt.add(*[t.sum() for t in terms]) if terms else pt.constant(0.0))
    # a failed parameter check is -inf, as in PyMC's own compiled functions; then PyMC's
    # rewrites before the gradient and a stack written entry by entry lifted (stacks.py),
    # as the path's graphs are (_stabilized): posteriordb's Survey writes its likelihood
    # as 31,000 scalar ops, and joining, batching and compiling each cost a time per node
    terms = lift_stacks(rewrite_pregrad(FunctionGraph(
        outputs=_checks_to_ninf(terms), clone=True, copy_inputs=False))).outputs
    graphs, flat = join_nonshared_inputs(initial_point, terms, model.value_vars)
    batch = pt.matrix("batch", dtype="float64")
    with vectorized_scans():
        graphs = vectorize_graph(graphs, replace={flat: batch})
    return [np.asarray(v) for v in compile_one_off([batch], graphs)(draws)]


def undefined_terms(model: pm.Model, num_draws: int = 200) -> list[tuple[str, float]]:
    """The log-likelihood's terms (observed variables and Potentials) that are ``-inf`` or
    NaN at more than half of ``num_draws`` prior draws, each with that share, most first;
    empty where the prior cannot be drawn. For the message of a run whose particles all
    lost their weight (:class:`~pymc_anneal.driver.tuning.ZeroWeightError`): the same
    draws as the build's checks (:func:`_check_terms`)."""
    point = initial_point(model)
    sample_base = _prior_sampler(model, [True] * len(model.free_RVs),
                                 sum(int(np.size(v)) for v in point.values()))
    try:
        draws = sample_base(np.random.default_rng(1), num_draws)
    except AnnealingError:
        return []
    terms = list(model.observed_RVs) + list(model.potentials)
    values = _term_values(model, point, draws)[:-1]
    shares = []
    for term, v in zip(terms, values):
        v = np.asarray(v, dtype=np.float64).reshape(len(draws), -1)
        share = float(np.mean(~np.all(np.isfinite(v), axis=1)))
        if share > 0.5:
            shares.append((term.name, share))
    return sorted(shares, key=lambda t: -t[1])


def _spread(total: np.ndarray) -> float | None:
    """:func:`_check_terms`' spread of the log-likelihood ``total`` at the prior draws."""
    finite = total[np.isfinite(total)]
    if finite.size < MIN_SPREAD_DRAWS:
        return None
    low, high = np.percentile(finite, [25.0, 75.0])
    return float((high - low) / 1.349)


def _observed_values(model: pm.Model, rv) -> np.ndarray | None:
    """The values an observed variable holds (a constant, or a data container, cast or
    not), or None where they are computed."""
    value = model.rvs_to_values.get(rv)
    if value is not None and value.owner is not None and len(value.owner.inputs) == 1:
        value = value.owner.inputs[0]  # a cast of a data container
    if isinstance(value, pt.TensorConstant):
        return np.asarray(value.data)
    if isinstance(value, SharedVariable):
        return np.asarray(value.get_value(borrow=True))
    return None


def _prior_scale(sample_base, num_dims: int) -> np.ndarray | None:
    """Each coordinate's standard deviation under the prior (200 draws), a starting point for
    the mass matrix; None where the prior cannot be drawn (``sample_base`` then raises,
    naming the variable, when a route needs its draws: bridge sampling does not)."""
    try:
        draws = sample_base(np.random.default_rng(0), 200)
    except AnnealingError:
        return None
    scale = draws.std(axis=0)
    return np.where(scale > 0, scale, 1.0)
