r"""Exact sums over all states of a binary layer, in chunks.

The states of a layer of ``n`` binary units are the integers :math:`s = 0, \dots, 2^n - 1`,
unit ``i`` being bit ``i`` of ``s``. They are visited as a product of two blocks: the
``k`` *low* units (``2^k`` states, materialized once as a ``(2^k, k)`` array) and the
``n - k`` *high* units (one state at a time). A model's per-state quantity is then written as
``low part + high part``: the low part's matrix products are computed once, and each chunk
(the ``2^k`` states that share one high state) costs only an addition and the model's
element-wise terms. Memory is ``O(2^k × width)`` whatever ``n``.

:func:`logsumexp_over_states` combines the chunks' log-sum-exps in float64; the result does
not depend on the chunk size beyond rounding (a test checks chunked = unchunked).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.validation import check_count, is_integer

__all__ = [
    "DEFAULT_MAX_STATES",
    "binary_states",
    "check_num_states",
    "chunk_bits",
    "iterate_high_states",
    "logsumexp_over_states",
]

DEFAULT_MAX_STATES = 2**20
"""Default limit on the number of enumerated states (``max_states``) for exact log Z.

Measured on one busy CPU core (NumPy, float64): 2^20 hidden states of a Gaussian RBM with
108 visible units take about 0.5 s (2^24: 5 s), since each state costs only ``O(n_visible)``
flops. A binary RBM costs ``2^20 × width`` softplus evaluations (``width`` = the size of the
layer that is summed out), about 30-40 ns each: 2-3 s for 64 visible units, about 30 s for 784
(MNIST-sized). The limit guards against an accidental hour-long loop; it is not a memory limit
(memory stays bounded by the chunk, about 16 MiB per temporary), so ``max_states`` may be
raised explicitly (e.g. to 2^24) or set to ``None``."""

_TARGET_CHUNK_ELEMENTS = 2**21  # chunk rows x width: ~16 MiB of float64 per temporary


def check_num_states(num_bits: int, max_states: int | None, what: str) -> None:
    """Raise :class:`AnnealingError` if ``2**num_bits`` exceeds ``max_states``."""
    if max_states is None:
        return
    max_states = check_count("max_states", max_states, 1, what="a positive integer")
    if num_bits >= 63 or 2**num_bits > max_states:
        raise AnnealingError(
            f"exact log Z of this {what} needs a sum over {_count(num_bits)} states, more than "
            f"max_states = {max_states:,}. Estimate log Z "
            "with annealed importance sampling instead (pymc_anneal.ais(model, ...)), or, if "
            "you can wait (the time grows linearly with the number of states), pass a larger "
            "max_states."
        )


def _count(num_bits: int) -> str:
    return f"2^{num_bits} = {2**num_bits:,}" if num_bits <= 64 else f"2^{num_bits}"


def chunk_bits(num_bits: int, width: int, chunk_size: int | None = None) -> int:
    """Number of low bits ``k`` so that a chunk holds ``2^k`` states.

    ``chunk_size`` (a power of two) fixes it; by default ``2^k × width`` is about 2^21
    elements.
    """
    if chunk_size is not None:
        if not is_integer(chunk_size) or chunk_size < 1 or chunk_size & (chunk_size - 1):
            raise AnnealingError(f"chunk_size must be a power of two (1, 2, 4, ...), got {chunk_size!r}.")
        k = int(chunk_size).bit_length() - 1
    else:
        k = max(0, int(np.floor(np.log2(_TARGET_CHUNK_ELEMENTS / max(width, 1)))))
    return min(k, num_bits)


def binary_states(num_bits: int, start: int = 0, stop: int | None = None) -> np.ndarray:
    """The states ``start..stop-1`` of ``num_bits`` binary units as a float64 ``(n, num_bits)``
    array; unit ``i`` is bit ``i`` of the state's index."""
    stop = 2**num_bits if stop is None else stop
    index = np.arange(start, stop, dtype=np.int64)
    return ((index[:, None] >> np.arange(num_bits, dtype=np.int64)) & 1).astype(np.float64)


def iterate_high_states(num_bits: int, num_low: int) -> Iterator[np.ndarray]:
    """Yield each state of the ``num_bits - num_low`` high units as a float64 vector."""
    num_high = num_bits - num_low
    for s in range(2**num_high):
        yield ((s >> np.arange(num_high)) & 1).astype(np.float64)


def logsumexp_over_states(
    num_bits: int,
    num_low: int,
    chunk_log_weights: Callable[[np.ndarray], np.ndarray],
) -> float:
    r""":math:`\log \sum_s \exp(\text{log weight}(s))` over all ``2^num_bits`` states.

    ``chunk_log_weights(high_state)`` returns the ``(2^num_low,)`` float64 log weights of the
    states whose high units are ``high_state`` (the low units in :func:`binary_states` order).
    """
    chunk_lse = [_logsumexp(chunk_log_weights(high)) for high in iterate_high_states(num_bits, num_low)]
    return float(_logsumexp(np.asarray(chunk_lse)))


def _logsumexp(x: np.ndarray) -> float:
    m = np.max(x)
    if not np.isfinite(m):
        return float(m)
    return float(m + np.log(np.sum(np.exp(x - m))))
