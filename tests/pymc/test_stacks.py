"""A stack of scalars written entry by entry is lifted into vector ops (``pymc/stacks.py``)
with every entry's value unchanged, and a model's graph no longer grows with its length.
The lifted model's log density against PyMC's, on every backend, is
``test_log_density.py``'s "survey"."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.compile.mode import Mode
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.traversal import apply_ancestors
from pytensor.tensor.basic import MakeVector

from pymc_anneal.pymc.adapter import model_path
from pymc_anneal.pymc.stacks import MIN_RUN, lift_stacks

from tests.pymc.test_log_density import survey

UNREWRITTEN = Mode(linker="py", optimizer=None)


def _lifted(outputs):
    graph = FunctionGraph(outputs=outputs, clone=True, copy_inputs=False)
    return lift_stacks(graph).outputs


def _values(inputs, outputs, points):
    fn = pytensor.function(inputs, outputs, mode=UNREWRITTEN)
    return [np.asarray(fn(*p)) for p in points]


def test_lifted_entries_are_the_entries_as_written_to_the_last_bit():
    """Runs of one op with constants of mixed integer types, an input shared by every
    entry, a run too short to lift and entries of other kinds between runs: the lifted
    stack's every entry is the written one's, bit for bit, at wide random points."""
    x, y = pt.dscalar("x"), pt.dscalar("y")
    entries = [-1e10, -1e10]
    entries += [n * pt.log(x) + (n + 200) * pt.exp(y) - 3.5 for n in range(60, 70)]
    entries += [x * y, pt.sin(x), pt.sin(y), x * 2.0]  # runs of one: left as written
    entries += [pt.log1p(pt.exp(x * n)) for n in range(5)]
    stack = pt.stack(entries)
    [lifted] = _lifted([stack])
    long_stacks = [node for node in apply_ancestors([lifted])
                   if isinstance(node.op, MakeVector) and len(node.inputs) >= MIN_RUN]
    assert not long_stacks
    rng = np.random.default_rng(11)
    points = rng.standard_normal((50, 2)) * np.repeat([1.0, 30.0], 25)[:, None]
    ours = _values([x, y], [lifted], points)
    written = _values([x, y], [stack], points)
    np.testing.assert_array_equal(np.array(ours), np.array(written))


def test_stacks_that_cannot_be_lifted_exactly_are_left_as_written():
    """Inputs of mixed types that are not constants (widening them could change a value),
    and a stack of integers, are left alone."""
    x = pt.dscalar("x")
    i8, i16 = pt.bscalar("i8"), pt.wscalar("i16")
    mixed = pt.stack([pt.true_div(i8 if j % 2 else i16, x + j) for j in range(6)])
    integers = pt.stack([i16 + j for j in range(6)])
    lifted = _lifted([mixed, integers])
    for out in lifted:
        assert isinstance(out.owner.op, MakeVector)
    points = [(1.5, 3, 1000), (-0.25, -7, -300)]
    np.testing.assert_array_equal(
        np.concatenate([np.concatenate(v) for v in _values([x, i8, i16], lifted, points)]),
        np.concatenate([np.concatenate(v)
                        for v in _values([x, i8, i16], [mixed, integers], points)]))


def _batched_size(model) -> int:
    x = pt.dmatrix("x")
    return len(list(apply_ancestors(list(model_path(model).path.build_log_densities(x)))))


def test_a_stack_written_entry_by_entry_costs_a_graph_of_fixed_size():
    """posteriordb's Survey wrote 473 such terms (31,000 scalar ops); every later stage
    (batching, the gradient, each compile's rewrites, XLA's compile of the loop) cost a
    time per node, 2 minutes in all. The path's batched graph is now the same size for 60
    population sizes as for 120 (59 nodes; before the lift, 317 and 617)."""
    assert _batched_size(survey(nmax=60)) == _batched_size(survey(nmax=120))

