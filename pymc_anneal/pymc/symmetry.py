r"""Label switching: a mixture whose components are exchangeable has a posterior invariant
under every permutation of their labels, so each mode the optimizer finds has
:math:`L! - 1` mirror images that hold the same mass (issue 41, "no mode left behind").

A five-component mixture (posteriordb's normal_mixture_k) has 120 of them; the census of
:func:`~pymc_anneal.pymc.laplace.fit_modes` finds a handful, and a base on those covers
a few percent of the posterior: importance sampling fails its check, and annealing from
the prior must find all 120 by itself. Where the log density is invariant under the
labels' permutations, :func:`~pymc_anneal.pymc.laplace.laplace_base_path` keeps one
mode of each orbit (:func:`fold`) and gives the base a component at every image of each
(:func:`unfold`), up to :data:`MAX_COMPONENTS`; beyond, it refuses. That is a choice of
base only: a mixture of normalized components is a normalized base whatever its
components, so the estimate stays unbiased even where the invariance were wrong (it
would cost variance, never bias).

**What is permuted** (:func:`label_symmetries`, from the graph): free variables whose
value's last axis holds ``L`` labels, ``2 <= L <=`` :data:`MAX_LABELS`, all of them at
once (a mixture's weights, means and scales), whose transform is elementwise (none, log,
interval, log-odds: a permutation of the constrained values is the same permutation of
the unconstrained ones) or PyMC's simplex transform (a ``Dirichlet``: the value is the
centred log-ratio less its last entry, so a permutation of the weights is the linear map
:math:`x \mapsto (P E x)_{1..L-1}` with :math:`E = [I; -1^\top]`, of determinant
:math:`\pm 1`). Every map is linear with :math:`|\det| = 1`, so the image of a mode's
Gaussian :math:`\mathcal N(m, \Sigma)` is :math:`\mathcal N(Am, A \Sigma A^\top)`, with
the same Laplace mass.

**Whether it is a symmetry** (:func:`is_invariant`): the path's log density (PyMC's,
Jacobians included) at :data:`CHECK_POINTS` points, the census's starts and draws around
each mode, equals its value at their images under a transposition and a cycle of the
labels (which generate every permutation) to :data:`RTOL`; points where both are
``-inf`` agree. A set of variables that fails is tried without one of them (a regression
coefficient vector of the same length among the mixture's parameters), the largest sets
first.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from pymc.logprob.transforms import SimplexTransform

__all__ = ["CHECK_POINTS", "MAX_COMPONENTS", "MAX_LABELS", "RTOL", "LabelSymmetry",
           "find_symmetry", "fold", "is_invariant", "label_symmetries", "unfold"]

MAX_LABELS = 6
"""The most labels looked for (6! = 720 images of each mode; beyond
:data:`MAX_COMPONENTS` the Laplace base is refused)."""

MAX_COMPONENTS = 24
"""The most components the Laplace base may get from the images of its modes: each is a
term of the compiled loop's graph (posteriordb's normal_mixture_k, 5 labels and two
modes up to relabelling: 240 components, whose JAX loop had not compiled after 10
minutes) and costs ``d**2`` per particle and density. Where the orbits would make more,
the Laplace base is refused (``base="auto"`` then runs from the prior): a base on the
few mirror modes that the optimizer found would miss the others' mass where its
importance weights look healthy."""

CHECK_POINTS = 32
"""The points at which :func:`is_invariant` compares the log density with its images."""

RTOL = 1e-9
"""Relative tolerance of :func:`is_invariant` (a permutation reorders sums: roundoff)."""

SYMMETRY_KEY = 2**32 - 45
"""The spawn key of the check points' stream
(:func:`~pymc_anneal.pymc.laplace.side_stream`): the run draws what it drew without it."""


@dataclass(frozen=True)
class LabelSymmetry:
    """Free variables (``names``) whose last axis holds ``labels`` exchangeable labels:
    ``blocks`` gives each one's columns in the path's coordinates (an integer array whose
    last axis is the labels', or one fewer for a simplex) and whether it is a simplex."""

    names: tuple[str, ...]
    labels: int
    blocks: tuple[tuple[np.ndarray, bool], ...]

    def apply(self, x: np.ndarray, perm) -> np.ndarray:
        """The rows of ``x`` (n, d) with the labels permuted by ``perm`` (new label i is
        old label ``perm[i]``)."""
        x = np.asarray(x, dtype=np.float64)
        out = x.copy()
        perm = np.asarray(perm)
        for columns, simplex in self.blocks:
            if not simplex:
                out[:, columns.ravel()] = x[:, columns[..., perm].ravel()]
                continue
            values = x[:, columns]  # (n, ..., L - 1): the centred log-ratios less the last
            full = np.concatenate([values, -values.sum(axis=-1, keepdims=True)], axis=-1)
            out[:, columns.ravel()] = full[..., perm][..., :-1].reshape(len(x), -1)
        return out

    def permutations(self):
        """Every permutation of the labels but the identity."""
        identity = tuple(range(self.labels))
        return (p for p in itertools.permutations(range(self.labels)) if p != identity)

    def describe(self) -> str:
        return (f"{', '.join(self.names)}: {self.labels} exchangeable labels "
                f"({math.factorial(self.labels)} permutations)")


def label_symmetries(model, mp) -> list[LabelSymmetry]:
    """The candidate sets of :class:`LabelSymmetry` of the model (its path ``mp``), from the
    graph alone, the largest sets first: for each number of labels, every candidate
    variable, then each set without one of them. Empty for paths in non-centred
    coordinates or with discrete coordinates."""
    if mp.noncentered or mp.sums is not None or mp.path is None or mp.path.discrete_dims:
        return []
    by_labels: dict[int, list] = {}
    values = {v.name: v for v in model.value_vars}
    for name, columns, shape in mp.value_slices:
        value = values.get(name)
        rv = model.values_to_rvs.get(value) if value is not None else None
        if rv is None or not shape:
            continue
        transform = model.rvs_to_transforms.get(rv)
        simplex = isinstance(transform, SimplexTransform)
        if not (transform is None or simplex or getattr(transform, "ndim_supp", None) == 0):
            continue
        labels = shape[-1] + (1 if simplex else 0)
        if 2 <= labels <= MAX_LABELS:
            index = np.arange(columns.start, columns.stop).reshape(shape)
            by_labels.setdefault(labels, []).append((name, index, simplex))
    candidates = []
    for labels, members in sorted(by_labels.items(), key=lambda item: -len(item[1])):
        sets = [members]
        if len(members) > 1:
            sets += [members[:i] + members[i + 1:] for i in range(len(members))]
        for chosen in sets:
            candidates.append(LabelSymmetry(tuple(n for n, _, _ in chosen), labels,
                                            tuple((index, simplex)
                                                  for _, index, simplex in chosen)))
    return candidates


def is_invariant(symmetry: LabelSymmetry, evaluate, points: np.ndarray,
                 base: np.ndarray | None = None) -> bool:
    """Whether the log density (``evaluate``: rows -> (values, gradients), called with
    ``gradient=False``) is the same at ``points`` (``base``: its values there, where
    already known) and at their images under a transposition and a cycle of the labels
    (at least half of the points finite; both ``-inf`` counts as equal)."""
    points = np.asarray(points, dtype=np.float64)
    if base is None:
        base = evaluate(points, gradient=False)[0]
    base = np.asarray(base, dtype=np.float64)
    finite = np.isfinite(base)
    if finite.sum() < max(2, len(points) // 2):
        return False
    labels = symmetry.labels
    for perm in ((1, 0, *range(2, labels)), (*range(1, labels), 0)):
        image = np.asarray(evaluate(symmetry.apply(points, perm), gradient=False)[0],
                           dtype=np.float64)
        same = np.where(finite, np.abs(image - base) <= RTOL * (1.0 + np.abs(base)),
                        ~np.isfinite(image) & (image == base))
        if not np.all(same):
            return False
    return True


def find_symmetry(candidates: list[LabelSymmetry], evaluate, modes: list,
                  starts: np.ndarray, rng: np.random.Generator) -> LabelSymmetry | None:
    """The first of ``candidates`` that :func:`is_invariant` accepts, checked at half of
    :data:`CHECK_POINTS` of the census's ``starts`` and as many draws around its ``modes``
    (``(log density, mean, cov)``: normal draws with the modes' marginal scales), from a
    stream of its own; None where none is."""
    if not candidates or not modes:
        return None
    from pymc_anneal.pymc.laplace import side_stream

    stream = side_stream(rng, SYMMETRY_KEY)
    starts = np.asarray(starts, dtype=np.float64)
    pick = stream.choice(len(starts), size=min(CHECK_POINTS // 2, len(starts)), replace=False)
    around = []
    for k in range(CHECK_POINTS - len(pick)):  # within the modes' marginal scales
        _, mean, cov = modes[k % len(modes)]
        scale = np.sqrt(np.abs(np.diag(cov)))
        around.append(mean + scale * stream.standard_normal(mean.size))
    points = np.concatenate([starts[pick], np.array(around)])
    base = evaluate(points, gradient=False)[0]
    return next((s for s in candidates if is_invariant(s, evaluate, points, base)), None)


def _image(symmetry: LabelSymmetry, mode: tuple, perm) -> tuple:
    value, mean, cov = mode
    image_cov = symmetry.apply(symmetry.apply(cov, perm).T, perm)
    return value, symmetry.apply(mean[None, :], perm)[0], 0.5 * (image_cov + image_cov.T)


def fold(symmetry: LabelSymmetry, modes: list, within) -> list:
    """One mode of each orbit: ``modes`` (highest first) less those with an image within
    one standard deviation (``within(x, mean, cov)``) of a mode kept before them (the
    same as being within one of the kept mode's images, in that image's metric: the maps
    are linear)."""
    kept: list = []
    for mode in modes:
        images = [symmetry.apply(mode[1][None, :], p)[0]
                  for p in itertools.permutations(range(symmetry.labels))]
        if not any(within(x, mean, cov) for _, mean, cov in kept for x in images):
            kept.append(mode)
    return kept


def unfold(symmetry: LabelSymmetry, modes: list, within) -> tuple[list, str]:
    """``modes`` (one per orbit: :func:`fold`) and every image of each, an image within one
    standard deviation of a mode already kept left out; and the note for
    ``label_symmetry``."""
    kept = list(modes)
    for mode in modes:
        for perm in symmetry.permutations():
            image = _image(symmetry, mode, perm)
            if not any(within(image[1], m, c) for _, m, c in kept):
                kept.append(image)
    return kept, (f"{symmetry.describe()}: {len(modes)} modes up to relabelling, "
                  f"{len(kept)} with their images")
