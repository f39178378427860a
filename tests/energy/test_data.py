"""Example data: shapes, whiteness, binary digits."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_anneal.energy import binarized_digits, image_patches
from pymc_anneal.energy.data import _random_patches, contrast_normalize
from pymc_anneal.exceptions import AnnealingError

sklearn_datasets = pytest.importorskip("sklearn.datasets")


def test_zca_patches_are_white_in_pixel_space():
    patches = image_patches(num_patches=5000, num_test_patches=500, rng=0)
    assert patches.data.shape == (5000, 108) and patches.test_data.shape == (500, 108)
    assert patches.whitening.shape == (108, 108) and patches.num_dims == 108
    np.testing.assert_allclose(patches.data.mean(axis=0), 0.0, atol=1e-10)
    # per-patch mean removal leaves the constant patch with zero variance: the covariance is
    # the identity minus the projection on it
    ones = np.ones(108) / np.sqrt(108)
    cov = np.cov(patches.data, rowvar=False, bias=True)
    np.testing.assert_allclose(cov, np.eye(108) - np.outer(ones, ones), atol=1e-8)
    # the held-out patches are roughly white too (same images, other positions)
    test_var = patches.test_data.var(axis=0)
    assert 0.7 < np.median(test_var) < 1.4, np.median(test_var)


def test_pca_patches_have_identity_covariance_and_invert():
    patches = image_patches(num_patches=3000, whitening="pca", rng=1)
    assert patches.data.shape == (3000, 107)
    np.testing.assert_allclose(np.cov(patches.data, rowvar=False, bias=True), np.eye(107), atol=1e-8)
    # the same raw patches (same seed) through transform, and back through dewhitening
    raw = _random_patches(sklearn_datasets.load_sample_images().images, 6, 3000, np.random.default_rng(1))
    np.testing.assert_allclose(patches.transform(raw), patches.data, atol=1e-10)
    np.testing.assert_allclose(patches.data @ patches.dewhitening + patches.mean, contrast_normalize(raw),
                               atol=1e-10)


def test_patch_arguments_are_checked():
    with pytest.raises(AnnealingError, match=r"whitening must be one of \['zca', 'pca'\]"):
        image_patches(num_patches=1000, whitening="pcaa")
    with pytest.raises(AnnealingError, match="at least 2 x 108"):
        image_patches(num_patches=100)
    with pytest.raises(AnnealingError, match="epsilon must be a finite number >= 0"):
        image_patches(num_patches=1000, epsilon=-1.0)


def test_binarized_digits():
    data, labels = binarized_digits(return_labels=True)
    assert data.shape == (1797, 64) and labels.shape == (1797,)
    assert set(np.unique(data)) == {0.0, 1.0}
    assert 0.2 < data.mean() < 0.5
    np.testing.assert_array_equal(binarized_digits(threshold=0.5), binarized_digits(threshold=1))
