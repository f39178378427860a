r"""Small real data sets for EBM examples, from scikit-learn's bundled data (no download).

- :func:`image_patches`: colour image patches (6×6×3 = 108 dimensions by default, as in
  Kiwaki & Aihara 2015), contrast-normalized and whitened, from the two photographs of
  :func:`sklearn.datasets.load_sample_images`.
- :func:`binarized_digits`: the 8×8 handwritten digits of :func:`sklearn.datasets.load_digits`
  thresholded to 64 binary pixels.

Needs scikit-learn (and Pillow for the photographs): ``pip install 'pymc-anneal[examples]'``.

**Preprocessing of the patches.** Each raw patch :math:`x` (pixel values 0-255) is contrast
normalized, :math:`\tilde x = (x - \bar x) / \sqrt{\operatorname{var}(x) + 10}` with the
patch's own mean and variance over its pixels and channels (Coates, Lee & Ng 2011); then the
data are whitened with the eigendecomposition :math:`U \Lambda U^\top` of the covariance of
:math:`\tilde x`. Removing each patch's mean leaves the constant patch with zero variance, so
eigenvalues below ``1e-8`` times the largest are dropped (one of them, normally). PCA
whitening, :math:`z = (\tilde x - \mu)\, U_k (\Lambda_k + \epsilon)^{-1/2}`, gives ``k``
coordinates with identity covariance (``epsilon = 0``); ZCA whitening rotates them back,
:math:`z = (\tilde x - \mu)\, U_k (\Lambda_k + \epsilon)^{-1/2} U_k^\top`, keeping the pixel
layout (all ``size*size*3`` dimensions, with covariance the identity minus the projection on
the dropped directions). ``epsilon > 0`` damps the noisiest directions, at the price of
whiteness.

References
----------
Coates, A., Lee, H. & Ng, A. Y. (2011). An analysis of single-layer networks in unsupervised
feature learning. *AISTATS*.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymc_anneal.energy.base import check_positive_int
from pymc_anneal.energy.rbm import as_generator
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.validation import check_count, check_one_of, check_real

__all__ = ["WHITENINGS", "ImagePatches", "binarized_digits", "image_patches"]

WHITENINGS = ("zca", "pca")
_CONTRAST_EPSILON = 10.0  # for 0-255 pixel values (Coates et al. 2011)
_RELATIVE_EIGENVALUE_FLOOR = 1e-8


def _sklearn_datasets():
    try:
        import sklearn.datasets
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the example data need scikit-learn: pip install 'pymc-anneal[examples]'."
        ) from err
    return sklearn.datasets


@dataclass(frozen=True)
class ImagePatches:
    """Whitened image patches and the transform that made them.

    Attributes
    ----------
    data : ndarray (num_patches, num_dims)
        Whitened training patches (the whitening is fitted on them).
    test_data : ndarray (num_test_patches, num_dims)
        Held-out patches (different random positions) whitened with the same transform.
    mean : ndarray (size*size*3,)
        Mean of the contrast-normalized training patches.
    whitening : ndarray (size*size*3, num_dims)
        ``data = (normalized - mean) @ whitening``.
    dewhitening : ndarray (num_dims, size*size*3)
        ``normalized ≈ data @ dewhitening + mean`` (exact up to the dropped directions).
    size : int
    method : {"zca", "pca"}
    epsilon : float
    """

    data: np.ndarray
    test_data: np.ndarray
    mean: np.ndarray
    whitening: np.ndarray
    dewhitening: np.ndarray
    size: int
    method: str
    epsilon: float

    @property
    def num_dims(self) -> int:
        return self.data.shape[1]

    def transform(self, raw_patches) -> np.ndarray:
        """Contrast-normalize and whiten raw patches ``(N, size*size*3)`` (values 0-255)."""
        raw = np.asarray(raw_patches, dtype=np.float64)
        if raw.ndim != 2 or raw.shape[1] != self.mean.size:
            raise AnnealingError(f"raw_patches must have shape (N, {self.mean.size}), got {raw.shape}.")
        return (contrast_normalize(raw) - self.mean) @ self.whitening


def contrast_normalize(raw: np.ndarray) -> np.ndarray:
    """Remove each row's mean and divide by ``sqrt(variance + 10)`` (pixel values 0-255)."""
    centred = raw - raw.mean(axis=1, keepdims=True)
    return centred / np.sqrt(centred.var(axis=1, keepdims=True) + _CONTRAST_EPSILON)


def _random_patches(images, size: int, num: int, rng: np.random.Generator) -> np.ndarray:
    which = rng.integers(len(images), size=num)
    out = np.empty((num, size * size * 3))
    for i, image in enumerate(images):
        rows = np.flatnonzero(which == i)
        top = rng.integers(image.shape[0] - size + 1, size=rows.size)
        left = rng.integers(image.shape[1] - size + 1, size=rows.size)
        offsets = np.arange(size)
        patches = image[(top[:, None] + offsets)[:, :, None], (left[:, None] + offsets)[:, None, :]]
        out[rows] = patches.reshape(rows.size, -1)
    return out


def image_patches(
    size: int = 6,
    num_patches: int = 20000,
    *,
    num_test_patches: int = 0,
    whitening: str = "zca",
    epsilon: float = 0.0,
    rng=None,
) -> ImagePatches:
    """Random ``size × size`` colour patches of scikit-learn's sample photographs, contrast
    normalized and whitened (see the module docstring).

    Parameters
    ----------
    size : int, default 6
        Patch side; the raw dimension is ``size * size * 3`` (108 for 6).
    num_patches : int, default 20000
        Training patches; the whitening is fitted on them.
    num_test_patches : int, default 0
        Extra patches whitened with the training transform (``test_data``).
    whitening : {"zca", "pca"}, default "zca"
        ZCA keeps all ``size*size*3`` pixel dimensions; PCA returns the ``size*size*3 - 1``
        (normally) non-degenerate components, whose covariance is exactly the identity.
    epsilon : float, default 0
        Added to the eigenvalues before whitening (regularization).
    rng : numpy.random.Generator or seed, optional
        Patch positions.

    Returns
    -------
    ImagePatches
    """
    size = check_positive_int(size, "size")
    num_patches = check_positive_int(num_patches, "num_patches")
    num_test_patches = check_count("num_test_patches", num_test_patches, 0,
                                   what="a non-negative integer")
    check_one_of("whitening", whitening, WHITENINGS)
    epsilon = check_real("epsilon", epsilon, low=0.0)
    images = _sklearn_datasets().load_sample_images().images
    if size > min(min(image.shape[:2]) for image in images):
        raise AnnealingError(f"size must fit in the sample images (at most 427), got {size}.")
    dim = size * size * 3
    if num_patches < 2 * dim:
        raise AnnealingError(
            f"num_patches must be at least 2 x {dim} (twice the dimension) to estimate the "
            f"whitening covariance, got {num_patches}."
        )
    rng = as_generator(rng)
    raw = _random_patches(images, size, num_patches + num_test_patches, rng)
    normalized = contrast_normalize(raw)
    train, test = normalized[:num_patches], normalized[num_patches:]
    mean = train.mean(axis=0)
    cov = np.cov(train - mean, rowvar=False, bias=True)
    eigval, eigvec = np.linalg.eigh((cov + cov.T) / 2)
    keep = eigval > _RELATIVE_EIGENVALUE_FLOOR * eigval[-1]
    eigval, eigvec = eigval[keep][::-1], eigvec[:, keep][:, ::-1]  # largest first
    scale = np.sqrt(eigval + epsilon)
    forward = eigvec / scale  # (dim, k)
    backward = (eigvec * scale).T  # (k, dim)
    if whitening == "zca":
        forward, backward = forward @ eigvec.T, eigvec @ backward
    return ImagePatches(
        data=(train - mean) @ forward,
        test_data=(test - mean) @ forward,
        mean=mean,
        whitening=forward,
        dewhitening=backward,
        size=size,
        method=whitening,
        epsilon=float(epsilon),
    )


def binarized_digits(threshold: float = 8.0, return_labels: bool = False):
    """The 1797 8×8 digits of :func:`sklearn.datasets.load_digits` as 64 binary pixels.

    Pixel intensities 0-16 become 1 where ``>= threshold`` (default 8, half the range).

    Returns
    -------
    data : ndarray (1797, 64) of float64 zeros and ones
    labels : ndarray (1797,) of int, if ``return_labels``
    """
    digits = _sklearn_datasets().load_digits()
    data = (digits.data >= threshold).astype(np.float64)
    return (data, digits.target.copy()) if return_labels else data
