r"""Binary units in PyTensor graphs: the pieces that the annealing paths of the Bernoulli
and Gaussian RBMs (:mod:`pymc_anneal.energy.rbm`, :mod:`pymc_anneal.energy.grbm`) share.

**Draws.** :math:`u < \sigma(x)` with :math:`u` uniform is a Bernoulli(:math:`\sigma(x)`)
draw; with :math:`e = e^{-|x|}` it reads :math:`u(1 + e) < 1` if :math:`x \ge 0`, else
:math:`u (1 + e) < e`: no division and no overflow.

**Weight increment.** Both RBM paths have :math:`\sum_j \operatorname{softplus}(\beta s_j)`
in :math:`\log f_\beta`, with :math:`s` the hidden units' input. With
:math:`\operatorname{softplus}(x) = \max(x, 0) + \log(1 + e^{-|x|})`, the AIS weight
increment of that part from :math:`\beta - \delta` to :math:`\beta` is

.. math:: \delta \sum_j \max(s_j, 0) + \log \prod_j
          \frac{1 + e^{-\beta |s_j|}}{1 + e^{-(\beta - \delta)|s_j|}},

two exponentials per hidden unit (the first shared with the draw of :math:`h`) and one
logarithm per row, instead of five transcendental functions per unit
(:func:`softplus_increment`).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

__all__ = ["LOG_2", "MAX_UNCHUNKED", "bernoulli", "draw_hidden", "draw_visible",
           "softplus_increment", "uniform"]

LOG_2 = float(np.log(2.0))

MAX_UNCHUNKED = 1000
"""Up to this many hidden units, :func:`softplus_increment` takes one product per row: each
factor lies in [1/2, 1], so the product stays above 2^-1000, inside float64's normal range."""
CHUNK = 512
"""Above ``MAX_UNCHUNKED`` hidden units, the products are taken over blocks of this size."""


def uniform(rng, shape, dtype):
    """``(rng, u)``: uniforms on [0, 1) of ``shape`` and ``dtype``."""
    return pt.random.uniform(size=shape, rng=rng, return_next_rng=True, dtype=dtype)


def exp_neg_abs(s64, beta):
    r""":math:`e^{-\beta |s|}`: shared by the weight increment and the draw of :math:`h` in
    the Gibbs sweep (identical graphs, merged by PyTensor)."""
    return pt.exp(-beta * pt.abs(s64))


def bernoulli(u, x, e):
    r"""Draws :math:`u < \sigma(x)` as 0/1 in the dtype of ``u``, from uniforms ``u`` and
    :math:`e = e^{-|x|}`: :math:`u (1 + e) < 1` if :math:`x \ge 0`, else :math:`u (1 + e) < e`.
    No division and no overflow (a compiled division before a comparison costs about three
    times as much as this)."""
    return (u * (1 + e) < pt.switch(x >= 0, pt.ones_like(e), e)).astype(u.dtype)


def draw_hidden(rng, s, beta):
    r""":math:`h \sim \text{Bernoulli}(\sigma(\beta s))`, sharing :math:`e^{-\beta|s|}` (float64)
    with the weight increment."""
    rng, u = uniform(rng, s.shape, s.dtype)
    return rng, bernoulli(u, s, exp_neg_abs(s.astype("float64"), beta))


def draw_visible(rng, z):
    r""":math:`v \sim \text{Bernoulli}(\sigma(z))` in the dtype of ``z``."""
    rng, u = uniform(rng, z.shape, z.dtype)
    return rng, bernoulli(u, z, pt.exp(-pt.abs(z)))


def softplus_increment(s, beta, delta, chunked):
    r"""Per row, :math:`\sum_j \operatorname{softplus}(\beta s_j) - \operatorname{softplus}((\beta - \delta) s_j)`
    for ``s`` of shape ``(N, M)`` and :math:`\beta, \beta - \delta \in [0, 1]` (:math:`\delta < 0`
    on a run backwards from the target).

    With :math:`\operatorname{softplus}(x) = \max(x, 0) + \log(1 + e^{-|x|})` the sum is
    :math:`\delta \sum_j \max(s_j, 0) + \log \prod_j (1 + e^{-\beta|s_j|}) / (1 + e^{-(\beta-\delta)|s_j|})`:
    two exponentials per unit (one shared with the draw of :math:`h`) and one logarithm per
    row (per block of 512 units if ``chunked``), instead of two logarithms and two
    exponentials per unit. Each factor lies in [1/2, 1] (in [1, 2] for :math:`\delta < 0`),
    so a product of up to ``MAX_UNCHUNKED`` factors neither overflows nor underflows; exact
    in float64 to rounding (about 1e-13 per step).
    """
    s64 = s.astype("float64")
    ratio = (1.0 + exp_neg_abs(s64, beta)) / (1.0 + pt.exp(-(beta - delta) * pt.abs(s64)))
    linear = delta * pt.maximum(s64, 0.0).sum(axis=1)
    if not chunked:
        return linear + pt.log(ratio.prod(axis=1))
    rows, cols = ratio.shape
    pad = pt.ones((rows, (-cols) % CHUNK), dtype="float64")  # factors of 1: s = 0
    ratio = pt.concatenate([ratio, pad], axis=1).reshape((rows, -1, CHUNK))
    return linear + pt.log(ratio.prod(axis=2)).sum(axis=1)
