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

from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.validation import check_count, check_positive_float, check_probability

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
    return validate_schedule(betas)


def geometric(num_steps: int, beta_min: float = 1e-4) -> np.ndarray:
    """``beta_0 = 0`` then ``num_steps`` log-spaced values from ``beta_min`` to 1."""
    num_steps = _check_num_steps(num_steps)
    beta_min = check_probability("geometric schedule beta_min", beta_min, high_open=True)
    rest = np.geomspace(beta_min, 1.0, num_steps) if num_steps > 1 else np.ones(1)
    betas = np.concatenate([[0.0], rest])
    betas[-1] = 1.0
    return validate_schedule(betas)


def sigmoid(num_steps: int, scale: float = 4.0) -> np.ndarray:
    """Sigmoid schedule (Grosse et al. 2013): ``sigma(scale * (2k/K - 1))`` rescaled to [0, 1]."""
    num_steps = _check_num_steps(num_steps)
    scale = check_positive_float("sigmoid schedule scale", scale)
    s = 1.0 / (1.0 + np.exp(-scale * np.linspace(-1.0, 1.0, num_steps + 1)))
    betas = (s - s[0]) / (s[-1] - s[0])
    betas[0], betas[-1] = 0.0, 1.0
    return validate_schedule(betas)


def kiwaki_aihara(num_steps: int) -> np.ndarray:
    """Kiwaki & Aihara's 4-band piecewise-linear schedule.

    A quarter of the steps each on [0, 0.1], [0.1, 0.25], [0.25, 0.5] and [0.5, 1].
    """
    num_steps = _check_num_steps(num_steps)
    if num_steps < 4:
        raise AnnealingError(
            f"the 4-band kiwaki_aihara schedule needs num_steps >= 4, got {num_steps}."
        )
    edges = [0.0, 0.1, 0.25, 0.5, 1.0]
    counts = [num_steps // 4 + (1 if i < num_steps % 4 else 0) for i in range(4)]
    parts = [np.zeros(1)]
    for lo, hi, n in zip(edges[:-1], edges[1:], counts, strict=True):
        parts.append(np.linspace(lo, hi, n + 1)[1:])
    return validate_schedule(np.concatenate(parts))


SCHEDULES: dict[str, Callable[[int], np.ndarray]] = {
    "geometric": geometric,
    "kiwaki_aihara": kiwaki_aihara,
    "linear": linear,
    "power": power,
    "sigmoid": sigmoid,
}


def validate_schedule(betas) -> np.ndarray:
    """Check a user schedule: 1-D, finite, strictly increasing from exactly 0 to exactly 1."""
    try:
        arr = np.asarray(betas, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise AnnealingError(f"schedule must be an array of floats, got {betas!r}.") from err
    if arr.ndim != 1 or arr.size < 2:
        raise AnnealingError(
            "schedule must be a 1-D array of at least 2 inverse temperatures (0 and 1), "
            f"got shape {arr.shape}."
        )
    if not np.all(np.isfinite(arr)):
        raise AnnealingError(
            f"schedule contains non-finite values: {arr[~np.isfinite(arr)][:5].tolist()}."
        )
    if arr[0] != 0.0 or arr[-1] != 1.0:
        raise AnnealingError(
            "schedule must start at exactly 0 and end at exactly 1, got "
            f"{float(arr[0])!r} ... {float(arr[-1])!r}."
        )
    steps = np.diff(arr)
    if np.any(steps <= 0):
        k = int(np.argmax(steps <= 0))
        raise AnnealingError(
            "schedule must be strictly increasing, but beta[{0}] = {1!r} >= beta[{2}] = {3!r}.".format(
                k, float(arr[k]), k + 1, float(arr[k + 1])
            )
        )
    return arr


def make_schedule(schedule, num_steps: int | None) -> np.ndarray:
    """Resolve ``schedule`` (a name from :data:`SCHEDULES`, ``"adaptive"`` or an array).

    ``"adaptive"`` returns the pilot's grid (:func:`power`); the driver then re-spaces it to
    equal thermodynamic length (:func:`pymc_anneal.driver.equal_length_schedule`).
    """
    if isinstance(schedule, str):
        if schedule == "adaptive":  # the pilot's grid; the driver re-spaces it
            return power(num_steps)
        if schedule not in SCHEDULES:
            raise AnnealingError(
                f"unknown schedule {schedule!r}; must be one of "
                f"{sorted([*SCHEDULES, 'adaptive'])} or an array of inverse temperatures."
            )
        return SCHEDULES[schedule](num_steps)
    betas = validate_schedule(schedule)
    if num_steps is not None and num_steps != betas.size - 1:
        raise AnnealingError(
            f"num_steps={num_steps} disagrees with the schedule array, which has "
            f"{betas.size - 1} steps; pass num_steps=None with an explicit schedule."
        )
    return betas
