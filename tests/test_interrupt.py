"""Ctrl-C stops a run cleanly (``pymc_anneal.backends``: ``interruptible``, the background
compiles waited for at exit).

The unit tests call the mechanism in this process. The others run ``sample_ais`` (JAX, a
tiny PyMC model) in a subprocess that prints a line at a chosen moment; the test waits for
that line, sends SIGINT (or, for a Ctrl-C that Python loses, has the child raise it inside a
garbage-collector callback) and checks that the process raised KeyboardInterrupt and died of
SIGINT: never SIGABRT (a compile thread torn down inside XLA), never exit code 0 (an
interrupt swallowed, the run finished).
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytensor.tensor as pt
import pytest

from pymc_anneal.backends import (
    compile_in_background,
    compile_one_off,
    interruptible,
    wait_for_background_compiles,
)

ROOT = Path(__file__).parents[1]

CHILD = textwrap.dedent("""
    import gc, signal, sys, time
    # as an interactive terminal does: a job of a non-interactive shell (CI) ignores SIGINT
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import numpy as np
    import pymc as pm
    import pymc_anneal as pa
    from pymc_anneal import backends
    from pymc_anneal.driver import run as run_module

    moment, num_steps = sys.argv[1], int(sys.argv[2])
    start_compile = backends.compile_in_background
    call = backends.CompiledFunction.__call__
    calls, first = 0, -10
    anneal = run_module._anneal

    def compile_in_background(compile_):
        def traced():
            print("COMPILING", flush=True)
            compile_()
            print("COMPILED", flush=True)
            if moment == "double":  # a compile that would take a minute
                time.sleep(60)
        return start_compile(traced)

    def annealing(*args, **kwargs):
        global first
        first = calls
        return anneal(*args, **kwargs)

    def counted(self, *args):
        global calls
        calls += 1
        print("CALL", calls, flush=True)
        if calls == first + 3:
            print("ANNEALING", flush=True)  # the run's third compiled call
        if moment == "lost" and calls == 4:  # Python handles SIGINT inside a gc callback
            def callback(phase, info):
                gc.callbacks.remove(callback)
                signal.raise_signal(signal.SIGINT)  # runs the handler before returning
            gc.callbacks.append(callback)
            gc.collect()
            print("LOST", flush=True)
        return call(self, *args)

    backends.compile_in_background = compile_in_background
    backends.CompiledFunction.__call__ = counted
    run_module._anneal = annealing
    with pm.Model():
        x = pm.Normal("x", 0, 1, shape=2)
        pm.Normal("y", x.sum(), 1, observed=np.array([0.3]))
        try:
            pa.sample_ais(draws=20, chains=1, num_steps=num_steps, random_seed=1,
                          progressbar=False, backend="jax")
        except KeyboardInterrupt:
            print("INTERRUPTED AT CALL", calls, flush=True)
            raise
    print("DONE", flush=True)
""")


def _interrupt(moment: str, triggers: tuple[str, ...], num_steps: int):
    """Run the child, send SIGINT each time it prints the next of ``triggers`` (on stdout,
    or on stderr for one that starts with "pymc_anneal:"), and return ``(returncode,
    stdout, stderr)``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu", OMP_NUM_THREADS="1")
    env.pop("XLA_FLAGS", None)
    child = subprocess.Popen([sys.executable, "-c", CHILD, moment, str(num_steps)], cwd=ROOT,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = {"out": [], "err": []}
    for trigger in triggers:
        name = "err" if trigger.startswith("pymc_anneal:") else "out"
        for line in getattr(child, f"std{name}"):
            seen[name].append(line)
            if line.startswith(trigger):
                child.send_signal(signal.SIGINT)
                break
        else:
            out, err = child.communicate(timeout=300)
            pytest.fail(f"the child never printed {trigger!r}:\n{''.join(seen['out']) + out}\n"
                        f"{''.join(seen['err']) + err}")
    out, err = child.communicate(timeout=300)
    return child.returncode, "".join(seen["out"]) + out, "".join(seen["err"]) + err


def _assert_stopped(returncode: int, out: str, err: str) -> None:
    """Died of the KeyboardInterrupt it raised: not aborted, not finished."""
    assert "terminate called" not in err and "FATAL" not in err, err
    assert returncode == -signal.SIGINT, (returncode, out, err)
    assert "INTERRUPTED AT CALL" in out and "DONE" not in out, out
    lines = [line for line in err.splitlines() if not line.startswith("pymc_anneal: waiting")]
    assert lines[-1].startswith("KeyboardInterrupt"), err  # the traceback's last line


def _lose_a_ctrl_c():
    """Have Python handle a SIGINT inside a garbage-collector callback, where the
    KeyboardInterrupt is lost ("Exception ignored in"), as in JAX's ``_xla_gc_callback``."""

    def callback(phase, info):
        gc.callbacks.remove(callback)
        signal.raise_signal(signal.SIGINT)  # runs the Python handler before it returns

    gc.callbacks.append(callback)
    gc.collect()


@pytest.fixture
def terminal_sigint():
    """Python's own SIGINT handler, as under an interactive terminal: a job that a
    non-interactive shell starts in the background (``cmd &``) has SIGINT ignored, and
    Python then leaves it so (the unit tests below failed so, run that way)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="module")
def compiled():
    x = pt.vector("x")
    return compile_one_off([x], [2 * x])


def test_a_lost_ctrl_c_is_raised_at_the_next_compiled_call(compiled, terminal_sigint):
    calls = []
    with pytest.raises(KeyboardInterrupt, match="raised again"), interruptible():
        _lose_a_ctrl_c()
        calls.append(1)  # the body goes on: Python lost the interrupt
        compiled([1.0])
        calls.append(2)
    assert calls == [1]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_lost_ctrl_c_is_raised_when_the_run_ends(compiled, terminal_sigint):
    with pytest.raises(KeyboardInterrupt, match="raised again"), interruptible():
        _lose_a_ctrl_c()
    compiled([1.0])  # outside the run, a compiled call runs again
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_inner_run_leaves_the_interrupt_to_the_outer_one(terminal_sigint):
    with pytest.raises(KeyboardInterrupt, match="raised again"), interruptible():
        with interruptible():
            _lose_a_ctrl_c()
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler


def test_other_threads_and_handlers_are_left_alone():
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job's
    try:
        with interruptible():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, handler)
    seen = []

    def in_a_thread():
        with interruptible():
            seen.append(sys.unraisablehook)

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    assert seen == [sys.unraisablehook]


def test_the_wait_at_exit_returns_after_every_background_compile():
    finished = []
    for _ in range(2):
        compile_in_background(lambda: (time.sleep(0.1), finished.append(1)))
    assert wait_for_background_compiles() > 0
    assert finished == [1, 1]
    assert wait_for_background_compiles() == 0.0


def test_a_run_ended_by_ctrl_c_exits_by_sigint_after_the_wait():
    """CPython clears its "ended on KeyboardInterrupt" flag whenever any thread executes
    source text (a dataclass defined by the compile thread waited for at exit), and the
    process then exited with code 1 instead of dying of SIGINT (seen in CI)."""
    child = textwrap.dedent("""
        import signal, time
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from pymc_anneal.backends import compile_in_background, interruptible

        def compile_():
            time.sleep(0.5)
            exec("from dataclasses import make_dataclass; make_dataclass('C', ['x'])")

        with interruptible():
            compile_in_background(compile_)
            raise KeyboardInterrupt
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", child], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGINT, (done.returncode, done.stderr)
    assert "pymc_anneal: waiting" in done.stderr, done.stderr  # the case: a wait at exit
    assert "Traceback" in done.stderr and "KeyboardInterrupt" in done.stderr, done.stderr


def test_a_run_ended_by_ctrl_c_exits_by_sigint_while_an_import_runs_in_the_background():
    """The same flag cleared with no compile to wait for: the driver's prefetching import
    (``arviz_stats`` defines namedtuples) still running when a Ctrl-C ended the run (seen in
    CI: exit code 1 after an interrupt during the annealing)."""
    child = textwrap.dedent("""
        import atexit, signal, sys, threading, time
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from pymc_anneal.backends import interruptible

        atexit.register(time.sleep, 1.0)  # a slow teardown (JAX's), after the package's

        def import_():
            while not hasattr(sys, "last_exc"):  # Python has printed the traceback
                time.sleep(0.01)
            eval("__import__('collections').namedtuple('T', ['x'])")

        with interruptible():
            threading.Thread(target=import_, name="pymc_anneal-prefetch", daemon=True).start()
            raise KeyboardInterrupt
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", child], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGINT, (done.returncode, done.stderr)
    assert "pymc_anneal: waiting" not in done.stderr, done.stderr  # no compile was waited for
    assert done.stderr.rstrip().endswith("KeyboardInterrupt"), done.stderr


@pytest.mark.slow  # the fast subset's budget: the slow suite (CI) runs it
def test_ctrl_c_during_a_background_compile_waits_for_it_at_exit():
    """SIGINT as XLA starts compiling (the main thread tracing or waiting for it): the
    process raises KeyboardInterrupt and exits once the compile has returned, where it
    used to abort inside XLA's C++ code."""
    pytest.importorskip("jax")
    returncode, out, err = _interrupt("compile", ("COMPILING",), 64)
    _assert_stopped(returncode, out, err)
    assert out.count("COMPILED") == out.count("COMPILING"), out
    if "pymc_anneal: waiting" in err:  # the compile was still running at exit
        assert out.rstrip().endswith("COMPILED"), out


@pytest.mark.slow
def test_a_second_ctrl_c_exits_at_once():
    """SIGINT during a compile, and again while the exit waits for it: exit code 130 at
    once, no abort."""
    pytest.importorskip("jax")
    returncode, out, err = _interrupt("double", ("COMPILING", "pymc_anneal: waiting"), 64)
    assert "terminate called" not in err and "FATAL" not in err, err
    assert returncode == 128 + signal.SIGINT, (returncode, out, err)
    assert "INTERRUPTED AT CALL" in out and "DONE" not in out, out


@pytest.mark.slow
def test_ctrl_c_during_annealing_stops_the_run():
    """SIGINT between the chunks of the main run (after the pilot)."""
    pytest.importorskip("jax")
    returncode, out, err = _interrupt("annealing", ("ANNEALING",), 32 * 400)
    _assert_stopped(returncode, out, err)


@pytest.mark.slow
def test_ctrl_c_lost_in_a_gc_callback_stops_the_run():
    """A KeyboardInterrupt that Python raised inside a garbage-collector callback during
    the pilot is raised again before the next compiled call, instead of the run going on to
    its end and the process exiting with code 0."""
    pytest.importorskip("jax")
    returncode, out, err = _interrupt("lost", (), 64)
    _assert_stopped(returncode, out, err)
    assert "LOST" in out and "INTERRUPTED AT CALL 4" in out, out
    assert "raised again" in err, err
