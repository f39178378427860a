"""Diagnostic plots: each is rendered headless (Agg) to PNG and SVG, without warnings, and
its content is checked against the data it shows (titles, labels, lines, values); then every
plot is drawn with each arviz-plots backend (matplotlib, bokeh, plotly) and saved, and ArviZ's
own posterior plots read a sample_ais result."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr

import pymc_anneal as pa
from pymc_anneal.diagnostics import LOW_ESS_FRACTION
from tests import analytic

SEED = 4
TARGET = analytic.normal_mean()
CONVERGENCE_STEPS = (3, 10, 30, 100)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def model():
    return TARGET.build()


@pytest.fixture(scope="module")
def idata(model):
    return pa.sample_ais(model=model, draws=200, chains=3, num_steps=100, backend="jax",
                         random_seed=SEED, progressbar=False)


@pytest.fixture(scope="module")
def convergence_runs(model):
    """Two runs per number of temperatures; the short ones are meant to be poor, so their
    AnnealingWarnings (low ESS, chains disagreeing) are expected here and silenced."""
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pa.AnnealingWarning)
        for k in CONVERGENCE_STEPS:
            for r in range(2):
                runs.append(pa.sample_ais(model=model, draws=200, chains=3, num_steps=k,
                                          backend="jax", random_seed=SEED + 10 * k + r,
                                          progressbar=False))
    return runs


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _save(fig, tmp_path, name):
    """Render to PNG and SVG; return the PNG's path."""
    png, svg = tmp_path / f"{name}.png", tmp_path / f"{name}.svg"
    fig.savefig(png)
    fig.savefig(svg)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in svg.read_bytes()[:2000]
    return png


def _fake_idata(log_w: np.ndarray) -> xr.DataTree:
    """The groups of sample_ais that plot_log_weights needs, from given log weights."""
    from pymc_anneal.estimators import log_mean_exp

    return xr.DataTree.from_dict({
        "particles": xr.Dataset({"log_weight": (("chain", "draw"), log_w)}),
        "sample_stats": xr.Dataset({"log_marginal_likelihood": (("chain",),
                                                                log_mean_exp(log_w, axis=1))}),
    })


# --------------------------------------------------------------------------- log weights


def test_plot_log_weights(idata, tmp_path):
    ax = pa.plots.plot_log_weights(idata)
    _save(ax.figure, tmp_path, "log_weights")
    est = pa.log_evidence(idata)
    log_w = idata["particles"]["log_weight"].values
    assert ax.get_title() == (f"Log weights: ESS {est.ess:.0f} of {log_w.size} "
                              f"({100 * est.ess / log_w.size:.2g}%)")
    assert ax.get_xlabel() == "log importance weight" and ax.get_ylabel() == "particles"
    # one step histogram per chain, holding all of its particles
    steps = [line for line in ax.get_lines() if line.get_label().startswith("chain")]
    assert len(steps) == log_w.shape[0]
    edges = np.histogram_bin_edges(log_w, bins="auto")
    for c, line in enumerate(steps):
        counts, _ = np.histogram(log_w[c], bins=edges)
        # the outline starts and ends at 0, and steps through each bin's height
        np.testing.assert_array_equal(line.get_ydata()[1:-1], counts)
        np.testing.assert_array_equal(line.get_xdata()[1:], edges)
        assert counts.sum() == log_w.shape[1]


def test_plot_log_weights_pools_many_chains_and_leaves_out_negligible_weights(tmp_path):
    rng = np.random.default_rng(0)
    log_w = rng.normal(-5.0, 1.0, size=(12, 40))
    log_w[0, :3] = -np.inf  # zero weight
    log_w[1, :2] = -1e10  # stranded particles, as seen on hard models
    ax = pa.plots.plot_log_weights(_fake_idata(log_w), bins=10)
    _save(ax.figure, tmp_path, "log_weights_pooled")
    steps = [line for line in ax.get_lines() if line.get_label().endswith("chains")]
    assert len(steps) == 1
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0] == "12 chains"
    assert labels[-1] == ("5 particles with negligible weight\n(below e^-50 of the largest) "
                          "not shown")
    assert steps[0].get_ydata().sum() == log_w.size - 5
    assert ax.get_xlim()[0] > log_w.max() - 50  # the stranded particles do not set the range


# --------------------------------------------------------------------------- along beta


def test_plot_annealing(idata, tmp_path):
    axes = pa.plots.plot_annealing(idata)
    _save(axes[0].figure, tmp_path, "annealing")
    stats = idata["annealing_stats"]
    draws = idata["particles"].sizes["draw"]
    assert [ax.get_ylabel() for ax in axes] == ["weight ESS / particles", "acceptance rate",
                                                "step size"]
    assert axes[-1].get_xlabel() == r"inverse temperature $\beta$"
    assert axes[0].get_title() == "Annealing diagnostics (100 temperatures)"
    assert all(ax.get_xscale() == "log" for ax in axes)
    for ax, name, scale in zip(axes, ["ess", "acceptance_rate", "step_size"], [1 / draws, 1, 1]):
        chain_lines = [line for line in ax.get_lines() if line.get_label().startswith("chain")]
        assert len(chain_lines) == 3
        for c, line in enumerate(chain_lines):
            np.testing.assert_allclose(line.get_xdata(), stats["beta"].values[c])
            np.testing.assert_allclose(line.get_ydata(), stats[name].values[c] * scale)
    threshold = [line for line in axes[0].get_lines() if line.get_label().startswith("warning")]
    assert len(threshold) == 1 and threshold[0].get_ydata()[0] == pytest.approx(LOW_ESS_FRACTION)


def test_plot_annealing_without_a_step_size(tmp_path):
    """A Gibbs kernel has no step size: the panel says so instead of failing."""
    from pymc_anneal.energy import BernoulliRBM

    rng = np.random.default_rng(0)
    rbm = BernoulliRBM(rng.normal(0, 0.5, (5, 3)), np.zeros(5), np.zeros(3))
    idata = pa.ais(rbm, draws=50, chains=2, num_steps=20, progressbar=False, random_seed=1)
    assert "step_size" not in idata["annealing_stats"]
    axes = pa.plots.plot_annealing(idata)
    _save(axes[0].figure, tmp_path, "annealing_gibbs")
    assert [t.get_text() for t in axes[2].texts] == ["the gibbs kernel has no step size"]
    assert len(axes[0].get_lines()) >= 2  # the ESS panel is drawn


def test_plot_running_log_z(idata, tmp_path):
    axes = pa.plots.plot_running_log_z(idata)
    _save(axes[0].figure, tmp_path, "running_log_z")
    assert axes[0].get_title() == "Running log evidence along the path"
    assert axes[1].get_xlabel() == r"inverse temperature $\beta$"
    chain_lines = axes[0].get_lines()[:3]
    per_chain = idata["sample_stats"]["log_marginal_likelihood"].values
    for c, line in enumerate(chain_lines):
        assert line.get_ydata()[-1] == pytest.approx(per_chain[c], abs=1e-9)
        assert line.get_xdata()[-1] == 1.0
    deviations = np.array([line.get_ydata() for line in axes[1].get_lines()[:3]])
    np.testing.assert_allclose(deviations.sum(axis=0), 0.0, atol=1e-9)
    pooled = [line for line in axes[0].get_lines() if line.get_linestyle() == "--"]
    assert pooled[0].get_ydata()[0] == pytest.approx(pa.log_evidence(idata).log_evidence)


def test_plot_convergence(convergence_runs, tmp_path):
    ax = pa.plots.plot_convergence(convergence_runs, reference=TARGET.log_evidence)
    _save(ax.figure, tmp_path, "convergence")
    assert ax.get_xlabel() == "number of temperatures (num_steps)"
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(k) for k in CONVERGENCE_STEPS]
    pooled = [c for c in ax.collections if c.get_label().startswith("pooled runs")]
    x, y = pooled[0].get_offsets().T
    assert len(x) == 2 * len(CONVERGENCE_STEPS)
    # runs with the same K sit side by side, within 5% of K
    np.testing.assert_allclose(x, np.repeat(CONVERGENCE_STEPS, 2), rtol=0.05)
    assert len(set(np.round(x, 6))) == len(x)
    np.testing.assert_allclose(y, [pa.log_evidence(r).log_evidence for r in convergence_runs])
    # each point has a vertical bar of +-1.96 times its error
    for xi, yi, run in zip(x, y, convergence_runs):
        bars = [line.get_ydata() for line in ax.get_lines()
                if np.allclose(line.get_xdata(), xi) and len(line.get_xdata()) == 2]
        est = pa.log_evidence(run)
        half = 1.959964 * max(est.standard_error, est.chain_sd)
        np.testing.assert_allclose(bars[0], [yi - half, yi + half], rtol=1e-6)
    reference = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert reference[0].get_ydata()[0] == pytest.approx(TARGET.log_evidence)
    # the science the plot is for: the longest runs are within their error of the truth
    for run in convergence_runs[-2:]:
        est = pa.log_evidence(run)
        assert abs(est.log_evidence - TARGET.log_evidence) < 3 * max(est.standard_error,
                                                                     est.chain_sd)


def test_plot_compare(tmp_path):
    table = pa.compare({
        "linear": pa.EvidenceEstimate(-52.1, 0.05, 0.04, 900.0, 1000),
        "quadratic": pa.EvidenceEstimate(-47.3, 0.04, 0.02, 800.0, 1000),
        "cubic": pa.EvidenceEstimate(-48.0, 0.30, 0.10, 20.0, 1000),  # low ESS
    })
    ax = pa.plots.plot_compare(table)
    _save(ax.figure, tmp_path, "compare")
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert [label.split("\n")[0] for label in labels] == ["quadratic", "cubic", "linear"]
    np.testing.assert_allclose(ax.get_yticks(), [2, 1, 0])
    assert ax.get_title() == "Model comparison by evidence"
    assert ax.get_xlabel() == r"log evidence $\log p(y \mid M)$ (95% interval)"
    reliable, flagged = ax.collections
    np.testing.assert_allclose(reliable.get_offsets(), [[-47.3, 2], [-52.1, 0]])
    np.testing.assert_allclose(flagged.get_facecolor()[0], [1, 1, 1, 1])  # open marker
    np.testing.assert_allclose(flagged.get_offsets(), [[-48.0, 1]])
    # error bars: +-1.96 se (se = the larger of the two error estimates)
    bars = {line.get_ydata()[0]: line.get_xdata() for line in ax.get_lines()
            if len(line.get_ydata()) == 2 and line.get_ydata()[0] == line.get_ydata()[1]}
    for y, (estimate, se) in {2: (-47.3, 0.04), 1: (-48.0, 0.30), 0: (-52.1, 0.05)}.items():
        np.testing.assert_allclose(bars[y], [estimate - 1.959964 * se, estimate + 1.959964 * se],
                                   rtol=1e-5)
    assert labels[0] == (f"quadratic\nP = {table.loc['quadratic', 'probability']:.3g} "
                         f"[{table.loc['quadratic', 'probability_low']:.3g}, "
                         f"{table.loc['quadratic', 'probability_high']:.3g}]")
    assert "BF" not in labels[0]
    assert f"BF(best : this) = {table.loc['linear', 'bayes_factor']:.3g}" in labels[2]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "unreliable estimate (see warning column)"]


# --------------------------------------------------------------------------- bad input


def test_plots_refuse_what_is_not_an_ais_result():
    import arviz as az

    posterior_only = az.from_dict({"posterior": {"mu": np.zeros((2, 10))}})
    with pytest.raises(pa.AnnealingError, match=r"plot_log_weights needs the group 'particles'"
                                                r".*groups \['posterior'\]"):
        pa.plots.plot_log_weights(posterior_only)
    with pytest.raises(pa.AnnealingError, match="plot_annealing needs the DataTree.*got dict"):
        pa.plots.plot_annealing({})
    with pytest.raises(pa.AnnealingError, match=r"plot_convergence needs a non-empty list"):
        pa.plots.plot_convergence([])
    with pytest.raises(pa.AnnealingError, match=r"plot_convergence \(run 0\) needs the group"):
        pa.plots.plot_convergence([posterior_only])
    with pytest.raises(pa.AnnealingError, match=r"plot_compare needs the DataFrame returned by "
                                                r"pymc_anneal.compare.*got dict"):
        pa.plots.plot_compare({})


def test_plots_check_their_options(idata):
    _, axes = plt.subplots(2)
    with pytest.raises(pa.AnnealingError, match="plot_annealing needs 3 axes, got 2"):
        pa.plots.plot_annealing(idata, axes=axes)
    with pytest.raises(pa.AnnealingError, match=r"xscale must be one of \['linear', 'log'\]"):
        pa.plots.plot_running_log_z(idata, xscale="symlog")
    with pytest.raises(pa.AnnealingError, match="window must be a positive number of nats"):
        pa.plots.plot_log_weights(idata, window=0)


def test_plots_draw_on_given_axes(idata):
    _, (left, right) = plt.subplots(1, 2)
    assert pa.plots.plot_log_weights(idata, ax=right) is right
    assert len(left.get_lines()) == 0 and len(right.get_lines()) == 4  # 3 chains, log Z


# --------------------------------------------------------------------------- arviz-plots backends

BACKENDS = [pytest.param(name, marks=pytest.mark.skipif(
    name != "matplotlib" and not _installed(name), reason=f"{name} is not installed"))
    for name in ("matplotlib", "bokeh", "plotly")]


def _fake_sandwich() -> xr.DataTree:
    """The sample_stats of pymc_anneal.sandwich at two numbers of temperatures."""
    return xr.DataTree.from_dict({"sample_stats": xr.Dataset({
        "num_steps": ("k", [10, 1000]), "ais": ("k", [-5.0, -5.1]), "ais_se": ("k", [0.1, 0.02]),
        "raise": ("k", [-5.6, -5.15]), "raise_se": ("k", [0.1, 0.02])})})


def _write(collection, tmp_path, name: str) -> None:
    """Save a PlotCollection the way its backend saves without a browser: PNG for
    matplotlib, a standalone HTML page for bokeh and plotly."""
    path = tmp_path / (f"{name}.png" if collection.backend == "matplotlib" else f"{name}.html")
    collection.savefig(path)
    assert path.stat().st_size > 1000


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_plot_draws_with_each_backend(idata, convergence_runs, backend, tmp_path):
    from arviz_plots import PlotCollection

    table = pa.compare({"a": pa.EvidenceEstimate(-52.1, 0.05, 0.04, 900.0, 1000),
                        "b": pa.EvidenceEstimate(-48.0, 0.30, 0.10, 20.0, 1000)})
    plots = {
        "log_weights": (pa.plots.plot_log_weights(idata, backend=backend), 1),
        "annealing": (pa.plots.plot_annealing(idata, backend=backend), 3),
        "running_log_z": (pa.plots.plot_running_log_z(idata, xscale="log", backend=backend), 2),
        "convergence": (pa.plots.plot_convergence(convergence_runs[:2], backend=backend,
                                                  reference=TARGET.log_evidence), 1),
        "compare": (pa.plots.plot_compare(table, backend=backend), 1),
        "sandwich": (pa.plots.plot_sandwich(_fake_sandwich(), reference=-5.12,
                                            backend=backend), 1),
    }
    for name, (collection, num_plots) in plots.items():
        assert isinstance(collection, PlotCollection) and collection.backend == backend
        assert collection.viz["plot"].size == num_plots
        _write(collection, tmp_path, name)


def test_plots_draw_the_same_data_on_each_backend(idata):
    """The chain lines of plot_running_log_z hold the same values on the three backends."""
    log_z = idata["annealing_stats"]["log_marginal_likelihood"].values
    lines = {"matplotlib": lambda plot: [line.get_ydata() for line in plot.get_lines()],
             "bokeh": lambda plot: [r.data_source.data["y"] for r in plot.renderers
                                    if "y" in r.data_source.data],
             # plotly keeps all traces on the figure; the top plot's are on the axis "y"
             "plotly": lambda plot: [trace.y for trace in plot.figure.data
                                     if trace.yaxis in (None, "y")]}
    for backend, read in lines.items():
        if backend != "matplotlib" and not _installed(backend):
            continue
        top = pa.plots.plot_running_log_z(idata, backend=backend).viz["plot"].values[0]
        drawn = read(top)
        for c in range(log_z.shape[0]):
            np.testing.assert_allclose(np.asarray(drawn[c], dtype=float), log_z[c])


def test_foreign_axes_need_the_matplotlib_backend(idata):
    _, ax = plt.subplots()
    with pytest.raises(pa.AnnealingError, match=r"draws on the matplotlib Axes it is given, "
                                                r"but got backend='bokeh'"):
        pa.plots.plot_log_weights(idata, ax=ax, backend="bokeh")
    with pytest.raises(pa.AnnealingError, match=r"backend must be one of \['matplotlib', "
                                                r"'bokeh', 'plotly'\]"):
        pa.plots.plot_annealing(idata, backend="seaborn")


# --------------------------------------------------------------------------- ArviZ's own plots


@pytest.mark.parametrize("backend", BACKENDS)
def test_arviz_posterior_plots_read_the_result(idata, backend, tmp_path):
    """The posterior group is an ordinary ArviZ posterior: its plots draw it."""
    import arviz as az

    for name, plot in {"dist": az.plot_dist, "forest": az.plot_forest,
                       "trace_dist": az.plot_trace_dist, "rank": az.plot_rank}.items():
        _write(plot(idata, backend=backend), tmp_path, name)


def test_arviz_loo_plots_read_the_result(model, idata, tmp_path):
    """With the log_likelihood group, LOO and its plots work on the posterior draws."""
    import arviz as az

    from pymc_anneal.pymc.arviz_groups import add_arviz_groups

    extended = add_arviz_groups(idata, model, log_likelihood=True)
    loo = az.loo(extended, pointwise=True)
    assert loo.pareto_k.shape == (TARGET.params["y"].size,)
    _write(az.plot_khat(loo, backend="matplotlib"), tmp_path, "khat")
    table = az.compare({"a": extended, "b": extended})
    _write(az.plot_compare(table, backend="matplotlib"), tmp_path, "loo_compare")
