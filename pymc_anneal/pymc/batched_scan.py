"""A ``pytensor.scan`` in a model's log density, vectorized over particles as one scan.

The adapter evaluates a model's log density for a batch of particles by
``vectorize_graph`` (:func:`pymc_anneal.pymc.adapter.model_path`). PyTensor vectorizes a
``Scan`` (a GARCH variance recursion, an HMM's forward algorithm) as a ``Blockwise`` of it:
one scan per particle. On Numba that is a Python-speed loop over particles (posteriordb's
garch11 and hmm models: 85-160 s per run), and JAX cannot trace it at all (the scan's
number of steps becomes a traced value under ``jnp.vectorize``).

:func:`vectorized_scans` makes ``vectorize_graph`` build instead one scan whose every step
runs on the whole batch: the inner graph is itself vectorized (the particles' axis leads
each state, sequence and constant that depends on them), the recurrent states are carried
for all particles at once, and the outer buffers, time-major in a scan, get the particles'
axis second and are given back particles first. Only what changes is the layout: every
value is the one the per-particle scan computes (tested against PyMC's own log density).
Scans that this does not cover (a ``while`` loop, taps of a gradient scan (mit-mot),
untraced states, a number of steps that depends on the particle) keep PyTensor's
``Blockwise``.

Within the same context a ``MakeVector`` (``pt.stack`` of scalars) whose entries mix batched
and unbatched ones is broadcast in a number of nodes linear in its entries. PyTensor 3.3's
``vectorize_make_vector`` broadcasts each entry against every other (``broadcast_arrays``:
n(n - 1) ``second`` nodes), which never finished on posteriordb's Survey (``pt.stack`` of
500 terms, constants among them: 250,000 nodes, over 100 s before anything compiled). The
entries are joined as rows of length 1 (each reshaped, not expanded) and reshaped back, with
no ``ExpandDims`` of each: PyTensor lifts those through a ``log(1 - theta)`` that the
gradient shares, and ``stabilize`` then no longer turns it into ``-softplus`` (the log
density was -1e10 where PyMC's is -763). Rows, not the entries raveled end to end: the
join's gradient then splits by constant sizes, where end to end they were the number of
particles, which JAX's ``Split`` cannot take inside the loop (a mixture's
``pt.stack([theta, 1 - theta])`` weights sent its loop to Numba).

PyTensor 3.3 vectorizes its symbolic ops ``LogSumExp`` (PyMC's mixtures, an HMM's forward
step), ``LogAddExp``, ``XLogY`` and ``XLog1PY`` as a ``Blockwise`` too (it registers
``Softmax`` and ``LogSoftmax`` only): outside JAX a Python loop over the particles, within a
scan one per step (posteriordb's hmm_drive_0 spent 78 s of its Laplace fit there). Here they
are batched whole: ``LogSumExp`` over its axes moved past the particles', the broadcasting
ones with each input's axes lined up as an ``Elemwise`` lines them up.
"""

from __future__ import annotations

import contextlib
import contextvars

import pytensor.tensor as pt
from pytensor.graph.replace import _vectorize_node, vectorize_graph
from pytensor.scan.op import Scan
from pytensor.tensor.basic import MakeVector, second, vectorize_make_vector
from pytensor.tensor.blockwise import vectorize_node_fallback
from pytensor.tensor.elemwise import get_normalized_batch_axes
from pytensor.tensor.special import LogAddExp, LogSumExp, XLog1PY, XLogY

__all__ = ["vectorized_scans"]

_ACTIVE = contextvars.ContextVar("pymc_anneal_batched_scan", default=False)


@contextlib.contextmanager
def vectorized_scans():
    """Within this context, ``vectorize_graph`` turns a ``Scan`` into one batched scan
    and a stack of scalars into one of linear size (module docstring); elsewhere PyTensor's
    own vectorizations are kept, so other users of PyTensor in the process see no change."""
    token = _ACTIVE.set(True)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


@_vectorize_node.register(Scan)
def _vectorize_scan(op: Scan, node, *batched_inputs):
    if _ACTIVE.get():
        outputs = _batched_scan(op, node, list(batched_inputs))
        if outputs is not None:
            return outputs
    return vectorize_node_fallback(op, node, *batched_inputs)


@_vectorize_node.register(MakeVector)
def _vectorize_stack(op: MakeVector, node, *batched_inputs):
    if not _ACTIVE.get():
        return vectorize_make_vector(op, node, *batched_inputs)
    patterns = {}  # one entry per broadcast pattern: their broadcast is everyone's shape
    for x in batched_inputs:
        patterns.setdefault(x.type.broadcastable, x)
    template = None
    for x in patterns.values():
        template = x if template is None else second(x, template)
    full = template.type.broadcastable
    entries = [x if x.type.broadcastable == full else second(template, x)
               for x in batched_inputs]
    # entry-major, then the entries' axis last: no ExpandDims of an entry (module docstring)
    # each a row of its own, so that the join's gradient splits off rows of length 1 (sizes
    # that are constants: JAX takes no sizes computed from the number of particles)
    joined = pt.concatenate([x.reshape((1, -1)) for x in entries], axis=0)
    stacked = joined.reshape((len(entries), *template.shape), ndim=template.type.ndim + 1)
    return pt.cast(pt.moveaxis(stacked, 0, -1), node.outputs[0].dtype).owner


@_vectorize_node.register(LogSumExp)
def _vectorize_logsumexp(op: LogSumExp, node, batched_x):
    if not _ACTIVE.get():
        return vectorize_node_fallback(op, node, batched_x)
    core_ndim = node.inputs[0].type.ndim
    batch_ndim = batched_x.type.ndim - core_ndim
    axis = get_normalized_batch_axes(op.axis, core_ndim, batch_ndim)
    return LogSumExp(axis=axis)(batched_x).owner


@_vectorize_node.register(LogAddExp)
@_vectorize_node.register(XLogY)
@_vectorize_node.register(XLog1PY)
def _vectorize_broadcasting(op, node, *batched_inputs):
    """An op that broadcasts its inputs as an ``Elemwise`` does: each input gets the batch
    axes (leading, as many as the most batched input has) and its core axes padded to the
    output's, so that the batch axes line up with each other and never with a core axis."""
    if not _ACTIVE.get():
        return vectorize_node_fallback(op, node, *batched_inputs)
    core = node.outputs[0].type.ndim
    ndims = [_batch_ndim(new, old) for new, old in zip(batched_inputs, node.inputs)]
    batch = max(ndims)
    padded = [x.dimshuffle(["x"] * (batch - n) + list(range(n))
                           + ["x"] * (core - old.type.ndim) + list(range(n, x.type.ndim)))
              for x, old, n in zip(batched_inputs, node.inputs, ndims)]
    return type(op)()(*padded).owner


def _batch_ndim(new, old) -> int:
    return new.type.ndim - old.type.ndim


def _batched_scan(op: Scan, node, inputs: list):
    """The outputs of one scan over the batch that equal ``node``'s outputs vectorized over
    ``inputs`` (each with at most one leading batch axis), or None where it does not apply."""
    info = op.info
    if (info.as_while or info.n_mit_mot or info.n_untraced_sit_sot
            or not all(isinstance(v.type, pt.TensorType) for v in node.inputs)):
        return None
    ndims = [_batch_ndim(new, old) for new, old in zip(inputs, node.inputs)]
    if ndims[0] != 0 or any(n not in (0, 1) for n in ndims) or not any(ndims):
        return None
    batched = [n == 1 for n in ndims]
    size = next(new.shape[0] for new, b in zip(inputs, batched) if b)

    seqs = list(range(1, 1 + info.n_seqs))
    first = 1 + info.n_seqs
    states = list(range(first, first + info.n_mit_sot + info.n_sit_sot))
    sizes = range(first + len(states), first + len(states) + info.n_nit_sot)
    non_seqs = list(range(len(node.inputs) - info.n_non_seqs, len(node.inputs)))
    if any(batched[i] for i in sizes):  # a number of steps per particle
        return None

    outer = list(inputs)
    for i in seqs:  # (batch, time, ...) -> time-major, the batch second
        if batched[i]:
            outer[i] = pt.moveaxis(inputs[i], 0, 1)
    for i in states:  # every state is carried for the whole batch
        buffer = inputs[i]
        if batched[i]:
            outer[i] = pt.moveaxis(buffer, 0, 1)
        else:  # a new array (alloc), never a view that the scan could write into
            outer[i] = pt.alloc(pt.expand_dims(buffer, 1), buffer.shape[0], size,
                                *buffer.shape[1:])

    inner = op.fgraph.unfreeze()  # a mutable copy of the inner graph
    inner_in, inner_outputs = list(inner.inputs), list(inner.outputs)
    new_inner = list(inner_in)
    position = 0
    for i in seqs:  # one inner input per outer sequence
        if batched[i]:
            new_inner[position] = _with_batch_axis(inner_in[position])
        position += 1
    taps = [len(t) for t in info.mit_sot_in_slices] + [1] * info.n_sit_sot
    for count in taps:
        for _ in range(count):
            new_inner[position] = _with_batch_axis(inner_in[position])
            position += 1
    for i in non_seqs:
        if batched[i]:
            new_inner[position] = _with_batch_axis(inner_in[position])
        position += 1
    if position != len(inner_in):
        return None
    replace = {old: new for old, new in zip(inner_in, new_inner) if old is not new}
    inner_out = vectorize_graph(inner_outputs, replace=replace)
    inner_size = next(new.shape[0] for old, new in zip(inner_in, new_inner) if old is not new)
    inner_out = [out if _batch_ndim(out, old) == 1
                 else pt.alloc(pt.expand_dims(out, 0), inner_size, *out.shape)
                 for out, old in zip(inner_out, inner_outputs)]
    if any(_batch_ndim(out, old) != 1 for out, old in zip(inner_out, inner_outputs)):
        return None
    new_op = Scan(new_inner, inner_out, info, mode=op.mode,
                  truncate_gradient=op.truncate_gradient, name=op.name, profile=op.profile,
                  allow_gc=op.allow_gc, strict=op.strict)
    new_node = new_op.make_node(*outer)
    # the buffers are time-major with the batch second: the batch first, as vectorized
    return [pt.moveaxis(out, 1, 0) for out in new_node.outputs]


def _with_batch_axis(variable):
    """A variable of ``variable``'s type with one more leading (batch) axis."""
    return pt.tensor(name=variable.name, dtype=variable.type.dtype,
                     shape=(None, *variable.type.shape))
