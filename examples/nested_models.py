"""A Bayes factor between nested models, checked against its closed form.

Is there a trend? Thirty readings of an instrument whose measurement error is known
(sigma = 0.5, from its calibration) were taken at times x between 0 and 10. The null model
M0 says the readings scatter around a constant level; the alternative M1 adds a linear
trend:

    M0:  y_i ~ Normal(a, sigma),            a ~ Normal(0, 2)
    M1:  y_i ~ Normal(a + b x_i, sigma),    a ~ Normal(0, 2),  b ~ Normal(0, 0.5)

M0 is M1 with b = 0. With Gaussian priors and a known sigma, integrating the coefficients
out gives each evidence in closed form, y ~ Normal(0, sigma^2 I + X V0 X^T) with X the
model's design matrix and V0 its prior covariance, so the Bayes factor B10 = p(y | M1) /
p(y | M0) estimated by annealed importance sampling can be checked against the exact value.

Run:  python examples/nested_models.py  [--fast]

Reference: Kass, R. E. & Raftery, A. E. (1995). Bayes factors. *JASA* 90(430), 773-795.
"""

from __future__ import annotations

import argparse

import numpy as np
import pymc as pm
from scipy import stats

import pymc_anneal as pa

SIGMA = 0.5
PRIOR_SD = {"a": 2.0, "b": 0.5}


def make_data(seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0.0, 10.0, 30))
    y = 1.0 + 0.06 * x + rng.normal(0.0, SIGMA, x.size)  # a weak trend
    return x, y


def design(x: np.ndarray, trend: bool) -> tuple[np.ndarray, np.ndarray]:
    """Design matrix and prior standard deviations of M1 (trend) or M0."""
    columns = [np.ones_like(x), x] if trend else [np.ones_like(x)]
    sds = [PRIOR_SD["a"], PRIOR_SD["b"]] if trend else [PRIOR_SD["a"]]
    return np.column_stack(columns), np.array(sds)


def exact_log_evidence(x: np.ndarray, y: np.ndarray, trend: bool) -> float:
    """log p(y) = log Normal(y; 0, sigma^2 I + X V0 X^T)."""
    design_matrix, prior_sd = design(x, trend)
    cov = SIGMA**2 * np.eye(y.size) + (design_matrix * prior_sd**2) @ design_matrix.T
    return float(stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y))


def build_model(x: np.ndarray, y: np.ndarray, trend: bool) -> pm.Model:
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, PRIOR_SD["a"])
        mu = a
        if trend:
            b = pm.Normal("b", 0.0, PRIOR_SD["b"])
            mu = a + b * x
        pm.Normal("y", mu, SIGMA, observed=y)
    return model


def main(fast: bool = False) -> dict:
    x, y = make_data()
    settings = dict(draws=300, chains=2, num_steps=500) if fast else {}
    idatas = {}
    for name, trend in (("M0", False), ("M1", True)):
        with build_model(x, y, trend):
            idatas[name] = pa.sample_ais(random_seed=11, progressbar=not fast, **settings)
    exact = exact_log_evidence(x, y, True) - exact_log_evidence(x, y, False)
    bf = pa.bayes_factor(idatas["M1"], idatas["M0"])
    z_score = (bf.log_bayes_factor - exact) / bf.standard_error
    print(f"log B10 by AIS   = {bf.log_bayes_factor:.4f} ± {bf.standard_error:.4f}")
    print(f"log B10 exact    = {exact:.4f}   (error {z_score:+.2f} standard errors)")
    print(f"B10 = {bf.bayes_factor:.3f}, 95% interval {bf.lower:.3f} to {bf.upper:.3f} "
          f"(exact {np.exp(exact):.3f}): {bf.strength} evidence for "
          f"{'the trend' if bf.log_bayes_factor > 0 else 'no trend'}")
    return {"bayes_factor": bf, "exact_log_bayes_factor": exact, "idatas": idatas}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="small settings, for CI")
    main(fast=parser.parse_args().fast)
