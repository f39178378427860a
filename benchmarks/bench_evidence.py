"""Benchmark: ``pa.sample_ais`` at its defaults against ``pm.sample_smc``, first call and
steady state, on models whose log evidence is known.

What a user meets first is the **first call in a new process with empty caches**: for each
model and each method, the script starts a new Python process with a temporary ``HOME``
(which empties PyTensor's compile directory, Numba's cache, and JAX's persistent
compilation cache, which the package keeps beside PyTensor's) and times the first call on a freshly built model, and that whole process. The two
methods are run alternately (ours, SMC, ours, SMC, ...) so that load on the machine hits
both alike. Then, in this process, the **steady state**: after one warm-up call of each
method on the model, ``--reps`` calls of each, interleaved, with new seeds.

* ours: ``pa.sample_ais()`` at its defaults (``draws=1000, chains=4``, ``base="auto"``,
  ``num_steps="auto"``, ``backend="auto"``: JAX when installed);
* SMC: ``pm.sample_smc(draws=2000, chains=2, cores=1)``.

Every model has an exact log evidence (``tests/analytic.py``; the logistic regression's by
Gauss-Hermite quadrature to 1e-9 nat), so every error is exact. The report gives, per
model, the first-call times and their ratio ours/SMC against the two targets of the issue
(1.0: no slower than SMC; 0.2: the longer-term aim), the steady-state ratio, and the errors.
``--high-dim`` adds the 100-parameter linear regression (accuracy aim: 0.1 nat, and at
most 3x SMC's time), at the defaults (``base="auto"``, which takes the fitted mixture there)
and with ``base="gaussian"``; ``--high-dim-prior`` adds ``base="prior"`` too (about 4-5
minutes a call on 2 cores: K of 6,000-9,000). ``benchmarks/bench_highdim.py`` breaks the
100-d model's time down.

``--warm-home`` adds, for the small models, the first call in a second process whose HOME
holds what a first process of the same method left there (PyTensor's C code, Numba's
cache, JAX's persistent compilation cache): what a user meets when a script runs again.

``--coal`` adds PyMC's coal-mining change point (``tests/pymc/test_discrete_hoist.py``'s
``coal_case()``: 112 years, the switch point summed exactly, exact log evidence by the
closed form): first call and steady state, ours against SMC as above. ``--rbm`` adds the
hard binary RBM of ``benchmarks/bench_energy_auto.py`` (64 x 20, loaded by its
``hard_rbm()``; exact log Z by enumerating the 2^20 hidden states): ``pa.ais(rbm)`` at its
defaults, first call and steady state, its error, K and whether it warned (no SMC peer:
SMC does not take an energy model). ``--breakdown`` times the fixed cost of ours' first
call on each small model piece by piece, in one more new process per model (empty
``HOME``): the functions listed in ``PIECES`` are wrapped with timers before the call
(module attributes patched in place, and in modules that JAX imports during the call,
when they are imported; the imports of JAX and ArviZ during the call are pieces too),
each piece's **exclusive** time is kept (a piece's time minus
that of the timed pieces called inside it), and "other" is the rest of the call's wall
time, so that the pieces sum to import + call. Compiles that run in background threads
overlap the main thread's work: their time is shown apart ("bg XLA"), not in the sum;
what the main thread waits for them is the piece "wait bg". The timers' overhead is
shown by the same first call without them (the column "call w/o timers"). ``--all`` is ``--high-dim
--coal --rbm --breakdown`` (``base="prior"`` on the 100-d model stays behind
``--high-dim-prior``). With ``--quick``, ``--all`` keeps the two quick models and their
breakdown only.

BLAS threads are capped at 1 in every process (OpenBLAS on 2 cores otherwise makes timings
swing 3-8x); JAX/XLA uses its own thread pool on both cores, as a user gets it; each row
also shows the process CPU time, so the cores used are visible. Speed claims are ratios
measured in one run: absolute seconds drift with the load of the machine.

Run ``python benchmarks/bench_evidence.py --help``; ``--quick`` is a smoke mode (two models,
one repetition, about two minutes).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import datetime as _dt
import functools
import json
import logging
import math
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = Path(__file__).resolve().parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

MODELS = {
    "normal_mean": "analytic.normal_mean()",
    "beta_binomial": "analytic.beta_binomial()",
    "beta_binomial4": "analytic.beta_binomial(num_groups=4)",
    "logistic": "analytic.logistic_regression()",
    "nig": "analytic.nig_regression()",
    "polynomial": "analytic.polynomial_regression()",
    "linreg10": "analytic.linear_regression(num_features=10, n=50)",
}
HIGH_DIM = {"linreg100": "analytic.linear_regression(num_features=100, n=200)"}
# imported in the child after the timed import (the test module imports pytest)
COAL = "__import__('tests.pymc.test_discrete_hoist', fromlist=['coal_case']).coal_case()"
COAL_DIMS = "3 (1 summed)"
QUICK_MODELS = ["normal_mean", "logistic"]
TARGETS = (1.0, 0.2)  # first-call ratio ours/SMC: the aim, and its longer-term aim
SMC_KWARGS = {"draws": 2000, "chains": 2, "cores": 1}
HIGH_DIM_TOLERANCE = 0.1
RBM_TOLERANCE = 0.05

# One method's first call in a new process: prints a JSON line. The import of pymc and
# the package is timed separately from the call (a user pays both once per process).
# With ``breakdown``, the timers of :class:`Timers` are installed after the import.
SNIPPET = """
import json, logging, os, sys, time, warnings
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
import numpy as np
import pymc as pm
import pymc_anneal as pa
from scipy.special import logsumexp
from tests import analytic
logging.getLogger("pymc").setLevel(logging.ERROR)
t_import = time.perf_counter() - t0
timers = None
if {breakdown!r}:
    sys.path.insert(0, {bench!r})
    import bench_evidence
    timers = bench_evidence.Timers().install()
target = {factory}
model = target.build()
caught = []
t1, c1 = time.perf_counter(), time.process_time()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with model:
        if {method!r} == "smc":
            idata = pm.sample_smc(random_seed=1, progressbar=False,
                                  compute_convergence_checks=False, **{smc!r})
        else:
            idata = pa.sample_ais(random_seed=1, progressbar=False, **{kwargs!r})
wall, cpu = time.perf_counter() - t1, time.process_time() - c1
pieces = timers.report() if timers else None
if {method!r} == "smc":
    lml = np.asarray(idata["sample_stats"]["log_marginal_likelihood"].values, dtype=object)
    sys.path.insert(0, {bench!r})
    from bench_evidence import _flat  # after the timing: this script's own import
    last = [[x for x in _flat(row) if np.isfinite(x)][-1] for row in lml]
    log_z, se = float(logsumexp(last) - np.log(len(last))), float("nan")
else:
    est = pa.log_evidence(idata)
    log_z, se = est.log_evidence, est.standard_error
print(json.dumps({{"import": t_import, "wall": wall, "cpu": cpu, "log_z": log_z, "se": se,
                  "exact": target.log_evidence, "pieces": pieces,
                  "warned": any(issubclass(w.category, pa.AnnealingWarning) for w in caught),
                  "attrs": {{k: idata.attrs.get(k) for k in ("backend", "num_steps")}}}}))
"""

# ``pa.ais(rbm)`` at its defaults in a new process; the RBM is bench_energy_auto's.
RBM_SNIPPET = """
import json, sys, time, warnings
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
import pymc_anneal as pa
t_import = time.perf_counter() - t0
sys.path.insert(0, {bench!r})
from bench_energy_auto import hard_rbm
rbm = hard_rbm()
t1, c1 = time.perf_counter(), time.process_time()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    idata = pa.ais(rbm, random_seed=1, progressbar=False)
wall, cpu = time.perf_counter() - t1, time.process_time() - c1
est = pa.log_evidence(idata)
print(json.dumps({{"import": t_import, "wall": wall, "cpu": cpu, "log_z": est.log_evidence,
                  "se": est.standard_error, "exact": {exact!r},
                  "num_steps": int(idata.attrs["num_steps"]),
                  "reruns": idata.attrs.get("auto_reruns"),
                  "warned": any(issubclass(w.category, pa.AnnealingWarning) for w in caught)}}))
"""

# The breakdown's pieces: (module, attribute, piece). A class attribute is "Class.method".
# Modules not yet imported (JAX's, imported during the first call) are patched when they
# are imported.
PIECES = [
    ("pymc_anneal.pymc.adapter", "model_path", "path"),
    ("pytensor.compile.maker", "FunctionMaker.__init__", "PyTensor"),
    ("pytensor.compile.maker", "FunctionMaker.create", "PyTensor"),
    ("pymc_anneal.driver.run", "_compile", "loop build"),
    ("jax._src.interpreters.mlir", "lower_jaxpr_to_module", "JAX lower"),
    ("jax._src.compiler", "backend_compile_and_load", "XLA"),
    ("pymc_anneal.driver.tuning", "tune", "pilot"),
    ("pymc_anneal.driver.run", "_anneal", "anneal"),
    ("pymc_anneal.diagnostics", "check_weights", "weights"),
    ("pymc_anneal.io", "to_datatree", "DataTree"),
]
# Imports during the call, each a piece (exclusive of the timed imports inside it)
IMPORT_PIECES = {"jax": "JAX import", "arviz_base": "arviz import",
                 "arviz_stats": "arviz import"}
PIECE_NAMES = ["import", "JAX import", "arviz import", "path", "PyTensor", "loop build", "JAX lower", "XLA", "wait bg",
               "pilot", "anneal", "weights", "DataTree", "other"]
PIECE_HELP = {
    "import": "import pymc + pymc_anneal (before the call)",
    "JAX import": "import jax during the call (exclusive of the timed pieces inside it)",
    "arviz import": "import arviz_base / arviz_stats during the call (exclusive of JAX's)",
    "path": "adapter.model_path: the model's path (its log densities' graphs)",
    "PyTensor": "pytensor FunctionMaker.__init__ + create: graph rewrites and linking",
    "loop build": "driver.run._compile, exclusive: jax_funcify, jax.jit tracing, precompile",
    "JAX lower": "jax mlir.lower_jaxpr_to_module (main thread)",
    "XLA": "jax compiler.backend_compile_and_load in the main thread",
    "wait bg": "waits on background compiles (backends.compile_in_background's events)",
    "pilot": "driver.tuning.tune, exclusive",
    "anneal": "driver.run._anneal, exclusive: the annealing passes",
    "weights": "diagnostics.check_weights (its first call imports arviz_stats: JAX, arviz)",
    "DataTree": "io.to_datatree",
    "other": "the rest of the call's wall time",
}


class Timers:
    """Exclusive wall time per piece of the main thread; inclusive time of the pieces that
    run in other threads (background compiles), kept apart."""

    def __init__(self):
        self.exclusive: dict[str, float] = {}
        self.background: dict[str, float] = {}
        self.stack: list[list] = []  # [piece, seconds of timed pieces inside it]
        self.start = time.perf_counter()

    def wrap(self, fn, piece: str):
        if getattr(fn, "_bench_piece", None):
            return fn

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            if threading.current_thread() is not threading.main_thread():
                try:
                    return fn(*args, **kwargs)
                finally:
                    self.background[piece] = (self.background.get(piece, 0.0)
                                              + time.perf_counter() - t0)
            frame = [piece, 0.0]
            self.stack.append(frame)
            try:
                return fn(*args, **kwargs)
            finally:
                total = time.perf_counter() - t0
                self.stack.pop()
                self.exclusive[piece] = self.exclusive.get(piece, 0.0) + total - frame[1]
                if self.stack:
                    self.stack[-1][1] += total

        timed._bench_piece = piece
        return timed

    def patch(self, module, attribute: str, piece: str) -> None:
        """Wrap ``module.attribute`` there and wherever a loaded module of the same package
        holds the same object (``from ... import name``)."""
        if "." in attribute:
            cls, name = attribute.split(".")
            owner = getattr(module, cls)
            setattr(owner, name, self.wrap(getattr(owner, name), piece))
            return
        original = getattr(module, attribute)
        timed = self.wrap(original, piece)
        package = module.__name__.split(".")[0]
        for mod in list(sys.modules.values()):
            if mod is None or not getattr(mod, "__name__", "").startswith(package):
                continue
            for name, value in list(vars(mod).items()):
                if value is original:
                    setattr(mod, name, timed)

    def install(self) -> Timers:
        """Patch :data:`PIECES` (now, or when their module is imported), and time the waits
        on background compiles."""
        import importlib
        import importlib.machinery

        from pymc_anneal import backends

        later: dict[str, list] = {}
        for module, attribute, piece in PIECES:
            if module in sys.modules:
                self.patch(importlib.import_module(module), attribute, piece)
            else:
                later.setdefault(module, []).append((attribute, piece))
        if later or IMPORT_PIECES:
            sys.meta_path.insert(0, _PatchOnImport(self, later))
        compile_in_background = backends.compile_in_background

        def timed_compile_in_background(compile_):
            done = compile_in_background(compile_)
            done.wait = self.wrap(done.wait, "wait bg")
            return done

        backends.compile_in_background = timed_compile_in_background
        self.start = time.perf_counter()
        return self

    def report(self) -> dict:
        """Exclusive seconds per piece, "other" (the rest since :meth:`install`), and the
        background threads' seconds under "bg <piece>"."""
        wall = time.perf_counter() - self.start
        pieces = dict(self.exclusive)
        pieces["other"] = wall - sum(self.exclusive.values())
        pieces.update({f"bg {k}": v for k, v in self.background.items()})
        return pieces


class _PatchOnImport:
    """A meta path finder that patches a module's attributes right after it is executed."""

    def __init__(self, timers: Timers, patches: dict[str, list]):
        self.timers, self.patches = timers, patches

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.patches and fullname not in IMPORT_PIECES:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        execute, timers = spec.loader.exec_module, self.timers
        if fullname in IMPORT_PIECES:  # the import itself is a piece
            execute = timers.wrap(execute, IMPORT_PIECES[fullname])

        def exec_module(module):
            execute(module)
            for attribute, piece in self.patches.get(fullname, []):
                timers.patch(module, attribute, piece)

        spec.loader.exec_module = exec_module
        return spec


def first_call(factory: str, method: str, kwargs: dict | None = None,
               breakdown: bool = False, code: str | None = None,
               home: str | None = None) -> dict:
    """The first call of ``method`` on the model in a new process with an empty HOME
    (``code``: another child script, e.g. :data:`RBM_SNIPPET` formatted; ``home``: this
    HOME instead, with what earlier processes left in it)."""
    with tempfile.TemporaryDirectory(prefix="bench_home_") as empty:
        env = {**os.environ, "HOME": home or empty}
        env.pop("PYTENSOR_FLAGS", None)
        env.pop("NUMBA_CACHE_DIR", None)
        if code is None:
            code = SNIPPET.format(root=str(REPO_ROOT), bench=str(BENCH_DIR), factory=factory,
                                  method=method, smc=SMC_KWARGS, kwargs=kwargs or {},
                                  breakdown=breakdown)
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=False)
        total = time.perf_counter() - t0
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["process"] = total
    return result


def _flat(x) -> list[float]:
    """An SMC chain's log marginal likelihoods: floats, or lists of them (an object array
    when the chains ran different numbers of stages)."""
    try:
        items = list(x)
    except TypeError:  # a number
        return [float(x)]
    return [v for y in items for v in _flat(y)]


def steady(model, exact: float, method: str, seed: int, kwargs: dict | None = None) -> dict:
    import numpy as np
    import pymc as pm
    from scipy.special import logsumexp

    import pymc_anneal as pa

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0, c0 = time.perf_counter(), time.process_time()
        with model:
            if method == "smc":
                idata = pm.sample_smc(random_seed=seed, progressbar=False,
                                      compute_convergence_checks=False, **SMC_KWARGS)
            else:
                idata = pa.sample_ais(random_seed=seed, progressbar=False, **(kwargs or {}))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if method == "smc":
        lml = np.asarray(idata["sample_stats"]["log_marginal_likelihood"].values, dtype=object)
        last = [[x for x in _flat(row) if np.isfinite(x)][-1] for row in lml]
        log_z, se = float(logsumexp(last) - np.log(len(last))), float("nan")
    else:
        est = pa.log_evidence(idata)
        log_z, se = est.log_evidence, est.standard_error
    return {"wall": wall, "cpu": cpu, "error": log_z - exact, "se": se,
            "warned": any(issubclass(w.category, pa.AnnealingWarning) for w in caught),
            "num_steps": idata.attrs.get("num_steps")}


def table(headers: list[str], rows: list[list], align: str) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def fmt(row):
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                         for c, w, a in zip(row, widths, align)).rstrip()

    return "\n".join([fmt(cells[0]), "  ".join("-" * w for w in widths)]
                     + [fmt(r) for r in cells[1:]])


def fmt(x, digits=2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}f}"


def median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else math.nan


def source_fingerprint() -> str:
    import hashlib

    digest = hashlib.sha256()
    for path in sorted((REPO_ROOT / "pymc_anneal").rglob("*.py")):
        digest.update(path.relative_to(REPO_ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two models, one repetition")
    parser.add_argument("--models", help=f"comma-separated subset of {list(MODELS)}")
    parser.add_argument("--reps", type=int, help="steady-state repetitions (default 3)")
    parser.add_argument("--cold-reps", type=int, default=1,
                        help="first calls in new processes per method and model (default 1)")
    parser.add_argument("--high-dim", action="store_true",
                        help="add the 100-d linear regression (several minutes)")
    parser.add_argument("--high-dim-prior", action="store_true",
                        help="with --high-dim, also base='prior' (4-5 minutes a call)")
    parser.add_argument("--coal", action="store_true",
                        help="add the coal-mining change point (ours and SMC)")
    parser.add_argument("--rbm", action="store_true",
                        help="add pa.ais(rbm) at its defaults on the hard digits RBM")
    parser.add_argument("--rbm-reps", type=int,
                        help="steady-state repetitions on the RBM (default: --reps)")
    parser.add_argument("--breakdown", action="store_true",
                        help="time ours' first call piece by piece on each small model")
    parser.add_argument("--all", action="store_true",
                        help="--high-dim --coal --rbm --breakdown --warm-home (with --quick: "
                             "--breakdown)")
    parser.add_argument("--skip-small", action="store_true",
                        help="skip the small models against SMC (their breakdown still runs)")
    parser.add_argument("--warm-home", action="store_true",
                        help="the small models' first call in a second process whose HOME "
                             "holds what the first left (a script run again)")
    parser.add_argument("--json", type=Path, help="write the raw results here")
    args = parser.parse_args(argv)
    if args.all:
        args.breakdown = True
        if not args.quick:
            args.high_dim = args.coal = args.rbm = args.warm_home = True
    args.names = args.models.split(",") if args.models else (
        QUICK_MODELS if args.quick else list(MODELS))
    unknown = [n for n in args.names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; choose from {list(MODELS)}")
    args.reps = args.reps or (1 if args.quick else 3)
    args.rbm_reps = args.rbm_reps or args.reps
    return args


def print_header() -> tuple[str, float]:
    import numba
    import pymc as pm
    import pytensor

    import pymc_anneal as pa
    from pymc_anneal.backends import default_backend

    started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    load_start = os.getloadavg()[0]
    print(f"bench_evidence {started} {platform.node()} cores={os.cpu_count()} "
          f"loadavg={' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"python {platform.python_version()} pymc {pm.__version__} pytensor "
          f"{pytensor.__version__} numba {numba.__version__} pymc_anneal {pa.__version__} "
          f"(src {source_fingerprint()}), backend auto = {default_backend()}, BLAS threads 1")
    print(f"ours: sample_ais() at its defaults; SMC: sample_smc({SMC_KWARGS})\n", flush=True)
    return started, load_start


def settings_for(args) -> list[tuple]:
    """(name, factory, label, kwargs, kind) of every model run against SMC."""
    settings = [] if args.skip_small else [(name, MODELS[name], "ais", {}, "small")
                                           for name in args.names]
    if args.high_dim:
        settings += [("linreg100", HIGH_DIM["linreg100"], "ais", {}, "highdim"),
                     ("linreg100", HIGH_DIM["linreg100"], "gauss", {"base": "gaussian"},
                      "highdim")]
        if args.high_dim_prior:
            settings += [("linreg100", HIGH_DIM["linreg100"], "prior", {"base": "prior"},
                          "highdim")]
    if args.coal:
        settings += [("coal", COAL, "ais", {}, "coal")]
    return settings


def print_cold(method: str, r: dict) -> None:
    if "wall" not in r:
        print(f"  cold {method:<5} FAILED: {r.get('error')}", flush=True)
        return
    print(f"  cold {method:<5} first call {r['wall']:6.2f} s (cpu {r['cpu']:5.2f} "
          f"s), process {r['process']:6.2f} s, import {r['import']:.2f} s, "
          f"error {r['log_z'] - r['exact']:+.4f}"
          + (f" K={r['num_steps']}" if r.get("num_steps") else "")
          + ("  [warned]" if r["warned"] else ""), flush=True)


def print_steady(method: str, r: dict, what: str = "steady") -> None:
    print(f"  {what} {method:<5} {r['wall']:6.2f} s (cpu {r['cpu']:5.2f} s) "
          f"error {r['error']:+.4f}" + (f" K={r['num_steps']}" if r.get("num_steps") else "")
          + ("  [warned]" if r["warned"] else ""), flush=True)


def run_setting(setting: tuple, args, results: dict) -> None:
    """First calls in new processes (ours and SMC alternately), then the steady state."""
    from tests import analytic

    name, factory, label, kwargs, kind = setting
    target = eval(factory, {"analytic": analytic})
    d = getattr(target, "num_dims", None) or COAL_DIMS
    print(f"[{name} / {label}] d={d} exact log Z={target.log_evidence:.4f}", flush=True)
    res = results.setdefault(f"{name}/{label}", {"d": d, "kind": kind, "cold": {},
                                                  "steady": {}})
    for rep in range(args.cold_reps):
        for method in ([label, "smc"] if rep % 2 == 0 else ["smc", label]):
            if method == "smc" and label != "ais":
                continue  # SMC once per model
            r = first_call(factory, method, kwargs if method != "smc" else None)
            res["cold"].setdefault(method, []).append(r)
            print_cold(method, r)
    model = target.build()
    methods = [label] if label != "ais" else [label, "smc"]
    for method in methods:  # warm-up
        r = steady(model, target.log_evidence, method, 0, kwargs if method != "smc" else None)
        print_steady(method, r, "warm-up")
    for rep in range(args.reps):
        for method in (methods if rep % 2 == 0 else methods[::-1]):
            r = steady(model, target.log_evidence, method, 1000 + rep,
                       kwargs if method != "smc" else None)
            res["steady"].setdefault(method, []).append(r)
            print_steady(method, r)
    print(flush=True)


def run_rbm(args, results: dict) -> None:
    """``pa.ais(rbm)`` at its defaults: first call in a new process, then the steady state
    (one warm-up call, then ``--rbm-reps`` calls with new seeds)."""
    sys.path.insert(0, str(BENCH_DIR))
    from bench_energy_auto import hard_rbm, one_run

    rbm = hard_rbm()
    exact = float(rbm.exact_log_z())
    print(f"[hard RBM / ais] 64 x 20 binary RBM, exact log Z={exact:.4f} (enumerated)",
          flush=True)
    res = results.setdefault("rbm/ais", {"d": "64+20", "kind": "rbm", "cold": {},
                                          "steady": {}})
    code = RBM_SNIPPET.format(root=str(REPO_ROOT), bench=str(BENCH_DIR), exact=exact)
    for _ in range(args.cold_reps):
        r = first_call("", "ais", code=code)
        res["cold"].setdefault("ais", []).append(r)
        print_cold("ais", r)
    one_run(rbm, exact, 0)  # warm-up
    for rep in range(args.rbm_reps):
        c0 = time.process_time()
        run = one_run(rbm, exact, 1000 + rep)
        r = {"wall": run["seconds"], "cpu": time.process_time() - c0, "error": run["error"],
             "se": run["se"], "warned": bool(run["warned"]), "num_steps": run["K"],
             "reruns": run["reruns"]}
        res["steady"].setdefault("ais", []).append(r)
        print_steady("ais", r)
    print(flush=True)


def run_breakdown(args) -> dict:
    """Ours' first call on each small model, piece by piece, one new process each."""
    print("[breakdown] ours' first call, timers on the pieces (one new process per model)",
          flush=True)
    rows = {}
    for name in args.names:
        r = first_call(MODELS[name], "ais", breakdown=True)
        rows[name] = r
        if "wall" not in r:
            print(f"  {name:<15} FAILED: {r.get('error')}", flush=True)
            continue
        shown = {k: v for k, v in r["pieces"].items() if v >= 0.05}
        print(f"  {name:<15} import {r['import']:.2f} s, call {r['wall']:.2f} s: "
              + ", ".join(f"{k} {v:.2f}" for k, v in shown.items()), flush=True)
    print(flush=True)
    return rows


def report_against_smc(results: dict, reps: int) -> None:
    print("=" * 96)
    print("First call in a new process with empty caches, and steady state (median of "
          f"{reps}); errors in nats; ratios ours/SMC measured in this run")
    print("=" * 96)
    rows, ratios = [], []
    for key, res in results.items():
        if res["kind"] == "rbm":
            continue
        name, label = key.split("/")
        smc_res = results.get(f"{name}/ais", {})
        ours_first = median(r["wall"] for r in res["cold"].get(label, []) if "wall" in r)
        smc_first = median(r["wall"] for r in smc_res.get("cold", {}).get("smc", [])
                           if "wall" in r)
        ratio = ours_first / smc_first
        if res["kind"] == "small":
            ratios.append(ratio)
        st_ours = res["steady"].get(label, [])
        st_smc = smc_res.get("steady", {}).get("smc", [])
        steady_ratio = (median(r["wall"] for r in st_ours)
                        / median(r["wall"] for r in st_smc)) if st_smc else math.nan
        verdict = " ".join(f"{'<=' if ratio <= t else '>'}{t}" for t in TARGETS)
        rows.append([name, res["d"], label, fmt(ours_first), fmt(smc_first), fmt(ratio),
                     verdict, fmt(median(r["wall"] for r in st_ours)),
                     fmt(median(r["wall"] for r in st_smc)), fmt(steady_ratio),
                     fmt(max((abs(r["error"]) for r in st_ours), default=math.nan), 4),
                     fmt(max((abs(r["error"]) for r in st_smc), default=math.nan), 4),
                     "/".join(str(r["num_steps"]) for r in st_ours),
                     sum(r["warned"] for r in st_ours)])
    print(table(["model", "d", "ours", "1st ours s", "1st SMC s", "ratio", "targets 1.0 / 0.2",
                 "steady ours s", "steady SMC s", "steady ratio", "max|err| ours",
                 "max|err| SMC", "K", "warned"], rows, "lrlrrrlrrrrrrr"))
    if ratios:
        geo = math.exp(statistics.fmean(math.log(r) for r in ratios))
        print(f"\nsmall models, default call: first-call ratio ours/SMC geometric mean "
              f"{geo:.2f}, max {max(ratios):.2f} (targets {TARGETS[0]} and {TARGETS[1]})")
    for key, label in [("linreg100/ais", "the defaults"), ("linreg100/gauss", "base='gaussian'"),
                       ("linreg100/prior", "base='prior'")]:
        steady_runs = results.get(key, {}).get("steady", {}).get(key.split("/")[1])
        if steady_runs:
            worst = max(abs(r["error"]) for r in steady_runs)
            print(f"d = 100, {label}: max |error| {worst:.3f} nat (aim <= {HIGH_DIM_TOLERANCE})")


def report_rbm(results: dict) -> None:
    res = results.get("rbm/ais")
    if res is None:
        return
    cold = [r for r in res["cold"].get("ais", []) if "wall" in r]
    st = res["steady"].get("ais", [])
    rows = [["first call (seed 1)", fmt(r["wall"], 1), fmt(r["log_z"] - r["exact"], 4),
             fmt(r["se"], 4), r["num_steps"], r.get("reruns"), "yes" if r["warned"] else "no",
             "- (SMC takes no energy model)"] for r in cold]
    rows += [[f"steady (seed {1000 + i})", fmt(r["wall"], 1), fmt(r["error"], 4),
              fmt(r["se"], 4), r["num_steps"], r.get("reruns"), "yes" if r["warned"] else "no",
              "- (SMC takes no energy model)"] for i, r in enumerate(st)]
    print("\nHard digits RBM (64 x 20), pa.ais(rbm) at its defaults; error vs the exact "
          f"log Z (aim: within {RBM_TOLERANCE} nat, no warning)")
    print(table(["call", "s", "error", "SE", "K", "reruns", "warned", "peer"], rows,
                "lrrrrrll"))


def report_breakdown(rows: dict, results: dict) -> None:
    ok = {name: r for name, r in rows.items() if "wall" in r}
    if not ok:
        return
    print("\nFixed cost of ours' first call, piece by piece (exclusive seconds; import + "
          "the pieces = total; bg XLA: background compiles, overlapped, not in the sum;\n"
          "call w/o timers: the same first call without timers, above, for the overhead)")
    table_rows, shares = [], {p: [] for p in PIECE_NAMES}
    for name, r in ok.items():
        pieces = {"import": r["import"], **r["pieces"]}
        total = r["import"] + r["wall"]
        for p in PIECE_NAMES:
            shares[p].append(pieces.get(p, 0.0) / total)
        plain = median(r["wall"] for r in results.get(f"{name}/ais", {}).get("cold", {})
                       .get("ais", []) if "wall" in r)
        table_rows.append([name, fmt(total), fmt(r["wall"]), fmt(plain)]
                          + [fmt(pieces.get(p, 0.0)) for p in PIECE_NAMES]
                          + [fmt(pieces.get("bg XLA", 0.0))])
    table_rows.append(["median share %", "100", "-", "-"]
                      + [fmt(100 * median(shares[p]), 0) for p in PIECE_NAMES] + ["-"])
    print(table(["model", "total", "call", "call w/o timers"] + PIECE_NAMES + ["bg XLA"],
                table_rows, "l" + "r" * (len(PIECE_NAMES) + 4)))
    print("pieces: " + "; ".join(f"{p}: {PIECE_HELP[p]}" for p in PIECE_NAMES))


def run_warm_home(args) -> dict:
    """Each small model's first call in a new process, ours and SMC's, in a HOME where one
    process of each ran before (PyTensor's compiled C, Numba's cache and JAX's persistent
    compilation cache, which ``pymc_anneal`` keeps beside PyTensor's: a script run again)."""
    rows = {}
    for name in args.names:
        with tempfile.TemporaryDirectory(prefix="bench_home_") as home:
            for method in ("ais", "smc"):  # the first processes fill the caches
                first_call(MODELS[name], method, home=home)
            rows[name] = {m: first_call(MODELS[name], m, home=home) for m in ("ais", "smc")}
        ours, smc = rows[name]["ais"].get("wall"), rows[name]["smc"].get("wall")
        print(f"  [{name}] second process: ours {fmt(ours)} s, SMC {fmt(smc)} s", flush=True)
    return rows


def report_warm_home(rows: dict) -> None:
    if not rows:
        return
    print("\nFirst call in a second process (the HOME of a first one: caches filled)")
    table_rows, ratios = [], []
    for name, r in rows.items():
        ours, smc = r["ais"].get("wall", math.nan), r["smc"].get("wall", math.nan)
        ratios.append(ours / smc)
        table_rows.append([name, fmt(ours), fmt(smc), fmt(ours / smc)])
    print(table(["model", "ours s", "SMC s", "ratio"], table_rows, "lrrr"))
    finite = [x for x in ratios if math.isfinite(x)]
    if finite:
        geo = math.exp(statistics.fmean(math.log(x) for x in finite))
        print(f"geometric mean ratio {geo:.2f}")


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    started, load_start = print_header()
    results: dict = {}
    t_start = time.perf_counter()
    for setting in settings_for(args):
        run_setting(setting, args, results)
    if args.rbm:
        run_rbm(args, results)
    breakdown = run_breakdown(args) if args.breakdown else {}
    warm = run_warm_home(args) if args.warm_home else {}
    report_against_smc(results, args.reps)
    report_warm_home(warm)
    report_rbm(results)
    report_breakdown(breakdown, results)
    print(f"\ntotal {(time.perf_counter() - t_start) / 60:.1f} min; load average "
          f"{load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")
    if args.json:
        args.json.write_text(json.dumps({"started": started, "results": results,
                                         "breakdown": breakdown}, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
