"""The docstring examples of the energy models run and print what they claim."""

from __future__ import annotations

import doctest

import pytest

from pymc_anneal.energy import base, grbm, poe, rbm


@pytest.mark.parametrize("module", [base, rbm, grbm, poe], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0, result
