#!/usr/bin/env python
"""Benchmark: the evidence of every posteriordb posterior that has a PyMC port, by
``pa.sample_ais``, ``pm.sample_smc`` and ``pa.bridge_sampling`` on NUTS draws.

``PATH`` is a local copy of the posteriordb repository (twiecki/posteriordb: the folder
holding ``posterior_database/``, or that folder itself). Its ports are read at run time:
``posteriors/NAME.json`` names ``model_name`` and ``data_name``; the data is
``data/data/DATA.json.zip`` (one JSON object); ``models/pymc/MODEL.py`` defines
``make_model(data) -> pm.Model``. Each port is executed with ``import pymc as pm``,
``import numpy as np`` and ``import pytensor.tensor as pt`` in its namespace (some ports
assume them). Nothing of the corpus is copied into the project.

First, one new Python process builds every selected posterior's model (a posterior whose
data is missing, whose port raises, or whose build takes longer than ``--timeout`` is
listed as such, with its error line) and counts ``d``, the unconstrained parameters
(continuous value variables; discrete ones are counted apart). Then, for each posterior
that built, one after the other (never in parallel: the machine has 2 cores), each run in
a **new Python process** with a time cap (``--timeout``, default 300 s):

* ``ais``: ``pa.sample_ais(random_seed=s, progressbar=False)`` at its defaults, seeds 1
  and 2 (two processes); the estimate and standard error of ``pa.log_evidence``;
* ``smc``: ``pm.sample_smc(draws=2000, chains=2, cores=1, random_seed=1,
  progressbar=False, compute_convergence_checks=False)`` (as ``bench_evidence.py`` runs
  it); the estimate is the last finite stage's ``log_marginal_likelihood`` of each chain,
  averaged in the exponent (as ``bench_evidence.py`` reads it); its "error" is only the
  chains' spread (standard deviation of the two chains' values over sqrt(2)): PyMC gives
  none;
* ``bridge``: ``pm.sample(random_seed=1, progressbar=False)`` at PyMC's defaults, then
  ``pa.bridge_sampling(idata, model, random_seed=1)``; its time includes NUTS'.

Each run records the estimate, its standard error, the warnings raised during the call
(``warnings.catch_warnings(record=True)``: class and first line, with counts; PyMC's
logged warnings are kept apart), the call's wall time (after the imports and the model's
build), and any error: the exception's type, first line, where it was raised, and whether
it is one of ``pymc_anneal``'s own (``pymc_anneal.exceptions.AnnealingError`` and
subclasses: "refused") or anything else ("raw": a trace from PyTensor, JAX, NumPy, PyMC or
a bug). A process killed by the cap is a "timeout"; one that died without a result is a
"crash".

Models with ``pm.Flat`` / ``pm.HalfFlat`` priors have no evidence. They are run as their
**proper neighbours**: while the port builds, ``pm.Flat`` is replaced by a function that
makes ``pm.Normal(name, mu=0, sigma=100, **kwargs)`` and ``pm.HalfFlat`` by
``pm.HalfNormal(name, sigma=100, **kwargs)`` (shape, dims, size and other keywords kept),
and they are reported in a separate table (``--no-flat`` leaves them out).

The report (markdown) gives per posterior: ``d``; each estimate with its standard error
(flagged ``(W)`` when an ``AnnealingWarning`` was raised, ``(w)`` for any other warning
except Deprecation/Future warnings); SMC's time and each method's time over SMC's in the
same run; the disagreements in combined standard errors, ``|a - b| / sqrt(se_a^2 +
se_b^2)``, of AIS seed 1 against seed 2 and of AIS seed 1 against bridge sampling; AIS
seed 1 minus SMC in nats; and every error. Then the warnings and errors in full, and a
summary: runs ok, warned, refused (our own error), raw error, timeout, crashed; and the
median time ratio AIS/SMC.

By default the children share this user's ``HOME`` (PyTensor's, Numba's and JAX's caches
as they are: earlier runs may have filled them); ``--cold`` gives each child an empty
temporary ``HOME`` instead (every compile from scratch: the first call a new user meets).
BLAS threads are capped at 1 in every process (``OMP_NUM_THREADS=1`` etc.); JAX uses its
own thread pool, and ``pm.sample`` its default chains and cores, as a user gets them.

Usage::

    python benchmarks/bench_posteriordb.py PATH --list            # posteriors and their d
    python benchmarks/bench_posteriordb.py PATH --only dogs-dogs,garch-garch11 \
        --timeout 120 --output runs.json
    python benchmarks/bench_posteriordb.py --report runs.json     # re-print, no rerun

Options: ``--only NAME[,NAME...]``, ``--min-d N``, ``--max-d N``, ``--timeout S``,
``--methods ais,smc,bridge`` (``ais1``: seed 1 only, a quick scan), ``--flat/--no-flat``,
``--cold``, ``--output FILE.json`` (raw results, written after every run), ``--report
FILE.json``, ``--list``. A SIGTERM to the script kills the child it is running.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import datetime as _dt  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import selectors  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).resolve()
DEFAULT_TIMEOUT = 300.0
METHODS = ("ais", "smc", "bridge")
METHOD_CHOICES = METHODS + ("ais1",)
AIS_SEEDS = (1, 2)
SEED = 1  # SMC's, NUTS' and the bridge's
SMC_KWARGS = {"draws": 2000, "chains": 2, "cores": 1}
NEIGHBOUR_SCALE = 100.0
PRELUDE = "import pymc as pm\nimport numpy as np\nimport pytensor.tensor as pt\n"
RESULT_TAG = "@@bench_posteriordb "
NOISE = {"DeprecationWarning", "PendingDeprecationWarning", "FutureWarning"}
"""Warning classes listed but not counted as "warned" (API noise, not about the result)."""


# --------------------------------------------------------------------------- the corpus


def corpus_root(path: str | Path) -> Path:
    """``posterior_database`` inside ``path`` (or ``path`` itself)."""
    path = Path(path).expanduser().resolve()
    for candidate in (path / "posterior_database", path):
        if (candidate / "posteriors").is_dir() and (candidate / "models" / "pymc").is_dir():
            return candidate
    raise SystemExit(f"{path}: no posterior_database/posteriors and models/pymc here; "
                     "give the folder of a local copy of twiecki/posteriordb")


def corpus(root: Path) -> list[dict]:
    """The posteriors whose model has a PyMC port, by name."""
    entries = []
    for path in sorted((root / "posteriors").glob("*.json")):
        try:
            post = json.loads(path.read_text())
            name, model, data = post["name"], post["model_name"], post["data_name"]
        except (OSError, ValueError, KeyError) as exc:
            print(f"skipped {path.name}: unreadable ({type(exc).__name__}: {exc})",
                  file=sys.stderr)
            continue
        port = root / "models" / "pymc" / f"{model}.py"
        if port.exists():
            entries.append({"name": name, "model": model, "data_name": data,
                            "port": str(port),
                            "data": str(root / "data" / "data" / f"{data}.json.zip")})
    return entries


# --------------------------------------------------------------------------- child side


class _Neighbour:
    """Stands for ``pm.Flat`` / ``pm.HalfFlat`` while a port builds: makes the proper
    neighbour ``dist(name, **params, **kwargs)`` and records the variable's name."""

    def __init__(self, dist, params: dict, used: list):
        self.target, self.params, self.used = dist, params, used

    def __call__(self, name, *args, **kwargs):
        if args:
            raise TypeError(f"Flat/HalfFlat take no parameters, got {args!r}")
        self.used.append(str(name))
        return self.target(name, **self.params, **kwargs)

    def dist(self, *args, **kwargs):
        if args:
            raise TypeError(f"Flat/HalfFlat take no parameters, got {args!r}")
        self.used.append("<dist>")
        return self.target.dist(**self.params, **kwargs)


def load_data(entry: dict) -> dict:
    import zipfile

    with zipfile.ZipFile(entry["data"]) as archive:
        names = [n for n in archive.namelist() if not n.endswith("/")]
        return json.loads(archive.read(names[0]))


def build(entry: dict):
    """The port's model on its data, Flat/HalfFlat made proper; returns (model, the names
    of the variables made proper)."""
    import pymc as pm

    data = load_data(entry)
    used: list[str] = []
    patches = {"Flat": _Neighbour(pm.Normal, {"mu": 0.0, "sigma": NEIGHBOUR_SCALE}, used),
               "HalfFlat": _Neighbour(pm.HalfNormal, {"sigma": NEIGHBOUR_SCALE}, used)}
    modules = [pm, pm.distributions]
    saved = [(m, k, getattr(m, k)) for m in modules for k in patches if hasattr(m, k)]
    for m, k, _ in saved:
        setattr(m, k, patches[k])
    try:
        namespace = {"__name__": f"posteriordb_port_{entry['model']}"}
        exec(PRELUDE, namespace)
        exec(compile(Path(entry["port"]).read_text(), entry["port"], "exec"), namespace)
        model = namespace["make_model"](data)
    finally:
        for m, k, original in saved:
            setattr(m, k, original)
    if not isinstance(model, pm.Model):
        raise TypeError(f"make_model returned {type(model).__name__}, not a pm.Model")
    return model, used


def describe(model) -> dict:
    """Sizes of the unconstrained space: continuous and discrete value variables."""
    import numpy as np

    point = model.initial_point()
    d = discrete = 0
    for value in point.values():
        value = np.asarray(value)
        if value.dtype.kind in "iub":
            discrete += int(value.size)
        else:
            d += int(value.size)
    return {"d": d, "discrete": discrete}


def _package(filename: str) -> str:
    """Where a traceback frame's file lives, for the reader: a package, or the port."""
    path = str(filename)
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    if path.startswith(str(REPO_ROOT / "pymc_anneal")):
        return "pymc_anneal"
    if "/models/pymc/" in path:
        return "port"
    return Path(path).name


def _head_tail(lines: list[str], keep: int = 40) -> list[str]:
    return lines if len(lines) <= 2 * keep else lines[:keep] + ["..."] + lines[-keep:]


def error_info(exc: BaseException, stage: str) -> dict:
    """Type, first line, ours or raw, and where it was raised."""
    import traceback

    try:
        from pymc_anneal.exceptions import AnnealingError
        ours = isinstance(exc, AnnealingError)
    except Exception:  # noqa: BLE001 - the package itself may not import
        ours = False
    frames = traceback.extract_tb(exc.__traceback__)
    last = frames[-1] if frames else None
    ours_frames = [f for f in frames if _package(f.filename) == "pymc_anneal"]
    lines = str(exc).strip().splitlines()
    return {
        "stage": stage, "type": type(exc).__name__,
        "module": type(exc).__module__, "kind": "refused" if ours else "raw",
        "line": lines[0] if lines else "",
        "origin": (f"{_package(last.filename)}:{Path(last.filename).name}:{last.lineno}"
                   if last else "?"),
        "via": (f"{Path(ours_frames[-1].filename).relative_to(REPO_ROOT)}:"
                f"{ours_frames[-1].lineno} in {ours_frames[-1].name}" if ours_frames else None),
        "traceback": _head_tail("".join(traceback.format_exception(exc)).splitlines()),
    }


def _warnings(caught) -> list:
    """[class, first line, count, ours] for each distinct warning."""
    try:
        from pymc_anneal.exceptions import AnnealingWarning
    except Exception:  # noqa: BLE001
        AnnealingWarning = ()  # noqa: N806
    seen: dict = {}
    for w in caught:
        lines = str(w.message).strip().splitlines()
        key = (w.category.__name__, lines[0] if lines else "")
        if key not in seen:
            seen[key] = [key[0], key[1], 0,
                         bool(AnnealingWarning) and issubclass(w.category, AnnealingWarning)]
        seen[key][2] += 1
    return list(seen.values())


class _LogRecords:
    """Collects the WARNING records of PyMC's and PyTensor's loggers during a call."""

    def __init__(self):
        import logging

        self.records: dict = {}
        self.handler = logging.Handler(logging.WARNING)
        self.handler.emit = self._emit
        self.loggers = [logging.getLogger(n) for n in ("pymc", "pytensor")]

    def _emit(self, record):
        try:
            lines = record.getMessage().strip().splitlines()
        except Exception:  # noqa: BLE001
            lines = [str(record.msg)]
        key = f"{record.levelname}: {lines[0] if lines else ''}"
        self.records[key] = self.records.get(key, 0) + 1

    def __enter__(self):
        for logger in self.loggers:
            logger.addHandler(self.handler)
        return self

    def __exit__(self, *exc):
        for logger in self.loggers:
            logger.removeHandler(self.handler)
        return False


def _scalar_attrs(attrs) -> dict:
    out = {}
    for key, value in dict(attrs).items():
        try:
            text = json.dumps(value, default=float)
        except (TypeError, ValueError):
            continue
        if len(text) <= 400:
            out[key] = json.loads(text)
    return out


def _flat(x) -> list[float]:
    """An SMC chain's log marginal likelihoods: floats, or lists of them (as
    ``bench_evidence._flat``)."""
    try:
        items = list(x)
    except TypeError:
        return [float(x)]
    return [v for y in items for v in _flat(y)]


def _smc_estimate(idata):
    import numpy as np
    from scipy.special import logsumexp

    lml = np.asarray(idata["sample_stats"]["log_marginal_likelihood"].values, dtype=object)
    last = [[x for x in _flat(row) if np.isfinite(x)][-1] for row in lml]
    spread = float(np.std(last, ddof=1) / np.sqrt(len(last))) if len(last) > 1 else math.nan
    return float(logsumexp(last) - np.log(len(last))), spread, [float(x) for x in last]


def _run_method(model, method: str, seed: int, out: dict) -> None:
    """One method's call on the model; fills ``out`` (raises on error, with
    ``out["stage"]`` saying where)."""
    import warnings

    import pymc as pm

    import pymc_anneal as pa

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, _LogRecords() as logs:
        warnings.simplefilter("always")
        try:
            if method == "ais":
                out["stage"] = "sample_ais"
                idata = pa.sample_ais(model=model, random_seed=seed, progressbar=False)
                out["stage"] = "log_evidence"
                est = pa.log_evidence(idata)
                out.update(log_z=est.log_evidence, se=est.standard_error,
                           extra={"chain_sd": est.chain_sd, "ess": est.ess,
                                  "pareto_k": est.pareto_k,
                                  "attrs": _scalar_attrs(idata.attrs)})
            elif method == "smc":
                out["stage"] = "sample_smc"
                idata = pm.sample_smc(model=model, random_seed=seed, progressbar=False,
                                      compute_convergence_checks=False, **SMC_KWARGS)
                out["stage"] = "estimate"
                log_z, spread, chains = _smc_estimate(idata)
                out.update(log_z=log_z, se=spread, extra={"chains": chains})
            elif method == "bridge":
                out["stage"] = "pm.sample"
                draws = pm.sample(model=model, random_seed=seed, progressbar=False)
                out["nuts_wall"] = time.perf_counter() - t0
                out["nuts_logged"] = dict(logs.records)
                out["nuts_warnings"] = _warnings(caught)
                del caught[:]
                logs.records.clear()
                out["stage"] = "bridge_sampling"
                result = pa.bridge_sampling(draws, model, random_seed=seed)
                out["stage"] = "log_evidence"
                est = pa.log_evidence(result)
                out.update(log_z=est.log_evidence, se=est.standard_error,
                           extra={"chain_sd": est.chain_sd, "ess": est.ess,
                                  "pareto_k": est.pareto_k,
                                  "attrs": _scalar_attrs(result.attrs)})
            else:
                raise ValueError(f"unknown method {method!r}")
        finally:
            out["wall"] = time.perf_counter() - t0
            out["warnings"] = _warnings(caught)
            out["logged"] = dict(logs.records)


def _emit(result: dict) -> None:
    print(RESULT_TAG + json.dumps(result, default=_json_default), flush=True)


def _json_default(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


def child_inspect(entries: list[dict]) -> None:
    """Build each posterior's model in turn; one result line each."""
    import logging

    t0 = time.perf_counter()
    import pymc  # noqa: F401 - timed with the first build

    logging.getLogger("pymc").setLevel(logging.ERROR)
    first = True
    for entry in entries:
        result = {"name": entry["name"]}
        start = t0 if first else time.perf_counter()
        first = False
        if not Path(entry["data"]).exists():
            _emit({**result, "status": "no data",
                   "error": {"line": f"missing {Path(entry['data']).name}"}})
            continue
        try:
            model, used = build(entry)
            result.update(describe(model), flat_vars=used, status="ok")
        except Exception as exc:  # noqa: BLE001 - every port error is a result
            result.update(status="build error", error=error_info(exc, "build"))
        result["seconds"] = time.perf_counter() - start
        _emit(result)


def child_run(spec: dict) -> None:
    """One method on one posterior, in this new process."""
    import logging

    out: dict = {"method": spec["method"], "seed": spec["seed"]}
    t0 = time.perf_counter()
    sys.path.insert(0, str(REPO_ROOT))
    try:
        out["stage"] = "import"
        import pymc  # noqa: F401

        import pymc_anneal  # noqa: F401

        for name in ("pymc", "pytensor"):
            logging.getLogger(name).setLevel(logging.WARNING)
        out["import"] = time.perf_counter() - t0
        out["stage"] = "build"
        t1 = time.perf_counter()
        model, used = build(spec["entry"])
        out.update(describe(model), flat_vars=used, build=time.perf_counter() - t1)
        _run_method(model, spec["method"], spec["seed"], out)
        out["status"] = "ok"
    except Exception as exc:  # noqa: BLE001 - every error is a result
        out["status"] = "error"
        out["error"] = error_info(exc, out.get("stage", "?"))
    out["process"] = time.perf_counter() - t0
    _emit(out)


# --------------------------------------------------------------------------- parent side


@contextlib.contextmanager
def child_env(cold: bool):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                      env.get("PYTHONPATH")]))
    if not cold:
        yield env
        return
    with tempfile.TemporaryDirectory(prefix="bench_pdb_home_") as home:
        env["HOME"] = home
        env.pop("PYTENSOR_FLAGS", None)
        env.pop("NUMBA_CACHE_DIR", None)
        env.pop("XDG_CACHE_HOME", None)
        yield env


def _kill(proc: subprocess.Popen) -> None:
    """End the child and what it started (its own session: our process group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.wait(timeout=30)


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def run_child(spec: dict, timeout: float, cold: bool) -> dict:
    """``child_run`` in a new process with a time cap."""
    with child_env(cold) as env, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, str(SCRIPT), "--_child", "run",
                                 json.dumps(spec)], stdout=subprocess.PIPE, stderr=err,
                                env=env, start_new_session=True, text=True)
        try:
            stdout, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            return {"method": spec["method"], "seed": spec["seed"], "status": "timeout",
                    "process": time.perf_counter() - t0,
                    "error": {"kind": "timeout", "type": "timeout",
                              "line": f"killed after {timeout:.0f} s"}}
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # stray workers of the child, if any
        total = time.perf_counter() - t0
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            result = json.loads(line[len(RESULT_TAG):])
            result["process"] = total
            return result
    return {"method": spec["method"], "seed": spec["seed"], "status": "crash",
            "process": total,
            "error": {"kind": "crash", "type": f"exit {proc.returncode}",
                      "line": _last_line(stderr) or "no output",
                      "traceback": _head_tail(stderr.strip().splitlines())}}


def inspect_all(entries: list[dict], timeout: float, cold: bool) -> dict:
    """Build every entry's model in one child (a new one after a build that hangs or
    kills it); returns {name: result}."""
    results: dict = {}
    pending = list(entries)
    while pending:
        with child_env(cold) as env, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen([sys.executable, str(SCRIPT), "--_child", "inspect",
                                     json.dumps(pending)], stdout=subprocess.PIPE,
                                    stderr=err, env=env, start_new_session=True)
            selector = selectors.DefaultSelector()
            selector.register(proc.stdout, selectors.EVENT_READ)
            buffer, deadline = b"", time.monotonic() + timeout
            while pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    _kill(proc)
                    results[pending[0]["name"]] = {
                        "name": pending[0]["name"], "status": "build timeout",
                        "error": {"line": f"no model after {timeout:.0f} s"}}
                    print(f"  {pending[0]['name']}: build timeout", flush=True)
                    pending.pop(0)
                    break
                if not selector.select(left):
                    continue
                chunk = os.read(proc.stdout.fileno(), 1 << 16)
                if not chunk:  # the child ended before the pending entries
                    proc.wait()
                    err.seek(0)
                    line = _last_line(err.read().decode(errors="replace"))
                    results[pending[0]["name"]] = {
                        "name": pending[0]["name"], "status": "build error",
                        "error": {"type": f"exit {proc.returncode}", "kind": "crash",
                                  "line": line or "the builder died"}}
                    pending.pop(0)
                    break
                buffer += chunk
                while b"\n" in buffer:
                    raw, buffer = buffer.split(b"\n", 1)
                    text = raw.decode(errors="replace")
                    if not text.startswith(RESULT_TAG):
                        continue
                    result = json.loads(text[len(RESULT_TAG):])
                    results[result["name"]] = result
                    pending = [e for e in pending if e["name"] != result["name"]]
                    deadline = time.monotonic() + timeout
            selector.close()
            proc.stdout.close()
            _kill(proc)
    return results


# --------------------------------------------------------------------------- report


def fmt(x, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.{digits}f}"


def counted_warnings(r: dict) -> list:
    return [w for w in r.get("warnings", []) if w[0] not in NOISE]


def outcome(r: dict | None) -> str:
    """ok, warned, refused, raw, timeout, crash (or '' when not run)."""
    if not r:
        return ""
    if r.get("status") == "ok":
        return "warned" if counted_warnings(r) else "ok"
    if r.get("status") in ("timeout", "crash"):
        return r["status"]
    return (r.get("error") or {}).get("kind", "raw")


def cell(r: dict | None) -> str:
    state = outcome(r)
    if not state:
        return ""
    if state in ("ok", "warned"):
        text = f"{r['log_z']:.3f} ± {fmt(r.get('se'), 3)}"
        ws = counted_warnings(r)
        if any(w[3] for w in ws):
            text += " (W)"
        if any(not w[3] for w in ws):
            text += " (w)"
        return text
    return {"refused": "REFUSED", "raw": "RAW ERROR", "timeout": "TIMEOUT",
            "crash": "CRASH"}[state]


def z_score(a: dict | None, b: dict | None) -> str:
    if outcome(a) not in ("ok", "warned") or outcome(b) not in ("ok", "warned"):
        return ""
    se = math.hypot(a.get("se") or math.nan, b.get("se") or math.nan)
    diff = abs(a["log_z"] - b["log_z"])
    if not math.isfinite(se) or se == 0:
        return f"Δ {diff:.3f}"
    return f"{diff / se:.1f}"


def ratio(a: dict | None, smc: dict | None) -> float:
    if outcome(a) in ("ok", "warned") and outcome(smc) in ("ok", "warned"):
        return a["wall"] / smc["wall"]
    return math.nan


def error_text(key: str, r: dict) -> str:
    e = r.get("error") or {}
    if r.get("status") == "timeout":
        return f"{key}: {e.get('line', 'timeout')}"
    stage = f" in {e['stage']}" if e.get("stage") and e.get("kind") in ("raw", "refused") \
        else ""
    line = e.get("line", "")
    line = line if len(line) <= 110 else line[:107] + "..."
    return f"{key}: {e.get('kind', r.get('status'))} {e.get('type', '')}{stage}: {line}"


RUN_KEYS = ("ais1", "ais2", "smc", "bridge")


def posterior_table(names: list[str], data: dict) -> tuple[str, list[float]]:
    headers = ["posterior", "d", "AIS seed 1", "AIS seed 2", "SMC (± chain spread)",
               "bridge (NUTS)", "SMC s", "AIS1/SMC", "AIS2/SMC", "bridge/SMC",
               "z AIS1-AIS2", "z AIS1-bridge", "AIS1-SMC", "errors"]
    rows, ratios = [], []
    for name in names:
        runs = data["runs"].get(name, {})
        info = data["inspected"].get(name, {})
        d = str(info.get("d", "?")) + (f"+{info['discrete']} disc." if info.get("discrete")
                                       else "")
        a1, a2, smc, br = (runs.get(k) for k in RUN_KEYS)
        r1 = ratio(a1, smc)
        if math.isfinite(r1):
            ratios.append(r1)
        diff = (f"{a1['log_z'] - smc['log_z']:+.3f}"
                if outcome(a1) in ("ok", "warned") and outcome(smc) in ("ok", "warned")
                else "")
        errors = "; ".join(error_text(k, runs[k]) for k in RUN_KEYS
                           if outcome(runs.get(k)) in ("refused", "raw", "timeout", "crash"))
        rows.append([name, d, cell(a1), cell(a2), cell(smc), cell(br),
                     fmt(smc["wall"], 1) if outcome(smc) in ("ok", "warned") else "",
                     fmt(r1), fmt(ratio(a2, smc)), fmt(ratio(br, smc)),
                     z_score(a1, a2), z_score(a1, br), diff, errors.replace("|", "/")])
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---" if i in (0, 13) else "---:" for i in range(len(headers)))
             + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines), ratios


def summary(names: list[str], data: dict, ratios: list[float]) -> str:
    keys = ("ok", "warned", "refused", "raw", "timeout", "crash")
    labels = {"ok": "ok", "warned": "warned", "refused": "refused (our AnnealingError)",
              "raw": "raw error", "timeout": "timeout", "crash": "crashed"}
    parts = []
    total = {k: 0 for k in keys}
    for method in RUN_KEYS:
        counts = {k: 0 for k in keys}
        for name in names:
            state = outcome(data["runs"].get(name, {}).get(method))
            if state:
                counts[state] += 1
                total[state] += 1
        if any(counts.values()):
            parts.append(f"{method} " + "/".join(str(counts[k]) for k in keys))
    med = statistics.median(ratios) if ratios else math.nan
    return ("runs: " + ", ".join(f"{labels[k]} {total[k]}" for k in keys)
            + f" (per method ok/warned/refused/raw/timeout/crash: {'; '.join(parts)}); "
            + f"median time AIS seed 1 / SMC {fmt(med)} over {len(ratios)} posteriors")


def details(names: list[str], data: dict) -> list[str]:
    out = []
    for name in names:
        runs = data["runs"].get(name, {})
        for key in RUN_KEYS:
            r = runs.get(key)
            if not r:
                continue
            notes = []
            for cls, line, count, ours in r.get("warnings", []):
                notes.append(f"{'our ' if ours else ''}{cls} x{count}: {line[:160]}")
            for cls, line, count, _ in r.get("nuts_warnings", []):
                notes.append(f"NUTS {cls} x{count}: {line[:160]}")
            for line, count in {**r.get("nuts_logged", {}), **r.get("logged", {})}.items():
                notes.append(f"logged x{count}: {line[:160]}")
            e = r.get("error")
            if e:
                notes.append(f"TIMEOUT: {e.get('line')}" if r.get("status") == "timeout" else
                             f"ERROR {e.get('kind')} {e.get('type', '')}"
                             + (f" in {e['stage']}" if e.get("stage") else "")
                             + (f" at {e['origin']}" if e.get("origin") else "")
                             + (f" via {e['via']}" if e.get("via") else "")
                             + f": {e.get('line', '')[:300]}")
            if key.startswith("ais") and r.get("status") == "ok":
                attrs = (r.get("extra") or {}).get("attrs", {})
                keep = {k: attrs[k] for k in ("num_steps", "base", "backend") if k in attrs}
                if keep:
                    notes.insert(0, ", ".join(f"{k} {v}" for k, v in keep.items()))
            if key == "bridge" and r.get("nuts_wall") is not None:
                notes.insert(0, f"NUTS {r['nuts_wall']:.1f} s of {r['wall']:.1f} s")
            if notes:
                out.append(f"- {name} / {key}: " + "; ".join(notes))
    return out


def report(data: dict) -> None:
    meta = data.get("meta", {})
    home = "cold HOME" if meta.get("cold") else "HOME as is"
    print(f"\nposteriordb corpus, started {meta.get('started', '?')}, "
          f"{meta.get('host', '?')}; timeout {meta.get('timeout', '?')} s, "
          f"methods {meta.get('methods', '?')}, {home}; "
          f"load average {meta.get('load_start', math.nan):.2f} at the start, "
          f"{meta.get('load_end', math.nan):.2f} at the end\n")
    inspected = data["inspected"]
    ran = [n for n in data.get("order", []) if n in data["runs"]]
    proper = [n for n in ran if not inspected.get(n, {}).get("flat_vars")]
    flat = [n for n in ran if inspected.get(n, {}).get("flat_vars")]
    for title, names in (("Proper priors", proper),
                         (f"Flat/HalfFlat models as proper neighbours (Flat -> "
                          f"Normal(0, {NEIGHBOUR_SCALE:g}), HalfFlat -> "
                          f"HalfNormal({NEIGHBOUR_SCALE:g}))", flat)):
        if not names:
            continue
        text, ratios = posterior_table(names, data)
        print(f"### {title}\n\n{text}\n\n{summary(names, data, ratios)}\n")
    if proper and flat:
        _, ratios = posterior_table(proper + flat, data)
        print(f"All: {summary(proper + flat, data, ratios)}\n")
    broken = [r for r in inspected.values() if r.get("status") != "ok"]
    if broken:
        print("### Not run (no data, or the model does not build)\n")
        print("| posterior | problem | error |\n|---|---|---|")
        for r in sorted(broken, key=lambda r: r["name"]):
            e = r.get("error") or {}
            text = (e.get("type", "") + ": " if e.get("type") else "") + e.get("line", "")
            print(f"| {r['name']} | {r['status']} | {text.replace('|', '/')} |")
        print()
    lines = details(ran, data)
    if lines:
        print("Warnings, logged warnings and errors:\n")
        print("\n".join(lines))
    print("\n(W): an AnnealingWarning; (w): another warning (not Deprecation/Future); "
          "z: |a - b| / sqrt(se_a^2 + se_b^2); times: the call's wall time in a new process "
          "(after imports and the build), bridge's including NUTS, over SMC's; SMC's ± is "
          "the two chains' spread, not a standard error.")


def list_table(entries: list[dict], inspected: dict) -> None:
    print("| posterior | model | d | discrete | Flat/HalfFlat made proper | status |")
    print("|---|---|---:|---:|---|---|")
    for e in entries:
        r = inspected.get(e["name"], {})
        status = r.get("status", "?")
        if status != "ok":
            err = r.get("error") or {}
            status += ": " + ((err.get("type", "") + ": ") if err.get("type") else "") \
                + err.get("line", "")[:120]
        print(f"| {e['name']} | {e['model']} | {r.get('d', '')} | {r.get('discrete', '')} | "
              f"{', '.join(r.get('flat_vars', []))} | {status.replace('|', '/')} |")
    ok = [r for r in inspected.values() if r.get("status") == "ok"]
    print(f"\n{len(entries)} posteriors with a PyMC port; {len(ok)} build "
          f"({sum(bool(r.get('flat_vars')) for r in ok)} of them with Flat/HalfFlat priors, "
          f"run as proper neighbours); {len(entries) - len(ok)} do not")


# --------------------------------------------------------------------------- main


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="See the module docstring (benchmarks/README.md, 'posteriordb corpus').")
    parser.add_argument("path", nargs="?", help="a local copy of twiecki/posteriordb")
    parser.add_argument("--only", help="NAME[,NAME...]: these posteriors only")
    parser.add_argument("--min-d", type=int, help="only posteriors with d >= this")
    parser.add_argument("--max-d", type=int, help="only posteriors with d <= this")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds per run (each in a new process), and per model "
                        "build (default %(default)g)")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated subset of ais,smc,bridge (default: all); "
                        "ais1: AIS on seed 1 only")
    parser.add_argument("--flat", action=argparse.BooleanOptionalAction, default=True,
                        help="include the Flat/HalfFlat models as proper neighbours "
                        "(default: yes)")
    parser.add_argument("--cold", action="store_true",
                        help="each child gets an empty temporary HOME (cold caches)")
    parser.add_argument("--output", type=Path, help="write the raw results (JSON) here, "
                        "after every run")
    parser.add_argument("--report", type=Path, help="re-print the report of a --output "
                        "file; runs nothing")
    parser.add_argument("--list", action="store_true",
                        help="list the posteriors with their d; runs nothing else")
    parser.add_argument("--_child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args._child is None and args.report is None and args.path is None:
        parser.error("PATH (a local copy of twiecki/posteriordb) is required")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = set(methods) - set(METHOD_CHOICES)
    if unknown or not methods:
        parser.error(f"--methods: unknown {sorted(unknown)}; choose from {METHOD_CHOICES}")
    args.methods = methods
    return args


def save(path: Path | None, data: dict) -> None:
    if path is not None:
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, default=_json_default))
        tmp.replace(path)


def print_run(name: str, key: str, r: dict) -> None:
    state = outcome(r)
    if state in ("ok", "warned"):
        text = f"{cell(r)} in {r['wall']:.1f} s (process {r['process']:.1f} s)"
    else:
        text = error_text(key, r)
    print(f"  [{name}] {key:<6} {text}", flush=True)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args._child:
        mode, spec = args._child
        (child_inspect if mode == "inspect" else child_run)(json.loads(spec))
        return 0
    if args.report:
        report(json.loads(args.report.read_text()))
        return 0
    # a SIGTERM (kill, pkill) unwinds: each child's process group is killed on the way out,
    # where it would otherwise run on, orphaned, past its cap and beside the next run
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    root = corpus_root(args.path)
    entries = corpus(root)
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        known = {e["name"] for e in entries}
        missing = [n for n in wanted if n not in known]
        if missing:
            print(f"no posterior with a PyMC port named {missing}; see --list",
                  file=sys.stderr)
            return 2
        entries = [e for e in entries if e["name"] in wanted]
    started = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load_start = os.getloadavg()[0]
    print(f"building {len(entries)} models from {root} (one process) ...", flush=True)
    inspected = inspect_all(entries, args.timeout, args.cold)
    if args.list:
        list_table(entries, inspected)
        return 0
    selected = [e for e in entries if inspected.get(e["name"], {}).get("status") == "ok"
                and (args.flat or not inspected[e["name"]].get("flat_vars"))
                and (args.max_d is None or inspected[e["name"]]["d"] <= args.max_d)
                and (args.min_d is None or inspected[e["name"]]["d"] >= args.min_d)]
    data = {"meta": {"started": started, "path": str(root), "timeout": args.timeout,
                     "methods": args.methods, "cold": args.cold, "flat": args.flat,
                     "host": f"{platform.node()} ({os.cpu_count()} cores)",
                     "python": platform.python_version(), "load_start": load_start},
            "inspected": {e["name"]: inspected.get(e["name"], {}) for e in entries
                          if args.flat or not inspected.get(e["name"], {}).get("flat_vars")},
            "order": [e["name"] for e in selected], "runs": {}}
    plan = []
    for method in args.methods:
        if method == "ais":
            plan += [(f"ais{s}", "ais", s) for s in AIS_SEEDS]
        elif method == "ais1":
            plan.append(("ais1", "ais", AIS_SEEDS[0]))
        else:
            plan.append((method, method, SEED))
    t_start = time.perf_counter()
    for entry in selected:
        info = inspected[entry["name"]]
        print(f"[{entry['name']}] d={info['d']}"
              + (f" (+{info['discrete']} discrete)" if info.get("discrete") else "")
              + (f", proper neighbour of Flat/HalfFlat {info['flat_vars']}"
                 if info.get("flat_vars") else ""), flush=True)
        runs = data["runs"].setdefault(entry["name"], {})
        for key, method, seed in plan:
            r = run_child({"entry": entry, "method": method, "seed": seed},
                          args.timeout, args.cold)
            runs[key] = r
            print_run(entry["name"], key, r)
            save(args.output, data)
    data["meta"]["load_end"] = os.getloadavg()[0]
    data["meta"]["minutes"] = (time.perf_counter() - t_start) / 60
    save(args.output, data)
    report(data)
    print(f"\ntotal {data['meta']['minutes']:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
