"""Seeded runs whose numbers were stored before the driver was split (issue 10).

``python -m tests.regression_cases`` writes ``tests/data/regression.json``; it was run once
on the code before the kernel and path contracts (commit b76f9cb), and
``tests/test_regression.py`` checks that the same seeds still give the same numbers.
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np

DATA = pathlib.Path(__file__).parent / "data" / "regression.json"

# cases whose arithmetic the refactor leaves unchanged: compared bit for bit
EXACT = {
    # (kernel, backend): a PyMC model with a fixed step size and mass matrix (no pilot)
    **{f"sample_ais-{k}-{b}": ("sample_ais", k, b) for k in ("hais", "hmc", "metropolis")
       for b in ("numba", "c")},
    "ais-rbm-numba": ("rbm", "gibbs", "numba"),
    "ais-rbm-c": ("rbm", "gibbs", "c"),
    "ais-grbm-numba": ("grbm", "gibbs", "numba"),
}
# runs with the tuning pilot (whose momentum handling at band starts was corrected):
# compared within their standard errors
TUNED = {
    f"tuned-{k}": ("tuned", k, "numba") for k in ("hais", "metropolis")
}


def small_model():
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.5)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=np.array([0.3, -0.2, 0.5, 1.1, 0.4]))
    return model


def run_case(kind: str, kernel: str, backend: str) -> dict:
    import pymc_anneal as pa
    from pymc_anneal.energy import BernoulliRBM, GaussianRBM

    if kind == "sample_ais":
        idata = pa.sample_ais(draws=20, chains=2, num_steps=30, kernel=kernel, backend=backend,
                              step_size=0.3, mass_matrix="identity", progressbar=False,
                              random_seed=11, model=small_model())
    elif kind == "tuned":
        idata = pa.sample_ais(draws=200, chains=2, num_steps=100, kernel=kernel, backend=backend,
                              progressbar=False, random_seed=12, model=small_model())
    elif kind == "rbm":
        rng = np.random.default_rng(3)
        rbm = BernoulliRBM(rng.normal(0, 0.5, (6, 4)), rng.normal(0, 0.2, 6), np.zeros(4))
        idata = pa.ais(rbm, draws=20, chains=2, num_steps=30, backend=backend,
                       progressbar=False, random_seed=13)
    elif kind == "grbm":
        rng = np.random.default_rng(4)
        grbm = GaussianRBM(rng.normal(0, 0.3, (5, 3)), np.zeros(5), np.zeros(3), np.ones(5))
        moments = (np.zeros(5), np.eye(5) * 1.2)
        idata = pa.ais(grbm, draws=20, chains=2, num_steps=30, backend=backend,
                       moments=moments, progressbar=False, random_seed=14)
    else:
        raise ValueError(kind)
    stats = idata["sample_stats"]
    return {
        "log_weight": np.asarray(idata["particles"]["log_weight"]).tolist(),
        "log_marginal_likelihood": np.asarray(stats["log_marginal_likelihood"]).tolist(),
        "log_marginal_likelihood_se": np.asarray(stats["log_marginal_likelihood_se"]).tolist(),
    }


def main() -> None:
    names = sys.argv[1:] or list(EXACT) + list(TUNED)
    stored = json.loads(DATA.read_text()) if DATA.exists() else {}
    for name in names:
        stored[name] = run_case(*{**EXACT, **TUNED}[name])
        print(name, stored[name]["log_marginal_likelihood"], flush=True)
        DATA.write_text(json.dumps(stored, indent=1))


if __name__ == "__main__":
    main()
