"""The catalogue of bad inputs: one table per public function, one row per refusal.

Each row is ``(id, call, match)``: calling ``call(t)`` (``t`` holds small ready-made
models) must raise :class:`~pymc_anneal.AnnealingError` whose message matches ``match``,
before any annealing loop is compiled (the autouse fixture :func:`no_compile` makes reaching
the compile a failure, so the whole file runs in seconds). A row marked ``xfail`` is a known
gap, with the module that has to close it; ``strict=True`` makes it fail once it is closed,
so that the mark comes off.

Read a table to see what a function refuses and how it says so. Unit tests of the shared
checks behind the messages are in ``tests/test_validation.py``; other tables of bad
arguments live beside the function's own tests (``tests/pymc/test_sample_ais.py``,
``tests/test_compare.py``, ``tests/energy/test_*.py``); inputs that are refused or warned
about only after a run (a NaN likelihood, a chain with only zero weights) are tested in
``tests/pymc/test_run_checks.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

import arviz_base as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_anneal as pa
import pymc_anneal.driver.run
from pymc_anneal.energy import (
    MCRBM,
    BernoulliRBM,
    BilinearGenerative,
    DeepBoltzmannMachine,
    FunctionEnergy,
    GaussianRBM,
    LaplacePOE,
    LinearGenerative,
    StudentTPOE,
)

FAST = dict(draws=20, chains=1, num_steps=5, progressbar=False)
TOO_BIG_FOR_FLOAT32 = 1e39


@dataclass(frozen=True)
class Row:
    """A bad input: ``call(t)`` must raise ``error`` matching ``match``."""

    id: str
    call: Callable[[SimpleNamespace], object]
    match: str
    error: type[Exception] = pa.AnnealingError
    gap: str | None = None  # a known gap: what must change, and where


def table(rows: list[Row]) -> list:
    """The rows as pytest parameters, named by their ids; gaps are strict xfails."""
    assert len({r.id for r in rows}) == len(rows), "duplicate row ids"
    return [pytest.param(r, id=r.id, marks=() if r.gap is None else
                         pytest.mark.xfail(strict=True, reason=r.gap)) for r in rows]


def check(row: Row, t: SimpleNamespace) -> None:
    with pytest.raises(row.error, match=row.match):
        row.call(t)


@pytest.fixture(autouse=True)
def no_compile(monkeypatch):
    """Reaching the annealing loop's compile fails the row: every refusal comes first."""

    def refuse(*args, **kwargs):
        raise AssertionError("the bad input reached the annealing loop's compile")

    monkeypatch.setattr(pymc_anneal.driver.run, "compiled_loop", refuse)


@pytest.fixture(scope="module")
def t() -> SimpleNamespace:
    rng = np.random.default_rng(0)
    with pm.Model() as normal:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=[0.3, -0.2])
    with pm.Model() as flat:
        mu = pm.Flat("mu")
        pm.Normal("y", mu, 1.0, observed=[0.3])
    with pm.Model() as no_data:
        pm.Normal("mu", 0.0, 1.0)
    with pm.Model() as poisson:
        k = pm.Poisson("k", 3.0)
        pm.Normal("y", k, 1.0, observed=[2.0])
    with pm.Model() as potential:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=[0.3])
        pm.Potential("p", -mu**2)
    with pm.Model() as positive:
        s_ = pm.HalfNormal("s", 1.0)
        pm.Normal("y", 0.0, s_, observed=[0.3])
    with pm.Model() as all_discrete:
        z = pm.Bernoulli("z", 0.5)
        pm.Normal("y", z, 1.0, observed=[0.3])
    with pm.Model() as undefined_sum:  # sqrt(-0.5) at z = 0
        z = pm.Bernoulli("z", 0.5)
        pm.Normal("y", pt.sqrt(z - 0.5), 1.0, observed=[0.3])
    rbm = BernoulliRBM(rng.normal(0, 0.5, (6, 4)), np.zeros(6), np.zeros(4), name="rbm")
    grbm = GaussianRBM(rng.normal(0, 0.5, (3, 2)), np.zeros(3), np.zeros(2), sigma=1.0)
    estimate = pa.EvidenceEstimate(-10.0, 0.05, 0.04, 800.0, 1000)
    return SimpleNamespace(
        normal=normal, flat=flat, no_data=no_data, poisson=poisson, potential=potential,
        undefined_sum=undefined_sum, positive=positive, all_discrete=all_discrete,
        rbm=rbm, grbm=grbm, binary=(rng.random((5, 6)) < 0.5).astype(float),
        laplace=LaplacePOE(np.eye(2)),
        student_heavy=StudentTPOE(np.array([[1.0], [2.0], [0.5]]), alpha=0.3),
        student=StudentTPOE(np.eye(2), alpha=2.0),
        energy=FunctionEnergy(lambda x: -0.5 * (x**2).sum(axis=1), num_dims=2),
        linear=LinearGenerative(rng.normal(size=(3, 2)), noise_scale=0.5),
        estimate=estimate, other=estimate._replace(log_evidence=-12.0),
        posterior_only=az.from_dict({"posterior": {"mu": np.zeros((2, 10))}}),
    )


# ------------------------------------------------------------------------------ sample_ais


def sample_ais(t, **kwargs):
    return pa.sample_ais(**{"model": t.normal, **FAST, **kwargs})


SAMPLE_AIS = [
    Row("model given by name", lambda t: sample_ais(t, model="m"),
        r"model must be a pymc.Model .*got str 'm'\. Pass the model object"),
    Row("no model and no context", lambda t: pa.sample_ais(model=None, **FAST),
        r"no model given and none on the context stack"),
    Row("draws below 2", lambda t: sample_ais(t, draws=1),
        r"draws must be an integer >= 2, got 1\."),
    Row("a checkpoint that is not a path", lambda t: sample_ais(t, checkpoint=3),
        r"checkpoint must be a file path \(str or os\.PathLike\), got 3"),
    Row("draws a float", lambda t: sample_ais(t, draws=20.0),
        r"draws must be an integer >= 2, got 20\.0\."),
    Row("draws a bool", lambda t: sample_ais(t, draws=True), r"draws must be .*got True\."),
    Row("no chains", lambda t: sample_ais(t, chains=0), r"chains must be an integer >= 1, got 0"),
    Row("num_steps zero", lambda t: sample_ais(t, num_steps=0),
        r'num_steps must be an integer >= 1 or "auto", got 0'),
    Row("num_steps a word", lambda t: sample_ais(t, num_steps="many"),
        r'num_steps must be an integer >= 1 or "auto", got \'many\''),
    Row("auto steps with an array schedule",
        lambda t: sample_ais(t, num_steps="auto", schedule=np.linspace(0, 1, 5)),
        r'num_steps="auto" chooses the temperatures itself'),
    Row("dlogz with fixed steps", lambda t: sample_ais(t, dlogz=0.01),
        r"dlogz is the target error of num_steps=\"auto\"; with a fixed num_steps \(5\)"),
    Row("dlogz negative", lambda t: sample_ais(t, num_steps="auto", dlogz=-0.1),
        r"dlogz must be a positive float \(finite and > 0\), got -0\.1"),
    Row("unknown base", lambda t: sample_ais(t, base="normal"),
        r"unknown base 'normal'; must be one of \['auto', 'gaussian', 'laplace', 'prior'\]"),
    Row("unknown kernel", lambda t: sample_ais(t, kernel="nuts"), r"unknown kernel 'nuts'"),
    Row("unknown backend", lambda t: sample_ais(t, backend="cuda"), r"unknown backend 'cuda'"),
    Row("unknown schedule", lambda t: sample_ais(t, schedule="cosine"),
        r"schedule must be one of \[.*\] or an array of inverse temperatures, got 'cosine'"),
    Row("schedule not increasing",
        lambda t: sample_ais(t, schedule=[0.0, 0.5, 0.4, 1.0], num_steps=None),
        r"strictly increasing"),
    Row("schedule not from 0", lambda t: sample_ais(t, schedule=[0.1, 1.0], num_steps=None),
        r"start at exactly 0"),
    Row("unknown mass matrix", lambda t: sample_ais(t, mass_matrix="dense"),
        r"unknown mass_matrix 'dense'"),
    Row("negative step size", lambda t: sample_ais(t, step_size=-1.0),
        r"step_size must be a positive float \(finite and > 0\), got -1\.0"),
    Row("NaN step size", lambda t: sample_ais(t, step_size=np.nan),
        r"step_size must be a positive float .*got nan"),
    Row("target acceptance 1", lambda t: sample_ais(t, target_acceptance=1.0),
        r"target_acceptance must be in \(0, 1\), got 1\.0"),
    Row("momentum refresh 0", lambda t: sample_ais(t, momentum_refresh=0.0),
        r"momentum_refresh must be in \(0, 1\], got 0\.0"),
    Row("no tuning bands", lambda t: sample_ais(t, num_tuning_bands=0),
        r"num_tuning_bands must be an integer >= 1, got 0"),
    Row("one pilot particle", lambda t: sample_ais(t, num_pilot=1),
        r"num_pilot must be an integer >= 2, got 1"),
    Row("no fitting steps", lambda t: sample_ais(t, fit_steps=0),
        r"fit_steps must be an integer >= 1, got 0"),
    Row("one fitting particle", lambda t: sample_ais(t, fit_draws=1),
        r"fit_draws must be an integer >= 2, got 1"),
    Row("unknown discrete route", lambda t: sample_ais(t, discrete="marginalize"),
        r"unknown discrete 'marginalize'; must be one of \['anneal', 'auto', 'sum'\]"),
    Row("random_seed True", lambda t: sample_ais(t, random_seed=True),
        r"random_seed must be None, .*got True \(a bool is not a seed\)"),
    Row("random_seed negative", lambda t: sample_ais(t, random_seed=-1),
        r"random_seed must be None, a non-negative integer .*got -1"),
    Row("random_seed a float", lambda t: sample_ais(t, random_seed=1.5),
        r"random_seed must be None, .*got 1\.5"),
    Row("improper prior", lambda t: sample_ais(t, model=t.flat),
        r"priors of \['mu'\] are improper \(Flat/HalfFlat\).*undefined"),
    Row("no observed data", lambda t: sample_ais(t, model=t.no_data), r"no observed data"),
    Row("sum an unbounded count", lambda t: sample_ais(t, model=t.poisson, discrete="sum"),
        r"'k' .Poisson. has an unbounded support"),
    Row("all-discrete model undefined at a configuration",
        lambda t: sample_ais(t, model=t.undefined_sum),
        r"the exact log evidence of the all-discrete model is nan: its log density is NaN at "
        r"some configuration"),
    Row("annealed count with a kernel that cannot move it",
        lambda t: sample_ais(t, model=t.poisson, kernel="metropolis"),
        r"kernel must be one of \['hais', 'hmc'\] \(an HMC kernel, composed with a Metropolis "
        r"step that moves the annealed discrete variables \['k'\]\), got 'metropolis'"),
]


@pytest.mark.parametrize("row", table(SAMPLE_AIS))
def test_sample_ais(row, t):
    check(row, t)


AUTO_REFUSALS = [  # (id, arguments, match): num_steps="auto" and dlogz, at num_steps=5
    ("num_steps a name other than auto", {"num_steps": "fast"},
     r'num_steps must be an integer >= 1 or "auto", got \'fast\''),
    ("num_steps auto with a schedule array",
     {"num_steps": "auto", "schedule": np.linspace(0, 1, 5)},
     r'num_steps="auto" chooses the temperatures itself; give a schedule name'),
    ("dlogz with a fixed num_steps", {"dlogz": 0.1},
     r'dlogz is the target error of num_steps="auto"; with a fixed num_steps \(5\) it has no'),
    ("dlogz negative", {"num_steps": "auto", "dlogz": -1.0},
     r"dlogz must be a positive float \(finite and > 0\), got -1\.0"),
]


def auto_rows(call) -> list[Row]:
    """The rows of :data:`AUTO_REFUSALS` for an entry point (``call(t, **arguments)``)."""
    return [Row(name, lambda t, arguments=arguments: call(t, **arguments), match)
            for name, arguments, match in AUTO_REFUSALS]


# ------------------------------------------------------------------------------------- ais


def ais(t, model=None, **kwargs):
    return pa.ais(t.rbm if model is None else model, **{**FAST, **kwargs})


AIS = [
    Row("a PyMC model", lambda t: ais(t, t.normal),
        r"ais needs an energy model .*got Model\. For a PyMC model use pymc_anneal\.sample_ais"),
    Row("a model's name", lambda t: ais(t, "rbm"), r"ais needs an energy model .*got str"),
    Row("a model's name, with a checkpoint", lambda t: ais(t, "rbm", checkpoint="x.ckpt"),
        r"ais needs an energy model .*got str"),
    Row("draws below 2", lambda t: ais(t, draws=1), r"draws must be an integer >= 2, got 1"),
    Row("no chains", lambda t: ais(t, chains=0), r"chains must be an integer >= 1, got 0"),
    Row("num_steps zero", lambda t: ais(t, num_steps=0), r"num_steps must be an integer >= 1"),
    *auto_rows(ais),
    Row("unknown kernel", lambda t: ais(t, kernel="nuts"), r"unknown kernel 'nuts'"),
    Row("unknown backend", lambda t: ais(t, backend="gpu"), r"unknown backend 'gpu'"),
    Row("random_seed True", lambda t: ais(t, random_seed=True),
        r"random_seed must be None, .*got True"),
    Row("RBM with an HMC kernel", lambda t: ais(t, kernel="hais"),
        r"a BernoulliRBM has binary units, which only the 'gibbs' kernel can move"),
    Row("RBM with a Gaussian base", lambda t: ais(t, base="gaussian"),
        r"unknown base 'gaussian' for a BernoulliRBM; must be one of"),
    Row("RBM base rates without data", lambda t: ais(t, base="data"),
        r'base="data" needs the training data'),
    Row("empty data", lambda t: ais(t, data=np.zeros((0, 6))),
        r"data must have at least one row, got shape \(0, 6\)"),
    Row("data not binary", lambda t: ais(t, data=np.full((3, 6), 0.5)),
        r"must be binary \(0 or 1\)"),
    Row("RBM with moments", lambda t: ais(t, moments=(np.zeros(6), np.eye(6))),
        r"\['moments'\] do not apply to a BernoulliRBM"),
    Row("over-complete Student-t POE with alpha <= 1/2",
        lambda t: ais(t, t.student_heavy),
        r"StudentTPOE 'student_t_poe' has no default base: .*alpha0 = min\(1\.5, min\(alpha\)\)"
        r" = 0\.3, normalizable only for alpha0 > 1/2.*Pass base='gaussian'"),
    Row("Student-t base with data", lambda t: ais(t, t.student, data=np.zeros((3, 2))),
        r"\['data'\] do not apply to the student_t base of StudentTPOE"),
    Row("fitted Gaussian base without data", lambda t: ais(t, t.energy, base="full"),
        r"base='full' is fitted to the target: pass data"),
    Row("fitted base and a given scale",
        lambda t: ais(t, t.energy, base="full", data=np.zeros((3, 2)), base_scale=2.0),
        r"base='full' is fitted to data or moments; give either that or base_mean"),
]


@pytest.mark.parametrize("row", table(AIS))
def test_ais(row, t):
    check(row, t)


# ----------------------------------------------------------------------------- batched_ais


def batched(t, model=None, data=None, **kwargs):
    return pa.batched_ais(t.linear if model is None else model,
                          np.zeros((4, 3)) if data is None else data, **{**FAST, **kwargs})


BATCHED_AIS = [
    Row("an energy model", lambda t: batched(t, t.rbm),
        r"batched_ais needs a generative model .*got BernoulliRBM\. For the log Z of an "
        r"energy model use pymc_anneal\.ais"),
    Row("draws below 2", lambda t: batched(t, draws=1), r"draws must be an integer >= 2"),
    Row("num_steps zero", lambda t: batched(t, num_steps=0), r"num_steps must be an integer"),
    *auto_rows(batched),
    Row("unknown kernel", lambda t: batched(t, kernel="nuts"), r"unknown kernel 'nuts'"),
    Row("random_seed True", lambda t: batched(t, random_seed=True),
        r"random_seed must be None, .*got True"),
    Row("data of the wrong width", lambda t: batched(t, data=np.zeros((4, 2))),
        r"data must have shape \(N, 3\) with N >= 1 for LinearGenerative .*got shape \(4, 2\)"),
    Row("empty data", lambda t: batched(t, data=np.zeros((0, 3))),
        r"data must have shape \(N, 3\) with N >= 1 .*got shape \(0, 3\)"),
    Row("data with NaN", lambda t: batched(t, data=np.full((2, 3), np.nan)),
        r"NaN or infinite"),
]


@pytest.mark.parametrize("row", table(BATCHED_AIS))
def test_batched_ais(row, t):
    check(row, t)


# ---------------------------------------------------------------------- reverse_ais, sandwich


def reverse(t, model=None, data=None, **kwargs):
    return pa.reverse_ais(t.rbm if model is None else model,
                          t.binary if data is None else data,
                          **{"num_steps": 5, "draws": 4, "progressbar": False, **kwargs})


REVERSE_AIS = [
    Row("a PyMC model", lambda t: reverse(t, t.normal),
        r"reverse_ais needs an energy model .*got Model"),
    Row("empty data", lambda t: reverse(t, data=np.zeros((0, 6))),
        r"data must have at least one row"),
    Row("data not binary", lambda t: reverse(t, data=np.full((2, 6), 0.5)),
        r"must be binary \(0 or 1\)"),
    Row("data of the wrong width", lambda t: reverse(t, data=np.zeros((2, 5))),
        r"data must have shape \(N, 6\)"),
    Row("draws below 2", lambda t: reverse(t, draws=1), r"draws must be an integer >= 2"),
    Row("num_steps zero", lambda t: reverse(t, num_steps=0),
        r'num_steps must be an integer >= 1 or "auto", got 0'),
    *auto_rows(reverse),
    Row("no mixing steps", lambda t: reverse(t, num_mixing_steps=0),
        r"num_mixing_steps must be an integer >= 1, got 0"),
    Row("unknown control variate", lambda t: reverse(t, subsample=2, control_variate="x"),
        r"unknown control_variate 'x'; must be one of \['fitted', 'unit'\]"),
    Row("subsample larger than the data", lambda t: reverse(t, subsample=9),
        r"subsample must be at most the number of test points, 5, got 9"),
    Row("random_seed True", lambda t: reverse(t, random_seed=True),
        r"random_seed must be None, .*got True"),
    Row("a model without Gibbs conditionals",
        lambda t: reverse(t, t.laplace, data=np.zeros((2, 2))),
        r"RAISE needs a model whose hidden units can be summed out"),
]


@pytest.mark.parametrize("row", table(REVERSE_AIS))
def test_reverse_ais(row, t):
    check(row, t)


def sandwich(t, model=None, data=None, **kwargs):
    return pa.sandwich(t.rbm if model is None else model, t.binary if data is None else data,
                       **{"num_steps": 5, "draws": 4, "ais_draws": 10, "ais_chains": 1,
                          "progressbar": False, **kwargs})


SANDWICH = [
    Row("no temperatures", lambda t: sandwich(t, num_steps=[]),
        r"num_steps must be an integer >= 1 or a non-empty list of them"),
    Row("a zero among the temperatures", lambda t: sandwich(t, num_steps=[10, 0]),
        r"num_steps must be an integer >= 1, got 0"),
    *auto_rows(sandwich),
    Row("a PyMC model", lambda t: sandwich(t, t.normal),
        r"sandwich needs an energy model .*got Model"),
    Row("random_seed True", lambda t: sandwich(t, random_seed=True),
        r"random_seed must be None, .*got True"),
    Row("data not binary", lambda t: pa.sandwich(t.rbm, np.full((2, 6), 0.5)),
        r"must be binary \(0 or 1\)"),
    Row("empty data", lambda t: sandwich(t, data=np.zeros((0, 6))),
        r"data must have at least one row"),
]


@pytest.mark.parametrize("row", table(SANDWICH))
def test_sandwich(row, t):
    check(row, t)


# ------------------------------------------------------------------------------------ bdmc


def bdmc(t, **kwargs):
    return pa.bdmc(**{"model": t.normal, "num_steps": [5], "draws": 10, "chains": 1,
                      "num_mixing_steps": 1, "progressbar": False, **kwargs})


BDMC = [
    Row("model given by name", lambda t: bdmc(t, model="m"),
        r"model must be a pymc.Model .*got str 'm'"),
    Row("no temperatures", lambda t: bdmc(t, num_steps=[]),
        r"num_steps must be an integer >= 1 or a non-empty list of them"),
    Row("negative mixing steps", lambda t: bdmc(t, num_mixing_steps=-1),
        r"num_mixing_steps must be an integer >= 0, got -1"),
    Row("draws below 2", lambda t: bdmc(t, draws=1), r"draws must be an integer >= 2"),
    Row("an array schedule", lambda t: bdmc(t, schedule=np.linspace(0, 1, 4)),
        r"schedule must be a schedule's name for bdmc \(one per K\), got ndarray"),
    Row("unknown kernel", lambda t: bdmc(t, kernel="nuts"), r"unknown kernel 'nuts'"),
    Row("random_seed True", lambda t: bdmc(t, random_seed=True),
        r"random_seed must be None, .*got True"),
    Row("discrete variables", lambda t: bdmc(t, model=t.poisson),
        r"discrete free variables \['k'\], which bdmc does not handle"),
    Row("a Potential", lambda t: bdmc(t, model=t.potential),
        r"the model has Potentials \['p'\]; BDMC simulates data from the prior predictive"),
    Row("no observed data", lambda t: bdmc(t, model=t.no_data), r"no observed data"),
]


@pytest.mark.parametrize("row", table(BDMC))
def test_bdmc(row, t):
    check(row, t)


# ------------------------------------------------------------------------- bridge_sampling


def mu_draws(chains=2, draws=200, name="mu", shape=(), lp=None, **more):
    """Posterior draws of ``name`` (near the posterior of ``t.normal``), as pm.sample's."""
    values = np.random.default_rng(1).normal(0.03, 0.58, (chains, draws, *shape))
    groups = {"posterior": {name: values, **more}}
    if lp is not None:
        groups["sample_stats"] = {"lp": np.full((chains, draws), lp)}
    return az.from_dict(groups)


def bridge(t, idata=None, model=None, **kwargs):
    return pa.bridge_sampling(mu_draws() if idata is None else idata,
                              t.normal if model is None else model, **kwargs)


BRIDGE_SAMPLING = [
    Row("not a DataTree", lambda t: bridge(t, idata={"mu": np.zeros((2, 200))}),
        r"bridge_sampling needs the result of pm\.sample .*got dict\."),
    Row("no posterior group", lambda t: bridge(
        t, idata=az.from_dict({"sample_stats": {"lp": np.zeros((2, 200))}})),
        r"got a DataTree with groups \['sample_stats'\]"),
    Row("a variable missing", lambda t: bridge(t, idata=mu_draws(name="nu")),
        r"the posterior lacks the model's variables \['mu'\] \(it has \['nu'\]\)"),
    Row("a variable of another shape", lambda t: bridge(t, idata=mu_draws(shape=(3,))),
        r"variable 'mu' has draws of shape \(3,\) but the model's has shape \(\)"),
    Row("too few draws", lambda t: bridge(t, idata=mu_draws(draws=150)),
        r"at least 200 draws per chain .*got 150"),
    Row("NaN draws", lambda t: bridge(t, idata=az.from_dict(
        {"posterior": {"mu": np.full((2, 200), np.nan)}})),
        r"the posterior draws contain NaN or infinite values"),
    Row("draws of another model (lp)", lambda t: bridge(t, idata=mu_draws(lp=-3.0)),
        r"differs from their sample_stats\.lp .* another model or of other data"),
    Row("draws outside the support", lambda t: bridge(
        t, model=t.positive, idata=mu_draws(name="s")),
        r"the model's log density is -inf or NaN at \d+ of 400 posterior draws"),
    Row("an improper prior", lambda t: bridge(t, model=t.flat),
        r"the priors of \['mu'\] are improper \(Flat/HalfFlat\)"),
    Row("no data", lambda t: bridge(t, model=t.no_data), r"the model has no observed data"),
    Row("an unsummable discrete variable", lambda t: bridge(t, model=t.poisson),
        r"needs every discrete variable summed out, which fails here: .*sample_ais"),
    Row("only discrete variables", lambda t: bridge(t, model=t.all_discrete),
        r"every free variable of the model is discrete \(\['z'\]\), so its evidence is an "
        r"exact sum"),
    Row("model given by name", lambda t: bridge(t, model="m"), r"model must be a pymc\.Model"),
    Row("unknown proposal", lambda t: bridge(t, proposal="t"), r"proposal .*'t'"),
    Row("tolerance zero", lambda t: bridge(t, tolerance=0.0), r"tolerance must be"),
    Row("no iterations", lambda t: bridge(t, max_iterations=0),
        r"max_iterations must be an integer >= 1, got 0"),
    Row("too few proposal draws", lambda t: bridge(t, num_proposal_draws=10),
        r"num_proposal_draws must be an integer >= 200, got 10"),
    Row("a string seed", lambda t: bridge(t, random_seed="x"), r"random_seed must be None"),
]


@pytest.mark.parametrize("row", table(BRIDGE_SAMPLING))
def test_bridge_sampling(row, t):
    check(row, t)


# ---------------------------------------------- log_evidence, EvidenceEstimate, comparisons


LOG_EVIDENCE = [
    Row("a dict", lambda t: pa.log_evidence({"posterior": None}),
        r"log_evidence needs a DataTree returned by pymc_anneal\.sample_ais .*got dict\."),
    Row("an MCMC result", lambda t: pa.log_evidence(t.posterior_only),
        r"got DataTree with groups \['posterior'\]"),
]


@pytest.mark.parametrize("row", table(LOG_EVIDENCE))
def test_log_evidence(row, t):
    check(row, t)


EVIDENCE_ESTIMATE = [
    Row("negative standard error", lambda t: pa.EvidenceEstimate(-1.0, -0.1, 0.1, 10.0, 100),
        r"standard_error must be a number >= 0 \(a standard error\), or NaN if unknown, "
        r"got -0\.1"),
    Row("negative chain spread", lambda t: pa.EvidenceEstimate(-1.0, 0.1, -1.0, 10.0, 100),
        r"chain_sd must be a number >= 0"),
    Row("NaN log evidence", lambda t: pa.EvidenceEstimate(np.nan, 0.1, 0.1, 10.0, 100),
        r"log_evidence must be a number \(-inf for zero evidence, never NaN or \+inf\), "
        r"got nan"),
    Row("log evidence a string", lambda t: pa.EvidenceEstimate("-1", 0.1, 0.1, 10.0, 100),
        r"log_evidence must be .*\(a real number, not str\)"),
    Row("ESS above the particles", lambda t: pa.EvidenceEstimate(-1.0, 0.1, 0.1, 200.0, 100),
        r"ess must be a number in \[0, num_particles = 100\], or NaN if unknown, got 200\.0"),
    Row("no particles", lambda t: pa.EvidenceEstimate(-1.0, 0.1, 0.1, 0.0, 0),
        r"num_particles must be an integer >= 1, got 0"),
    Row("particles a float", lambda t: pa.EvidenceEstimate(-1.0, 0.1, 0.1, 10.0, 100.0),
        r"num_particles must be an integer >= 1, got 100\.0"),
]


@pytest.mark.parametrize("row", table(EVIDENCE_ESTIMATE))
def test_evidence_estimate(row, t):
    check(row, t)


BAYES_FACTOR = [
    Row("a number instead of a result", lambda t: pa.bayes_factor(-1.0, t.estimate),
        r"model 'idata1' must be a DataTree returned by pymc_anneal\.sample_ais"),
    Row("an MCMC result", lambda t: pa.bayes_factor(t.estimate, t.posterior_only),
        r"model 'idata2' has no evidence estimate"),
    Row("zero evidence", lambda t: pa.bayes_factor(
        t.estimate, t.estimate._replace(log_evidence=-np.inf)),
        r"model 'idata2' has a log evidence of -inf"),
    Row("prob 1", lambda t: pa.bayes_factor(t.estimate, t.other, prob=1.0),
        r"prob must be a number strictly between 0 and 1, got 1\.0"),
]


@pytest.mark.parametrize("row", table(BAYES_FACTOR))
def test_bayes_factor(row, t):
    check(row, t)


COMPARE = [  # more in tests/test_compare.py::test_compare_bad_input
    Row("a list", lambda t: pa.compare([t.estimate, t.other]),
        r"needs a dict from model name.*got list"),
    Row("one model", lambda t: pa.compare({"a": t.estimate}), r"at least two models, got 1"),
    Row("zero evidence", lambda t: pa.compare(
        {"a": t.estimate, "b": t.estimate._replace(log_evidence=-np.inf)}),
        r"model 'b' has a log evidence of -inf"),
    Row("prior for an unknown model", lambda t: pa.compare(
        {"a": t.estimate, "b": t.other}, prior_probabilities={"a": 1.0, "c": 1.0}),
        r"missing \['b'\], unknown \['c'\]"),
    Row("too few samples", lambda t: pa.compare({"a": t.estimate, "b": t.other},
                                                num_samples=10),
        r"num_samples must be an integer >= 100, got 10"),
]


@pytest.mark.parametrize("row", table(COMPARE))
def test_compare(row, t):
    check(row, t)


EVIDENCE_STRENGTH = [
    Row("NaN", lambda t: pa.evidence_strength(float("nan")), r"must be a number, got nan"),
    Row("a word", lambda t: pa.evidence_strength("strong"),
        r"log_bayes_factor must be a number, got 'strong'"),
]


MERGE = [  # more in tests/test_merge.py::test_merge_refuses_what_cannot_be_pooled
    Row("a single result", lambda t: pa.merge(t.posterior_only),
        r"merge takes a list of results \(xarray\.DataTree\), got DataTree"),
    Row("an empty list", lambda t: pa.merge([]), r"merge got an empty list"),
    Row("an estimate", lambda t: pa.merge([t.estimate]),
        r"merge pools the particles of AIS runs .* result 0 is EvidenceEstimate"),
    Row("an MCMC result", lambda t: pa.merge([t.posterior_only]),
        r"result 0 is a DataTree with method=None, groups \['posterior'\]"),
]


@pytest.mark.parametrize("row", table(MERGE))
def test_merge(row, t):
    check(row, t)


# ------------------------------------------------- pymc_anneal.distributed (no cluster needed)


def dist(name, *args, **kwargs):
    """``pymc_anneal.distributed.<name>`` with small settings and no client (the refusals
    come before one is looked up)."""
    import pymc_anneal.distributed

    return getattr(pymc_anneal.distributed, name)(*args, **kwargs)


DISTRIBUTED_SAMPLE_AIS = [
    Row("num_steps auto", lambda t: dist("sample_ais", model=t.normal, runs=2),
        r"needs num_steps as an integer \(or schedule as an array\), got num_steps=None"),
    Row("runs zero", lambda t: dist("sample_ais", model=t.normal, runs=0, num_steps=5),
        r"runs must be an integer >= 1 \(the number of tasks\), got 0"),
    Row("runs a float", lambda t: dist("sample_ais", model=t.normal, runs=2.0, num_steps=5),
        r"runs must be an integer >= 1 .*got 2\.0"),
    Row("a model's name", lambda t: dist("sample_ais", model="normal", runs=2, num_steps=5),
        r"model must be a pymc\.Model .*got str"),
    Row("an unknown argument", lambda t: dist("sample_ais", model=t.normal, runs=2,
                                              num_steps=5, n_draws=10),
        r"unknown argument 'n_draws': the keyword arguments go to pymc_anneal\.sample_ais"),
    Row("a checkpoint", lambda t: dist("sample_ais", model=t.normal, runs=2, num_steps=5,
                                       checkpoint="run.npz"),
        r"takes no checkpoint in its keyword arguments"),
    Row("random_seed a float", lambda t: dist("sample_ais", model=t.normal, runs=2,
                                              num_steps=5, random_seed=1.5),
        r"random_seed must be None or a non-negative integer .*got 1\.5"),
    Row("no client", lambda t: dist("sample_ais", model=t.normal, runs=2, num_steps=5),
        r"no Dask client: pass client="),
    Row("client not a Client", lambda t: dist("sample_ais", model=t.normal, runs=2,
                                              num_steps=5, client="tcp://localhost:8786"),
        r"client must be a distributed\.Client, got str"),
]


DISTRIBUTED_AIS = [
    Row("num_steps None with a named schedule",
        lambda t: dist("ais", t.rbm, runs=2, num_steps=None),
        r"needs num_steps as an integer .*got num_steps=None"),
    Row("runs True", lambda t: dist("ais", t.rbm, runs=True, num_steps=5),
        r"runs must be an integer"),
    Row("num_steps auto by default", lambda t: dist("ais", t.rbm, runs=2),
        r"needs num_steps as an integer .*got num_steps='auto'"),
    Row("a progress bar", lambda t: dist("ais", t.rbm, runs=2, progressbar=True),
        r"takes no progressbar .*Dask dashboard"),
    Row("an adaptive schedule", lambda t: dist("ais", t.rbm, runs=2, schedule="adaptive"),
        r'cannot run schedule="adaptive": each task would place its own temperatures'),
]



DISTRIBUTED_EVIDENCES = [
    Row("a list", lambda t: dist("evidences", [t.normal, t.potential], num_steps=5),
        r"evidences needs a dict from model name to pm\.Model, got list"),
    Row("an energy model", lambda t: dist("evidences", {"a": t.normal, "b": t.rbm},
                                          num_steps=5),
        r"\{'b': 'BernoulliRBM'\} are not pm\.Model"),
    Row("runs zero", lambda t: dist("evidences", {"a": t.normal}, runs=0, num_steps=5),
        r"runs must be an integer >= 1"),
]



DISTRIBUTED_BATCHED_AIS = [
    Row("an energy model", lambda t: dist("batched_ais", t.rbm, t.binary, batches=2),
        r"batched_ais needs a generative model .*got BernoulliRBM"),
    Row("more batches than points",
        lambda t: dist("batched_ais", t.linear, np.zeros((4, 3)), batches=5,
                       num_steps=5),
        r"batches must be at most the number of test points, 4, got 5"),
    Row("batches zero", lambda t: dist("batched_ais", t.linear, np.zeros((4, 3)),
                                       batches=0, num_steps=5),
        r"batches must be an integer >= 1"),
    Row("data of the wrong width",
        lambda t: dist("batched_ais", t.linear, np.zeros((4, 2)), batches=2,
                       num_steps=5),
        r"data must have shape \(N, 3\)"),
]



DISTRIBUTED_REVERSE_AIS = [
    Row("a PyMC model", lambda t: dist("reverse_ais", t.normal, t.binary, batches=2),
        r"reverse_ais needs an energy model .*got Model"),
    Row("a subsample", lambda t: dist("reverse_ais", t.rbm, t.binary, batches=2,
                                      subsample=2),
        r"takes no subsample \(got 2\)"),
    Row("a log_z", lambda t: dist("reverse_ais", t.rbm, t.binary, batches=2, log_z=-3.0),
        r"takes no log_z \(got -3\.0\)"),
    Row("more batches than points",
        lambda t: dist("reverse_ais", t.rbm, t.binary, batches=6, num_steps=5),
        r"batches must be at most the number of test points, 5, got 6"),
    Row("data not binary",
        lambda t: dist("reverse_ais", t.rbm, np.full((2, 6), 0.5), batches=2,
                       num_steps=5),
        r"must be binary \(0 or 1\)"),
]



TASK_SEEDS = [
    Row("a negative seed", lambda t: dist("task_seeds", -1, 2),
        r"random_seed must be None or a non-negative integer .*got -1"),
    Row("True", lambda t: dist("task_seeds", True, 2), r"a bool is not a seed"),
    Row("no tasks", lambda t: dist("task_seeds", 1, 0),
        r"num_tasks must be an integer >= 1 \(the number of tasks\), got 0"),
]


DISTRIBUTED = {"sample_ais": DISTRIBUTED_SAMPLE_AIS, "ais": DISTRIBUTED_AIS,
               "evidences": DISTRIBUTED_EVIDENCES, "batched_ais": DISTRIBUTED_BATCHED_AIS,
               "reverse_ais": DISTRIBUTED_REVERSE_AIS, "task_seeds": TASK_SEEDS}


@pytest.mark.parametrize("row", table([dataclasses.replace(row, id=f"{name}: {row.id}")
                                       for name, rows in DISTRIBUTED.items() for row in rows]))
def test_distributed(row, t):
    """One table per public function of pymc_anneal.distributed (ids name the function)."""
    check(row, t)


@pytest.mark.parametrize("row", table(EVIDENCE_STRENGTH))
def test_evidence_strength(row, t):
    check(row, t)


# ------------------------------------------------------------------- energy models' constructors


def rbm(W=None, b=None, c=None, **kwargs):
    W = np.zeros((3, 2)) if W is None else W
    return BernoulliRBM(W, np.zeros(W.shape[0]) if b is None else b,
                        np.zeros(np.shape(W)[1]) if c is None else c, **kwargs)


BERNOULLI_RBM = [
    Row("weights 1-D", lambda t: rbm(np.zeros(3), b=np.zeros(3), c=np.zeros(1)),
        r"W of a BernoulliRBM must be a 2-D array of shape \(n_visible, n_hidden\) with both "
        r"sizes >= 1, got shape \(3,\)\."),
    Row("weights transposed", lambda t: rbm(np.zeros((3, 2)), b=np.zeros(2), c=np.zeros(3)),
        r"W looks transposed: it must have shape \(n_visible, n_hidden\); pass W\.T"),
    Row("NaN weight", lambda t: rbm(np.full((3, 2), np.nan)),
        r"W contains 6 NaN or infinite values"),
    Row("weights a string", lambda t: rbm("W", b=np.zeros(3), c=np.zeros(2)),
        r"W must be a numeric array, got str\."),
    Row("float16", lambda t: rbm(dtype="float16"),
        r"dtype must be one of \['float64', 'float32'\], got 'float16'"),
    Row("weights overflow float32",
        lambda t: rbm(np.full((10, 8), TOO_BIG_FOR_FLOAT32), dtype="float32"),
        r"W overflow float32: 80 values exceed its largest number 3\.4e\+38 .*"
        r"use dtype='float64'"),
    Row("bias overflows float32",
        lambda t: rbm(b=np.full(3, -TOO_BIG_FOR_FLOAT32), dtype="float32"),
        r"visible_bias overflow float32: 3 values"),
]


@pytest.mark.parametrize("row", table(BERNOULLI_RBM))
def test_bernoulli_rbm(row, t):
    check(row, t)


GAUSSIAN_RBM = [
    Row("sigma zero", lambda t: GaussianRBM(np.zeros((3, 2)), np.zeros(3), np.zeros(2), 0.0),
        r"sigma must be > 0"),
    Row("sigma of the wrong length",
        lambda t: GaussianRBM(np.zeros((3, 2)), np.zeros(3), np.zeros(2), np.ones(2)),
        r"sigma of a GaussianRBM must be a scalar or have shape \(3,\)"),
    Row("weights overflow float32", lambda t: GaussianRBM(
        np.full((3, 2), TOO_BIG_FOR_FLOAT32), np.zeros(3), np.zeros(2), 1.0, dtype="float32"),
        r"W overflow float32"),
    Row("sigma overflows float32", lambda t: GaussianRBM(
        np.zeros((3, 2)), np.zeros(3), np.zeros(2), TOO_BIG_FOR_FLOAT32, dtype="float32"),
        r"sigma overflow float32"),
]


@pytest.mark.parametrize("row", table(GAUSSIAN_RBM))
def test_gaussian_rbm(row, t):
    check(row, t)


POE = [
    Row("fewer experts than dimensions", lambda t: LaplacePOE(np.ones((1, 2))),
        r"needs at least as many experts as dimensions"),
    Row("filters that do not span", lambda t: LaplacePOE(np.ones((2, 2))),
        r"filters must span R\^2 \(have rank 2\)"),
    Row("filters 1-D", lambda t: LaplacePOE(np.ones(2)), r"must be a 2-D array"),
    Row("filters overflow float32",
        lambda t: LaplacePOE(np.eye(2) * TOO_BIG_FOR_FLOAT32, dtype="float32"),
        r"filters overflow float32"),
    Row("alpha zero", lambda t: StudentTPOE(np.eye(2), alpha=0.0),
        r"alpha must be > 0 \(expert exponents\); got \[0\.0, 0\.0\] at experts \[0, 1\]"),
    Row("complete set with alpha 1/2", lambda t: StudentTPOE(np.eye(2), alpha=0.5),
        r"a complete StudentTPOE is normalizable only if every alpha > 1/2"),
    Row("over-complete set with too little decay",
        lambda t: StudentTPOE(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), alpha=0.3),
        r"over-complete StudentTPOE is not normalizable.*2 sum\(alpha\) > num_dims = 2"),
    Row("alpha of the wrong length", lambda t: StudentTPOE(np.eye(2), alpha=[1.0, 1.0, 1.0]),
        r"alpha of a StudentTPOE must be a scalar or have shape \(2,\)"),
]


@pytest.mark.parametrize("row", table(POE))
def test_products_of_experts(row, t):
    check(row, t)


FUNCTION_ENERGY = [
    Row("not callable", lambda t: FunctionEnergy("x", num_dims=2),
        r"log_unnormalized must be a callable .*got str"),
    Row("no dimensions", lambda t: FunctionEnergy(lambda x: x.sum(axis=1), num_dims=0),
        r"num_dims must be a positive integer, got 0"),
    Row("one value per coordinate", lambda t: FunctionEnergy(lambda x: -x**2, num_dims=2),
        r"must map x of shape \(N, 2\) to one value per row.*ndim=2"),
    Row("NumPy inside", lambda t: FunctionEnergy(lambda x: np.exp(np.asarray(x, float)).sum(1),
                                                 num_dims=2),
        r"calling log_unnormalized of FunctionEnergy 'energy' .* failed"),
    Row("integer output", lambda t: FunctionEnergy(lambda x: pt.zeros(x.shape[0], dtype="int64"),
                                                   num_dims=2),
        r"must return floats, got dtype int64"),
    Row("log_z NaN", lambda t: FunctionEnergy(lambda x: -x.sum(axis=1), 2, log_z=np.nan),
        r"log_z must be finite \(a real number\), got nan"),
]


@pytest.mark.parametrize("row", table(FUNCTION_ENERGY))
def test_function_energy(row, t):
    check(row, t)


OTHER_MODELS = [
    Row("DBM layers that do not chain", lambda t: DeepBoltzmannMachine(
        np.zeros((3, 2)), np.zeros((3, 2)), np.zeros(3), np.zeros(2), np.zeros(2)),
        r"the biases of a DeepBoltzmannMachine \(W2\) must match W of shape \(3, 2\)"),
    Row("DBM weights overflow float32", lambda t: DeepBoltzmannMachine(
        np.full((3, 2), TOO_BIG_FOR_FLOAT32), np.zeros((2, 2)), np.zeros(3), np.zeros(2),
        np.zeros(2), dtype="float32"), r"W overflow float32: 6 values exceed"),
    Row("mcRBM sigma zero", lambda t: MCRBM(np.eye(2), np.eye(2), np.zeros(2), np.zeros((1, 2)),
                                            np.zeros(1), np.zeros(2), sigma=0.0),
        r"sigma must be a positive float \(finite and > 0\), got 0\.0"),
    Row("mcRBM filters overflow float32", lambda t: MCRBM(
        np.eye(2) * TOO_BIG_FOR_FLOAT32, np.eye(2), np.zeros(2), np.zeros((1, 2)), np.zeros(1),
        np.zeros(2), sigma=1.0, dtype="float32"), r"overflow float32"),
    Row("linear model noise zero", lambda t: LinearGenerative(np.eye(2), noise_scale=0.0),
        r"noise_scale must be a positive float \(finite and > 0\), got 0\.0"),
    Row("linear model unknown prior", lambda t: LinearGenerative(np.eye(2), 1.0, prior="t"),
        r"unknown prior 't'; must be one of \['gaussian', 'laplace'\]"),
    Row("linear basis overflows float32", lambda t: LinearGenerative(
        np.eye(2) * TOO_BIG_FOR_FLOAT32, 1.0, dtype="float32"), r"overflow float32"),
    Row("bilinear theta rows", lambda t: BilinearGenerative(
        np.eye(2), np.ones((3, 1)), np.ones((2, 1)), 1.0),
        r"theta must be a 2-D array of shape \(2, k\) .*got shape \(3, 1\)"),
]


@pytest.mark.parametrize("row", table(OTHER_MODELS))
def test_other_models(row, t):
    check(row, t)


HMC_KERNEL = [  # the SMC kernel for pm.sample_smc(kernel=pa.HMCKernel, ...)
    Row("no leapfrog steps", lambda t: pa.HMCKernel(num_leapfrog_steps=0, model=t.normal),
        r"num_leapfrog_steps must be an integer >= 1, got 0"),
    Row("no mutation steps", lambda t: pa.HMCKernel(n_steps=0, model=t.normal),
        r"n_steps must be an integer >= 1, got 0"),
    Row("negative step size", lambda t: pa.HMCKernel(step_size=-0.1, model=t.normal),
        r"step_size must be a positive finite number or None"),
    Row("target acceptance 1", lambda t: pa.HMCKernel(target_accept=1.0, model=t.normal),
        r"target_accept must lie strictly between 0 and 1, got 1\.0"),
    Row("refresh 0", lambda t: pa.HMCKernel(refresh=0.0, model=t.normal),
        r"refresh must lie in \(0, 1\]"),
    Row("unknown backend", lambda t: pa.HMCKernel(mutation_backend="gpu", model=t.normal),
        r"unknown backend 'gpu'"),
]


@pytest.mark.parametrize("row", table(HMC_KERNEL))
def test_hmc_kernel(row, t):
    check(row, t)


def test_every_public_function_has_a_table():
    """A new public function gets a table here (or a reason below why it needs none)."""
    covered = {"sample_ais", "ais", "batched_ais", "reverse_ais", "sandwich", "bdmc",
               "bridge_sampling",
               "log_evidence", "EvidenceEstimate", "bayes_factor", "compare",
               "evidence_strength", "energy", "HMCKernel", "merge",
               "distributed"}  # its functions: the table test_distributed
    no_inputs = {"AnnealingError", "AnnealingWarning", "BayesFactor", "__version__",
                 "kernels", "plots"}  # exceptions, a result, modules (tested beside them)
    assert set(pa.__all__) - covered - no_inputs == set()
