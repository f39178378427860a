"""The one-off compile mode (:func:`pymc_anneal.backends.python_mode`): NumPy implementations,
no generated code, and the rewrites that make PyMC's batched graphs run there."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.compile.builders import OpFromGraph
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import ancestors
from pytensor.tensor.blockwise import Blockwise
from scipy import special

from pymc_anneal.backends import compile_one_off


def _ops(fn):
    return [node.op for node in fn.function.maker.fgraph.toposort()]


def test_batched_logsumexp_and_its_gradient_are_inlined():
    """Vectorizing a per-particle graph wraps ``logsumexp`` (an inner graph) in a Blockwise;
    Python mode must run it as plain NumPy, with the right values and gradient."""
    x = pt.vector("x")
    per_particle = pt.logsumexp(2.0 * x) + x[0]
    xs = pt.matrix("xs")
    batched = vectorize_graph(per_particle, replace={x: xs})
    grad = pt.grad(batched.sum(), xs)
    before = [v.owner.op for v in ancestors([batched, grad]) if v.owner is not None]
    assert any(isinstance(op, Blockwise) and isinstance(op.core_op, OpFromGraph)
               for op in before)  # so the rewrite has something to do
    fn = compile_one_off([xs], [batched, grad])
    ops = _ops(fn)
    assert not any(isinstance(op, OpFromGraph) for op in ops)
    assert not any(isinstance(op, Blockwise) and isinstance(op.core_op, OpFromGraph)
                   for op in ops)

    values = np.random.default_rng(0).normal(size=(5, 3))
    out, out_grad = fn(values)
    np.testing.assert_allclose(out, special.logsumexp(2 * values, axis=1) + values[:, 0])
    softmax = special.softmax(2 * values, axis=1)
    expected_grad = 2 * softmax
    expected_grad[:, 0] += 1
    np.testing.assert_allclose(out_grad, expected_grad, rtol=1e-12)


def test_sums_of_more_than_32_terms_run():
    """NumPy's ufuncs take at most 32 operands; a log density summed from many variables'
    terms is nested instead of failing."""
    xs = [pt.scalar(f"x{i}") for i in range(70)]
    fn = compile_one_off(xs, [pt.add(*xs), pt.mul(*xs[:40])])
    values = np.linspace(0.5, 1.5, 70)
    total, product = fn(*values)
    np.testing.assert_allclose(total, values.sum())
    np.testing.assert_allclose(product, np.prod(values[:40]))


def test_graph_building_and_compiles_skip_creation_traces_unless_asked():
    """``without_creation_traces``: variables made inside carry no creation trace (PyTensor
    walks the stack for each otherwise), those made outside keep theirs, the flag comes back
    after the call (and after an error in it), and a user who asked for traces during
    compiles (``traceback__compile_limit > 0``) keeps them."""
    import pytensor
    import pytest

    from pymc_anneal.backends import without_creation_traces

    x = pt.vector("x")

    @without_creation_traces
    def build():
        return pt.exp(x) + 1.0

    @without_creation_traces
    def fail():
        raise ValueError("inside")

    assert (pt.exp(x) + 1.0).tag.trace  # PyTensor's default: a trace
    assert not build().tag.trace
    before = pytensor.config.traceback__limit
    with pytest.raises(ValueError, match="inside"):
        fail()
    assert pytensor.config.traceback__limit == before
    assert (pt.exp(x) + 1.0).tag.trace
    with pytensor.config.change_flags(traceback__compile_limit=5):
        assert build().tag.trace
