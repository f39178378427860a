"""AIS and PyMC's sequential Monte Carlo on the same model, against the exact evidence.

``pm.sample_smc`` also estimates the log marginal likelihood, as a by-product of its
tempering. Here both methods estimate the evidence of one model whose evidence is known in
closed form: a conjugate Normal-Inverse-Gamma regression of diabetes progression on body-mass
index and the serum measurement s5 (the diabetes data that ship with scikit-learn; predictors
and response standardized),

    sigma2 ~ InverseGamma(2, 1),  coef | sigma2 ~ Normal(0, sigma2 I),
    y | coef, sigma2 ~ Normal(X coef, sigma2 I),

with X the intercept, bmi and s5 columns. Each method reports an estimate with an error
bar: AIS its pooled standard error, SMC the spread of its independent chains (SMC has no
per-run standard error). The wall times include each method's first-call compilation.

Run:  python examples/smc_comparison.py  [--fast]

References: Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11.
Del Moral, P., Doucet, A. & Jasra, A. (2006). Sequential Monte Carlo samplers. *JRSS B* 68.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pymc as pm
from scipy.special import gammaln, logsumexp
from sklearn.datasets import load_diabetes

import pymc_anneal as pa

A0, B0, PRIOR_SCALE = 2.0, 1.0, 1.0  # sigma2 ~ InverseGamma(A0, B0); coef ~ N(0, sigma2 * 1)


def load_data() -> tuple[np.ndarray, np.ndarray]:
    data = load_diabetes(scaled=False)
    x = data.data[:, [data.feature_names.index("bmi"), data.feature_names.index("s5")]]
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    y = (data.target - data.target.mean()) / data.target.std()
    return np.column_stack([np.ones(len(y)), x]), y


def exact_log_evidence(x: np.ndarray, y: np.ndarray) -> float:
    """The Normal-Inverse-Gamma evidence (y is multivariate Student-t)."""
    n, d = x.shape
    precision_n = np.eye(d) / PRIOR_SCALE + x.T @ x
    mean_n = np.linalg.solve(precision_n, x.T @ y)
    a_n = A0 + n / 2
    b_n = B0 + (y @ y - mean_n @ precision_n @ mean_n) / 2
    return float(-n / 2 * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(precision_n)[1]
                 - d / 2 * np.log(PRIOR_SCALE) + A0 * np.log(B0) - a_n * np.log(b_n)
                 + gammaln(a_n) - gammaln(A0))


def build_model(x: np.ndarray, y: np.ndarray) -> pm.Model:
    with pm.Model() as model:
        sigma2 = pm.InverseGamma("sigma2", A0, B0)
        coef = pm.Normal("coef", 0.0, pm.math.sqrt(sigma2 * PRIOR_SCALE), shape=x.shape[1])
        pm.Normal("y", pm.math.dot(x, coef), pm.math.sqrt(sigma2), observed=y)
    return model


def smc_log_evidence(idata) -> tuple[float, float]:
    """Pooled SMC estimate and the chains' spread (sd / sqrt(chains)).

    PyMC stores ``log_marginal_likelihood`` per chain and stage, NaN but at the last stage.
    """
    values = np.asarray(idata["sample_stats"]["log_marginal_likelihood"].values, dtype=object)
    per_chain = []
    for row in values.reshape(values.shape[0], -1):
        stages = np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in row])
        per_chain.append(stages[np.isfinite(stages)][-1])
    per_chain = np.asarray(per_chain)
    pooled = logsumexp(per_chain) - np.log(per_chain.size)
    return float(pooled), float(per_chain.std(ddof=1) / np.sqrt(per_chain.size))


def main(fast: bool = False) -> dict:
    x, y = load_data()
    exact = exact_log_evidence(x, y)
    model = build_model(x, y)
    ais_settings = dict(draws=300, chains=2, num_steps=1000) if fast else {}
    smc_settings = dict(draws=500, chains=2) if fast else dict(draws=2000, chains=4)

    start = time.perf_counter()
    with model:
        idata = pa.sample_ais(random_seed=3, progressbar=not fast, **ais_settings)
    ais_time = time.perf_counter() - start
    ais = pa.log_evidence(idata)

    start = time.perf_counter()
    with model:
        smc_idata = pm.sample_smc(random_seed=3, cores=1, progressbar=not fast,
                                  compute_convergence_checks=False, **smc_settings)
    smc_time = time.perf_counter() - start
    smc, smc_spread = smc_log_evidence(smc_idata)

    print(f"exact            log p(y) = {exact:.3f}")
    print(f"pa.sample_ais    log p(y) = {ais.log_evidence:.3f} ± {ais.standard_error:.3f}"
          f"  (chains agree to ± {ais.chain_sd:.3f}; error {ais.log_evidence - exact:+.3f};"
          f" {ais_time:.1f} s)")
    print(f"pm.sample_smc    log p(y) = {smc:.3f} ± {smc_spread:.3f} (chain spread)"
          f"  (error {smc - exact:+.3f}; {smc_time:.1f} s)")
    return {"exact": exact, "ais": ais, "smc": smc, "smc_spread": smc_spread,
            "ais_seconds": ais_time, "smc_seconds": smc_time}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="small settings, for CI")
    main(fast=parser.parse_args().fast)
