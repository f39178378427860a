#!/usr/bin/env python
"""Check: the package's log density is PyMC's, on every posteriordb posterior with a PyMC
port (the corpus of ``bench_posteriordb.py``).

For each posterior, in a **new Python process** with a time cap (``--timeout``, default
180 s; a model can hang or crash, and one posterior never stops the run), the port is built
as ``bench_posteriordb.build`` builds it (``pm.Flat`` / ``pm.HalfFlat`` made proper: wide
Normals), then, as ``tests/pymc/test_log_density.py`` checks its small models:

* 64 wide points in the unconstrained space, a third each at scales 1, 10 and 100
  (standard normal draws times the scale; seed: the sum of the name's character codes);
* PyMC's own numbers, one point at a time: ``model.compile_logp(vars=model.free_RVs,
  jacobian=True)`` (the log prior), ``model.compile_logp(vars=[*observed_RVs,
  *potentials])`` (the log-likelihood) and ``model.compile_dlogp(jacobian=True)``;
* the package's, on the whole matrix of points: ``model_path(model).path.
  build_log_densities(x)`` and ``pt.grad`` of their sum, compiled together, once per
  backend: ``python`` (``compile_one_off``, what the package's one-off functions use),
  ``once`` (the same inside ``one_off_graph()``: the path's densities as one opaque op),
  ``numba`` / ``c`` / ``jax`` (``compile_function``, the loop's backends).

Nothing is asserted: per quantity (log prior, log-likelihood, gradient) and backend it
records the fraction of points where finiteness differs (the package non-finite where
PyMC's is finite or the other way; for the gradient only the former counts, at the points
where PyMC's log density is finite), the points where both are non-finite but not the same
(``-inf`` against ``nan``), the largest relative difference where both are finite (the
gradient's relative to its largest component at that point) and one example point (index,
scale, ours, PyMC's). A backend *agrees* when nothing differs beyond a relative 1e-10.
Models with discrete free variables are not compared (the package sums or anneals them:
another density); where ``model_path`` or a compile raises, the exception's type and first
line are recorded.

Usage::

    python benchmarks/check_log_density.py PATH --max-d 30
    python benchmarks/check_log_density.py PATH --only survey-survey --backends python
    python benchmarks/check_log_density.py PATH --min-d 31 --timeout 300 --output big.json

``PATH`` is a local copy of posteriordb (as ``bench_posteriordb.py``'s). Options:
``--only NAME[,NAME...]``, ``--min-d N``, ``--max-d N``, ``--timeout S`` (per posterior,
and per model build while the posteriors are listed), ``--backends python,numba``
(default), ``--reference-mode default|python|c`` (PyMC's compile mode for its numbers:
its default, in PyTensor 3 Numba with fast-math, which reassociates: a gradient
``(a / s**2) * s`` that overflows in IEEE order is finite there; ``python`` and ``c``
tell such artefacts, and an ill-conditioned Cholesky's backend-to-backend spread, from a
rewrite the package misses), ``--output FILE.json`` (raw results, written after every
posterior). One line is printed per posterior as it finishes, then a table and every
difference and error in full.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

SCRIPT = Path(__file__).resolve()
REPO_ROOT = SCRIPT.parents[1]
sys.path.insert(0, str(SCRIPT.parent))
sys.path.insert(0, str(REPO_ROOT))

import bench_posteriordb as pdb  # noqa: E402

NUM_POINTS = 64
SCALES = (1.0, 10.0, 100.0)
RTOL = 1e-10
DEFAULT_TIMEOUT = 180.0
BACKENDS = ("python", "once", "numba", "c", "jax")
DEFAULT_BACKENDS = ("python", "numba")
QUANTITIES = ("prior", "like", "grad")
RESULT_TAG = "@@check_log_density "


# --------------------------------------------------------------------------- the check
# (copied from tests/pymc/test_log_density.py: benchmarks do not import the tests)


def points_for(num_dims: int, seed: int):
    """Wide points in the unconstrained space: a third each at scales 1, 10 and 100."""
    import numpy as np

    rng = np.random.default_rng(seed)
    scales = np.repeat(SCALES, -(-NUM_POINTS // len(SCALES)))[:NUM_POINTS]
    return rng.standard_normal((NUM_POINTS, num_dims)) * scales[:, None], scales


def reference_mode(name: str):
    """PyMC's compile mode for the reference: ``default`` (PyMC's own: PyTensor's default
    mode, Numba with ``numba__fastmath`` in PyTensor 3), ``python`` (the package's
    ``python_mode()``: NumPy implementations) or ``c`` (``FAST_RUN`` rewrites, C VM)."""
    if name == "default":
        return {}
    if name == "python":
        from pymc_anneal.backends import python_mode

        return {"mode": python_mode()}
    from pytensor.compile.mode import Mode

    return {"mode": Mode(linker="cvm", optimizer="fast_run")}


def reference(model, mp, points, mode: str = "default"):
    """PyMC's own numbers, one point at a time; a point where a PyMC function raises is
    NaN in all three and listed in ``raised`` (index, error line)."""
    import numpy as np

    kw = reference_mode(mode)
    prior = model.compile_logp(vars=model.free_RVs, jacobian=True, **kw)
    like = model.compile_logp(vars=[*model.observed_RVs, *model.potentials], **kw)
    try:  # an op without a gradient (an ODE solver's): the values are still compared
        dlogp = model.compile_dlogp(jacobian=True, **kw)
        grad_error = None
    except Exception as exc:  # noqa: BLE001
        dlogp = None
        lines = str(exc).strip().splitlines()
        grad_error = f"{type(exc).__name__}: {lines[0] if lines else ''}"

    def point(x):
        return {name: x[s].reshape(shape) for name, s, shape in mp.value_slices}

    d = points.shape[1]
    lp, ll, g = np.full(len(points), np.nan), np.full(len(points), np.nan), \
        np.full(points.shape, np.nan)
    raised = []
    with np.errstate(all="ignore"):
        for i, x in enumerate(points):
            try:
                p = point(x)
                lp[i], ll[i] = float(prior(p)), float(like(p))
                if dlogp is not None:
                    g[i] = np.asarray(dlogp(p), dtype=float).reshape(d)
            except Exception as exc:  # noqa: BLE001 - recorded per point
                lines = str(exc).strip().splitlines()
                raised.append((i, f"{type(exc).__name__}: {lines[0] if lines else ''}"))
    return lp, ll, g, raised, grad_error


def ours(mp, points, backend, with_grad=True):
    """The package's log prior, log-likelihood and gradient on the matrix of points."""
    import numpy as np
    import pytensor.tensor as pt

    from pymc_anneal.backends import compile_function, compile_one_off
    from pymc_anneal.paths import one_off_graph

    shape = points.shape if backend == "jax" else (None, None)
    x = pt.tensor("x", dtype="float64", shape=shape)
    if backend == "once":
        with one_off_graph():
            log_prior, log_lik = mp.path.build_log_densities(x)
    else:
        log_prior, log_lik = mp.path.build_log_densities(x)
    grad = pt.grad((log_prior + log_lik).sum(), x) if with_grad else pt.zeros_like(x)
    t0 = time.perf_counter()
    if backend in ("python", "once"):
        fn = compile_one_off([x], [log_prior, log_lik, grad])
    else:
        fn = compile_function([x], [log_prior, log_lik, grad], backend)
    compile_s = time.perf_counter() - t0
    with np.errstate(all="ignore"):
        values = [np.asarray(v, dtype=float) for v in fn(points)]
    return values, compile_s, fn


def compare(ours_v, ref, scales, valid, gradient=False, names=None):
    """The differences of ``ours_v`` from PyMC's ``ref`` at the ``valid`` points (a dict:
    counts, fractions, the largest relative difference, an example)."""
    import numpy as np

    ours_v = np.asarray(ours_v, dtype=float)[valid]
    ref = np.asarray(ref, dtype=float)[valid]
    index = np.flatnonzero(valid)
    n = len(index)
    out = {"n": int(n)}
    if n == 0:
        out.update(finite_diff=0.0, nonfinite_kind=0, max_rel=0.0, bad=0, verdict="agree")
        return out
    fin, ref_fin = np.isfinite(ours_v), np.isfinite(ref)
    if gradient:
        wrong = ~fin & ref_fin  # ours non-finite where PyMC's is finite
        extra = fin & ~ref_fin  # allowed: ours finite where PyMC's is not
        finite_diff_pt = wrong.any(axis=1)
        out["ours_finite_where_pymc_not"] = int(extra.any(axis=1).sum())
        cmp_ours = np.where(ref_fin, ours_v, ref)
    else:
        finite_diff_pt = fin != ref_fin
        cmp_ours = ours_v
    both_nonfinite = ~np.isfinite(ref) & ~np.isfinite(cmp_ours)
    kind = both_nonfinite & ~((cmp_ours == ref) | (np.isnan(cmp_ours) & np.isnan(ref)))
    kind_pt = kind.any(axis=1) if gradient else kind
    both = np.isfinite(cmp_ours) & ref_fin
    if gradient:
        scale = np.max(np.abs(np.where(ref_fin, ref, 0.0)), axis=1, keepdims=True)
        scale = np.broadcast_to(scale, ref.shape)
    else:
        scale = np.abs(ref)
    with np.errstate(all="ignore"):
        rel = np.where(both, np.abs(cmp_ours - ref) / np.maximum(scale, 1e-300), 0.0)
    rel_pt = rel.max(axis=1) if gradient else rel
    bad_pt = finite_diff_pt | kind_pt | (rel_pt > RTOL)
    out.update(finite_diff=float(finite_diff_pt.mean()), finite_diff_count=int(
        finite_diff_pt.sum()), nonfinite_kind=int(kind_pt.sum()),
        max_rel=float(rel_pt.max()), bad=int(bad_pt.sum()),
        bad_by_scale={f"{s:g}": int(bad_pt[scales[index] == s].sum()) for s in SCALES},
        verdict="differ" if bad_pt.any() else "agree")
    if bad_pt.any():  # an example: finiteness first, then the kind, then the largest
        for mask in (finite_diff_pt, kind_pt, rel_pt == rel_pt.max()):
            if mask.any():
                k = int(np.flatnonzero(mask)[0])
                break
    else:
        k = int(np.argmax(rel_pt))
    ex = {"index": int(index[k]), "scale": float(scales[index[k]])}
    if gradient:
        if finite_diff_pt[k]:
            row = wrong[k]
        elif kind_pt[k]:
            row = kind[k]
        else:
            row = rel[k] == rel[k].max()
        j = int(np.flatnonzero(row)[0])
        ex.update(component=j, name=names[j] if names else None, ours=float(ours_v[k, j]),
                  pymc=float(ref[k, j]), rel=float(rel[k, j]))
    else:
        ex.update(ours=float(ours_v[k]), pymc=float(ref[k]), rel=float(rel[k]))
    out["example"] = ex
    return out


def component_names(mp) -> list[str]:
    import numpy as np

    names = []
    for name, s, shape in mp.value_slices:
        size = s.stop - s.start
        if size == 1 and not shape:
            names.append(name)
        else:
            names += [f"{name}[{','.join(map(str, idx))}]" for idx in np.ndindex(*shape)]
    return names


# --------------------------------------------------------------------------- child side


def _emit(result: dict) -> None:
    print(RESULT_TAG + json.dumps(result, default=pdb._json_default), flush=True)


def _error(exc: BaseException, stage: str) -> dict:
    info = pdb.error_info(exc, stage)
    info["traceback"] = info["traceback"][-12:]
    return info


def child_check(spec: dict) -> None:
    """Everything for one posterior, in this new process; a result line after each stage
    (the parent keeps the last: a timeout keeps what was done before it)."""
    import logging
    import warnings

    out: dict = {"name": spec["entry"]["name"], "backends": {}, "times": {}}
    t0 = time.perf_counter()
    stage = "import"
    try:
        import numpy as np
        import pymc  # noqa: F401

        from pymc_anneal.pymc.adapter import model_path

        warnings.simplefilter("ignore")
        for name in ("pymc", "pytensor"):
            logging.getLogger(name).setLevel(logging.ERROR)
        stage = "build"
        t = time.perf_counter()
        model, used = pdb.build(spec["entry"])
        out["flat_vars"] = used
        out["discrete"] = [v.name for v in model.value_vars if v.dtype.startswith(("int",
                                                                               "uint", "bool"))]
        out["times"]["build"] = time.perf_counter() - t
        if out["discrete"]:
            out["status"] = "skipped"
            out["error"] = {"stage": "build", "type": "discrete",
                            "line": f"discrete free variables {out['discrete']}: the package "
                            "sums or anneals them (not PyMC's joint density)"}
            _emit(out)
            return
        stage = "model_path"
        out["stage"] = stage
        _emit(out)
        t = time.perf_counter()
        mp = model_path(model)
        out["times"]["model_path"] = time.perf_counter() - t
        out["d"] = int(mp.path.num_dims)
        points, scales = points_for(mp.path.num_dims, sum(map(ord, out["name"])))
        stage = "reference"
        out["stage"] = stage
        _emit(out)
        t = time.perf_counter()
        ref_prior, ref_like, ref_grad, raised, grad_error = reference(model, mp, points,
                                                          spec.get("reference", "default"))
        out["times"]["reference"] = time.perf_counter() - t
        out["ref_raised"] = raised
        if grad_error:
            out["ref_grad_error"] = grad_error
        out["ref_finite"] = {"prior": float(np.isfinite(ref_prior).mean()),
                             "like": float(np.isfinite(ref_like).mean()),
                             "density": float(np.isfinite(ref_prior + ref_like).mean())}
        out["status"] = "ok"
        out.pop("stage")
        _emit(out)
    except Exception as exc:  # noqa: BLE001 - every error is a result
        out["status"] = "error"
        out["error"] = _error(exc, stage)
        out["times"]["process"] = time.perf_counter() - t0
        _emit(out)
        return
    valid = np.ones(len(points), dtype=bool)
    valid[[i for i, _ in raised]] = False
    ok = valid & np.isfinite(ref_prior + ref_like)
    names = component_names(mp)
    for backend in spec["backends"]:
        res: dict = {}
        out["backends"][backend] = res
        t = time.perf_counter()
        try:
            (prior, like, grad), compile_s, _ = ours(mp, points, backend,
                                                     with_grad=grad_error is None)
            res["compile"] = compile_s
            res["prior"] = compare(prior, ref_prior, scales, valid)
            res["like"] = compare(like, ref_like, scales, valid)
            if grad_error is None:
                res["grad"] = compare(grad, ref_grad, scales, ok, gradient=True, names=names)
            res["verdict"] = ("differ" if any(res[q]["verdict"] == "differ"
                                              for q in QUANTITIES if q in res) else "agree")
        except Exception as exc:  # noqa: BLE001
            res["verdict"] = "error"
            res["error"] = _error(exc, backend)
        res["seconds"] = time.perf_counter() - t
        _emit(out)
    out["times"]["process"] = time.perf_counter() - t0
    out["finished"] = True
    _emit(out)


# --------------------------------------------------------------------------- parent side


def run_child(spec: dict, timeout: float) -> dict:
    """``child_check`` in a new process (its own session) with a time cap."""
    with pdb.child_env(False) as env, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, str(SCRIPT), "--_child", json.dumps(spec)],
                                stdout=out, stderr=err, env=env, start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            pdb._kill(proc)
        total = time.perf_counter() - t0
        out.seek(0)
        stdout = out.read().decode(errors="replace")
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    result = None
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            result = json.loads(line[len(RESULT_TAG):])
            break
    if result is None:
        result = {"name": spec["entry"]["name"], "backends": {}, "times": {}}
    result["wall"] = total
    if timed_out:
        result["timeout"] = True
        done = set(result.get("backends", {}))
        pending = [b for b in spec["backends"] if b not in done]
        if result.get("status") == "ok" and pending:  # the backend it was on
            result["backends"][pending[0]] = {
                "verdict": "timeout", "error": {"type": "timeout",
                                                "line": f"killed after {timeout:.0f} s"}}
        elif result.get("status") is None:
            result["status"] = "timeout"
            result["error"] = {"type": "timeout", "line": f"killed after {timeout:.0f} s "
                               f"in {result.get('stage', 'import or build')}"}
    elif not result.get("finished") and result.get("status") in (None, "ok"):
        result["status"] = result.get("status") or "crash"
        crash = {"type": f"exit {proc.returncode}",
                 "line": pdb._last_line(stderr) or "no output",
                 "traceback": stderr.strip().splitlines()[-12:]}
        if result["status"] == "crash":
            result["error"] = crash
        else:
            pending = [b for b in spec["backends"] if b not in result["backends"]
                       or "verdict" not in result["backends"][b]]
            if pending:
                result["backends"][pending[0]] = {"verdict": "crash", "error": crash}
    return result


def fmt_rel(x) -> str:
    return "-" if x is None else f"{x:.1e}"


def cell(r: dict, backend: str) -> str:
    """agree / DIFFER / ERROR / TIMEOUT / CRASH / skipped."""
    if r.get("status") == "skipped":
        return "skipped"
    if r.get("status") != "ok":
        return (r.get("status") or "?").upper()
    b = r.get("backends", {}).get(backend)
    if b is None:
        return "not run" if r.get("timeout") else ""
    return {"agree": "agree", "differ": "DIFFER"}.get(b.get("verdict"),
                                                     str(b.get("verdict")).upper())


def quantity_text(q: str, c: dict) -> str:
    parts = [f"{q}: {c['verdict']}"]
    if c.get("finite_diff"):
        parts.append(f"finiteness differs at {c['finite_diff']:.0%} ({c['finite_diff_count']}"
                     f"/{c['n']})")
    if c.get("nonfinite_kind"):
        parts.append(f"non-finite kind differs at {c['nonfinite_kind']}")
    parts.append(f"max rel {fmt_rel(c.get('max_rel'))}")
    if c.get("verdict") == "differ":
        parts.append(f"bad points by scale {c.get('bad_by_scale')}")
        ex = c.get("example", {})
        comp = f" component {ex['component']} ({ex.get('name')})" if "component" in ex else ""
        parts.append(f"e.g. point {ex.get('index')} (scale {ex.get('scale'):g}){comp}: ours "
                     f"{ex.get('ours')!r}, PyMC's {ex.get('pymc')!r}")
    if c.get("ours_finite_where_pymc_not"):
        parts.append(f"(ours finite where PyMC's is not at {c['ours_finite_where_pymc_not']} "
                     "points: allowed)")
    return ", ".join(parts)


def line_for(r: dict, backends: list[str]) -> str:
    head = f"[{r['name']}] d={r.get('d', '?')}"
    if r.get("flat_vars"):
        head += " (Flat made proper)"
    if r.get("status") in ("error", "crash", "timeout", "skipped"):
        e = r.get("error") or {}
        return (f"{head} {r['status'].upper()}" + (f" in {e['stage']}" if e.get("stage")
                                                    else "")
                + f": {e.get('type', '')}: {e.get('line', '')[:200]}  [{r['wall']:.1f} s]")
    cells = []
    for b in backends:
        res = r["backends"].get(b, {})
        text = f"{b} {cell(r, b)}"
        if res.get("verdict") in ("agree", "differ"):
            text += " (" + " ".join(f"{q} {fmt_rel(res[q].get('max_rel'))}"
                                    + (f"/fin {res[q]['finite_diff']:.0%}"
                                       if res[q].get("finite_diff") else "")
                                    for q in QUANTITIES if q in res) + ")"
        cells.append(text)
    extra = f" PyMC raised at {len(r['ref_raised'])} points" if r.get("ref_raised") else ""
    if r.get("ref_grad_error"):
        extra += " (no gradient: PyMC's compile_dlogp raised)"
    return f"{head} " + "; ".join(cells) + extra + f"  [{r['wall']:.1f} s]"


def details(results: list[dict], backends: list[str]) -> list[str]:
    out = []
    for r in results:
        lines = []
        if r.get("status") != "ok":
            e = r.get("error") or {}
            lines.append(f"{r.get('status')}: {e.get('type', '')}"
                         + (f" in {e['stage']}" if e.get("stage") else "")
                         + (f" at {e['origin']}" if e.get("origin") else "")
                         + (f" via {e['via']}" if e.get("via") else "")
                         + f": {e.get('line', '')[:300]}")
        if r.get("ref_grad_error"):
            lines.append(f"gradient not compared: PyMC's compile_dlogp raised "
                         f"{r['ref_grad_error'][:200]}")
        if r.get("ref_raised"):
            lines.append(f"PyMC's functions raised at {len(r['ref_raised'])} points (left "
                         f"out), e.g. {r['ref_raised'][0]}")
        for b in backends:
            res = r.get("backends", {}).get(b)
            if not res:
                continue
            if res.get("verdict") == "differ":
                for q in (q for q in QUANTITIES if q in res):
                    if res[q]["verdict"] == "differ" or res[q].get(
                            "ours_finite_where_pymc_not"):
                        lines.append(f"{b}: {quantity_text(q, res[q])}")
            elif res.get("verdict") not in ("agree", None):
                e = res.get("error") or {}
                lines.append(f"{b}: {res['verdict']} {e.get('type', '')}"
                             + (f" at {e['origin']}" if e.get("origin") else "")
                             + (f" via {e['via']}" if e.get("via") else "")
                             + f": {e.get('line', '')[:300]}")
            elif res.get("grad", {}).get("ours_finite_where_pymc_not"):
                lines.append(f"{b}: {quantity_text('grad', res['grad'])}")
        if lines:
            out.append(f"- {r['name']} (d={r.get('d', '?')}):")
            out += [f"    {ln}" for ln in lines]
    return out


def report(results: list[dict], backends: list[str], not_run: list[dict]) -> None:
    print("\n| posterior | d | Flat made proper | " + " | ".join(backends)
          + " | PyMC finite (prior/like) | s |")
    print("|---|---:|---|" + "---|" * len(backends) + "---|---:|")
    for r in results:
        fin = r.get("ref_finite") or {}
        fin_text = (f"{fin['prior']:.0%}/{fin['like']:.0%}" if fin else "")
        print(f"| {r['name']} | {r.get('d', '?')} | {'yes' if r.get('flat_vars') else ''} | "
              + " | ".join(cell(r, b) for b in backends)
              + f" | {fin_text} | {r['wall']:.0f} |")
    counts: dict = {}
    for r in results:
        for b in backends:
            c = cell(r, b)
            counts.setdefault(b, {}).setdefault(c, 0)
            counts[b][c] += 1
    print("\nsummary: " + "; ".join(
        f"{b}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
        for b, c in counts.items()))
    lines = details(results, backends)
    if lines:
        print("\nDifferences and errors:\n")
        print("\n".join(lines))
    if not_run:
        print("\nNot checked (no data, the port does not build, or outside --min-d/--max-d "
              "counted above):")
        for r in not_run:
            e = r.get("error") or {}
            print(f"- {r['name']}: {r.get('status')}: {e.get('type', '')} "
                  f"{e.get('line', '')[:200]}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", help="a local copy of twiecki/posteriordb")
    parser.add_argument("--only", help="NAME[,NAME...]: these posteriors only")
    parser.add_argument("--min-d", type=int, help="only posteriors with d >= this")
    parser.add_argument("--max-d", type=int, help="only posteriors with d <= this")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds per posterior (and per model build while listing; "
                        "default %(default)g)")
    parser.add_argument("--backends", default=",".join(DEFAULT_BACKENDS),
                        help=f"comma-separated, of {','.join(BACKENDS)} (default "
                        "%(default)s)")
    parser.add_argument("--reference-mode", choices=("default", "python", "c"),
                        default="default", help="PyMC's compile mode for its reference "
                        "numbers: its default (Numba, fast-math, in PyTensor 3), the "
                        "package's Python mode, or C (default %(default)s)")
    parser.add_argument("--output", type=Path, help="raw results (JSON), written after "
                        "every posterior")
    parser.add_argument("--_child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args._child is None and args.path is None:
        parser.error("PATH (a local copy of twiecki/posteriordb) is required")
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = set(args.backends) - set(BACKENDS)
    if unknown or not args.backends:
        parser.error(f"--backends: unknown {sorted(unknown)}; choose from {BACKENDS}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args._child:
        child_check(json.loads(args._child))
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    root = pdb.corpus_root(args.path)
    entries = pdb.corpus(root)
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        missing = sorted(set(wanted) - {e["name"] for e in entries})
        if missing:
            print(f"no posterior with a PyMC port named {missing}", file=sys.stderr)
            return 2
        entries = [e for e in entries if e["name"] in wanted]
    t_start = time.perf_counter()
    print(f"building {len(entries)} models from {root} (one process) to count d ...",
          flush=True)
    inspected = pdb.inspect_all(entries, args.timeout, False)
    print(f"  built in {time.perf_counter() - t_start:.0f} s", flush=True)
    not_run = [inspected.get(e["name"], {"name": e["name"], "status": "?"}) for e in entries
               if inspected.get(e["name"], {}).get("status") != "ok"]
    selected = [e for e in entries if inspected.get(e["name"], {}).get("status") == "ok"
                and (args.max_d is None or inspected[e["name"]]["d"] <= args.max_d)
                and (args.min_d is None or inspected[e["name"]]["d"] >= args.min_d)]
    print(f"{len(selected)} posteriors to check (backends {', '.join(args.backends)}; "
          f"PyMC's reference in mode {args.reference_mode}; "
          f"{len(not_run)} not built; timeout {args.timeout:g} s each)", flush=True)
    results = []
    for entry in selected:
        info = inspected[entry["name"]]
        r = run_child({"entry": entry, "backends": args.backends,
                       "reference": args.reference_mode}, args.timeout)
        r.setdefault("d", info.get("d"))
        if info.get("discrete") and r.get("status") in (None, "timeout", "crash"):
            r["d"] = f"{info['d']}+{info['discrete']} disc."
        r.setdefault("flat_vars", info.get("flat_vars"))
        results.append(r)
        print(line_for(r, args.backends), flush=True)
        if args.output:
            args.output.write_text(json.dumps({"backends": args.backends, "results": results,
                                               "not_run": not_run}, indent=1,
                                              default=pdb._json_default))
    report(results, args.backends, not_run)
    print(f"\ntotal {(time.perf_counter() - t_start) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
