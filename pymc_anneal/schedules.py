r"""Inverse-temperature schedules :math:`0 = \beta_0 < \beta_1 < \dots < \beta_K = 1`.

Every function returns a float64 array of length ``num_steps + 1`` that starts at exactly 0,
ends at exactly 1 and increases strictly. ``num_steps`` is K, the number of annealing
transitions (intermediate distributions plus the target).

References
----------
Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11, 125-139.
Kiwaki, T. & Aihara, K. (2015). Estimating the partition function of Gaussian-Bernoulli
RBMs with a full-covariance base distribution (4-band piecewise schedule).
Grosse, R., Maddison, C. & Salakhutdinov, R. (2013). Annealing between distributions by
averaging moments (sigmoid schedule).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pymc_anneal.validation import (
    check_choice,
    check_count,
    check_positive_float,
    check_probability,
    check_schedule,
)

__all__ = [
    "SCHEDULES",
    "geometric",
    "kiwaki_aihara",
    "linear",
    "make_schedule",
    "power",
    "sigmoid",
    "validate_schedule",
]


def _check_num_steps(num_steps) -> int:
    return check_count("num_steps", num_steps, 1, what="a positive integer (at least 1; one "
                       "step is plain importance sampling)")


def linear(num_steps: int) -> np.ndarray:
    """Equally spaced temperatures, ``beta_k = k / K``."""
    num_steps = _check_num_steps(num_steps)
    return np.linspace(0.0, 1.0, num_steps + 1)


def power(num_steps: int, exponent: float = 4.0) -> np.ndarray:
    """``beta_k = (k / K) ** exponent``: dense near 0, where the path changes fastest."""
    num_steps = _check_num_steps(num_steps)
    exponent = check_positive_float("power schedule exponent", exponent)
    betas = np.linspace(0.0, 1.0, num_steps + 1) ** exponent
    return check_schedule(betas)


def geometric(num_steps: int, beta_min: float = 1e-4) -> np.ndarray:
    """``beta_0 = 0`` then ``num_steps`` log-spaced values from ``beta_min`` to 1."""
    num_steps = _check_num_steps(num_steps)
    beta_min = check_probability("geometric schedule beta_min", beta_min, high_open=True)
    rest = np.geomspace(beta_min, 1.0, num_steps) if num_steps > 1 else np.ones(1)
    betas = np.concatenate([[0.0], rest])
    betas[-1] = 1.0
    return check_schedule(betas)


def sigmoid(num_steps: int, scale: float = 4.0) -> np.ndarray:
    """Sigmoid schedule (Grosse et al. 2013): ``sigma(scale * (2k/K - 1))`` rescaled to [0, 1]."""
    num_steps = _check_num_steps(num_steps)
    scale = check_positive_float("sigmoid schedule scale", scale)
    s = 1.0 / (1.0 + np.exp(-scale * np.linspace(-1.0, 1.0, num_steps + 1)))
    betas = (s - s[0]) / (s[-1] - s[0])
    betas[0], betas[-1] = 0.0, 1.0
    return check_schedule(betas)


def kiwaki_aihara(num_steps: int) -> np.ndarray:
    """Kiwaki & Aihara's 4-band piecewise-linear schedule.

    A quarter of the steps each on [0, 0.1], [0.1, 0.25], [0.25, 0.5] and [0.5, 1].
    """
    num_steps = check_count("num_steps", num_steps, 4,
                            what="an integer >= 4 for the 4-band kiwaki_aihara schedule")
    edges = [0.0, 0.1, 0.25, 0.5, 1.0]
    counts = [num_steps // 4 + (1 if i < num_steps % 4 else 0) for i in range(4)]
    parts = [np.zeros(1)]
    for lo, hi, n in zip(edges[:-1], edges[1:], counts, strict=True):
        parts.append(np.linspace(lo, hi, n + 1)[1:])
    return check_schedule(np.concatenate(parts))


SCHEDULES: dict[str, Callable[[int], np.ndarray]] = {
    "geometric": geometric,
    "kiwaki_aihara": kiwaki_aihara,
    "linear": linear,
    "power": power,
    "sigmoid": sigmoid,
}


validate_schedule = check_schedule
"""Check a user schedule (:func:`pymc_anneal.validation.check_schedule`, by its old name)."""


def make_schedule(schedule, num_steps: int | None) -> np.ndarray:
    """Resolve ``schedule`` (a name from :data:`SCHEDULES`, ``"adaptive"`` or an array).

    ``"adaptive"`` returns the pilot's grid (:func:`power`); the driver then re-spaces it to
    equal thermodynamic length (:func:`pymc_anneal.driver.equal_length_schedule`).
    """
    if isinstance(schedule, str):
        check_choice("schedule", schedule, [*SCHEDULES, "adaptive"], what=(
            f"one of {sorted([*SCHEDULES, 'adaptive'])} or an array of inverse temperatures"))
        if schedule == "adaptive":  # the pilot's grid; the driver re-spaces it
            return power(num_steps)
        return SCHEDULES[schedule](num_steps)
    return check_schedule(schedule, num_steps=num_steps)
