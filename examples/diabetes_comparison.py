"""Which predictors of diabetes progression does the evidence favour?

The diabetes data of Efron et al. (2004) ship with scikit-learn: for 442 patients, ten
baseline measurements (age, sex, body-mass index ``bmi``, mean blood pressure ``bp`` and six
blood serum measurements ``s1`` to ``s6``) and a measure of disease progression one year
later. We compare four linear regressions of the (standardized) progression on different
sets of (standardized) predictors, each with the same weakly informative priors,

    intercept ~ Normal(0, 1),  coefficients ~ Normal(0, 1),  sigma ~ HalfNormal(1),

by their evidence p(y | model), estimated with annealed importance sampling, and tabulate
the Bayes factors and posterior model probabilities with :func:`pymc_anneal.compare`.
The evidence rewards fit and penalizes every coefficient the data do not need (Occam's
razor): three well-chosen predictors beat all ten. The model with all ten predictors has
13 parameters and needs several times the temperatures of the smaller ones; the default
``num_steps="auto"`` measures that and sizes each run (see the user guide, "Choosing the
number of temperatures").

Run:  python examples/diabetes_comparison.py  [--fast] [--plot comparison.png]

References: Efron, B., Hastie, T., Johnstone, I. & Tibshirani, R. (2004). Least angle
regression. *Annals of Statistics* 32(2), 407-499. Kass, R. E. & Raftery, A. E. (1995).
Bayes factors. *JASA* 90(430), 773-795.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import pymc as pm
from sklearn.datasets import load_diabetes

import pymc_anneal as pa

PREDICTOR_SETS = {
    "intercept only": [],
    "bmi + s5": ["bmi", "s5"],
    "bmi + bp + s5": ["bmi", "bp", "s5"],
    "all ten": ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"],
}


def load_data() -> tuple[pd.DataFrame, np.ndarray]:
    """Standardized predictors (a DataFrame) and standardized response."""
    data = load_diabetes(as_frame=True, scaled=False)
    x = (data.data - data.data.mean()) / data.data.std(ddof=0)
    y = (data.target - data.target.mean()) / data.target.std(ddof=0)
    return x, y.to_numpy()


def build_model(x: pd.DataFrame, y: np.ndarray, predictors: list[str]) -> pm.Model:
    with pm.Model(coords={"predictor": predictors}) as model:
        intercept = pm.Normal("intercept", 0.0, 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        mu = intercept
        if predictors:
            coef = pm.Normal("coef", 0.0, 1.0, dims="predictor")
            mu = intercept + pm.math.dot(x[predictors].to_numpy(), coef)
        pm.Normal("y", mu, sigma, observed=y)
    return model


def main(fast: bool = False, plot: str | None = None) -> pd.DataFrame:
    x, y = load_data()
    # num_steps="auto" (the default) gives each model the temperatures it needs: the
    # 13-parameter model gets several times as many as the intercept-only one
    settings = dict(draws=300, chains=2) if fast else {}
    results = {}
    for name, predictors in PREDICTOR_SETS.items():
        with build_model(x, y, predictors):
            results[name] = pa.sample_ais(random_seed=2004, progressbar=not fast, **settings)
        est = pa.log_evidence(results[name])
        print(f"{name:>15}: log p(y) = {est.log_evidence:9.3f} ± {est.standard_error:.3f}"
              f"  (chains agree to ± {est.chain_sd:.3f}; ESS {est.ess:.0f} of "
              f"{est.num_particles})")
    table = pa.compare(results)
    formats = {"log_evidence": "{:.3f}", "se": "{:.3f}", "log_evidence_diff": "{:.3f}",
               "dse": "{:.3f}", "bayes_factor": "{:.3g}", "probability": "{:.3g}"}
    columns = [*formats, "strength", "warning"]
    print(table[columns].to_string(formatters={k: v.format for k, v in formats.items()}))
    best, runner_up = table.index[:2]
    bf = pa.bayes_factor(results[best], results[runner_up])
    print(f"\nBest: {best}. Bayes factor against {runner_up}: {bf.bayes_factor:.3g} "
          f"(95% interval {bf.lower:.3g} to {bf.upper:.3g}; {bf.strength}).")
    if plot:
        ax = pa.plots.plot_compare(table)
        ax.figure.savefig(plot, bbox_inches="tight")
        print(f"comparison plot written to {plot}")
    return table


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="small settings, for CI")
    parser.add_argument("--plot", metavar="FILE", help="save the comparison plot to FILE")
    args = parser.parse_args()
    main(fast=args.fast, plot=args.plot)
