r"""Run :func:`pymc_anneal.sample_ais` on generated models and score it against the exact
evidence; shared by ``tests/calibration/test_calibration.py`` and
``benchmarks/calibration_report.py``.

A *model-run* is one call of ``sample_ais`` on one case, route (``discrete=``, ``base=``),
backend, dataset (swapped in with ``pm.set_data``) and seed. Its score is

.. math::

    z = (\log \hat Z - \log Z) / \mathrm{SE},

with SE the reported (delta-method, all chains pooled) standard error of
:func:`pymc_anneal.log_evidence`. If the estimator and its SE are right, :math:`z` is close
to N(0, 1) (:math:`\log \hat Z` is a log-mean of weights: slightly skewed low, which a
calibration over hundreds of runs can see only when the weights are poor, i.e. when a warning
should have been raised). A run with ``SE = 0`` (an all-discrete model summed exactly) must
equal :math:`\log Z` to rounding. Warnings are collected with
``warnings.catch_warnings(record=True)``; the checks apply to the runs without an
:class:`~pymc_anneal.exceptions.AnnealingWarning`.

A route that cannot take a model must refuse it with an
:class:`~pymc_anneal.exceptions.AnnealingError` before any annealing loop is compiled:
:func:`run_case` counts calls of :func:`pymc_anneal.driver.run_annealing` (in every
``pymc_anneal`` module that imported it) and records a refusal only when there were none.
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings
import zlib
from dataclasses import asdict, dataclass, field

import numpy as np

import pymc_anneal as pa
from pymc_anneal.driver import run_annealing
from pymc_anneal.exceptions import AnnealingError, AnnealingWarning
from tests.calibration.generator import ModelCase

__all__ = ["Score", "count_loop_runs", "routes_for", "run_case", "summarize"]

EXACT_TOLERANCE = 1e-8
"""|log Z-hat - log Z| allowed for a run with standard error 0 (an exact sum)."""


@dataclass
class Score:
    """One model-run and its score."""

    case: str
    family: str
    features: tuple
    discrete: str
    base: str
    backend: str
    dataset: int
    seed: int
    log_z: float
    log_z_hat: float = float("nan")
    standard_error: float = float("nan")
    warned: bool = False
    warnings: list = field(default_factory=list)
    error: str | None = None
    refused: bool = False  # a clear AnnealingError before any compile, where expected
    seconds: float = 0.0
    kernel: str | None = None  # the run's kernel (importance sampling has none)

    @property
    def exact(self) -> bool:
        """A run that reported standard error 0 (an exact sum)."""
        return self.error is None and self.standard_error == 0.0

    @property
    def z(self) -> float:
        diff = self.log_z_hat - self.log_z
        if self.exact:
            return 0.0 if abs(diff) <= EXACT_TOLERANCE * max(1.0, abs(self.log_z)) \
                else float(np.copysign(np.inf, diff))
        return diff / self.standard_error

    @property
    def scored(self) -> bool:
        """Counts in the calibration: ran, raised no AnnealingWarning."""
        return self.error is None and not self.refused and not self.warned

    def describe(self) -> str:
        what = (f"{self.case} discrete={self.discrete} base={self.base} backend={self.backend} "
                f"dataset={self.dataset} seed={self.seed}")
        if self.error:
            return f"{what}: error {self.error}"
        return (f"{what}: log Z-hat {self.log_z_hat:.4f} +/- {self.standard_error:.4f}, "
                f"exact {self.log_z:.4f}, z = {self.z:.2f}"
                + (f", warned: {self.warnings}" if self.warned else ""))

    def to_dict(self) -> dict:
        out = asdict(self)
        out["z"] = self.z
        return out


def routes_for(case: ModelCase, bases=("prior", "gaussian")) -> list[tuple[str, str]]:
    """The (discrete, base) routes of a case: every ``discrete=`` route for a model with
    discrete variables (they differ only there), each with every base."""
    discretes = ("auto", "sum", "anneal") if case.has_discrete else ("auto",)
    return [(d, b) for d in discretes for b in bases]


def route_seed(case: ModelCase, index: int, base: str, seed: int) -> int:
    """The seed of a run: ``seed`` itself, except on the Laplace base, whose runs take a
    seed of their own per case and dataset. In the coordinates whitened by a Laplace fit
    every near-Gaussian posterior looks alike, so one seed makes nearly the same run on
    every case (measured: seed 0 gave z = 1.6 to 3.5 on all nine cases of the plan), and
    the suite's z-scores would not be independent draws."""
    if base != "laplace":
        return seed
    return seed + 10 * (index + 1) + 1000 * (zlib.crc32(case.name.encode()) % 100_000)


def laplace_applies(model, discrete: str) -> bool:
    """Whether ``base="laplace"`` can run ``model`` on the route ``discrete=``: a path
    without annealed discrete variables (it covers continuous coordinates only; a model
    whose variables are all summed is one exact sum, whatever the base)."""
    from pymc_anneal.exceptions import AnnealingError
    from pymc_anneal.pymc.adapter import model_path

    try:
        path = model_path(model, discrete).path
    except AnnealingError:
        return False
    return path is not None and not path.discrete_dims


def same_as_auto(model, discrete: str) -> bool:
    """Whether ``discrete=`` (``"sum"`` or ``"anneal"``) sums exactly the discrete variables
    that ``"auto"`` sums for ``model`` with its current data: then its runs are the runs of
    ``"auto"`` (same seeds, same numbers), which would waste the time and count each z
    twice. A route that refuses the model is not the same (its refusal is checked)."""
    from pymc_anneal.exceptions import AnnealingError
    from pymc_anneal.pymc.adapter import model_path

    try:
        return set(model_path(model, discrete).summed) == set(model_path(model, "auto").summed)
    except AnnealingError:
        return False


@contextlib.contextmanager
def count_loop_runs():
    """Count calls of :func:`pymc_anneal.driver.run_annealing` (the compile-and-run entry
    point) in every loaded ``pymc_anneal`` module, yielding a one-element list."""
    calls = [0]

    def counting(*args, **kwargs):
        calls[0] += 1
        return run_annealing(*args, **kwargs)

    patched = []
    for name, module in list(sys.modules.items()):
        if name.startswith("pymc_anneal") and module is not None:
            for attr, value in list(vars(module).items()):
                if value is run_annealing:
                    patched.append((module, attr))
                    setattr(module, attr, counting)
    try:
        yield calls
    finally:
        for module, attr in patched:
            setattr(module, attr, run_annealing)


def _one(model, case, index, discrete, base, backend, seed, **options) -> Score:
    score = Score(case=case.name, family=case.family, features=tuple(sorted(case.features)),
                  discrete=discrete, base=base, backend=backend, dataset=index, seed=seed,
                  log_z=case.log_z[index])
    t0 = time.perf_counter()
    expect_refusal = discrete in case.refused_routes
    # a funnel: the Laplace base runs in non-centred coordinates where the census on the
    # model as written runs into the neck; where it found a mode, a later fit from other
    # starts may still stop in the neck, and then refuses before compiling anything
    may_refuse = base == "laplace" and "funnel" in case.features
    with warnings.catch_warnings(record=True) as caught, count_loop_runs() as calls:
        warnings.simplefilter("always")
        try:
            idata = pa.sample_ais(model=model, discrete=discrete, base=base, backend=backend,
                                  random_seed=seed, progressbar=False, **options)
            est = pa.log_evidence(idata)
            score.kernel = idata.attrs.get("kernel")
            score.log_z_hat, score.standard_error = float(est.log_evidence), \
                float(est.standard_error)
            if expect_refusal:
                score.error = f"expected an AnnealingError for discrete={discrete!r}, got a result"
        except AnnealingError as exc:
            if (expect_refusal or may_refuse) and calls[0] == 0:
                score.refused = True
            elif expect_refusal:
                score.error = f"refused only after compiling ({calls[0]} loop runs): {exc}"
            else:
                score.error = f"AnnealingError: {exc}"
        except Exception as exc:  # noqa: BLE001 - a crash is a finding, recorded with its type
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()
                     and "JAX_TRACEBACK_FILTERING" not in ln]
            score.error = f"{type(exc).__name__}: {' | '.join(lines)[:300]}"
    found = [w for w in caught if issubclass(w.category, AnnealingWarning)]
    score.warned = bool(found)
    score.warnings = [str(w.message)[:200] for w in found]
    score.seconds = time.perf_counter() - t0
    return score


def run_case(case: ModelCase, routes, backend: str = "jax", seeds=(0,), datasets=None,
             draws: int = 200, chains: int = 2, num_steps=100, model=None,
             **options) -> list[Score]:
    """Run every route x dataset x seed of ``case`` on one backend, on one model object.

    The model is built once (or passed in) and shared by all routes, so that each route
    compiles its loop once; datasets are swapped in with ``pm.set_data`` before each run.
    """
    model = case.build() if model is None else model
    datasets = range(len(case.datasets)) if datasets is None else datasets
    scores = []
    for discrete, base in routes:
        for index in datasets:
            if case.params.get("use_data"):
                case.set_data(model, index)
            if (("auto", base) in routes and discrete != "auto"
                    and same_as_auto(model, discrete)):
                continue  # the same runs as "auto": they would be counted twice
            if base == "laplace" and not laplace_applies(model, discrete):
                continue  # refused by design (annealed discrete variables): no score
            for seed in seeds:
                scores.append(_one(model, case, index, discrete, base, backend,
                                   route_seed(case, index, base, seed), draws=draws,
                                   chains=chains, num_steps=num_steps, **options))
    return scores


def summarize(scores: list[Score]) -> dict:
    """Figures of a calibration: counts, coverage of the nominal 95 % interval, worst |z|,
    and a KS test of z ~ N(0, 1) among the scored runs with a positive standard error."""
    from scipy import stats

    scored = [s for s in scores if s.scored]
    random = np.array([s.z for s in scored if not s.exact])
    exact = [s for s in scored if s.exact]
    out = {
        "model_runs": len(scores),
        "models": len({s.case for s in scores}),
        "families": sorted({s.family for s in scores}),
        "routes": sorted({f"discrete={s.discrete}, base={s.base}" for s in scores}),
        "backends": sorted({s.backend for s in scores}),
        "errors": sum(s.error is not None for s in scores),
        "refused": sum(s.refused for s in scores),
        "warned": sum(s.warned and s.error is None for s in scores),
        "scored": len(random),
        "exact_sums": len(exact),
        "exact_sums_wrong": sum(not np.isfinite(s.z) or s.z != 0 for s in exact),
    }
    if random.size:
        out["coverage_95"] = float(np.mean(np.abs(random) < 1.959964))
        out["worst_abs_z"] = float(np.max(np.abs(random)))
        out["mean_z"] = float(np.mean(random))
        out["sd_z"] = float(np.std(random, ddof=1)) if random.size > 1 else float("nan")
        out["ks_pvalue"] = float(stats.kstest(random, "norm").pvalue) if random.size > 1 \
            else float("nan")
    return out


# --------------------------------------------------------------------------- the suites' plans
SLOW_SEED = 5000
SLOW_MODELS_PER_FAMILY = 2
SLOW_SEEDS = (0, 1, 2)
CI_MODELS_PER_FAMILY, CI_SEEDS = 1, (0, 1, 2, 3, 4, 5)
"""The CI's share of the plan (``tests/calibration/test_calibration.py``): the first model
of each family (every route, the Laplace base's included), six seeds. A run's cost is
nearly all its loops' compiles (one per route and dataset: a new dataset changes the data's
shapes or a discrete support), and a seed compiles nothing: measured 2026-12-01, cold, two
plans side by side on 2 cores, the whole JAX plan took 15.5 min at three seeds and 14.2 at
one. The second model of each family (``SLOW_MODELS_PER_FAMILY``) runs in
``benchmarks/calibration_report.py``, whose figures the user guide prints."""
SLOW_OPTIONS = {"draws": 200, "chains": 2, "num_steps": 200, "fit_steps": 200}
"""200 temperatures, and 200 for the Gaussian base's fitting run (default 500): at the
default the plan's Gaussian-base routes would take about 1.5 times as long, past the CI's
limit. The shorter fitting run's estimate is less precise, which weakens the second opinion
(:data:`pymc_anneal.diagnostics.SECOND_OPINION_Z` is set from these runs)."""
OTHER_BACKENDS = ("numba", "c")
"""Backends whose cold compile takes 30-120 s a loop: each runs one case, two routes."""


LAPLACE_MODELS_PER_FAMILY = 1
"""Cases per family whose routes include ``base="laplace"`` (the base found by
optimization, issue 41) where it applies (no annealed discrete variables)."""


def slow_plan(families=None, models_per_family=None, seeds=None):
    """The slow calibration: ``models_per_family`` cases per family (default
    :data:`SLOW_MODELS_PER_FAMILY`) on JAX over every route (each discrete route with the
    prior and the Gaussian base, and for the first :data:`LAPLACE_MODELS_PER_FAMILY` of
    them the Laplace base too), every dataset and ``seeds`` (default :data:`SLOW_SEEDS`);
    then one case with discrete variables that depend on a continuous one on each of
    :data:`OTHER_BACKENDS`, discrete routes "auto" and "anneal" (prior base).

    Yields ``(case, routes, backend, seeds)``.
    """
    from tests.calibration.generator import FAMILIES, generate

    families = sorted(FAMILIES) if families is None else families
    models_per_family = SLOW_MODELS_PER_FAMILY if models_per_family is None \
        else models_per_family
    seeds = SLOW_SEEDS if seeds is None else tuple(seeds)
    for k in range(models_per_family):
        for i, family in enumerate(families):
            case = generate(SLOW_SEED + 100 * k + i, family)
            bases = ("prior", "gaussian") + (("laplace",) if k < LAPLACE_MODELS_PER_FAMILY
                                             else ())
            yield case, routes_for(case, bases), "jax", seeds
    for backend in OTHER_BACKENDS:
        case = generate(SLOW_SEED + 999, "binomial_sigmoid")
        yield case, [("auto", "prior"), ("anneal", "prior")], backend, SLOW_SEEDS[:1]


IMPORTANCE_SEED = 8000
IMPORTANCE_MODELS_PER_FAMILY = 4
IMPORTANCE_OPTIONS = {"draws": 1000, "chains": 4, "num_steps": "auto"}
"""The importance-sampling calibration (:func:`importance_plan`): ``sample_ais``'s default
particles (1,000 x 4; at the slow plan's 200 x 2 the check's skewness bound leaves
importance sampling to a quarter of the runs) and K chosen by the run, so that the fit's
importance sampling is taken where its check passes."""


def importance_plan(families=None):
    """``base="laplace"`` with ``num_steps="auto"`` (:data:`IMPORTANCE_OPTIONS`):
    importance sampling from the fit where its check passes (issue 41), the annealed
    Laplace base where not. :data:`IMPORTANCE_MODELS_PER_FAMILY` cases per family, every
    dataset, ``SLOW_SEEDS``, on JAX. Funnels are left out: the Laplace base refuses a
    funnel's neck by design, and where its fit misses the neck the annealed run warns (in
    a study of 2026-11-29 every such run warned; none took importance sampling).

    Yields ``(case, routes, backend, seeds)``."""
    from tests.calibration.generator import FAMILIES, generate

    families = [f for f in sorted(FAMILIES) if f != "funnel"] if families is None else families
    for k in range(IMPORTANCE_MODELS_PER_FAMILY):
        for i, family in enumerate(families):
            case = generate(IMPORTANCE_SEED + 100 * k + i, family)
            yield case, [("auto", "laplace")], "jax", SLOW_SEEDS


def run_plan(plan, progress=None, **options) -> list[Score]:
    """Run every entry of a plan with ``SLOW_OPTIONS`` (overridden by ``options``)."""
    scores = []
    for case, routes, backend, seeds in plan:
        t0 = time.perf_counter()
        new = run_case(case, routes, backend=backend, seeds=seeds, **{**SLOW_OPTIONS, **options})
        scores += new
        if progress is not None:
            progress(case, backend, new, time.perf_counter() - t0)
    return scores
