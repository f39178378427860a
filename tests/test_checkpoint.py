"""Checkpoint and resume (issue 25, item 1): a run stopped at any chunk boundary (Ctrl-C,
SIGKILL, a crash while writing) and called again with its checkpoint returns what the
uninterrupted run returns, bit for bit; a damaged checkpoint, or one of another call, is
refused with the reason.

Every comparison is of whole results: every group of the DataTree, every value
(``Dataset.equals``), so a single restored bit that differs fails the test.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pymc as pm
import pytest

import pymc_anneal as pa
from pymc_anneal.driver import checkpoint as ckpt_module

ROOT = Path(__file__).resolve().parents[1]
KW = {"draws": 40, "chains": 2, "num_steps": 130, "progressbar": False, "random_seed": 3}
"""130 temperatures: five chunks on JAX (32 steps a call), so seven writes: after the pilot,
after each chunk, and when done."""


def _model(y=(0.3, 0.5, 1.2)):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", mu, sigma, observed=np.array(y))
    return model


def _rbm():
    rng = np.random.default_rng(4)
    return pa.energy.BernoulliRBM(rng.normal(0, 0.5, (6, 4)), rng.normal(0, 0.2, 6),
                                  np.zeros(4))


def _call(kind, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pa.AnnealingWarning)  # tiny runs
        if kind == "ais":
            return pa.ais(_rbm(), **{**KW, "num_steps": 40, **kw})
        if kind == "batched_ais":
            model = pa.energy.LinearGenerative(np.random.default_rng(0).normal(size=(4, 2)), 0.5)
            return pa.batched_ais(model, model.sample(3, rng=1), **{**KW, "draws": 10, **kw})
        if kind == "reverse_ais":
            test = (np.random.default_rng(5).random((4, 6)) < 0.5).astype(float)
            return pa.reverse_ais(_rbm(), test, num_steps=130, draws=10, random_seed=3,
                                  progressbar=False, **kw)
        return pa.sample_ais(model=_model(), **{**KW, **kw})


@functools.cache
def _reference(kind, backend="jax", extra=()):
    return _call(kind, backend=backend, **dict(extra))


def _assert_same(result, reference):
    assert sorted(result.children) == sorted(reference.children)
    for group in reference.children:
        assert result[group].to_dataset().equals(reference[group].to_dataset()), group


@pytest.fixture(autouse=True)
def _write_every_chunk(monkeypatch):
    """Every recorded chunk is written (the default throttles writes by wall time): the
    tests stop runs at each chunk boundary. Subprocesses inherit it."""
    monkeypatch.setenv(ckpt_module.INTERVAL_VARIABLE, "0")


def _interrupt_after(monkeypatch, saves: int):
    """Ctrl-C right after the ``saves``-th write of the checkpoint (a chunk boundary)."""
    original, count = ckpt_module.Checkpoint.save, {"n": 0}

    def save(self, *args, **kwargs):
        original(self, *args, **kwargs)
        count["n"] += 1
        if count["n"] == saves:
            raise KeyboardInterrupt

    monkeypatch.setattr(ckpt_module.Checkpoint, "save", save)
    return lambda: monkeypatch.setattr(ckpt_module.Checkpoint, "save", original)


def _stopped_run(tmp_path, monkeypatch, saves: int) -> Path:
    """The checkpoint of a ``sample_ais`` call stopped by Ctrl-C after ``saves`` writes."""
    path = tmp_path / "run.ckpt"
    restore = _interrupt_after(monkeypatch, saves)
    with pytest.raises(KeyboardInterrupt):
        _call("sample_ais", checkpoint=path)
    restore()
    return path


@pytest.mark.parametrize(("kind", "backend", "saves", "extra"), [
    pytest.param("sample_ais", "jax", 1, (), marks=pytest.mark.slow),  # after the pilot
    ("sample_ais", "jax", 3, ()),  # mid-run
    ("ais", "jax", 2, ()),  # Gibbs on an RBM (40 steps: two chunks)
    pytest.param("batched_ais", "jax", 3, (), marks=pytest.mark.slow),
    pytest.param("reverse_ais", "jax", 3, (), marks=pytest.mark.slow),  # backward
    pytest.param("sample_ais", "jax", 20, (("num_steps", "auto"), ("base", "gaussian")),
                 marks=pytest.mark.slow, id="auto-gaussian"),  # in the second stage
    pytest.param("sample_ais", "numba", 6, (), marks=pytest.mark.slow),
    pytest.param("sample_ais", "c", 6, (), marks=pytest.mark.slow),
])
def test_ctrl_c_then_resume_is_bit_identical(kind, backend, saves, extra, tmp_path,
                                             monkeypatch, capsys):
    path = tmp_path / "run.ckpt"
    restore = _interrupt_after(monkeypatch, saves)
    with pytest.raises(KeyboardInterrupt):
        _call(kind, backend=backend, checkpoint=path, **dict(extra))
    assert "call again with the same arguments" in capsys.readouterr().err
    assert path.exists() and not list(tmp_path.glob(".run.ckpt.*"))  # no temporary left
    restore()
    resumed = _call(kind, backend=backend, checkpoint=path, **dict(extra))
    _assert_same(resumed, _reference(kind, backend, extra))


CHILD = textwrap.dedent("""
    import os, signal, sys, warnings
    import numpy as np, pymc as pm, pymc_anneal as pa
    from pymc_anneal.driver import checkpoint as C
    sys.path.insert(0, {root!r})
    from tests.test_checkpoint import _call
    original, count = C.Checkpoint.save, [0]
    def save(self, *args, **kwargs):
        original(self, *args, **kwargs)
        count[0] += 1
        if count[0] == {saves}:
            os.kill(os.getpid(), signal.SIGKILL)
    C.Checkpoint.save = save
    _call("sample_ais", backend="jax", checkpoint={path!r})
""")


@pytest.mark.slow  # subprocesses: the slow suite
@pytest.mark.parametrize("saves", [1, 4, 6])
def test_sigkill_at_a_chunk_boundary_then_resume_is_bit_identical(saves, tmp_path):
    path = tmp_path / "run.ckpt"
    child = subprocess.run(
        [sys.executable, "-c", CHILD.format(root=str(ROOT), saves=saves, path=str(path))],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]
    _assert_same(_call("sample_ais", backend="jax", checkpoint=path),
                 _reference("sample_ais"))


def test_a_finished_checkpoint_returns_its_result_without_running(tmp_path, monkeypatch):
    path = tmp_path / "run.ckpt"
    first = _call("sample_ais", checkpoint=path)
    _assert_same(first, _reference("sample_ais"))

    def no_run(*args, **kwargs):
        raise AssertionError("a finished checkpoint ran the loop again")

    monkeypatch.setattr("pymc_anneal.driver.run._compile", no_run)
    _assert_same(_call("sample_ais", checkpoint=path), first)


@pytest.mark.slow  # the fast subset's budget: the slow suite (CI) runs it
def test_without_a_seed_the_first_call_stores_one(tmp_path, monkeypatch):
    path = tmp_path / "run.ckpt"
    restore = _interrupt_after(monkeypatch, 6)
    with pytest.raises(KeyboardInterrupt):
        _call("sample_ais", checkpoint=path, random_seed=None)
    restore()
    stored = json.loads(_header(path))["seed"]
    assert isinstance(stored, int)
    resumed = _call("sample_ais", checkpoint=path, random_seed=None)
    _assert_same(resumed, _call("sample_ais", random_seed=stored))


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, RuntimeError])
def test_throttled_writes_still_leave_the_last_chunk_on_disk(interrupt, tmp_path,
                                                             monkeypatch):
    """With an hour between writes, a run records every chunk but writes none of them until
    it stops; stopped by Ctrl-C or any error after the third chunk, the file holds the
    third chunk's state (flushed on the way out), and resuming from it is exact."""
    monkeypatch.setenv(ckpt_module.INTERVAL_VARIABLE, "3600")
    original, writes, recorded = ckpt_module.Checkpoint.save, [], {"n": 0}
    write = ckpt_module.Checkpoint._write

    def counted_write(self):
        writes.append(self.stages[0].get("done_steps"))
        write(self)

    def save(self, *args, **kwargs):
        original(self, *args, **kwargs)
        recorded["n"] += 1
        if recorded["n"] == 4:  # the pilot's record, then three chunks
            raise interrupt("stop")

    monkeypatch.setattr(ckpt_module.Checkpoint, "_write", counted_write)
    monkeypatch.setattr(ckpt_module.Checkpoint, "save", save)
    path = tmp_path / "run.ckpt"
    with pytest.raises(interrupt, match="stop"):
        _call("sample_ais", checkpoint=path)
    assert writes == [96]  # one write, on the way out: three chunks of 32 steps
    assert json.loads(_header(path))["stages"]["0"]["done_steps"] == 96
    monkeypatch.undo()
    _assert_same(_call("sample_ais", checkpoint=path), _reference("sample_ais"))


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_bad_checkpoint_interval_is_refused(value, tmp_path, monkeypatch):
    monkeypatch.setenv(ckpt_module.INTERVAL_VARIABLE, value)
    with pytest.raises(pa.AnnealingError, match="PYMC_ANNEAL_CHECKPOINT_INTERVAL must be a "
                       "number of seconds >= 0, got"):
        _call("sample_ais", checkpoint=tmp_path / "run.ckpt")


def _header(path) -> str:
    with np.load(path, allow_pickle=False) as data:
        return data["__header__"].tobytes().decode()


def test_a_crash_while_writing_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    path = _stopped_run(tmp_path, monkeypatch, 5)
    good = path.read_bytes()

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    # a failed write never loses the result: it is returned (with a warning, issue 40)
    finished = _call("sample_ais", checkpoint=path)
    monkeypatch.undo()
    assert path.read_bytes() == good and not list(tmp_path.glob(".run.ckpt.*"))
    _assert_same(finished, _reference("sample_ais"))
    _assert_same(_call("sample_ais", checkpoint=path), _reference("sample_ais"))


def _damage(path, how):
    data = bytearray(path.read_bytes())
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "flipped":  # one byte inside the last array's data
        data[-200] ^= 0xFF
        path.write_bytes(bytes(data))
    else:  # not a checkpoint at all
        path.write_text("hello")


@pytest.mark.parametrize("how", ["flipped", *(pytest.param(h, marks=pytest.mark.slow)
                                              for h in ("truncated", "foreign"))])
def test_a_damaged_checkpoint_is_refused(how, tmp_path, monkeypatch):
    path = _stopped_run(tmp_path, monkeypatch, 4)
    _damage(path, how)
    with pytest.raises(pa.AnnealingError, match=r"run.ckpt is damaged: .*Delete it"):
        _call("sample_ais", checkpoint=path)


@pytest.mark.slow  # the fast subset's budget: the slow suite (CI) runs it
def test_a_checkpoint_with_a_changed_header_fails_its_checksum(tmp_path, monkeypatch):
    """The digest covers the header too: another step count written into it is caught."""
    path = _stopped_run(tmp_path, monkeypatch, 4)
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    header = json.loads(arrays.pop("__header__").tobytes().decode())
    header["stages"]["0"]["done_steps"] += 3
    np.savez(path, __header__=np.frombuffer(json.dumps(header).encode(), np.uint8), **arrays)
    path.with_suffix(path.suffix + ".npz").replace(path)
    with pytest.raises(pa.AnnealingError, match="checksum does not match"):
        _call("sample_ais", checkpoint=path)


@pytest.mark.parametrize(("change", "match"), [
    ({"num_steps": 120}, "other settings"),
    *(pytest.param(*row, marks=pytest.mark.slow) for row in [
        ({"chains": 3}, "other settings"),
        ({"model": "other data"}, "other data"),
        ({"random_seed": 4}, r"random_seed=3, and this call gives random_seed=4"),
        ({"checkpoint": 3}, "checkpoint must be a file path")]),
])
def test_resuming_another_call_is_refused(change, match, tmp_path, monkeypatch):
    path = _stopped_run(tmp_path, monkeypatch, 4)
    kw = {"checkpoint": path, **change}
    if kw.pop("model", None):
        with pytest.raises(pa.AnnealingError, match=match):
            pa.sample_ais(model=_model(y=(0.3, 0.5, 1.3)), **{**KW, **kw})
        return
    with pytest.raises(pa.AnnealingError, match=match):
        _call("sample_ais", **kw)
