"""Diagnostic plots for AIS results, drawn through arviz-plots (matplotlib, bokeh or plotly).

Every function takes the DataTree returned by :func:`pymc_anneal.sample_ais` (or, for
:func:`plot_compare`, the table of :func:`pymc_anneal.compare`; for :func:`plot_sandwich`,
the result of :func:`pymc_anneal.sandwich`) and draws with the backend-neutral drawing
functions of ``arviz_plots.backend``, so that one code path serves every backend:

- ``backend=None`` (the default) draws with matplotlib, on the ``Axes`` given (``ax`` /
  ``axes``) or on a new figure, and returns the ``Axes`` (as these functions always did);
- ``backend="matplotlib"``, ``"bokeh"`` or ``"plotly"`` returns an
  :class:`arviz_plots.PlotCollection`, as ArviZ's own ``plot_*`` functions do
  (``pc.show()``, ``pc.savefig("plot.html")``, ``pc.viz["plot"]`` for the plot targets).

Colours and line styles come from the backend's defaults, so ArviZ's styles apply::

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

The posterior draws of a result are an ordinary ArviZ ``posterior`` group:
``arviz.plot_dist``, ``arviz.plot_forest`` and the other posterior plots of ArviZ read them.

References
----------
Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11, 125-139.
Kass, R. E. & Raftery, A. E. (1995). Bayes factors. *JASA* 90(430), 773-795.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import import_module
from statistics import NormalDist
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xarray as xr

from pymc_anneal.diagnostics import LOW_ESS_FRACTION
from pymc_anneal.evidence import log_evidence
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.validation import check_one_of, check_probability, check_real

if TYPE_CHECKING:
    from arviz_plots import PlotCollection
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

BACKENDS = ("matplotlib", "bokeh", "plotly")
"""The arviz-plots backends the plots draw with (``backend=``)."""

DOTS_PER_INCH = 100
"""Figure sizes are given in inches; bokeh and plotly get them in dots at this density."""

REFERENCE_COLOR = "#444444"
"""Colour of the reference lines (an estimate, a known value, a threshold)."""

_TRIANGLES = {"matplotlib": ("v", "^"), "bokeh": ("inverted_triangle", "triangle"),
              "plotly": ("triangle-down", "triangle-up")}


@dataclass
class _Canvas:
    """A figure and its plot targets on one backend, with the backend's drawing module."""

    backend: str
    draw: ModuleType
    figure: Any
    targets: np.ndarray
    legacy: bool

    def style(self, aesthetic: str, index: int):
        """The backend's default ``aesthetic`` ("color", "linestyle", "marker") number
        ``index`` (the user's style for matplotlib)."""
        return self.draw.get_default_aes(aesthetic, index + 1, {})[index]

    def chain_colors(self, num_chains: int) -> list:
        colors = self.draw.get_default_aes("color", min(num_chains, MAX_CHAINS_SHOWN), {})
        if num_chains > MAX_CHAINS_SHOWN:
            return [colors[0]] * num_chains
        return [colors[i % len(colors)] for i in range(num_chains)]

    def label(self, text: str | None) -> dict:
        """Keyword arguments that put a visual in the legend under ``text``."""
        if text is None:
            return {}
        return {"matplotlib": {"label": text}, "bokeh": {"legend_label": text},
                "plotly": {"name": text, "showlegend": True}}[self.backend]

    def reference(self, target, x, y, text: str | None = None, *, dotted: bool = False):
        """A straight reference line through ``x`` and ``y`` (two points each)."""
        self.draw.line(np.asarray(x, dtype=float), np.asarray(y, dtype=float), target,
                       color=REFERENCE_COLOR, width=1.2, linestyle=self.style(
                           "linestyle", 2 if dotted else 1), **self.label(text))

    def error_bars(self, target, x, y, low, high, *, color, marker=None, horizontal=False,
                   text=None, facecolor=None):
        """Points at (x, y) with bars from ``low`` to ``high`` (along y, or x if
        ``horizontal``), as one legend entry."""
        for xi, yi, lo, hi in zip(x, y, low, high):
            bar = ((lo, hi), (yi, yi)) if horizontal else ((xi, xi), (lo, hi))
            self.draw.line(*bar, target, color=color, width=1.2)
        extra = {} if facecolor is None else {"facecolor": facecolor}
        self.draw.scatter(np.asarray(x, float), np.asarray(y, float), target, color=color,
                          marker=marker or self.style("marker", 0), **extra, **self.label(text))

    def log_x(self, target):
        if self.backend == "matplotlib":
            target.set_xscale("log")
        elif self.backend == "plotly":
            target.update_xaxes(type="log")
        # bokeh: the axis type is set when the plot is made (see _canvas)

    def legend(self, target, **matplotlib_kwargs):
        """Show the legend of ``target`` (bokeh and plotly show theirs by themselves)."""
        if self.backend == "matplotlib":
            target.legend(fontsize="small", **matplotlib_kwargs)

    def result(self, single: bool):
        """The legacy return (matplotlib Axes) or an arviz_plots.PlotCollection."""
        if self.legacy:
            return self.targets[0] if single else self.targets
        from arviz_plots import PlotCollection

        viz = xr.Dataset({"figure": np.array(self.figure, dtype=object),
                          "plot": (("row_index",), self.targets)})
        return PlotCollection(xr.Dataset({}), viz_dt=xr.DataTree(viz), backend=self.backend)


def _canvas(function: str, backend: str | None, given, *, nrows: int = 1,
            figsize=(7.0, 4.5), log_x: bool = False, **grid_kwargs) -> _Canvas:
    """A new figure with ``nrows`` plots on ``backend``, or the matplotlib Axes ``given``."""
    legacy = backend is None
    backend = "matplotlib" if legacy else check_one_of("backend", backend, BACKENDS)
    try:
        draw = import_module(f"arviz_plots.backend.{backend}")
    except ImportError as err:  # pragma: no cover - an optional dependency is missing
        raise ImportError(
            f"{function} with backend={backend!r} needs arviz-plots and {backend}: pip install "
            f"arviz-plots {backend}.") from err
    if given is not None:
        if backend != "matplotlib":
            raise AnnealingError(
                f"{function} draws on the matplotlib Axes it is given, but got "
                f"backend={backend!r}. Leave ax/axes out to draw a new {backend} figure, or "
                "use backend='matplotlib'.")
        targets = np.asarray(given, dtype=object).ravel()
        if targets.size != nrows:
            raise AnnealingError(f"{function} needs {nrows} axes, got {targets.size}.")
        figure = targets[0].figure
    else:
        units = "inches" if backend == "matplotlib" else "dots"
        scale = 1 if backend == "matplotlib" else DOTS_PER_INCH
        if backend == "matplotlib":
            grid_kwargs["layout"] = "constrained"
        if backend == "bokeh" and log_x:
            grid_kwargs["subplot_kws"] = {"x_axis_type": "log"}
        figure, targets = draw.create_plotting_grid(
            nrows, nrows, 1, figsize=(figsize[0] * scale, figsize[1] * scale),
            figsize_units=units, squeeze=False, **grid_kwargs)
        targets = np.asarray(targets, dtype=object).ravel()
    canvas = _Canvas(backend, draw, figure, targets, legacy)
    if log_x:
        for target in targets:
            canvas.log_x(target)
    return canvas


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


def _interval(prob: float) -> float:
    """The normal quantile of a central ``prob`` interval."""
    return NormalDist().inv_cdf(0.5 + prob / 2)




def plot_log_weights(
    idata: xr.DataTree, *, ax: Axes | None = None, bins="auto", window: float = 50.0,
    backend: str | None = None,
) -> Axes | PlotCollection:
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
    backend : {"matplotlib", "bokeh", "plotly"}, optional
        Draw with this arviz-plots backend and return a PlotCollection; by default draw
        with matplotlib and return the Axes.

    Returns
    -------
    matplotlib.axes.Axes or arviz_plots.PlotCollection

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
    >>> pa.plots.plot_log_weights(idata, backend="bokeh").show()  # doctest: +SKIP
    """
    ds = _check_group("plot_log_weights", idata, "particles", ["log_weight"])
    window = check_real("window", window, low=0.0, low_open=True, finite=False,
                        what="a positive number of nats")
    log_w = np.asarray(ds["log_weight"].transpose("chain", "draw").values, dtype=np.float64)
    finite = np.isfinite(log_w)
    if not finite.any():
        raise AnnealingError("plot_log_weights: every particle has zero weight; nothing to draw.")
    est = log_evidence(idata)
    canvas = _canvas("plot_log_weights", backend, ax, figsize=(8, 4.5))
    target = canvas.targets[0]
    shown = finite & (log_w >= log_w[finite].max() - window)
    edges = np.histogram_bin_edges(log_w[shown], bins=bins)
    per_chain = log_w.shape[0] <= MAX_CHAINS_SHOWN
    groups = ([(f"chain {c}", log_w[c][shown[c]]) for c in range(log_w.shape[0])] if per_chain
              else [(f"{log_w.shape[0]} chains", log_w[shown])])
    highest = 0
    for (label, values), color in zip(groups, canvas.chain_colors(len(groups))):
        counts = np.histogram(values, bins=edges)[0]
        highest = max(highest, counts.max())
        # the outline of a step histogram: from 0 up at the first edge, down at the last
        canvas.draw.step(np.concatenate([edges[:1], edges]), np.concatenate([[0], counts, [0]]),
                         target, color=color, width=1.5, step_mode="after",
                         **canvas.label(label))
    canvas.reference(target, [est.log_evidence] * 2, [0, highest],
                     rf"$\log\hat Z$ = {est.log_evidence:.3f} ± {est.standard_error:.3f}")
    num_hidden = int((~shown).sum())
    if num_hidden and canvas.backend == "matplotlib":
        target.plot([], [], " ", label=f"{num_hidden} particle{'s' * (num_hidden > 1)} with "
                                       f"negligible weight\n(below e^-{window:g} of the "
                                       "largest) not shown")
    n = log_w.size
    hidden = f"; {num_hidden} of negligible weight not shown" if num_hidden else ""
    canvas.draw.title(f"Log weights: ESS {est.ess:.0f} of {n} ({100 * est.ess / n:.2g}%)"
                      + (hidden if canvas.backend != "matplotlib" else ""), target)
    canvas.draw.xlabel("log importance weight", target)
    canvas.draw.ylabel("particles", target)
    if canvas.backend == "matplotlib":
        from matplotlib.ticker import MaxNLocator

        target.xaxis.set_major_locator(MaxNLocator(nbins=6))
    canvas.legend(target, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    return canvas.result(single=True)


def plot_annealing(
    idata: xr.DataTree, *, axes: Sequence[Axes] | None = None, backend: str | None = None
) -> np.ndarray | PlotCollection:
    r"""Weight ESS, acceptance rate and step size along the inverse temperature.

    One line per chain, on a logarithmic :math:`\beta` axis (most schedules put most of
    their temperatures near 0).

    Parameters
    ----------
    idata : xarray.DataTree
        Result of :func:`pymc_anneal.sample_ais` (uses the ``annealing_stats`` group).
    axes : sequence of 3 matplotlib.axes.Axes, optional
        Axes for the ESS, the acceptance rate and the step size; a new figure by default.
    backend : {"matplotlib", "bokeh", "plotly"}, optional
        Draw with this arviz-plots backend and return a PlotCollection; by default draw
        with matplotlib and return the Axes.

    Returns
    -------
    numpy.ndarray of matplotlib.axes.Axes or arviz_plots.PlotCollection
        The three axes (or the collection of the three plots).

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
    canvas = _canvas("plot_annealing", backend, axes, nrows=3, figsize=(7, 7), log_x=True,
                     sharex=True)
    beta = ds["beta"].transpose("chain", "step").values
    panels = [("ess", "weight ESS / particles", 1.0 / draws, 1.05),
              ("acceptance_rate", "acceptance rate", 1.0, 1.05),
              ("step_size", "step size", 1.0, None)]
    colors = canvas.chain_colors(beta.shape[0])
    for target, (name, label, scale, top) in zip(canvas.targets, panels):
        canvas.draw.ylabel(label, target)
        if name not in ds.data_vars:  # a kernel without a step size (Gibbs sweeps)
            canvas.draw.text(np.sqrt(beta.min() * beta.max()), 0.5,
                             f"the {idata.attrs.get('kernel', '')} kernel has no step size",
                             target, color="gray")
            canvas.draw.ylim((0, 1), target)
            continue
        values = ds[name].transpose("chain", "step").values * scale
        for c in range(beta.shape[0]):
            canvas.draw.line(beta[c], values[c], target, color=colors[c], width=1.2,
                             **canvas.label(f"chain {c}" if c < MAX_CHAINS_SHOWN else None))
        canvas.draw.ylim((0, top if top else 1.05 * np.nanmax(values)), target)
    canvas.reference(canvas.targets[0], beta[0, [0, -1]], [LOW_ESS_FRACTION] * 2,
                     f"warning threshold ({LOW_ESS_FRACTION:.0%})", dotted=True)
    canvas.legend(canvas.targets[0], loc="lower left")
    canvas.draw.title(f"Annealing diagnostics ({beta.shape[1]} temperatures)",
                      canvas.targets[0])
    canvas.draw.xlabel(r"inverse temperature $\beta$", canvas.targets[-1])
    return canvas.result(single=False)


def plot_running_log_z(
    idata: xr.DataTree, *, axes: Sequence[Axes] | None = None, xscale: str = "linear",
    backend: str | None = None,
) -> np.ndarray | PlotCollection:
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
    backend : {"matplotlib", "bokeh", "plotly"}, optional
        Draw with this arviz-plots backend and return a PlotCollection; by default draw
        with matplotlib and return the Axes.

    Returns
    -------
    numpy.ndarray of matplotlib.axes.Axes or arviz_plots.PlotCollection
        The two axes (or the collection of the two plots).

    References
    ----------
    Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11.
    """
    check_one_of("xscale", xscale, ("linear", "log"))
    ds = _check_group("plot_running_log_z", idata, "annealing_stats",
                      ["beta", "log_marginal_likelihood"])
    est = log_evidence(idata)
    canvas = _canvas("plot_running_log_z", backend, axes, nrows=2, figsize=(7, 6),
                     log_x=xscale == "log", sharex=True, height_ratios=(2, 1))
    top, bottom = canvas.targets
    beta = ds["beta"].transpose("chain", "step").values
    log_z = ds["log_marginal_likelihood"].transpose("chain", "step").values
    deviation = log_z - log_z.mean(axis=0)
    colors = canvas.chain_colors(beta.shape[0])
    for c in range(beta.shape[0]):
        label = f"chain {c}" if c < MAX_CHAINS_SHOWN else None
        canvas.draw.line(beta[c], log_z[c], top, color=colors[c], width=1.2,
                         **canvas.label(label))
        canvas.draw.line(beta[c], deviation[c], bottom, color=colors[c], width=1.0)
    span = [beta.min(), beta.max()]
    canvas.reference(top, span, [est.log_evidence] * 2,
                     rf"pooled $\log\hat Z$ = {est.log_evidence:.3f} "
                     f"± {est.standard_error:.3f}")
    canvas.draw.line(np.array(span), np.zeros(2), bottom, color="gray", width=0.8)
    canvas.draw.ylabel(r"running $\log \hat Z_\beta$", top)
    canvas.draw.ylabel("chain − mean of chains", bottom)
    canvas.draw.xlabel(r"inverse temperature $\beta$", bottom)
    canvas.draw.title("Running log evidence along the path", top)
    canvas.legend(top)
    return canvas.result(single=False)


def _convergence_points(runs: Sequence[xr.DataTree]):
    """Per run: number of temperatures, (estimate, error) and the chains' own estimates."""
    if isinstance(runs, xr.DataTree) or not isinstance(runs, Sequence) or len(runs) == 0:
        raise AnnealingError(
            "plot_convergence needs a non-empty list of DataTrees from sample_ais (e.g. runs "
            f"with different num_steps), got {type(runs).__name__}.")
    num_steps, estimates, per_chain = [], [], []
    for i, run in enumerate(runs):
        ds = _check_group(f"plot_convergence (run {i})", run, "annealing_stats", ["beta"])
        num_steps.append(ds.sizes["step"])
        est = log_evidence(run)
        se = est.standard_error if np.isnan(est.chain_sd) else max(est.standard_error,
                                                                    est.chain_sd)
        estimates.append((est.log_evidence, se))
        per_chain.append(run["sample_stats"]["log_marginal_likelihood"].values.ravel())
    return np.asarray(num_steps), np.array(estimates), per_chain


def _spread(num_steps: np.ndarray) -> np.ndarray:
    """Positions on a log axis that spread runs with the same K slightly sideways."""
    offsets = np.zeros(num_steps.size)
    for k in np.unique(num_steps):
        same = np.flatnonzero(num_steps == k)
        offsets[same] = np.linspace(-1, 1, same.size) * 0.04 * (same.size > 1)
    return num_steps * np.exp(offsets)


def _estimates_against_num_steps(canvas: _Canvas, target, num_steps, *, ylabel: str,
                                 title: str, reference: float | None) -> None:
    """The common frame of plot_convergence and plot_sandwich: a log K axis with a tick at
    each K, labels, title, the optional reference line and the legend."""
    ticks = np.unique(num_steps)
    if reference is not None:
        canvas.reference(target, ticks[[0, -1]], [float(reference)] * 2,
                         f"reference {float(reference):.3f}")
    if canvas.backend == "matplotlib":
        from matplotlib.ticker import NullLocator

        target.xaxis.set_minor_locator(NullLocator())
    canvas.draw.xticks(ticks, [str(k) for k in ticks], target)
    canvas.draw.xlabel("number of temperatures (num_steps)", target)
    canvas.draw.ylabel(ylabel, target)
    canvas.draw.title(title, target)
    canvas.legend(target)


def plot_convergence(
    runs: Sequence[xr.DataTree],
    *,
    reference: float | None = None,
    prob: float = 0.95,
    ax: Axes | None = None,
    backend: str | None = None,
) -> Axes | PlotCollection:
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
    backend : {"matplotlib", "bokeh", "plotly"}, optional
        Draw with this arviz-plots backend and return a PlotCollection; by default draw
        with matplotlib and return the Axes.

    Returns
    -------
    matplotlib.axes.Axes or arviz_plots.PlotCollection

    References
    ----------
    Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11.
    """
    num_steps, values, per_chain = _convergence_points(runs)
    prob = check_probability("prob", prob, high_open=True, what="strictly between 0 and 1")
    z = _interval(prob)
    x = _spread(num_steps)
    canvas = _canvas("plot_convergence", backend, ax, log_x=True)
    target = canvas.targets[0]
    dots = np.concatenate([np.full(chains.size, xi) for xi, chains in zip(x, per_chain)])
    canvas.draw.scatter(dots, np.concatenate(per_chain), target, color="gray", size=3,
                        **canvas.label("single chains"))
    canvas.error_bars(target, x, values[:, 0], values[:, 0] - z * values[:, 1],
                      values[:, 0] + z * values[:, 1], color=canvas.style("color", 0),
                      text=f"pooled runs, {prob:.0%} interval")
    _estimates_against_num_steps(canvas, target, num_steps, ylabel=r"$\log \hat Z$",
                                 title="Convergence of the log evidence", reference=reference)
    return canvas.result(single=True)


COMPARE_COLUMNS = ("log_evidence", "se", "bayes_factor", "bf_low", "bf_high", "probability",
                   "probability_low", "probability_high", "warning")


def _compare_labels(table: pd.DataFrame) -> list[str]:
    """Per model (best first): its name, posterior probability and, below the best, the
    Bayes factor of the best model against it, with their intervals."""
    labels = []
    for i, (name, row) in enumerate(table.iterrows()):
        text = (f"{name}\nP = {row['probability']:.3g} [{row['probability_low']:.3g}, "
                f"{row['probability_high']:.3g}]")
        if i > 0:
            text += (f"\nBF(best : this) = {row['bayes_factor']:.3g} "
                     f"[{row['bf_low']:.3g}, {row['bf_high']:.3g}]")
        labels.append(text)
    return labels


def plot_compare(comparison: pd.DataFrame, *, ax: Axes | None = None,
                 backend: str | None = None) -> Axes | PlotCollection:
    """The table of :func:`pymc_anneal.compare` as a plot: log evidence with intervals.

    Models run from the best (top) down. Each point carries the table's interval
    (``prob`` of the table, 95% by default) of its log evidence; the dashed line is the best
    model's estimate. Each model's label gives its posterior probability and the Bayes
    factor of the best model against it, both with their intervals. Models whose estimate
    is unreliable (the table's ``warning`` column) are drawn as open red markers.

    Parameters
    ----------
    comparison : pandas.DataFrame
        The result of :func:`pymc_anneal.compare`.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure by default.
    backend : {"matplotlib", "bokeh", "plotly"}, optional
        Draw with this arviz-plots backend and return a PlotCollection; by default draw
        with matplotlib and return the Axes.

    Returns
    -------
    matplotlib.axes.Axes or arviz_plots.PlotCollection

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
    z = _interval(prob)
    table = comparison.sort_values("log_evidence", ascending=False)
    num = len(table)
    canvas = _canvas("plot_compare", backend, ax, figsize=(8, 1.4 + 0.8 * num))
    target = canvas.targets[0]
    y = np.arange(num)[::-1].astype(float)
    estimate, se = table["log_evidence"].to_numpy(), table["se"].to_numpy()
    warn = table["warning"].to_numpy(dtype=bool)
    for flagged in (False, True):
        rows = warn == flagged
        if rows.any():
            canvas.error_bars(
                target, estimate[rows], y[rows], estimate[rows] - z * se[rows],
                estimate[rows] + z * se[rows], horizontal=True,
                color="#d62728" if flagged else canvas.style("color", 0),
                facecolor="white" if flagged else None,
                text="unreliable estimate (see warning column)" if flagged else None)
    canvas.reference(target, [estimate[0]] * 2, [-0.5, num - 0.5])
    canvas.draw.yticks(y, _compare_labels(table), target)
    canvas.draw.ylim((-0.7, num - 0.3), target)
    canvas.draw.xlabel(r"log evidence $\log p(y \mid M)$" + f" ({prob:.0%} interval)", target)
    canvas.draw.title("Model comparison by evidence", target)
    if warn.any():
        canvas.legend(target)
    return canvas.result(single=True)


def plot_sandwich(
    result: xr.DataTree,
    *,
    reference: float | None = None,
    prob: float = 0.95,
    ax: Axes | None = None,
    backend: str | None = None,
) -> Axes | PlotCollection:
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
    backend : {"matplotlib", "bokeh", "plotly"}, optional
        Draw with this arviz-plots backend and return a PlotCollection; by default draw
        with matplotlib and return the Axes.

    Returns
    -------
    matplotlib.axes.Axes or arviz_plots.PlotCollection

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
    z = _interval(prob)
    k = ds["num_steps"].values
    canvas = _canvas("plot_sandwich", backend, ax, log_x=True)
    target = canvas.targets[0]
    canvas.draw.fill_between_y(k, ds["raise"].values, ds["ais"].values, target,
                               color="lightgray", alpha=0.6)
    for i, (name, label) in enumerate((("ais", "AIS (errs high)"),
                                       ("raise", "RAISE (errs low)"))):
        values, se, color = ds[name].values, ds[f"{name}_se"].values, canvas.style("color", i)
        canvas.draw.line(k, values, target, color=color, width=1.2)
        canvas.error_bars(target, k, values, values - z * se, values + z * se, color=color,
                          marker=_TRIANGLES[canvas.backend][i],
                          text=f"{label}, {prob:.0%} interval")
    _estimates_against_num_steps(canvas, target, k, ylabel="average test log-likelihood",
                                 title="AIS and RAISE", reference=reference)
    return canvas.result(single=True)
