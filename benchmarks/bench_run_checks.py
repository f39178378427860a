#!/usr/bin/env python
"""Benchmark: what the after-run weight checks of issue 23 find and what they cost.

``pymc_anneal.pymc.sampling.check_run_weights`` evaluates the log densities again at the
particles with zero weight (to tell a NaN, a model undefined there, from a -inf stated on
purpose). A run without zero weights pays nothing; otherwise one Python-mode evaluation.
The script times :func:`~pymc_anneal.pymc.sampling.nan_log_density` on four models' paths,
4000 particles of which half have zero weight (fresh compile each time, the worst case),
then runs the issue's NaN reproducer through ``sample_ais`` and prints the warning's count
against the number of negative prior draws among the particles (which it must equal).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import re  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
import pytensor.tensor as pt  # noqa: E402

import pymc_anneal as pa  # noqa: E402
from pymc_anneal.pymc.adapter import model_path  # noqa: E402
from pymc_anneal.pymc.sampling import nan_log_density  # noqa: E402


def models() -> dict[str, pm.Model]:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 10))
    y = x @ rng.normal(size=10) + rng.normal(size=200)
    out = {}
    with pm.Model() as out["sqrt mean (1 parameter, NaN for th < 0)"]:
        th = pm.Normal("th", 0, 1)
        pm.Normal("y", pt.sqrt(th), 1, observed=[0.3, 0.5])
    with pm.Model() as out["hierarchical Student-t regression (12 parameters, n = 200)"]:
        s = pm.HalfNormal("s", 1)
        b = pm.Normal("b", 0, s, shape=10)
        sig = pm.HalfNormal("sig", 1)
        pm.StudentT("y", nu=4, mu=pt.dot(x, b), sigma=sig, observed=y)
    with pm.Model() as out["mixture with 40 summed labels"]:
        mu = pm.Normal("mu", 0, 3, shape=2)
        z = pm.Bernoulli("z", 0.5, shape=40)
        pm.Normal("y", mu[z], 1, observed=rng.normal(size=40))
    with pm.Model() as out["narrow uniform likelihood (-inf on purpose)"]:
        mu = pm.Normal("mu", 0, 1)
        pm.Uniform("y", mu - 0.01, mu + 0.01, observed=[0.3])
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    print("nan_log_density on 4000 particles, half with zero weight:")
    for name, model in models().items():
        path = model_path(model).path
        positions = path.sample_base(rng, 4000).reshape(4, 1000, -1)
        log_w = np.where(rng.random((4, 1000)) < 0.5, -np.inf, 0.0)
        t0 = time.perf_counter()
        nan = nan_log_density(path, positions, log_w)
        print(f"  {name}: {time.perf_counter() - t0:.2f} s, {int(nan.sum())} at NaN points")
    with pm.Model() as model:
        th = pm.Normal("th", 0, 1)
        pm.Normal("y", pt.sqrt(th), 1, observed=[0.3, 0.5])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        idata = pa.sample_ais(model=model, draws=1000, chains=4, num_steps=100, random_seed=23,
                              progressbar=False)
    message = next(str(w.message) for w in record if "NaN" in str(w.message))
    count = int(re.search(r"at (\d+) of", message).group(1))
    negative = int(np.sum(idata["particles"]["th"].values < 0))
    est = pa.log_evidence(idata)
    print(f"sqrt reproducer, 4 x 1000 particles: log Z {est.log_evidence:.3f} +/- "
          f"{est.standard_error:.3f}; warned about {count} particles at NaN points "
          f"({count / 4000:.1%}); negative prior draws among the particles: {negative}")


if __name__ == "__main__":
    main()
