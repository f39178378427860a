r"""Model comparison by evidence: Bayes factors and posterior model probabilities.

For models :math:`M_1, \dots, M_m` fitted to the same data ``y`` with
:func:`pymc_anneal.sample_ais`, each run gives an estimate :math:`\widehat{\log Z_i}` of the
log evidence :math:`\log Z_i = \log p(y \mid M_i)` with a standard error :math:`s_i`. Then

- the Bayes factor of :math:`M_i` against :math:`M_j` is
  :math:`\mathrm{BF}_{ij} = Z_i / Z_j`, estimated on the log scale by
  :math:`\widehat{\log Z_i} - \widehat{\log Z_j}` with standard error
  :math:`\sqrt{s_i^2 + s_j^2}` (the runs are independent);
- the posterior model probabilities, for prior probabilities :math:`\pi_i`, are
  :math:`p(M_i \mid y) = \pi_i Z_i / \sum_j \pi_j Z_j`.

**Which standard error.** The delta-method standard error of one AIS run is itself estimated
from the weights and is too small when the weights are heavy-tailed (a low ESS); the spread
of the independent chains is a second, independent estimate of the same error. This module
propagates the *larger* of the two, :math:`s_i = \max(\text{standard\_error},
\text{chain\_sd})` (with one chain, the delta-method error alone). That is conservative: the
chain spread from a few chains is noisy, and taking the maximum errs on the wide side.

**Intervals.** :math:`\widehat{\log Z_i}` is approximately normal with standard deviation
:math:`s_i` (the delta method; the central limit theorem over particles). A ``prob`` interval
for a log Bayes factor is :math:`d \pm z\,s_d` with :math:`z = \Phi^{-1}((1 + \text{prob})/2)`,
and the interval for the Bayes factor is its exponential. Intervals for the posterior model
probabilities come from Monte Carlo over the same normal approximation: draw every
:math:`\log Z_i` from :math:`N(\widehat{\log Z_i}, s_i^2)`, compute the probabilities, take
quantiles.

**Same quantity, same data.** Results carry the quantity they estimate (the attribute
``quantity``; a result of :func:`pymc_anneal.sample_ais` is a log evidence): results of
different quantities are refused. An evidence :math:`p(y \mid M)` is a probability of its
data, so evidences of different data are not comparable either: a result of
:func:`pymc_anneal.sample_ais` (and a merge of them) carries its ``observed_data`` group, and
results whose observed values differ are refused (``same_data=False`` lets them through).
"Same data" means the same *multiset* of values: every observed variable's values,
flattened to float64 and sorted, equal to a relative :data:`SAME_DATA_RTOL`. So two models
of one data set that name it differently, hold it reshaped, or split it between two
observed variables compare, as they should; the covariates (``constant_data``) are not
compared, since models that differ in their predictors are what one compares. A result
that carries no observed data (an :class:`~pymc_anneal.EvidenceEstimate`, an energy model's
log partition function, a :func:`pymc_anneal.bridge_sampling` result) cannot be checked and
is not refused.

**Strength of evidence** (Kass & Raftery 1995, on :math:`2 \ln \mathrm{BF}`): 0 to 2 "not
worth more than a bare mention", 2 to 6 "positive", 6 to 10 "strong", above 10 "very strong".

References
----------
Kass, R. E. & Raftery, A. E. (1995). Bayes factors. *Journal of the American Statistical
Association* 90(430), 773-795.
Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11, 125-139.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from statistics import NormalDist
from typing import NamedTuple

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import softmax

from pymc_anneal.diagnostics import (
    CHAIN_DISAGREEMENT,
    HEAVY_TAIL_K,
    LOW_ESS_FRACTION,
    MIN_EFFECTIVE_PARTICLES,
)
from pymc_anneal.evidence import EvidenceEstimate, log_evidence
from pymc_anneal.exceptions import AnnealingError, warn
from pymc_anneal.validation import check_count, check_probability, check_random_seed

__all__ = ["BayesFactor", "bayes_factor", "compare", "evidence_strength"]

KASS_RAFTERY = (
    (2.0, "not worth more than a bare mention"),
    (6.0, "positive"),
    (10.0, "strong"),
    (math.inf, "very strong"),
)
"""Upper bounds on ``2 ln BF`` and the words Kass & Raftery (1995) give them."""

COLUMNS = [
    "rank", "log_evidence", "se", "log_evidence_diff", "dse", "bayes_factor", "bf_low",
    "bf_high", "prior_probability", "probability", "probability_low", "probability_high",
    "strength", "warning", "warning_reason",
]


class BayesFactor(NamedTuple):
    """The Bayes factor of one model against another, with its uncertainty.

    Attributes
    ----------
    log_bayes_factor : float
        :math:`\\widehat{\\log Z_1} - \\widehat{\\log Z_2}`.
    standard_error : float
        Standard error of ``log_bayes_factor``: ``sqrt(se_1**2 + se_2**2)`` with each
        ``se`` the larger of the delta-method error and the chains' spread.
    bayes_factor : float
        ``exp(log_bayes_factor)``.
    lower, upper : float
        The ``prob`` interval of the Bayes factor (the exponential of the interval of the
        log Bayes factor).
    prob : float
        Probability mass of the interval.
    strength : str
        Kass & Raftery's words for ``2 |ln BF|``, for the favoured model.
    log_lower, log_upper : float
        The ``prob`` interval of ``log_bayes_factor``, ``log_bayes_factor -/+ z *
        standard_error`` (properties). Finite where ``bayes_factor``, ``lower`` or
        ``upper`` overflow to ``inf`` (a log Bayes factor above about 709).
    """

    log_bayes_factor: float
    standard_error: float
    bayes_factor: float
    lower: float
    upper: float
    prob: float
    strength: str

    @property
    def log_lower(self) -> float:
        """Lower end of the ``prob`` interval of ``log_bayes_factor``."""
        return self.log_bayes_factor - _half_width(self.prob, self.standard_error)

    @property
    def log_upper(self) -> float:
        """Upper end of the ``prob`` interval of ``log_bayes_factor``."""
        return self.log_bayes_factor + _half_width(self.prob, self.standard_error)


def _half_width(prob: float, standard_error: float) -> float:
    """Half the width of the central ``prob`` interval of a normal of sd ``standard_error``."""
    return NormalDist().inv_cdf(0.5 + prob / 2) * standard_error


def _exp(log_value: float) -> float:
    """``exp(log_value)``, ``inf`` where that overflows a float (above about 709)."""
    try:
        return math.exp(log_value)
    except OverflowError:
        return math.inf


def evidence_strength(log_bayes_factor: float) -> str:
    """Kass & Raftery's (1995) words for a Bayes factor, from ``2 |ln BF|``.

    Parameters
    ----------
    log_bayes_factor : float
        Natural log of a Bayes factor; its sign is ignored (the words describe the evidence
        for whichever model is favoured).

    Returns
    -------
    str
        "not worth more than a bare mention" (``2 |ln BF|`` below 2), "positive" (2 to 6),
        "strong" (6 to 10) or "very strong" (above 10).

    References
    ----------
    Kass, R. E. & Raftery, A. E. (1995). Bayes factors. *JASA* 90(430), 773-795.

    Examples
    --------
    >>> from pymc_anneal import evidence_strength
    >>> evidence_strength(2.0)  # BF = e^2 = 7.4, 2 ln BF = 4
    'positive'
    """
    try:
        value = 2.0 * abs(float(log_bayes_factor))
    except (TypeError, ValueError):
        value = math.nan
    if math.isnan(value):
        raise AnnealingError(f"log_bayes_factor must be a number, got {log_bayes_factor!r}.")
    return next(words for bound, words in KASS_RAFTERY if value < bound)


def _estimate(name: str, value) -> EvidenceEstimate:
    """An :class:`EvidenceEstimate` from a DataTree of ``sample_ais`` or an estimate."""
    if isinstance(value, EvidenceEstimate):
        est = value
    elif isinstance(value, xr.DataTree):
        try:
            est = log_evidence(value)
        except AnnealingError as err:
            raise AnnealingError(
                f"model {name!r} has no evidence estimate: {err} A DataTree from pm.sample or "
                "pm.sample_smc cannot be compared here; run pymc_anneal.sample_ais on the "
                "model instead."
            ) from None
    else:
        raise AnnealingError(
            f"model {name!r} must be a DataTree returned by pymc_anneal.sample_ais (or a "
            f"pymc_anneal.EvidenceEstimate), got {type(value).__name__}."
        )
    if not math.isfinite(est.log_evidence):
        raise AnnealingError(
            f"model {name!r} has a log evidence of {est.log_evidence}: every particle has zero "
            "weight, so there is nothing to compare. Check the model and rerun sample_ais."
        )
    return est


QUANTITY_WORDS = {
    "log_evidence": "a log evidence (pymc_anneal.sample_ais)",
    "log_partition_function": "a log partition function (pymc_anneal.ais)",
    "test_log_likelihood": "test log-likelihoods (pymc_anneal.reverse_ais)",
    "mean_test_log_likelihood": "an average test log-likelihood (pymc_anneal.sandwich)",
}
"""The quantities a result can carry (its attribute ``quantity``), in words."""


def _quantity(value) -> str | None:
    """The quantity a result estimates: its ``quantity`` attribute, ``"log_evidence"`` for a
    DataTree of :func:`pymc_anneal.sample_ais` (which carries none), ``None`` where it cannot
    be told (an :class:`EvidenceEstimate`)."""
    if not isinstance(value, xr.DataTree):
        return None
    quantity = value.attrs.get("quantity")
    if quantity is None and value.attrs.get("method") == "ais":
        return "log_evidence"
    return quantity


def _check_same_quantity(names: list[str], values: list) -> None:
    """Refuse to compare results that estimate different quantities."""
    quantities = {name: q for name, q in zip(names, map(_quantity, values)) if q is not None}
    if len(set(quantities.values())) > 1:
        found = "; ".join(f"{name!r} is {QUANTITY_WORDS.get(q, repr(q))}"
                          for name, q in quantities.items())
        raise AnnealingError(
            f"the results estimate different quantities: {found}. A Bayes factor is a ratio "
            "of the evidences of the same data under two models; compare only results of "
            "pymc_anneal.sample_ais on the same data (or only log partition functions).")


SAME_DATA_RTOL = 1e-6
"""Observed values closer than this, relative, are the same (one stored in float32 by one
model and in float64 by another; float32 keeps about 6e-8)."""


def _observed_values(value) -> tuple[np.ndarray, str] | None:
    """Every observed value of a result, flattened to float64 and sorted (the multiset of its
    data, whatever the variables' names, shapes or number), and which variables hold them, in
    words; ``None`` where the result carries no numeric ``observed_data`` group."""
    if not isinstance(value, xr.DataTree) or "observed_data" not in value.children:
        return None
    data = value["observed_data"].to_dataset()
    if not data.data_vars:
        return None
    try:
        arrays = {str(name): np.asarray(data[name].values, dtype=np.float64).ravel()
                  for name in data.data_vars}
    except (TypeError, ValueError):  # not numbers: nothing this check can compare
        return None
    words = ", ".join(f"{name} ({v.size} values)" for name, v in sorted(arrays.items()))
    return np.sort(np.concatenate(list(arrays.values()))), words


def _data_difference(first: np.ndarray, other: np.ndarray) -> str | None:
    """How two sorted multisets of observed values differ, in words (``None``: they agree)."""
    if first.size != other.size:
        return f"{first.size} observed values against {other.size}"
    differ = ~np.isclose(first, other, rtol=SAME_DATA_RTOL, atol=0.0, equal_nan=True)
    if not differ.any():
        return None
    i = int(np.argmax(differ))
    return (f"{int(differ.sum())} of their {first.size} observed values differ (sorted, the "
            f"first that differs: {first[i]:.6g} against {other[i]:.6g})")


def _check_same_data(names: list[str], values: list, same_data: bool) -> None:
    """Refuse results whose observed data differ (unless ``same_data`` is False); results
    that carry no observed data are not checked."""
    if not isinstance(same_data, bool | np.bool_):
        raise AnnealingError(
            f"same_data must be True (refuse results of different observed data) or False "
            f"(compare them anyway), got {same_data!r}.")
    if not same_data:
        return
    observed = [(name, found) for name, found in zip(names, map(_observed_values, values))
                if found is not None]
    if len(observed) < 2:
        return
    first_name, (first, first_words) = observed[0]
    for name, (other, words) in observed[1:]:
        difference = _data_difference(first, other)
        if difference is not None:
            raise AnnealingError(
                f"models {first_name!r} and {name!r} were fitted to different observed data: "
                f"{difference}; {first_name!r} observes {first_words}, {name!r} observes "
                f"{words}. An evidence p(y | M) is a probability of its data y, so evidences "
                "of different data are not comparable (their ratio would rank the data sets, "
                "not the models). Fit every model to the same observations: their names, "
                "shapes and split into variables may differ, since the values are compared "
                "as one sorted set per result. If the difference is intended and the "
                "evidences are comparable anyway (a model of log y with the Jacobian in a "
                "pm.Potential, say), pass same_data=False.")


def _standard_error(est: EvidenceEstimate) -> float:
    """The standard error to propagate: the larger of the delta-method error and the chains'
    spread (the delta-method error alone with one chain, where the spread is NaN)."""
    return est.standard_error if math.isnan(est.chain_sd) else max(est.standard_error,
                                                                     est.chain_sd)


def _warnings(est: EvidenceEstimate) -> list[str]:
    """Why an estimate is unreliable, by the thresholds that ``sample_ais`` warns at."""
    reasons = []
    if est.ess < max(LOW_ESS_FRACTION * est.num_particles, MIN_EFFECTIVE_PARTICLES):
        reasons.append(f"low ESS ({est.ess:.1f} of {est.num_particles} particles)")
    if est.pareto_k > HEAVY_TAIL_K:
        reasons.append(f"heavy-tailed weights (Pareto k-hat {est.pareto_k:.2f} > {HEAVY_TAIL_K:g})")
    if est.chain_sd > CHAIN_DISAGREEMENT * est.standard_error:
        reasons.append(f"chains disagree (spread {est.chain_sd:.3g} > "
                       f"{CHAIN_DISAGREEMENT:g} x se {est.standard_error:.3g})")
    return reasons


SECOND_OPINION_Z = 3.0
"""Two estimates of one model's evidence (AIS and bridge sampling, say) whose difference is
more than this many standard errors of the difference disagree: :func:`compare` warns."""
METHOD_WORDS = {"ais": "AIS", "bridge_sampling": "bridge sampling", "bdmc": "BDMC",
                "raise": "RAISE"}


def _method(value) -> str:
    """The method of a result, in words (``"estimate"`` for an EvidenceEstimate)."""
    if isinstance(value, xr.DataTree):
        method = str(value.attrs.get("method", "estimate"))
        return METHOD_WORDS.get(method, method)
    return "estimate"


def _opinions(name: str, value) -> tuple[object, list]:
    """A model's entry of :func:`compare`: one result, or a list or tuple of results of the
    same model and data by different methods (the first is ranked, the others are second
    opinions beside it)."""
    if not isinstance(value, list | tuple) or isinstance(value, EvidenceEstimate):
        return value, []
    if not value:
        raise AnnealingError(f"model {name!r} has an empty list of results: give one result, "
                             "or a list of results of the same model (e.g. [ais, bridge]).")
    first, others = value[0], list(value[1:])
    prints = {v.attrs.get("model_fingerprint") for v in value if isinstance(v, xr.DataTree)}
    if len(prints - {None}) > 1:
        raise AnnealingError(
            f"the results given for model {name!r} are of different models or data (their "
            "model_fingerprint attributes differ): give one model's results in one entry, "
            "e.g. {'a': [pa.sample_ais(model=a), pa.bridge_sampling(idata_a, model=a)]}.")
    return first, others


def _second_opinion_columns(names, estimates, entries, reasons) -> dict[str, list]:
    """The second opinion beside each model's estimate (the first other result of its entry):
    its method, estimate and standard error, and the z of the difference; a disagreement
    beyond :data:`SECOND_OPINION_Z` is added to the model's warning reasons and warned."""
    columns: dict[str, list] = {"second_method": [], "second_log_evidence": [],
                                "second_se": [], "opinions_z": []}
    for i, (name, (first, others)) in enumerate(zip(names, entries, strict=True)):
        if not others:
            for values in columns.values():
                values.append(None if values is columns["second_method"] else np.nan)
            continue
        other = _estimate(name, others[0])
        se = math.hypot(_standard_error(estimates[i]), _standard_error(other))
        z = (estimates[i].log_evidence - other.log_evidence) / se if se > 0 else np.inf
        columns["second_method"].append(_method(others[0]))
        columns["second_log_evidence"].append(other.log_evidence)
        columns["second_se"].append(_standard_error(other))
        columns["opinions_z"].append(z)
        if abs(z) > SECOND_OPINION_Z:
            reason = (f"{_method(first)} and {_method(others[0])} disagree: "
                      f"{estimates[i].log_evidence:.3f} against {other.log_evidence:.3f} "
                      f"(z = {z:.1f})")
            reasons[i].append(reason)
            warn(f"model {name!r}: {reason}, beyond {SECOND_OPINION_Z:g} standard errors of "
                 "the difference: at least one is wrong. An AIS estimate too low says "
                 "num_steps is too small; a bridge estimate off says the posterior draws did "
                 "not explore the posterior (several modes).")
    return columns


def _is_bridge(value) -> bool:
    return isinstance(value, xr.DataTree) and value.attrs.get("method") == "bridge_sampling"


def _recorded_warnings(value: xr.DataTree) -> list[str]:
    """Why a :func:`pymc_anneal.bridge_sampling` result is unreliable: the reasons it warned
    about, recorded in its ``warnings`` attribute (its thresholds are its own: a bridge's
    terms are bounded, so AIS's weight ESS and tail lines do not apply)."""
    return [r for r in str(value.attrs.get("warnings", "")).split("; ") if r]


def _check_prob(prob) -> float:
    return check_probability("prob", prob, high_open=True,
                             what="a number strictly between 0 and 1")


def bayes_factor(idata1, idata2, *, prob: float = 0.95, same_data: bool = True) -> BayesFactor:
    r"""Bayes factor :math:`p(y \mid M_1) / p(y \mid M_2)` from two AIS runs on the same data.

    Parameters
    ----------
    idata1, idata2 : xarray.DataTree or EvidenceEstimate
        Results of :func:`pymc_anneal.sample_ais` for model 1 (numerator) and model 2
        (denominator), or their :func:`pymc_anneal.log_evidence`.
    prob : float, default 0.95
        Probability mass of the reported interval.
    same_data : bool, default True
        Refuse results whose observed data differ (their ``observed_data`` groups, compared
        as sorted sets of values; see :mod:`pymc_anneal.comparison`). ``False`` compares
        them anyway, for evidences that are comparable on other grounds.

    Returns
    -------
    BayesFactor
        The log Bayes factor with its standard error and its ``prob`` interval
        (``log_lower``, ``log_upper``), the Bayes factor with its interval (``inf`` where
        it overflows a float: the log fields stay finite), and Kass & Raftery's words for
        the strength of the evidence.

    Raises
    ------
    AnnealingError
        If either input has no evidence estimate (e.g. a DataTree from ``pm.sample``), if
        the two estimate different quantities (their attribute ``quantity``: a log evidence
        against an energy model's log partition function), or if they were fitted to
        different observed data (unless ``same_data=False``); the message says how the
        data differ.

    See Also
    --------
    compare : The same for any number of models, with posterior model probabilities.

    Notes
    -----
    The runs are independent, so the variances add. Each model's standard error is the
    larger of the delta-method error and the spread of its chains (see
    :mod:`pymc_anneal.comparison`). The interval assumes the log evidence estimates are
    approximately normal; it does not cover AIS's downward bias when the weight ESS is low
    (the estimate is then flagged by :func:`compare`'s ``warning`` column). The words of
    ``strength`` are Kass & Raftery's (1995; see :func:`evidence_strength`).

    Examples
    --------
    >>> import pymc_anneal as pa
    >>> m1 = pa.EvidenceEstimate(-10.0, 0.03, 0.02, 800.0, 1000)
    >>> m2 = pa.EvidenceEstimate(-12.0, 0.04, 0.01, 700.0, 1000)
    >>> bf = pa.bayes_factor(m1, m2)
    >>> round(bf.bayes_factor, 2), round(bf.lower, 2), round(bf.upper, 2), bf.strength
    (7.39, 6.7, 8.15, 'positive')
    """
    prob = _check_prob(prob)
    _check_same_quantity(["idata1", "idata2"], [idata1, idata2])
    est1, est2 = _estimate("idata1", idata1), _estimate("idata2", idata2)
    _check_same_data(["idata1", "idata2"], [idata1, idata2], same_data)
    log_bf = est1.log_evidence - est2.log_evidence
    se = math.hypot(_standard_error(est1), _standard_error(est2))
    half = _half_width(prob, se)
    return BayesFactor(log_bf, se, _exp(log_bf), _exp(log_bf - half), _exp(log_bf + half),
                       prob, evidence_strength(log_bf))


def _prior_probabilities(prior, names: list[str]) -> np.ndarray:
    if prior is None:
        return np.full(len(names), 1.0 / len(names))
    if not isinstance(prior, Mapping):
        raise AnnealingError(
            "prior_probabilities must be a dict from model name to prior probability, got "
            f"{type(prior).__name__}.")
    if set(prior) != set(names):
        missing, extra = sorted(set(names) - set(prior)), sorted(set(prior) - set(names))
        raise AnnealingError(
            "prior_probabilities must have exactly the models' names as keys; "
            f"missing {missing}, unknown {extra}.")
    values = np.array([prior[name] for name in names], dtype=np.float64)
    bad = {name: prior[name] for name, v in zip(names, values) if not (np.isfinite(v) and v > 0)}
    if bad:
        raise AnnealingError(
            f"prior probabilities must be positive finite numbers, got {bad}. (They are "
            "normalized to sum to 1; leave a model out of the comparison to give it prior 0.)")
    return values / values.sum()


def compare(
    idatas: Mapping[str, xr.DataTree | EvidenceEstimate],
    *,
    prior_probabilities: Mapping[str, float] | None = None,
    prob: float = 0.95,
    num_samples: int = 10_000,
    random_seed=0,
    same_data: bool = True,
) -> pd.DataFrame:
    r"""Compare models by their evidence: Bayes factors and posterior model probabilities.

    The table follows :func:`arviz.compare` (one row per model, best first), but ranks by
    the log marginal likelihood estimated by AIS and propagates each estimate's standard
    error into every derived quantity.

    Parameters
    ----------
    idatas : dict of {str : xarray.DataTree or EvidenceEstimate, or a list of them}
        Model names to results of :func:`pymc_anneal.sample_ais` or
        :func:`pymc_anneal.bridge_sampling` on the *same* data (or to their
        :func:`pymc_anneal.log_evidence`). At least two models. A list of results of one
        model by different methods (``[ais, bridge]``) ranks the model by the first and
        shows the second beside it as a second opinion.
    prior_probabilities : dict of {str : float}, optional
        Prior model probabilities, one positive number per model (normalized to sum to 1).
        Defaults to equal probabilities.
    prob : float, default 0.95
        Probability mass of the reported intervals.
    num_samples : int, default 10000
        Monte Carlo draws for the intervals of the posterior model probabilities.
    random_seed : int, Generator or None, default 0
        Seed for those draws (fixed by default, so the table is reproducible).
    same_data : bool, default True
        Refuse results whose observed data differ: each result's ``observed_data`` group
        (which :func:`pymc_anneal.sample_ais` writes), compared as the sorted set of all its
        values, so that models naming, reshaping or splitting the same data compare. Results
        without observed data are not checked. ``False`` compares them anyway, for
        evidences that are comparable on other grounds.

    Returns
    -------
    pandas.DataFrame
        Indexed by model name, sorted from the best model (highest log evidence) down, with
        the columns:

        - ``rank``: 0 for the best model.
        - ``log_evidence``, ``se``: the pooled log evidence and the standard error used
          throughout, the larger of the delta-method error and the chains' spread.
        - ``log_evidence_diff``, ``dse``: log evidence of the best model minus this one
          (the log Bayes factor of the best model against this one, >= 0) and its standard
          error ``sqrt(se**2 + se_best**2)`` (0 for the best model itself).
        - ``bayes_factor``, ``bf_low``, ``bf_high``: ``exp(log_evidence_diff)``, the Bayes
          factor of the best model against this one, with its ``prob`` interval
          (``inf`` where it overflows a float; ``log_evidence_diff`` and ``dse`` give it in
          logs).
        - ``prior_probability``, ``probability``, ``probability_low``,
          ``probability_high``: prior and posterior model probability, the latter with its
          ``prob`` interval (Monte Carlo over the estimates' normal approximation). The
          ``probability`` column sums to 1.
        - ``strength``: Kass & Raftery's words for the evidence in favour of the best model
          against this one ("best model" on its own row).
        - ``warning``, ``warning_reason``: True, and why, when the estimate is unreliable:
          a weight ESS below ``LOW_ESS_FRACTION`` of the particles (or below
          ``MIN_EFFECTIVE_PARTICLES``), weights with a heavy tail (Pareto k-hat above
          ``HEAVY_TAIL_K``) or chains that disagree beyond ``CHAIN_DISAGREEMENT`` standard
          errors (the thresholds at which :func:`pymc_anneal.sample_ais` warns, see
          :mod:`pymc_anneal.diagnostics`). Such an estimate is likely biased low and
          its error bars too narrow: rerun it with a larger ``num_steps``.

        - ``second_method``, ``second_log_evidence``, ``second_se``, ``opinions_z`` (only
          when an entry is a list): the second result's method and estimate beside the
          first, and the z of their difference. Beyond :data:`SECOND_OPINION_Z` the two
          disagree: ``warning`` is set, the reason names both, and an
          :class:`~pymc_anneal.AnnealingWarning` is raised.
        - ``elpd_loo``, ``elpd_loo_se`` (only when every result has a ``log_likelihood``
          group, e.g. ``sample_ais(idata_kwargs={"log_likelihood": True})``): the PSIS-LOO
          expected log predictive density of the posterior draws and its standard error
          (:func:`arviz_stats.loo`), beside the evidence. The two answer different
          questions: the evidence scores the prior's predictions of the data, LOO the
          posterior's predictions of each held-out point.

        ``DataFrame.attrs`` records ``prob`` and the rule used for ``se``.

    Raises
    ------
    AnnealingError
        If ``idatas`` is not a dict of at least two models, if an entry has no evidence
        (e.g. a DataTree from ``pm.sample``), if the entries estimate different quantities
        (their attribute ``quantity``, e.g. a log evidence against a log partition
        function), if they were fitted to different observed data (unless
        ``same_data=False``; the message names the models and how the data differ), or if
        ``prior_probabilities`` does not match.

    See Also
    --------
    bayes_factor : The Bayes factor of two models.
    pymc_anneal.plots.plot_compare : This table as a plot.

    Notes
    -----
    Evidence depends on the priors: a vaguer prior on a parameter lowers the evidence even
    when the fit is unchanged. Compare models whose priors you would defend. The column
    ``strength`` gives Kass & Raftery's (1995) words, as :func:`evidence_strength`.

    Examples
    --------
    >>> import pymc_anneal as pa
    >>> table = pa.compare({
    ...     "linear": pa.EvidenceEstimate(-52.1, 0.02, 0.03, 900.0, 1000),
    ...     "quadratic": pa.EvidenceEstimate(-47.3, 0.04, 0.02, 800.0, 1000),
    ... })
    >>> table[["rank", "log_evidence_diff", "probability", "strength"]].round(3)
               rank  log_evidence_diff  probability    strength
    quadratic     0                0.0        0.992  best model
    linear        1                4.8        0.008      strong
    """
    if not isinstance(idatas, Mapping) or isinstance(idatas, xr.DataTree):
        raise AnnealingError(
            "compare needs a dict from model name to the DataTree of sample_ais, e.g. "
            f"compare({{'a': idata_a, 'b': idata_b}}), got {type(idatas).__name__}.")
    if len(idatas) < 2:
        raise AnnealingError(f"compare needs at least two models, got {len(idatas)}.")
    prob = _check_prob(prob)
    num_samples = check_count("num_samples", num_samples, 100)
    check_random_seed(random_seed)  # a clear error for a bad seed, before any work
    names = [str(name) for name in idatas]
    if len(set(names)) != len(names):
        raise AnnealingError(f"model names must be distinct as strings, got {list(idatas)}.")
    entries = [_opinions(name, value) for name, value in zip(names, idatas.values())]
    firsts = [first for first, _ in entries]
    _check_same_quantity(names, firsts)
    for name, (first, others) in zip(names, entries, strict=True):
        _check_same_quantity([f"{name}[{i}]" for i in range(1 + len(others))],
                             [first, *others])
    estimates = [_estimate(name, value) for name, value in zip(names, firsts)]
    labelled = [(name, first) for name, first in zip(names, firsts)] + [
        (f"{name}[{i}]", other) for name, (_, others) in zip(names, entries)
        for i, other in enumerate(others, start=1)]
    _check_same_data([n for n, _ in labelled], [v for _, v in labelled], same_data)
    prior = _prior_probabilities(prior_probabilities, list(idatas))

    log_z = np.array([e.log_evidence for e in estimates])
    se = np.array([_standard_error(e) for e in estimates])
    best = int(np.argmax(log_z))
    diff = log_z[best] - log_z
    dse = np.hypot(se, se[best])
    dse[best] = 0.0
    z = NormalDist().inv_cdf(0.5 + prob / 2)
    log_prior = np.log(prior)
    probability = softmax(log_prior + log_z)
    rng = np.random.default_rng(random_seed)
    draws = softmax(log_prior + rng.normal(log_z, se, size=(num_samples, log_z.size)), axis=1)
    tail = (1 - prob) / 2
    with np.errstate(over="ignore"):  # a log Bayes factor above ~709: inf, as in bayes_factor
        bf, bf_low, bf_high = np.exp(diff), np.exp(diff - z * dse), np.exp(diff + z * dse)
    reasons = [_recorded_warnings(v) if _is_bridge(v) else _warnings(e)
               for v, e in zip(firsts, estimates)]
    second = (_second_opinion_columns(names, estimates, entries, reasons)
              if any(others for _, others in entries) else {})

    table = pd.DataFrame({
        "log_evidence": log_z,
        "se": se,
        "log_evidence_diff": diff,
        "dse": dse,
        "bayes_factor": bf,
        "bf_low": bf_low,
        "bf_high": bf_high,
        "prior_probability": prior,
        "probability": probability,
        "probability_low": np.quantile(draws, tail, axis=0),
        "probability_high": np.quantile(draws, 1 - tail, axis=0),
        "strength": ["best model" if i == best else evidence_strength(d)
                     for i, d in enumerate(diff)],
        "warning": [bool(r) for r in reasons],
        "warning_reason": ["; ".join(r) for r in reasons],
    }, index=names)
    loo = _loo_columns(firsts)
    for column, values in {**second, **loo}.items():
        table[column] = values
    table = table.sort_values("log_evidence", ascending=False, kind="stable")
    table.insert(0, "rank", np.arange(len(table)))
    table.attrs.update({"prob": prob, "se": "max(delta-method standard error, chain spread)"})
    return table[COLUMNS + list(second) + list(loo)]


def _loo_columns(values) -> dict[str, list[float]]:
    """PSIS-LOO's ``elpd_loo`` and ``elpd_loo_se`` of every result, when every one has a
    ``log_likelihood`` group (else no columns)."""
    if not all(isinstance(v, xr.DataTree) and "log_likelihood" in v.children for v in values):
        return {}
    from arviz_stats import loo

    out = [loo(v) for v in values]
    return {"elpd_loo": [float(o.elpd) for o in out], "elpd_loo_se": [float(o.se) for o in out]}
