"""A stack of scalars that a model writes entry by entry, as one elementwise op on vectors.

A model ported from Stan often builds a vector in a Python loop: ``pt.stack`` of terms that
each apply the same operations to other numbers (posteriordb's Survey: 473 terms
``c_n + a * log(theta) + b_n * log(1 - theta)``, 31,000 scalar ops as written, 969 after
PyMC's rewrites before the gradient, 5,000 once batched over particles). Every later stage
costs a time per node: batching, the gradient, PyTensor's rewrites of each compile and
XLA's compile of the loop (Survey: 2 minutes, where SMC took 38 s). :func:`lift_stacks`
turns ``stack([f(x_1, y), ..., f(x_n, y)])`` into ``f(stack([x_1, ..., x_n]), y)``, from
the stack down, wherever a run of at least :data:`MIN_RUN` consecutive entries is the
output of the same elementwise op (the other entries, constants or not, are joined to it
in their order): Survey's likelihood becomes a handful of vector ops.

Each entry is computed by the same scalar operations on the same numbers in the same order
(an integer constant among the inputs may be widened to the others' type where the result
is a float, which converts it exactly as the scalar op would): the values are the
model's to the last bit. A gradient through the stack sums the entries' contributions in
another order (within rounding).

:func:`through_indexed_stacks` serves a stack indexed by a discrete label that the path
sums out (``log(stack([sigmoid(a), 1 - sigmoid(a)])[z])``): the elementwise op above the
index goes into the stack before PyMC's rewrites, so that ``stabilize`` sees each entry.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.rewriting.basic import MergeOptimizer, node_rewriter, out2in
from pytensor.graph.traversal import ancestors
from pytensor.tensor.basic import MakeVector
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.subtensor import AdvancedSubtensor, Subtensor

__all__ = ["lift_stacks", "through_indexed_stacks"]

MIN_RUN = 4
"""The fewest consecutive entries of a stack that are lifted into one op (a stack of two
or three weights is left as written: nothing to gain)."""


def lift_stacks(graph: FunctionGraph) -> FunctionGraph:
    """Rewrite ``graph`` in place (module docstring); returns it. Equal subgraphs are merged
    first (as PyMC's rewrites do), so that an input every entry shares is seen as one."""
    MergeOptimizer().rewrite(graph)
    out2in(_lift_stack, name="lift_stacks").rewrite(graph)
    return graph


def _run_key(entry):
    """What an entry is grouped by: its elementwise op (and arity), or ``"constant"``;
    None where it is neither (never grouped)."""
    if isinstance(entry, Constant):
        return "constant"
    owner = entry.owner
    if (owner is not None and isinstance(owner.op, Elemwise) and len(owner.outputs) == 1
            and all(i.type.ndim == 0 for i in owner.inputs)):
        return owner.op, len(owner.inputs)
    return None


@node_rewriter([MakeVector])
def _lift_stack(fgraph, node):
    [out] = node.outputs
    entries = node.inputs
    if len(entries) < MIN_RUN or not out.dtype.startswith("float"):
        return None
    runs = []
    for entry in entries:
        key = _run_key(entry)
        if runs and key is not None and runs[-1][0] == key:
            runs[-1][1].append(entry)
        else:
            runs.append((key, [entry]))
    if not any(len(run) >= MIN_RUN and key not in (None, "constant") for key, run in runs):
        return None
    parts, changed = [], False
    for key, run in runs:
        lifted = None
        if key == "constant":
            lifted = pt.constant(np.array([c.data for c in run], dtype=out.dtype))
        elif key is not None and len(run) >= MIN_RUN:
            lifted = _lift_run(key[0], run, out.dtype)
            changed = changed or lifted is not None
        parts.append(lifted if lifted is not None else MakeVector(out.dtype)(*run))
    if not changed:  # else the same stack again, rewritten for ever
        return None
    new = parts[0] if len(parts) == 1 else pt.join(0, *parts)
    if new.type.dtype != out.dtype or new.type.ndim != 1:
        return None
    return [pt.specify_shape(new, out.type.shape)]


def _lift_run(op: Elemwise, run: list, dtype: str):
    """``op`` applied to the stacked inputs of ``run`` (entries that are each ``op``'s
    output), or None where the inputs cannot be stacked without changing a value."""
    args = []
    for column in zip(*(entry.owner.inputs for entry in run)):
        first = column[0]
        if all(c is first for c in column):
            args.append(first)  # the same value for every entry: broadcast
            continue
        constant = all(isinstance(c, Constant) for c in column)
        dtypes = {c.type.dtype for c in column}
        if len(dtypes) > 1 and not constant:
            return None
        if constant:
            data = [np.asarray(c.data) for c in column]
            column_dtype = np.result_type(*data)
            if len(dtypes) > 1 and not (dtype.startswith("float")
                                        and np.issubdtype(column_dtype, np.integer)):
                return None  # widening is exact only where the scalar op makes a float
            args.append(pt.constant(np.array(data, dtype=column_dtype)))
        else:
            args.append(MakeVector(first.type.dtype)(*column))
    lifted = op(*args)
    if lifted.type.dtype != dtype:
        return None
    if lifted.type.ndim == 0:  # every entry the same: repeated
        lifted = pt.alloc(lifted, len(run))
    return lifted


def through_indexed_stacks(labels):
    """A rewrite of ``f(stack([e_1, ..., e_n])[z])`` as ``stack([f(e_1), ..., f(e_n)])[z]``
    for a one-input elementwise ``f``, where the index ``z`` depends on one of ``labels``
    (discrete variables that the path sums out: each becomes a vector of its values). The
    values are the same; but ``stabilize`` then sees ``log(1 - sigmoid(a))`` in the stack,
    as it does in PyMC's graph at each value of the label (a constant index, which goes
    through the stack). Left as written, the label summed, the unchosen entry's ``0 / 0``
    made the gradient ``0 * NaN`` from ``a > 37``. An index that is not such a label (a
    discrete variable annealed on the path) is left as PyMC leaves it."""
    labels = frozenset(labels)

    @node_rewriter([Elemwise])
    def rewrite(fgraph, node):
        if len(node.inputs) != 1 or len(node.outputs) != 1:
            return None
        [indexed] = node.inputs
        owner = indexed.owner
        if owner is None or not isinstance(owner.op, (Subtensor, AdvancedSubtensor)):
            return None
        stack, *indices = owner.inputs
        if (stack.owner is None or not isinstance(stack.owner.op, MakeVector) or not indices
                or labels.isdisjoint(ancestors(indices))):
            return None
        entries = [node.op(entry) for entry in stack.owner.inputs]
        if any(e.type.ndim != 0 for e in entries) or len({e.type.dtype for e in entries}) > 1:
            return None
        [out] = owner.op.make_node(MakeVector(entries[0].type.dtype)(*entries),
                                   *indices).outputs
        if out.type.dtype != node.outputs[0].type.dtype or out.type.ndim != indexed.ndim:
            return None
        return [out]

    return rewrite
