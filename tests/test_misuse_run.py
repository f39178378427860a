"""No silent misuse (issue 40, items 6 and 9): a run's size and its checkpoint are checked
before anything is built, and a finished run is never lost to its checkpoint.

Item 6: ``num_steps=10**9`` was refused after 42 s (the schedule built, the loop compiled)
as a memory problem of the particles, with a split (``chains=1, draws=12``) that did not
help, then ``draws=1``, itself invalid. The temperatures are now checked first
(:func:`pymc_anneal.driver.memory.check_num_steps_budget`), and the run's own memory check
says when no split of the particles fits, never suggesting ``draws`` below 2.

Item 9: an unwritable checkpoint path raised a raw ``FileNotFoundError`` naming a hidden
temporary file, after the annealing, and the result was lost. The path is now checked when
the checkpoint is opened, and a write that fails later warns and lets the run finish.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pymc as pm
import pytest

import pymc_anneal as pa
import pymc_anneal.driver.run
from pymc_anneal.driver import RunOptions, memory
from pymc_anneal.driver import checkpoint as ckpt_module
from pymc_anneal.energy import FunctionEnergy
from pymc_anneal.kernels import resolve_kernel

KW = {"draws": 100, "chains": 2, "num_steps": 20, "progressbar": False}
SEED = 40
HUGE = 10**9


def _model():
    """The issue's model: ``mu ~ N(0, 1); y ~ N(mu, 1)`` at three points."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, 1, observed=np.array([0.3, -0.2, 0.5]))
    return model


def _energy():
    return FunctionEnergy(lambda x: -0.5 * (x**2).sum(axis=1), num_dims=2)


def _never(what):
    def fail(*args, **kwargs):
        pytest.fail(f"{what} came before the check")

    return fail


# ---------------------------------------------------------------- item 6: num_steps=10**9
@pytest.fixture
def sixteen_gib(monkeypatch):
    monkeypatch.setenv(memory.MEMORY_LIMIT_VARIABLE, "16GiB")


def test_too_many_temperatures_are_refused_before_anything_is_built(sixteen_gib,
                                                                     monkeypatch):
    monkeypatch.setattr("pymc_anneal.partition.make_schedule", _never("the schedule"))
    monkeypatch.setattr(pymc_anneal.driver.run, "compiled_loop", _never("the compile"))
    with pytest.raises(pa.AnnealingError, match=(
            r"num_steps=1,000,000,000 needs at least [0-9.]+ GiB of memory for the per-step "
            r"statistics and values of its temperatures alone, whatever the model, draws and "
            r"chains \(fewer particles per call do not help\), but 16\.0 GiB is available: at "
            r"most [0-9,]+ temperatures could fit.*num_steps='auto'")):
        pa.ais(_energy(), **{**KW, "num_steps": HUGE})


def test_sample_ais_checks_its_temperatures_before_anything_is_built(sixteen_gib,
                                                                      monkeypatch):
    monkeypatch.setattr("pymc_anneal.pymc.sampling.make_schedule", _never("the schedule"))
    monkeypatch.setattr("pymc_anneal.pymc.sampling.choose_loop", _never("the compile"),
                        raising=False)  # its first compile, where it has one
    monkeypatch.setattr(pymc_anneal.driver.run, "compiled_loop", _never("the compile"))
    with pytest.raises(pa.AnnealingError, match=r"num_steps=1,000,000,000 needs at least"):
        pa.sample_ais(model=_model(), **{**KW, "num_steps": HUGE})


def test_the_run_check_blames_the_temperatures_not_the_particles(sixteen_gib):
    """The full check (every entry point's, before its run compiles) says that no split of
    the particles fits, and how many temperatures would."""
    path, _ = _energy().annealing_path()
    with pytest.raises(pa.AnnealingError, match=(
            r"this run needs about [0-9.]+ GiB of memory \(chains=2 of 100 particles each\), "
            r"but 16\.0 GiB is available\. Fewer particles per call do not help: even one "
            r"chain of 2 particles needs about [0-9.]+ GiB, mostly the per-step statistics "
            r"and values of its num_steps=1,000,000,000 temperatures: at most about [0-9,]+ "
            r"of them fit")) as info:
        pymc_anneal.driver.run.check_run(path, RunOptions(), draws=100, chains=2,
                                         num_steps=HUGE)
    assert "draws=1" not in str(info.value) and "Split it" not in str(info.value)


@pytest.mark.parametrize("limit", ["200MiB", "400MiB", "1GiB", "3GiB"])
@pytest.mark.parametrize("num_steps", [20, 10**6, 10**7])
def test_a_suggested_split_fits_and_never_goes_below_two_draws(limit, num_steps,
                                                                 monkeypatch):
    """Whatever the memory, the advice is a split whose calls each fit (sized by the run's
    own estimate, per-step terms included) with ``draws >= 2``, or no split at all."""
    monkeypatch.setenv(memory.MEMORY_LIMIT_VARIABLE, limit)
    path, _ = _energy().annealing_path()
    kernel = resolve_kernel("hais", path)
    draws, chains = 2_000_000, 4
    try:
        memory.check_run_memory(path, kernel, draws=draws, chains=chains, run_chains=chains,
                                num_steps=num_steps)
    except pa.AnnealingError as error:
        message = str(error)
    else:
        return
    room = memory.SPLIT_FRACTION * memory.parse_size(limit)
    split = re.search(r"run ([0-9]+) calls of chains=([0-9]+)(?: and draws=([0-9]+))?",
                      message)
    if split is None:
        assert "Fewer particles per call do not help" in message
        assert memory.run_memory(path, kernel, draws=2, chains=1, num_steps=num_steps) > room
        return
    calls, per_chains = int(split.group(1)), int(split.group(2))
    per_draws = int(split.group(3) or draws)
    assert per_draws >= 2
    assert memory.run_memory(path, kernel, draws=per_draws, chains=per_chains,
                             num_steps=num_steps) <= room
    assert calls * per_chains * per_draws >= draws * chains


def test_a_run_that_cannot_be_short_warns_before_anything_is_built(monkeypatch):
    monkeypatch.setenv(memory.MEMORY_LIMIT_VARIABLE, "off")

    class Built(Exception):
        pass

    def stop(*args, **kwargs):
        raise Built

    monkeypatch.setattr("pymc_anneal.partition.make_schedule", stop)
    with pytest.raises(Built), pytest.warns(pa.AnnealingWarning, match=(
            r"num_steps=1,000,000,000 temperatures for 200 particles take at least "
            r"[0-9.]+ hours, even for a one-dimensional model.*num_steps='auto'")):
        pa.ais(_energy(), **{**KW, "num_steps": HUGE})


@pytest.mark.parametrize("num_steps", [20_000, 10**6, "auto", None])
def test_an_ordinary_num_steps_passes_the_budget_quietly(num_steps, sixteen_gib):
    memory.check_num_steps_budget(num_steps, draws=1000, chains=4)


# ---------------------------------------------------------------- item 9: the checkpoint
def _refuse_probe(*args, **kwargs):
    raise PermissionError(13, "Permission denied")


UNWRITABLE = {
    "a missing directory": (lambda tmp: tmp / "missing" / "run.ckpt", None,
                            r"its directory .*missing does not exist: create it first"),
    "a file as the directory": (lambda tmp: tmp / "file" / "run.ckpt", "file",
                                r"its directory .*file is a file, not a directory"),
    "a directory as the file": (lambda tmp: tmp, None, r"is a directory; give a file path"),
    "a directory that takes no file": (
        lambda tmp: tmp / "run.ckpt", "refuse",
        r"a file cannot be created in .* \(PermissionError: Permission denied\)"),
}


@pytest.mark.parametrize("case", sorted(UNWRITABLE))
@pytest.mark.parametrize("entry", ["sample_ais", "ais"])
def test_an_unwritable_checkpoint_is_refused_before_compiling(entry, case, tmp_path,
                                                              monkeypatch):
    make_path, setup, why = UNWRITABLE[case]
    if setup == "file":
        (tmp_path / "file").write_text("not a directory")
    if setup == "refuse":
        monkeypatch.setattr(ckpt_module.tempfile, "mkstemp", _refuse_probe)
    monkeypatch.setattr("pymc_anneal.pymc.sampling.choose_loop", _never("the compile"),
                        raising=False)  # its first compile, where it has one
    monkeypatch.setattr(pymc_anneal.driver.run, "compiled_loop", _never("the compile"))
    path = make_path(tmp_path)
    with pytest.raises(pa.AnnealingError, match=rf"the checkpoint {re.escape(str(path))} "
                       rf"(cannot be written: )?.*{why}"):
        if entry == "ais":
            pa.ais(_energy(), checkpoint=path, random_seed=SEED, **KW)
        else:
            pa.sample_ais(model=_model(), checkpoint=path, random_seed=SEED, **KW)
    assert not list(tmp_path.rglob(".run.ckpt.*"))


def test_a_failed_write_returns_the_result_with_a_warning(tmp_path, monkeypatch):
    """The probe passes, every write fails (a disk that fills during the run): the run
    finishes and returns what a call without a checkpoint returns, and says why nothing
    was saved."""
    monkeypatch.setenv(ckpt_module.INTERVAL_VARIABLE, "0")  # a write after every chunk
    reference = pa.sample_ais(model=_model(), random_seed=SEED, **KW)

    def full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ckpt_module.os, "replace", full)
    path = tmp_path / "run.ckpt"
    with pytest.warns(pa.AnnealingWarning, match=(
            rf"the checkpoint {re.escape(str(path))} could not be written \(OSError: No space "
            r"left on device\); the run goes on without it and its result is returned")):
        result = pa.sample_ais(model=_model(), checkpoint=path, random_seed=SEED, **KW)
    assert result["sample_stats"].to_dataset().equals(reference["sample_stats"].to_dataset())
    assert not path.exists() and not list(tmp_path.glob(".run.ckpt.*"))
    assert os.replace is full  # the package's writes went through the patched call
