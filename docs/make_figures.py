"""Redraw the figures of the user guide (docs/_static/figures/*.png).

The docs build does not run samplers (it would take minutes); these figures are drawn once
by this script and committed. They show the 13-parameter regression of the diabetes example
(``examples/diabetes_comparison.py``, all ten predictors) annealed with too few (100) and
with enough (5000) temperatures, and the comparison of that example's four models at 2000
temperatures (a fixed K, the default before num_steps="auto"). JAX is used to keep
compilation short; the numbers are what the default backend gives, up to Monte Carlo noise.

Run:  python docs/make_figures.py      (a few minutes on 2 cores)
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

import pymc_anneal as pa  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "_static" / "figures"
sys.path.insert(0, str(ROOT / "examples"))

import diabetes_comparison  # noqa: E402

SETTINGS = dict(draws=500, chains=4, backend="jax", progressbar=False)


def _save(fig, name: str) -> None:
    fig.savefig(FIGURES / f"{name}.png", dpi=90)
    plt.close(fig)
    print("wrote", FIGURES / f"{name}.png")


def main() -> None:
    FIGURES.mkdir(parents=True, exist_ok=True)
    warnings.filterwarnings("ignore", message="Skipping Check")  # JAX skips PyMC's checks
    x, y = diabetes_comparison.load_data()
    models = {name: diabetes_comparison.build_model(x, y, predictors)
              for name, predictors in diabetes_comparison.PREDICTOR_SETS.items()}
    full = models["all ten"]

    with warnings.catch_warnings():  # the poor runs are meant to be poor
        warnings.simplefilter("ignore", pa.AnnealingWarning)
        poor = pa.sample_ais(model=full, num_steps=100, random_seed=1, **SETTINGS)
        runs = [pa.sample_ais(model=full, num_steps=k, random_seed=seed, **SETTINGS)
                for k in (100, 300, 1000, 3000) for seed in (1, 2)]
        # the comparison at a fixed 2000 temperatures, where the 13-parameter model is
        # flagged
        results = {name: pa.sample_ais(model=model, num_steps=2000, random_seed=1, **SETTINGS)
                   for name, model in models.items()}
    good = pa.sample_ais(model=full, num_steps=5000, random_seed=1, **SETTINGS)
    print("poor:", pa.log_evidence(poor), "\ngood:", pa.log_evidence(good))

    _save(pa.plots.plot_log_weights(poor).figure, "log_weights_poor")
    _save(pa.plots.plot_log_weights(good).figure, "log_weights_good")
    _save(pa.plots.plot_annealing(poor)[0].figure, "annealing_poor")
    _save(pa.plots.plot_running_log_z(poor)[0].figure, "running_log_z_poor")
    _save(pa.plots.plot_convergence(runs).figure, "convergence")
    table = pa.compare(results)
    print(table.to_string())
    _save(pa.plots.plot_compare(table).figure, "compare")


if __name__ == "__main__":
    main()
