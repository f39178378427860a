#!/usr/bin/env python
"""Measure the constant behind ``SUM_BUDGET`` (``pymc_anneal/pymc/discrete.py``).

On PyMC's coal-mining change point (``tests/pymc/test_discrete_hoist.py``), with JAX,
N particles, value and gradient of the path's log densities per call (what one HAIS step
evaluates with one leapfrog step, the default):

- ``t_elem``: the per-particle time of one summed element, the slope between the hoisted
  sum and the plain one (``HOIST = False``) against their ``DiscreteSums.cost``;
- ``t_var``: the per-particle cost of one annealed discrete coordinate per step in the
  compound kernel (support > 32: one Metropolis evaluation of the log densities plus one
  recomputation with gradients), on the ``discrete="anneal"`` path.

The break-even cost is ``t_var / t_elem`` elements. Run with BLAS capped:
``OMP_NUM_THREADS=1 python benchmarks/measure_sum_budget.py``.
"""

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pymc_anneal.pymc import adapter, discrete
from tests.pymc.test_discrete_hoist import coal_model

N = 1000


def timed(fn, x, repeats=30):
    fn(x)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(x)
        np.asarray(out[0])
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) / N


def functions(mp):
    path = mp.path
    x = pt.tensor("x", shape=(N, path.num_dims), dtype="float64")
    lb, lr = path.build_log_densities(x)
    total = (lb + lr).sum()
    grad = pytensor.grad(total, x)
    value_grad = pytensor.function([x], [lb + lr, grad], mode="JAX")
    value = pytensor.function([x], [lb + lr], mode="JAX")
    start = path.sample_base(np.random.default_rng(0), N)
    return value, value_grad, start


def main():
    rows = {}
    years = np.arange(1851, 1963)
    for label, hoist, route, model in (
            ("hoisted", True, "sum", coal_model()), ("plain", False, "sum", coal_model()),
            ("annealed", True, "anneal", coal_model()), ("pm.Data", True, "sum",
                                                         coal_model(years))):
        discrete.HOIST = hoist
        mp = adapter.model_path(model, route)
        value, value_grad, start = functions(mp)
        if mp.sums is not None:  # the cost of the graph this path evaluates
            graphs = mp.path.build_log_densities(mp.flat_input)
            mp = dataclasses.replace(mp, sum_cost=mp.sums.cost(
                list(graphs), [mp.flat_input], [start[0]]))
        rows[label] = (mp.sum_cost, timed(value, start), timed(value_grad, start))
        print(f"{label:9s} cost {mp.sum_cost}  value {rows[label][1] * 1e9:8.1f} ns  "
              f"value+grad {rows[label][2] * 1e9:8.1f} ns per particle")
    discrete.HOIST = True
    (s_h, _, g_h), (s_p, _, g_p) = rows["hoisted"], rows["plain"]
    t_elem = (g_p - g_h) / (s_p - s_h)
    _, v_a, g_a = rows["annealed"]
    t_var = v_a + g_a
    print(f"t_elem {t_elem * 1e9:.3f} ns per element (value+grad); t_var {t_var * 1e9:.1f} ns; "
          f"break-even {t_var / t_elem:,.0f} elements")


if __name__ == "__main__":
    main()
