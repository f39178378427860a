"""A funnel at the defaults: the centered eight-schools model against its exact evidence
(``tests/eight_schools.py``; measured in full by ``benchmarks/measure_funnel.py``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pymc_anneal.exceptions import AnnealingWarning
from tests.eight_schools import build_model, exact_log_evidence


def test_eight_schools_reference_agrees_two_ways():
    assert abs(exact_log_evidence("quad") - exact_log_evidence("legendre")) < 1e-9


@pytest.mark.slow
def test_centered_eight_schools_covers_at_the_defaults():
    """Three seeded runs at the defaults. A run that warns has done its job; among those that
    do not, no |z| above 5 (z against max(SE, chains' spread)), and their mean z is not
    below -3 / sqrt(runs) (the issue's three runs were together 2.9 SE low; a calibrated
    error fails this 0.13% of the time)."""
    import pymc_anneal as pa

    exact = exact_log_evidence()
    scores = []
    for seed in (0, 1, 2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", AnnealingWarning)
            idata = pa.sample_ais(model=build_model(), random_seed=seed, progressbar=False)
        if any(issubclass(w.category, AnnealingWarning) for w in caught):
            continue
        est = pa.log_evidence(idata)
        scores.append((est.log_evidence - exact) / max(est.standard_error, est.chain_sd))
    scores = np.array(scores)
    assert scores.size, "every run warned"
    assert np.all(np.abs(scores) < 5), scores
    assert scores.mean() * np.sqrt(scores.size) > -3.0, scores
