"""Small seeded runs of every result kind, and the layout of their DataTrees (issue 24).

``python -m tests.layout_cases`` writes ``tests/data/layouts.json``: for each result kind
(``sample_ais``, ``ais``, ``batched_ais``, ``reverse_ais`` plain, with a subsample and an AIS
``log_z``, and on a deep Boltzmann machine, ``sandwich``, ``bdmc``, ``bridge_sampling``) the groups, each
variable's dims, dtype and shape, the coordinates, and the attributes (values too, except
``versions`` and ``timings``, which change from machine to machine). ``tests/test_io.py``
checks that :mod:`pymc_anneal.io` still writes exactly that layout.
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np

DATA = pathlib.Path(__file__).parent / "data" / "layouts.json"
BACKEND = "numba"
VOLATILE = ("versions", "timings", "created_at", "model_fingerprint",
            "log_marginal_likelihood", "log_marginal_likelihood_se", "ess", "pareto_k", "rhat",
            "chain_p_value", "proposal_ess")
"""Attributes whose values depend on the machine or the library versions (the fingerprint
digests PyTensor's printed graph; a bridge_sampling result's estimates go through BLAS and
``arviz_stats``' ESS, whose last bits may differ between machines): only their presence is
recorded."""


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _attrs(attrs) -> dict:
    return {k: ("<present>" if k in VOLATILE else _jsonable(v)) for k, v in sorted(attrs.items())}


def layout(tree) -> dict:
    """The groups, variables (dims, dtype, shape), coordinates and attributes of ``tree``."""
    out = {}
    for node in tree.subtree:
        ds = node.to_dataset()
        out[node.path] = {
            "variables": {name: {"dims": list(v.dims), "dtype": str(v.dtype),
                                 "shape": list(v.shape)} for name, v in sorted(ds.data_vars.items())},
            "coords": {name: {"dims": list(c.dims), "dtype": str(c.dtype),
                              "shape": list(c.shape)} for name, c in sorted(ds.coords.items())},
            "attrs": _attrs(node.attrs),
        }
    return out


def _rbm(seed=3):
    from pymc_anneal.energy import BernoulliRBM

    rng = np.random.default_rng(seed)
    return BernoulliRBM(rng.normal(0, 0.5, (6, 4)), rng.normal(0, 0.2, 6), np.zeros(4))


def _test_points(n=4, seed=5):
    return (np.random.default_rng(seed).random((n, 6)) < 0.5).astype(float)


def _model():
    import pymc as pm

    with pm.Model(coords={"obs": np.arange(5)}) as model:
        mu = pm.Normal("mu", 0.0, 1.5)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=np.array([0.3, -0.2, 0.5, 1.1, 0.4]), dims="obs")
    return model


def run_case(name: str):
    """The DataTree of the case ``name`` (see :data:`CASES`)."""
    import pymc_anneal as pa
    from pymc_anneal.energy import DeepBoltzmannMachine, LinearGenerative

    quiet = {"progressbar": False, "backend": BACKEND}
    if name == "sample_ais":
        return pa.sample_ais(draws=20, chains=2, num_steps=10, step_size=0.3,
                             mass_matrix="identity", random_seed=11, model=_model(), **quiet)
    if name == "ais":
        return pa.ais(_rbm(), draws=20, chains=2, num_steps=10, random_seed=13, **quiet)
    if name == "batched_ais":
        rng = np.random.default_rng(0)
        model = LinearGenerative(rng.normal(size=(4, 2)), 0.5)
        return pa.batched_ais(model, model.sample(3, rng=1), draws=10, num_steps=10,
                              step_size=0.3, mass_matrix="identity", random_seed=2, **quiet)
    if name == "reverse_ais":
        return pa.reverse_ais(_rbm(), _test_points(), num_steps=10, draws=10, random_seed=1,
                              **quiet)
    if name == "reverse_ais-subsample-log_z":
        return pa.reverse_ais(_rbm(), _test_points(8), num_steps=10, draws=10, subsample=4,
                              control_variate="fitted", log_z=run_case("ais"), random_seed=4,
                              **quiet)
    if name == "reverse_ais-dbm":
        rng = np.random.default_rng(0)
        dbm = DeepBoltzmannMachine(rng.normal(0, 1, (6, 4)), rng.normal(0, 1, (4, 3)),
                                   rng.normal(0, 0.5, 6), rng.normal(0, 0.5, 4),
                                   rng.normal(0, 0.5, 3))
        return pa.reverse_ais(dbm, _test_points(), num_steps=10, draws=10, random_seed=2,
                              **quiet)
    if name == "sandwich":
        return pa.sandwich(_rbm(), _test_points(), num_steps=[2, 5], draws=10, ais_draws=20,
                           ais_chains=2, random_seed=9, **quiet)
    if name == "bdmc":
        return pa.bdmc(_model(), num_steps=[2, 5], num_mixing_steps=2, num_datasets=2,
                       draws=10, chains=2, step_size=0.3, mass_matrix="identity",
                       random_seed=7, **quiet)
    if name == "bridge_sampling":
        from tests.bridge_cases import exact_idata

        return pa.bridge_sampling(exact_idata("beta", chains=2, draws=200), _beta_model(),
                                  random_seed=5)
    raise KeyError(name)


def _beta_model():
    from tests.bridge_cases import CASES as BRIDGE_CASES

    return BRIDGE_CASES["beta"].build()


CASES = ("sample_ais", "ais", "batched_ais", "reverse_ais", "reverse_ais-subsample-log_z",
         "reverse_ais-dbm", "sandwich", "bdmc", "bridge_sampling")


def main() -> None:
    import warnings

    from pymc_anneal.exceptions import AnnealingWarning

    warnings.simplefilter("ignore", AnnealingWarning)  # tiny runs: warnings expected
    layouts = {name: layout(run_case(name)) for name in CASES}
    DATA.write_text(json.dumps(layouts, indent=1, sort_keys=True) + "\n")
    print(f"wrote {DATA}", file=sys.stderr)


if __name__ == "__main__":
    main()
