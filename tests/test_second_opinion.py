"""The second-opinion warning (:func:`pymc_anneal.diagnostics.second_opinion_message`): an
estimate far below an independent, trustworthy one of the same log Z is flagged; one that
agrees, one above it, or one whose reference cannot be trusted is not."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pymc_anneal.diagnostics import SECOND_OPINION_Z, second_opinion_message
from pymc_anneal.estimators import estimate_log_z

KW = {"what": "the run", "reference": "the other run", "fix": "Do this."}


def _weights(rng, shift, n=400, sd=0.3):
    return rng.normal(shift, sd, (2, n // 2))


def _z(ours, theirs):
    a, b = estimate_log_z(ours.ravel()), estimate_log_z(theirs.ravel())
    return (a.log_z - b.log_z) / np.hypot(a.standard_error, b.standard_error)


def test_a_low_estimate_is_flagged_with_both_estimates_and_the_fix():
    rng = np.random.default_rng(0)
    ours, theirs = _weights(rng, -0.2), _weights(rng, 0.0)
    assert _z(ours, theirs) < -SECOND_OPINION_Z
    message = second_opinion_message(ours, theirs, **KW)
    assert message.startswith("the run gives log Z = ")
    assert "below the other run" in message and message.endswith("Do this.")


@pytest.mark.parametrize("shift", [0.0, 0.2])
def test_an_estimate_that_agrees_or_is_higher_is_not_flagged(shift):
    rng = np.random.default_rng(1)
    assert second_opinion_message(_weights(rng, shift), _weights(rng, 0.0), **KW) is None


def test_an_untrustworthy_reference_is_no_second_opinion():
    """A reference with a low ESS (degenerate weights) says nothing, however far apart."""
    rng = np.random.default_rng(2)
    degenerate = rng.normal(0.0, 5.0, (1, 400))
    assert second_opinion_message(_weights(rng, -3.0), degenerate, **KW) is None


def test_false_alarm_rate_matches_the_one_sided_level():
    """Both estimates honest (same law): the warning fires at the rate P(Z < -2) = 2.3%;
    over 600 seeded pairs at most the binomial 99.9% quantile of that rate."""
    rng = np.random.default_rng(3)
    fired = sum(second_opinion_message(_weights(rng, 0.0), _weights(rng, 0.0), **KW)
                is not None for _ in range(600))
    assert fired <= stats.binom.ppf(0.999, 600, stats.norm.cdf(-SECOND_OPINION_Z))
