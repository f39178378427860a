#!/usr/bin/env python
"""The measurement behind not depending on pymc-extras' ``marginalize`` (issue 15).

pymc-extras 0.15.1 pins ``pymc<6.4`` and ``pytensor<3.4``. Installed without its
dependencies next to PyMC 6.4, does it marginalize the three models of
``tests/discrete_models.py``, and does its log density agree with ours (the summed path's
log prior plus log-likelihood, at the same continuous point)?

Run:  pip install --no-deps --target /tmp/px pymc-extras==0.15.1
      python benchmarks/measure_pymc_extras.py [/tmp/px]
"""

from __future__ import annotations

import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    sys.path.insert(0, argv[0] if argv else "/tmp/px")
    sys.path.insert(0, str(ROOT))
    import numpy as np
    import pytensor
    import pytensor.tensor as pt

    from pymc_anneal.pymc.adapter import model_path
    from tests import discrete_models

    t0 = time.perf_counter()
    try:
        import pymc_extras as pmx
    except Exception as err:  # noqa: BLE001 - the measurement is whether it works at all
        print("import FAILED", type(err).__name__, str(err)[:300])
        return 1
    print(f"pymc_extras {pmx.__version__}: import {time.perf_counter() - t0:.2f} s")
    cases = [("change_point", discrete_models.change_point(), ["switch"]),
             ("label_mixture", discrete_models.label_mixture(), ["z"]),
             ("latent_count", discrete_models.latent_count(), ["N"])]
    for name, case, variables in cases:
        model = case.build()
        try:
            t0 = time.perf_counter()
            marginal = pmx.marginalize(model, variables)
            point = marginal.initial_point()
            theirs = marginal.compile_logp()(point)
            seconds = time.perf_counter() - t0
        except Exception as err:  # noqa: BLE001
            print(f"{name}: refused: {type(err).__name__}: {str(err)[:200]}")
            continue
        t0 = time.perf_counter()
        mp = model_path(model, "sum")
        ours_seconds = time.perf_counter() - t0
        x = np.concatenate([np.ravel(point[n]) for n in mp.value_names if n in point])
        positions = pt.matrix("positions")
        fn = pytensor.function([positions], sum(mp.path.build_log_densities(positions)),
                               mode="FAST_COMPILE")
        ours = float(fn(x[None])[0])
        print(f"{name}: marginalized in {seconds:.2f} s (ours: path in {ours_seconds:.2f} s); "
              f"log density {theirs:.10f}, ours {ours:.10f}, difference {theirs - ours:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
