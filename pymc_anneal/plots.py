"""Diagnostic plots for AIS results (matplotlib, imported lazily).

Every function takes the DataTree returned by :func:`pymc_anneal.sample_ais` (or, for
:func:`plot_compare`, the table of :func:`pymc_anneal.compare`), draws on the matplotlib
``Axes`` it is given (or on a new figure) and returns the ``Axes``. They follow the user's
matplotlib style; ArviZ's look is one call away::

    import arviz_plots
    arviz_plots.style.use("arviz-variat")

What to look for (see the user guide's "Reading the diagnostics"):

- :func:`plot_log_weights`: the final log weights. A spread of many nats, or a few particles
  far to the right, means a low ESS and an optimistic standard error.
- :func:`plot_annealing`: weight ESS, acceptance rate and step size along the inverse
  temperature. A sudden drop of the ESS marks where the schedule is too coarse.
- :func:`plot_running_log_z`: the running estimate of :math:`\\log Z_\\beta` along the path;
  chains that separate show where they lose each other.
- :func:`plot_convergence`: log Z against the number of temperatures over several runs; the
  estimate creeps up (AIS is biased low) until it levels off.
- :func:`plot_sandwich`: AIS and RAISE test log-likelihoods against the number of
  temperatures (:func:`pymc_anneal.sandwich`).
- :func:`plot_compare`: log evidence of several models with intervals.

References
----------
Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11, 125-139.
Kass, R. E. & Raftery, A. E. (1995). Bayes factors. *JASA* 90(430), 773-795.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from pymc_anneal.evidence import log_evidence
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.diagnostics import LOW_ESS_FRACTION
from pymc_anneal.validation import check_one_of, check_probability, check_real

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "plot_annealing",
    "plot_compare",
    "plot_convergence",
    "plot_log_weights",
    "plot_running_log_z",
    "plot_sandwich",
]

MAX_CHAINS_SHOWN = 8
"""With more chains than this, plots pool them (log weights) or draw them in one colour."""


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - matplotlib is an optional dependency
        raise ImportError(
            "pymc_anneal.plots needs matplotlib: pip install 'pymc-anneal[plots]'") from err
    return plt


def _axes(ax, nrows: int = 1, **subplots_kwargs):
    if ax is not None:
        return ax
    plt = _pyplot()
    _, ax = plt.subplots(nrows, 1, squeeze=True, layout="constrained", **subplots_kwargs)
    return ax


def _check_group(function: str, idata, group: str, variables: Sequence[str]) -> xr.Dataset:
    if not isinstance(idata, xr.DataTree):
        raise AnnealingError(
            f"{function} needs the DataTree returned by pymc_anneal.sample_ais, got "
            f"{type(idata).__name__}.")
    if group not in idata.children or any(v not in idata[group].data_vars for v in variables):
        raise AnnealingError(
            f"{function} needs the group {group!r} with {list(variables)} that "
            f"pymc_anneal.sample_ais writes; the DataTree has groups {sorted(idata.children)}"
            + (f" and {group!r} holds {sorted(idata[group].data_vars)}"
               if group in idata.children else "")
            + ". Pass the result of sample_ais.")
    return idata[group].dataset


def _chain_colors(num_chains: int) -> list:
    plt = _pyplot()
    cycle = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    if num_chains > MAX_CHAINS_SHOWN:
        return [cycle[0]] * num_chains
    return [cycle[i % len(cycle)] for i in range(num_chains)]


def plot_log_weights(
    idata: xr.DataTree, *, ax: Axes | None = None, bins="auto", window: float = 50.0
) -> Axes:
    r"""Histogram of the final log importance weights, with the weight ESS.

    Each chain gets its own step histogram (pooled when there are more than 8 chains). A
    vertical line marks the pooled estimate :math:`\log \hat Z`: particles far to its right
    dominate the estimate. Particles whose weight is negligible, more than ``window`` nats
    below the largest (including weight zero, log weight :math:`-\infty`), are left out so
    that a few stranded particles do not squash the histogram; the legend counts them.

    Parameters
    ----------
    idata : xarray.DataTree
        Result of :func:`pymc_anneal.sample_ais` (uses ``particles.log_weight``).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure by default.
    bins : int, sequence or str, default "auto"
        Histogram bins, as in :func:`numpy.histogram_bin_edges`, shared by all chains.
    window : float, default 50.0
        Show the particles whose log weight is within ``window`` of the largest (a relative
        weight above :math:`e^{-50} \approx 2 \times 10^{-22}` by default).

    Returns
    -------
    matplotlib.axes.Axes

    Notes
    -----
    Kish's effective sample size of the weights, :math:`(\sum w)^2 / \sum w^2`, is in the
    title, for all chains together. Below 10% of the particles (or 80 effective particles)
    :func:`pymc_anneal.sample_ais` warns: the standard error is then unreliable (see
    :mod:`pymc_anneal.diagnostics`).

    References
    ----------
    Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11.

    Examples
    --------
    >>> import pymc_anneal as pa  # doctest: +SKIP
    >>> pa.plots.plot_log_weights(idata)  # doctest: +SKIP
    """
    ds = _check_group("plot_log_weights", idata, "particles", ["log_weight"])
    window = check_real("window", window, low=0.0, low_open=True, finite=False,
                        what="a positive number of nats")
    log_w = np.asarray(ds["log_weight"].transpose("chain", "draw").values, dtype=np.float64)
    finite = np.isfinite(log_w)
    if not finite.any():
        raise AnnealingError("plot_log_weights: every particle has zero weight; nothing to draw.")
    est = log_evidence(idata)
    ax = _axes(ax, figsize=(8, 4.5))
    shown = finite & (log_w >= log_w[finite].max() - window)
    edges = np.histogram_bin_edges(log_w[shown], bins=bins)
    per_chain = log_w.shape[0] <= MAX_CHAINS_SHOWN
    groups = ([(f"chain {c}", log_w[c][shown[c]]) for c in range(log_w.shape[0])] if per_chain
              else [(f"{log_w.shape[0]} chains", log_w[shown])])
    for (label, values), color in zip(groups, _chain_colors(len(groups))):
        ax.hist(values, bins=edges, histtype="step", color=color, linewidth=1.5, label=label)
    ax.axvline(est.log_evidence, color="0.2", linestyle="--", linewidth=1.2,
               label=rf"$\log\hat Z$ = {est.log_evidence:.3f} ± {est.standard_error:.3f}")
    num_hidden = int((~shown).sum())
    if num_hidden:
        ax.plot([], [], " ", label=f"{num_hidden} particle{'s' * (num_hidden > 1)} with "
                                   f"negligible weight\n(below e^-{window:g} of the largest) "
                                   "not shown")
    n = log_w.size
    ax.set_title(f"Log weights: ESS {est.ess:.0f} of {n} ({100 * est.ess / n:.2g}%)")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(nbins=6))
    ax.set_xlabel("log importance weight")
    ax.set_ylabel("particles")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    return ax


def plot_annealing(idata: xr.DataTree, *, axes: Sequence[Axes] | None = None) -> np.ndarray:
    r"""Weight ESS, acceptance rate and step size along the inverse temperature.

    One line per chain, on a logarithmic :math:`\beta` axis (most schedules put most of
    their temperatures near 0).

    Parameters
    ----------
    idata : xarray.DataTree
        Result of :func:`pymc_anneal.sample_ais` (uses the ``annealing_stats`` group).
    axes : sequence of 3 matplotlib.axes.Axes, optional
        Axes for the ESS, the acceptance rate and the step size; a new figure by default.

    Returns
    -------
    numpy.ndarray of matplotlib.axes.Axes
        The three axes.

    Notes
    -----
    The ESS panel shows each chain's weight ESS after each step as a fraction of its
    particles, with the 10% line below which :func:`pymc_anneal.sample_ais` warns. A sharp
    drop marks a stretch of the path where the temperatures are too far apart; a low
    acceptance rate there points at the step size instead. Step sizes are tuned per band
    of temperatures in a pilot run and then frozen.

    References
    ----------
    Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11.
    Sohl-Dickstein, J. & Culpepper, B. J. (2012). Hamiltonian annealed importance sampling
    for partition function estimation. arXiv:1205.1925.
    """
    ds = _check_group("plot_annealing", idata, "annealing_stats",
                      ["beta", "ess", "acceptance_rate"])
    draws = _check_group("plot_annealing", idata, "particles", ["log_weight"]).sizes["draw"]
    if axes is None:
        axes = _axes(None, nrows=3, sharex=True, figsize=(7, 7))
    axes = np.asarray(axes, dtype=object).ravel()
    if axes.size != 3:
        raise AnnealingError(f"plot_annealing needs 3 axes, got {axes.size}.")
    beta = ds["beta"].transpose("chain", "step").values
    panels = [("ess", "weight ESS / particles", 1.0 / draws),
              ("acceptance_rate", "acceptance rate", 1.0),
              ("step_size", "step size", 1.0)]
    colors = _chain_colors(beta.shape[0])
    for ax, (name, label, scale) in zip(axes, panels):
        if name not in ds.data_vars:  # a kernel without a step size (Gibbs sweeps)
            ax.text(0.5, 0.5, f"the {idata.attrs.get('kernel', '')} kernel has no step size",
                    transform=ax.transAxes, ha="center", va="center", color="0.4")
            ax.set_ylabel(label)
            ax.set_xscale("log")
            continue
        values = ds[name].transpose("chain", "step").values * scale
        for c in range(beta.shape[0]):
            ax.plot(beta[c], values[c], color=colors[c], linewidth=1.2,
                    label=f"chain {c}" if c < MAX_CHAINS_SHOWN else None)
        ax.set_ylabel(label)
        ax.set_xscale("log")
    axes[0].axhline(LOW_ESS_FRACTION, color="0.4", linestyle=":", linewidth=1.0,
                    label=f"warning threshold ({LOW_ESS_FRACTION:.0%})")
    axes[0].set_ylim(0, 1.05)
    axes[1].set_ylim(0, 1.05)
    axes[2].set_ylim(bottom=0)
    axes[0].legend(fontsize="small", loc="lower left")
    axes[0].set_title(f"Annealing diagnostics ({beta.shape[1]} temperatures)")
    axes[-1].set_xlabel(r"inverse temperature $\beta$")
    return axes


def plot_running_log_z(
    idata: xr.DataTree, *, axes: Sequence[Axes] | None = None, xscale: str = "linear"
) -> np.ndarray:
    r"""The running estimate of :math:`\log Z_\beta` along the annealing path, per chain.

    :math:`Z_\beta = \int p(\theta)\, p(y \mid \theta)^\beta \, d\theta` grows from
    :math:`Z_0 = 1` to the evidence at :math:`\beta = 1`; each chain's running estimate after
    step k is :math:`\log \operatorname{mean}(w_k)`. The top panel shows the estimates (the
    dashed line is the pooled final estimate), the bottom panel each chain's distance from
    the mean of the chains: where the chains fan out is where the path is hard.

    Parameters
    ----------
    idata : xarray.DataTree
        Result of :func:`pymc_anneal.sample_ais` (uses ``annealing_stats``).
    axes : sequence of 2 matplotlib.axes.Axes, optional
        Axes for the estimates and the chains' deviations; a new figure by default.
    xscale : {"linear", "log"}, default "linear"
        Scale of the :math:`\beta` axis.

    Returns
    -------
    numpy.ndarray of matplotlib.axes.Axes
        The two axes.

    References
    ----------
    Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11.
    """
    check_one_of("xscale", xscale, ("linear", "log"))
    ds = _check_group("plot_running_log_z", idata, "annealing_stats",
                      ["beta", "log_marginal_likelihood"])
    est = log_evidence(idata)
    if axes is None:
        axes = _axes(None, nrows=2, sharex=True, figsize=(7, 6), height_ratios=(2, 1))
    axes = np.asarray(axes, dtype=object).ravel()
    if axes.size != 2:
        raise AnnealingError(f"plot_running_log_z needs 2 axes, got {axes.size}.")
    beta = ds["beta"].transpose("chain", "step").values
    log_z = ds["log_marginal_likelihood"].transpose("chain", "step").values
    deviation = log_z - log_z.mean(axis=0)
    colors = _chain_colors(beta.shape[0])
    for c in range(beta.shape[0]):
        label = f"chain {c}" if c < MAX_CHAINS_SHOWN else None
        axes[0].plot(beta[c], log_z[c], color=colors[c], linewidth=1.2, label=label)
        axes[1].plot(beta[c], deviation[c], color=colors[c], linewidth=1.0)
    axes[0].axhline(est.log_evidence, color="0.2", linestyle="--", linewidth=1.0,
                    label=rf"pooled $\log\hat Z$ = {est.log_evidence:.3f} "
                          f"± {est.standard_error:.3f}")
    axes[1].axhline(0.0, color="0.5", linewidth=0.8)
    axes[1].set_xscale(xscale)
    axes[0].set_ylabel(r"running $\log \hat Z_\beta$")
    axes[1].set_ylabel("chain − mean of chains")
    axes[1].set_xlabel(r"inverse temperature $\beta$")
    axes[0].set_title("Running log evidence along the path")
    axes[0].legend(fontsize="small")
    return axes


def plot_convergence(
    runs: Sequence[xr.DataTree],
    *,
    reference: float | None = None,
    prob: float = 0.95,
    ax: Axes | None = None,
) -> Axes:
    r"""Log evidence against the number of temperatures, from several runs.

    Each run is a point with a ``prob`` interval (from the larger of its delta-method
    standard error and its chains' spread, as in :func:`pymc_anneal.compare`) and small dots
    for its chains' own estimates. Runs with the same number of temperatures are spread
    slightly sideways. AIS is biased low, by less as the temperatures multiply: the
    estimates should rise and level off; where they level off is enough temperatures.

    Parameters
    ----------
    runs : sequence of xarray.DataTree
        Results of :func:`pymc_anneal.sample_ais` on the same model, typically with
        different ``num_steps`` (and seeds).
    reference : float, optional
        A known log evidence (a closed form or a long run), drawn as a horizontal line.
    prob : float, default 0.95
        Probability mass of the error bars.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure by default.

    Returns
    -------
    matplotlib.axes.Axes

    References
    ----------
    Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11.
    """
    if isinstance(runs, xr.DataTree) or not isinstance(runs, Sequence) or len(runs) == 0:
        raise AnnealingError(
            "plot_convergence needs a non-empty list of DataTrees from sample_ais (e.g. runs "
            f"with different num_steps), got {type(runs).__name__}.")
    prob = check_probability("prob", prob, high_open=True, what="strictly between 0 and 1")
    num_steps, estimates, per_chain = [], [], []
    for i, run in enumerate(runs):
        ds = _check_group(f"plot_convergence (run {i})", run, "annealing_stats", ["beta"])
        num_steps.append(ds.sizes["step"])
        est = log_evidence(run)
        se = est.standard_error if np.isnan(est.chain_sd) else max(est.standard_error,
                                                                    est.chain_sd)
        estimates.append((est.log_evidence, se))
        per_chain.append(run["sample_stats"]["log_marginal_likelihood"].values.ravel())
    num_steps = np.asarray(num_steps)
    z = NormalDist().inv_cdf(0.5 + prob / 2)
    # spread runs with the same K sideways (multiplicatively: the axis is logarithmic)
    offsets = np.zeros(len(runs))
    for k in np.unique(num_steps):
        same = np.flatnonzero(num_steps == k)
        offsets[same] = np.linspace(-1, 1, same.size) * 0.04 * (same.size > 1)
    x = num_steps * np.exp(offsets)
    ax = _axes(ax)
    values = np.array(estimates)
    for xi, chains in zip(x, per_chain):
        ax.plot(np.full(chains.size, xi), chains, ".", color="0.6", markersize=4, zorder=1)
    ax.plot([], [], ".", color="0.6", label="single chains")
    ax.errorbar(x, values[:, 0], yerr=z * values[:, 1], fmt="o", capsize=3, zorder=2,
                label=f"pooled runs, {prob:.0%} interval")
    if reference is not None:
        ax.axhline(float(reference), color="0.2", linestyle="--", linewidth=1.0,
                   label=f"reference {float(reference):.3f}")
    ax.set_xscale("log")
    from matplotlib.ticker import NullLocator

    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks(np.unique(num_steps), [str(k) for k in np.unique(num_steps)])
    ax.set_xlabel("number of temperatures (num_steps)")
    ax.set_ylabel(r"$\log \hat Z$")
    ax.set_title("Convergence of the log evidence")
    ax.legend(fontsize="small")
    return ax


COMPARE_COLUMNS = ("log_evidence", "se", "bayes_factor", "bf_low", "bf_high", "probability",
                   "probability_low", "probability_high", "warning")


def plot_compare(comparison: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """The table of :func:`pymc_anneal.compare` as a plot: log evidence with intervals.

    Models run from the best (top) down. Each point carries the table's interval
    (``prob`` of the table, 95% by default) of its log evidence; the dashed line is the best
    model's estimate. The labels on the right give each model's posterior probability and
    the Bayes factor of the best model against it, both with their intervals. Models whose
    estimate is unreliable (the table's ``warning`` column) are drawn as open red markers.

    Parameters
    ----------
    comparison : pandas.DataFrame
        The result of :func:`pymc_anneal.compare`.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure by default.

    Returns
    -------
    matplotlib.axes.Axes
        The axes of the points; the labels on the right belong to its twin
        (``ax.figure.axes[-1]`` on a new figure).

    References
    ----------
    Kass, R. E. & Raftery, A. E. (1995). Bayes factors. *JASA* 90(430), 773-795.
    """
    if not isinstance(comparison, pd.DataFrame) or \
            any(c not in comparison.columns for c in COMPARE_COLUMNS):
        raise AnnealingError(
            "plot_compare needs the DataFrame returned by pymc_anneal.compare (with columns "
            f"{list(COMPARE_COLUMNS)}), got {type(comparison).__name__}"
            + (f" with columns {list(comparison.columns)}"
               if isinstance(comparison, pd.DataFrame) else "") + ".")
    prob = float(comparison.attrs.get("prob", 0.95))
    z = NormalDist().inv_cdf(0.5 + prob / 2)
    table = comparison.sort_values("log_evidence", ascending=False)
    num = len(table)
    ax = _axes(ax, figsize=(8, 1.4 + 0.8 * num))
    y = np.arange(num)[::-1].astype(float)
    warn = table["warning"].to_numpy(dtype=bool)
    for flagged, style in ((False, {"fmt": "o", "color": "C0"}),
                           (True, {"fmt": "o", "color": "C3", "mfc": "white"})):
        rows = warn == flagged
        if rows.any():
            ax.errorbar(table["log_evidence"].to_numpy()[rows], y[rows],
                        xerr=z * table["se"].to_numpy()[rows], capsize=3, **style,
                        label="unreliable estimate (see warning column)" if flagged else None)
    ax.axvline(table["log_evidence"].iloc[0], color="0.5", linestyle="--", linewidth=1.0)
    ax.set_yticks(y, [str(name) for name in table.index])
    ax.set_ylim(-0.7, num - 0.3)
    # the probabilities and Bayes factors as tick labels on the right (kept in the layout)
    labels = []
    for i, (_, row) in enumerate(table.iterrows()):
        text = (f"P = {row['probability']:.3g} [{row['probability_low']:.3g}, "
                f"{row['probability_high']:.3g}]")
        if i > 0:
            text += (f"\nBF(best : this) = {row['bayes_factor']:.3g} "
                     f"[{row['bf_low']:.3g}, {row['bf_high']:.3g}]")
        labels.append(text)
    right = ax.twinx()
    right.set_ylim(ax.get_ylim())
    right.set_yticks(y, labels, fontsize="small")
    right.tick_params(axis="y", length=0)
    right.spines["right"].set_visible(False)
    ax.set_xlabel(r"log evidence $\log p(y \mid M)$" + f" ({prob:.0%} interval)")
    ax.set_title("Model comparison by evidence")
    if warn.any():
        ax.legend(fontsize="small")
    return ax


def plot_sandwich(
    result: xr.DataTree,
    *,
    reference: float | None = None,
    prob: float = 0.95,
    ax: Axes | None = None,
) -> Axes:
    r"""AIS and RAISE estimates of the average test log-likelihood against the number of
    temperatures (Burda, Grosse & Salakhutdinov 2015, Figure 4).

    AIS errs high and RAISE low; the band between them narrows as the temperatures
    multiply, and where they meet both are right.

    Parameters
    ----------
    result : xarray.DataTree
        Result of :func:`pymc_anneal.sandwich`.
    reference : float, optional
        A known value (an exact average test log-likelihood), drawn as a horizontal line.
    prob : float, default 0.95
        Probability mass of the error bars.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure by default.

    Returns
    -------
    matplotlib.axes.Axes

    References
    ----------
    Burda, Y., Grosse, R. B. & Salakhutdinov, R. (2015). Accurate and conservative
    estimates of MRF log-likelihood using reverse annealing. *AISTATS*.
    """
    if not isinstance(result, xr.DataTree) or "sample_stats" not in result.children or any(
            v not in result["sample_stats"].data_vars for v in ("ais", "raise")):
        raise AnnealingError(
            "plot_sandwich needs the DataTree returned by pymc_anneal.sandwich (with "
            f"sample_stats.ais and sample_stats.raise), got {type(result).__name__}.")
    prob = check_probability("prob", prob, high_open=True, what="strictly between 0 and 1")
    ds = result["sample_stats"].dataset
    z = NormalDist().inv_cdf(0.5 + prob / 2)
    k = ds["num_steps"].values
    ax = _axes(ax)
    for name, label, marker in (("ais", "AIS (errs high)", "v"), ("raise", "RAISE (errs low)", "^")):
        ax.errorbar(k, ds[name].values, yerr=z * ds[f"{name}_se"].values, fmt=f"{marker}-",
                    capsize=3, label=f"{label}, {prob:.0%} interval")
    ax.fill_between(k, ds["raise"].values, ds["ais"].values, color="0.85", zorder=0)
    if reference is not None:
        ax.axhline(float(reference), color="0.2", linestyle="--", linewidth=1.0,
                   label=f"reference {float(reference):.3f}")
    ax.set_xscale("log")
    ax.set_xlabel("number of temperatures (num_steps)")
    ax.set_ylabel("average test log-likelihood")
    ax.set_title("AIS and RAISE")
    ax.legend(fontsize="small")
    return ax
