"""Compilation for the three PyTensor backends; the only module that knows about them.

``"numba"`` (PyTensor 3's default mode, LLVM through Numba, cached on disk), ``"c"``
(PyTensor's C VM, ``mode="CVM"``) and ``"jax"`` (XLA; optional extra). ``"auto"``, the
default of every public function, is JAX when it is installed and Numba otherwise: a user
waits for the compiler on every new model, and JAX compiles an annealing loop in about a
second where Numba's first JIT of it takes 15-60 s (``benchmarks/bench_evidence.py``).

Randomness is an explicit input and output of every compiled function: callers pass a
:class:`numpy.random.Generator` and get the advanced one back, so the same seed gives the
same draws: the same bits in every process, on C and on Numba, and to rounding across the
two. On JAX, PyTensor converts the Generator to a JAX key at each call, so results are
reproducible but follow JAX's own stream.

Numba's code is compiled without fast math (:data:`NUMBA_FASTMATH`; PyTensor's default,
``numba__fastmath=True``, stays the user's for their own functions). With LLVM's fast-math
flags (reassociation, contraction into fused multiply-adds) the same seeded run gave other
last bits in a process that compiled the loop than in one that found it in PyTensor's Numba
disk cache (more than the last bits where an accept decision flips): a checkpoint resumed
in a new process, or a run on a Dask worker, was no longer the run it continued or
repeated. Without them, a cold and a warm process give the same bits
(``tests/test_backends.py``). The price is within the machine's noise
(``benchmarks/bench_numba_fastmath.py``, 2026-11-27, paired calls on two shared cores): the
eight schools' and a change point's sampling took 1.06x and 0.96x the fast-math time, their
first calls on an empty cache (the compile) 0.93x and 0.97x. C and Numba
agree bit for bit where gcc fuses no multiply-adds (``gcc__cxxflags=-ffp-contract=off``):
PyTensor compiles C with ``-march=native``, and gcc's default ``-ffp-contract=fast`` then
contracts ``a * b + c`` on a processor with FMA, which moves the last bits (one ulp of the
eight schools' log evidence).

PyTensor's C cache has a lock; its Numba cache (``<base_compiledir>/numba``) has none:
Numba adds an entry to a function's index by reading it, adding to it and replacing it, so
two processes that add entries to one index at once can leave a key pointing to the other's
compiled code. Processes that compile at the same time on one machine (pytest-xdist
workers, several Dask workers) should each have their own ``base_compiledir``
(``PYTENSOR_FLAGS=base_compiledir=...``, read when PyTensor is imported; the tests do this
in ``tests/conftest.py`` and ``tests/test_distributed.py``).

JAX compiles a run's loop in a background thread while the pilot runs
(:func:`compile_in_background`). A thread still inside XLA's compiler when the interpreter
shuts down (a run stopped by Ctrl-C, or by any exception, while its compile goes on) would
be torn down inside C++ code, which aborts the process; such threads are waited for at exit
instead (:func:`wait_for_background_compiles`; a second Ctrl-C exits at once). Inside a run
(:func:`interruptible`), a Ctrl-C that Python lost in a garbage-collector callback is raised
again before the next compiled call.

With several JAX devices (GPUs, or CPU devices from
``XLA_FLAGS=--xla_force_host_platform_device_count=N``), a JAX loop splits the particles of
its carries over them (:data:`DEVICES_VARIABLE`; ``docs/design.md``, "Device sharding"):
the random draws do not depend on the split, sums over particles may be added in another
order, so results equal the one-device run's to rounding.

JAX keeps no compiled code between processes unless asked, so every new process compiled
its loops again (1-2 s each on two cores) where PyTensor's C and Numba code is cached on
disk. The JAX loops therefore switch on JAX's persistent compilation cache
(:data:`JAX_CACHE_VARIABLE`, :func:`enable_jax_cache`): a script run again starts from the
stored executables (``benchmarks/bench_evidence.py``). The key is JAX's: the whole XLA
program (shapes, and the constants PyTensor folded into it, so a model's observed values),
the compile options, the versions of JAX and jaxlib, and the device; a model's ``pm.Data``
values are arguments of the loop, not part of the program.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pytensor
from pytensor.tensor.random.basic import NormalRV

from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.validation import check_backend

_LOG = logging.getLogger(__name__)

__all__ = ["BACKENDS", "JAX_LOOP_LENGTH", "PADDING", "REPEATED_BATCHES", "SKIPPED_REWRITES",
           "CompiledFunction", "add_waiting_jobs", "compile_function", "compile_in_background",
           "compile_loop", "compile_one_off", "compile_repeated", "default_backend",
           "enable_jax_cache", "interruptible", "loops_reuse_pilot_shape", "python_mode",
           "raise_if_interrupted", "static_loop_length", "wait_for_background_compiles",
           "waiting_jobs", "without_creation_traces"]

DEVICES_VARIABLE = "PYMC_ANNEAL_JAX_DEVICES"
"""The environment variable that sets over how many JAX devices a loop's particles are split:
``"all"`` (the default: every device of JAX's default backend) or a positive number (the
first that many; ``"1"``: no sharding). Read at each call of a compiled JAX loop."""

BACKENDS = {"numba": "NUMBA", "c": "CVM", "jax": "JAX"}
"""The PyTensor mode each backend compiles to (the names of
:data:`pymc_anneal.validation.BACKEND_PACKAGES`, which
:func:`~pymc_anneal.validation.check_backend` accepts besides ``"auto"``)."""

SKIPPED_REWRITES = ("dot_diag_to_elemwise", "selection_dot_to_indexing")
"""PyTensor rewrites that the one-off compiles (:func:`python_mode`) leave out. Both ask
PyTensor's assumption system (PyTensor 3.3) whether an operand of every matrix product is
diagonal or a selection matrix, a walk up the operand's whole graph: a fifth to a quarter of
the rewrite time of a loop's init and of the optimizer's log density (kidscore_momiq's
init, 383 nodes: 1.14 -> 0.90 s, median of six; GLM_Poisson's, 1,187 nodes: 2.56 -> 1.89
s), and on the package's graphs of five posteriordb models neither applied (0 of 48-126
products per call). They replace a product by elementwise scaling or indexing (speed, not
stability: for finite operands the values are the same to rounding; an infinite entry
times a zero of the kept product is NaN where the scaling gives inf), which pays only where
a function runs many times on a model that has such a matrix (a one-hot design matrix,
say): the loops' compiles keep them."""


JAX_LOOP_LENGTH = 32
"""Steps per call of a JAX loop. JAX needs static shapes, so every call takes exactly this
many steps (callers pad a shorter run with steps that change nothing, which the loop skips:
:data:`PADDING`, and split a longer one), and the shapes of a path's parameters are static
too; the numbers of particles and chains stay free, and JAX compiles once per distinct
shape."""


PADDING = -0.0
"""The value of a loop's padding sequence (``delta_beta``) at a step that only pads a call to
:data:`JAX_LOOP_LENGTH` steps: negative zero, which no real step has (``b - a`` of two
equal temperatures is ``+0.0``), and which compares equal to zero wherever the step reads
it. The JAX loop skips such steps (:func:`compile_loop`'s ``padding``)."""


JAX_CACHE_VARIABLE = "PYMC_ANNEAL_JAX_CACHE"
"""The environment variable for JAX's persistent compilation cache: unset, the cache is
``<PyTensor's compiledir>/jax`` (beside PyTensor's own compiled code, so that deleting one
deletes both); a path puts it there; ``"0"``, ``"off"`` or ``"no"`` leaves it off. A cache
directory the user has set for JAX (``JAX_COMPILATION_CACHE_DIR`` or
``jax.config.update("jax_compilation_cache_dir", ...)``) always wins."""


@functools.cache
def enable_jax_cache() -> str | None:
    """Switch on JAX's persistent compilation cache for this process (once; see
    :data:`JAX_CACHE_VARIABLE`) and return its directory, or None where it stays off.

    JAX's cache is one per process, so the user's own JAX programs use it too, under JAX's
    rules (only compiles that took at least ``jax_persistent_cache_min_compile_time_secs``,
    1 s by default, are stored). The annealing loops are stored whatever their compile time
    (:func:`_jax_loop`).
    """
    import jax

    choice = os.environ.get(JAX_CACHE_VARIABLE, "").strip()
    if choice.lower() in {"0", "off", "no", "false"}:
        return None
    current = jax.config.jax_compilation_cache_dir
    if current:  # the user's own choice
        return current
    path = choice or os.path.join(pytensor.config.compiledir, "jax")
    jax.config.update("jax_compilation_cache_dir", path)
    return path


def _cached_compile(compile_: Callable) -> Callable:
    """``compile_`` with JAX's persistent cache taking its result whatever its compile time
    (the setting is thread-local, so the user's compiles keep theirs)."""
    from jax._src import config as jax_config

    setting = getattr(jax_config, "persistent_cache_min_compile_time_secs", None)

    @functools.wraps(compile_)
    def compile_cached(*args, **kwargs):
        with setting(0.0) if callable(setting) else contextlib.nullcontext():
            return compile_(*args, **kwargs)

    return compile_cached


def static_loop_length(backend: str) -> int | None:
    """The number of steps every call of a compiled loop must run on ``backend`` (with
    static parameter shapes), or None where any number goes."""
    return JAX_LOOP_LENGTH if check_backend(backend) == "jax" else None


def loops_reuse_pilot_shape(backend: str) -> bool:
    """Whether a run's particles go through a compiled loop in blocks of the pilot's shape
    (one chain of ``num_pilot`` particles) rather than through a compile of the run's own
    shape: where the loop compiles per shape (JAX) and runs on one CPU device. There each
    new shape costs an XLA compile (0.3-1.2 s on two cores, most of a small model's first
    call), and a call over 250 particles runs about as fast per particle and step as one
    over 5,000 (radon's 90-d model: 8.6 against 9.4 us). On other devices (GPUs) a batch
    pays by its size, and the particles of a run split over several devices are one
    batch (:data:`DEVICES_VARIABLE`): there the run keeps its shape."""
    if check_backend(backend) != "jax":
        return False
    import jax

    return jax.default_backend() == "cpu" and len(_loop_devices()) == 1


def default_backend() -> str:
    """What ``backend="auto"`` means here: ``"jax"`` if JAX is installed, else ``"numba"``
    (:func:`pymc_anneal.validation.check_backend`, which every ``backend=`` goes through)."""
    return check_backend("auto")


@dataclass
class CompiledFunction:
    """A compiled PyTensor function returning NumPy arrays, with its compile time."""

    function: Callable
    backend: str
    compile_seconds: float

    def precompile(self, *args):
        """Start compiling for arguments shaped like ``args`` (all but the RNG state), where
        the backend compiles per shape (JAX's loops); a no-op elsewhere."""
        precompile = getattr(self.function, "precompile", None)
        if precompile is not None:
            precompile(*args)

    def __call__(self, *args):
        raise_if_interrupted()
        if self.backend == "python":  # far points overflow: the callers read inf and NaN
            with np.errstate(all="ignore"):
                return self.function(*args)
        if self.backend != "jax":
            return self.function(*args)
        from pytensor.link.jax.dispatch import jax_typify

        # JAX takes no Generator: PyTensor's JAX RNG state (a pytree) goes in instead, and
        # the advanced state that comes out is passed back in on the next call.
        args = [jax_typify(a) if isinstance(a, np.random.Generator) else a for a in args]
        outputs = self.function(*args)
        return [o if isinstance(o, dict) else np.asarray(o) for o in outputs]


def without_creation_traces(fn):
    """Run ``fn`` with PyTensor's creation traces off (``traceback__limit=0``): every
    variable PyTensor creates otherwise walks the Python stack (``add_tag_trace``), a fifth
    of a rewrite's time; the variables made by our graph building and PyTensor's rewrites
    point to no line of the user's anyway (rewrites copy the traces of the variables they
    replace). Left on where the user asked for traces during compiles
    (``traceback__compile_limit > 0``)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if pytensor.config.traceback__compile_limit > 0:
            return fn(*args, **kwargs)
        with pytensor.config.change_flags(traceback__limit=0):
            return fn(*args, **kwargs)

    return wrapper


NUMBA_FASTMATH = False
"""Whether the package's Numba functions (:func:`compile_function`, :func:`compile_loop`)
are compiled with LLVM's fast-math flags. PyTensor's ``numba__fastmath`` (True by default)
stays the user's for their own compiles; ours set it to this value while PyTensor builds
the Numba functions (Numba fixes a function's flags when it is defined, so they hold at
the JIT of the first call too; PyTensor's disk cache keys them). Off, a seeded run gives
the same bits in every process whatever the disk cache held (module docstring); True
trades that for speed (``benchmarks/bench_numba_fastmath.py``)."""


def _numba_flags(backend: str):
    """The PyTensor flags a compile for ``backend`` runs under: on Numba, fast math as
    :data:`NUMBA_FASTMATH` says; nothing changed elsewhere."""
    if backend != "numba":
        return contextlib.nullcontext()
    return pytensor.config.change_flags(numba__fastmath=NUMBA_FASTMATH)


@without_creation_traces
def compile_function(inputs: Sequence, outputs: Sequence, backend: str) -> CompiledFunction:
    """Compile ``inputs -> outputs`` for ``backend`` (outputs always returned as a list)."""
    import time

    backend = check_backend(backend)
    start = time.perf_counter()
    if backend == "jax":
        # JAX returns fresh arrays, so no defensive copy (which cannot copy an RNG state)
        inputs = [pytensor.In(i, borrow=True) for i in inputs]
        outputs = [pytensor.Out(o, borrow=True) for o in outputs]
    with _numba_flags(backend):
        fn = pytensor.function(
            list(inputs), list(outputs), on_unused_input="ignore",
            mode=jax_mode() if backend == "jax" else BACKENDS[backend],
        )
    fn.trust_input = backend == "jax"  # JAX RNG states are not Generators; inputs are exact
    return CompiledFunction(fn, backend, time.perf_counter() - start)


@without_creation_traces
def compile_loop(rng, sequences: Sequence, carries: Sequence, constants: Sequence,
                 step_outputs: Sequence, backend: str,
                 length: int | None = None, padding: int | None = None) -> CompiledFunction:
    """Compile a loop over the steps of a one-step graph.

    The step graph maps ``(rng, *sequences, *carries, *constants)`` (one step's values of
    the sequences) to ``step_outputs = (rng, *new carries, *per-step outputs)``. The
    compiled function takes ``(rng, *stacked sequences, *initial carries, *constants)``,
    the sequences stacked along a new leading axis of steps, and returns ``(rng, *final
    carries, *stacked per-step outputs)``. ``length`` fixes the number of steps (a static
    type; ``None``: any number).

    On Numba and C the loop is PyTensor's ``scan``. On JAX it is ``jax.lax.scan`` around the
    step graph compiled by PyTensor's JAX backend: PyTensor's own ``Scan`` would take two to
    three times as long to rewrite (its inner-graph rewrites), which a user waits for on
    every new model, and JAX needs a static number of steps anyway (each new ``length``, and
    each new batch shape, is traced and compiled once).

    ``padding``: the index of a sequence whose value ``-0.0`` marks a step that only pads a
    call to its static length (:data:`PADDING`). On JAX such a step is skipped
    (``jax.lax.cond``: it costs nothing, and passes the RNG and the carries through with
    zeros for its per-step outputs); elsewhere nothing pads a call.
    """
    import time

    backend = check_backend(backend)
    start = time.perf_counter()
    if backend == "jax":
        function = _jax_loop(rng, sequences, carries, constants, step_outputs, padding)
        return CompiledFunction(function, backend, time.perf_counter() - start)
    from pytensor.graph.replace import clone_replace

    stacked = [s.type.clone(shape=(length, *s.type.shape))(f"{s.name or 'seq'}_steps")
               for s in sequences]
    rng_in = rng.type()
    carry_in = [c.type() for c in carries]
    constant_in = [c.type() for c in constants]
    num_seq, num_carry = len(sequences), len(carries)

    def one_step(*args):
        rng_k = args[num_seq]
        carry_k = args[num_seq + 1:num_seq + 1 + num_carry]
        replace = dict(zip([*sequences, rng, *carries, *constants],
                           [*args[:num_seq], rng_k, *carry_k, *args[num_seq + 1 + num_carry:]]))
        return clone_replace(list(step_outputs), replace=replace)

    num_extra = len(step_outputs) - 1 - num_carry
    outputs = pytensor.scan(one_step, sequences=stacked,
                            outputs_info=[rng_in, *carry_in, *([None] * num_extra)],
                            non_sequences=constant_in, return_updates=False)
    rng_out, *rest = outputs
    final = [o[-1] for o in rest[:num_carry]]
    with _numba_flags(backend):
        fn = pytensor.function([rng_in, *stacked, *carry_in, *constant_in],
                               [rng_out, *final, *rest[num_carry:]],
                               mode=BACKENDS[backend], on_unused_input="ignore")
    return CompiledFunction(fn, backend, time.perf_counter() - start)


XLA_OPTIONS = {"xla_disable_hlo_passes": "constant_folding", "xla_backend_optimization_level": 1}
"""XLA options of the JAX loop's compile. PyTensor has folded the graph's constants before
XLA sees it; XLA's own constant folding then evaluates, one element at a time, what it can
prove constant after its algebraic simplifications, such as a PyMC parameter check
``all(mu >= 0)`` over a grid of enumerated discrete values when ``mu`` is an ``exp``: 7.5 s
of each compile of a change-point model's loop (22 switch points x 21 counts x 4000
particles), and the folded constant made each step slower to run (sampling 4.2-5.7 s
-> 2.3 s there). On continuous models (a logistic and a 10-d linear regression, five
interleaved calls each, 2026-11-24) the option changed compile and sampling times by less
than the calls' spread (+-5%).

``xla_backend_optimization_level=1``: LLVM's cheaper pipeline (XLA's default is 3). On
two cores the loop's compile is most of a small model's first call, and level 1 shortens
it (posteriordb's Rate_3: 0.58 -> 0.35 s) without slowing the loop: a first call 0.89x
level 3's there, 0.97-1.00x on five larger posteriors up to radon's 90-d model
(``benchmarks/bench_xla_level.py``, 2026-11-30). A seeded run is deterministic at either
level; the level may change some operations' last bits (eight schools' log weights, not
its estimate's printed digits). Measured on CPUs only: on other devices (a GPU, where the
level would set how far LLVM optimizes the kernels) XLA's default stays
(:data:`CPU_ONLY_XLA_OPTIONS`)."""
CPU_ONLY_XLA_OPTIONS = ("xla_backend_optimization_level",)
"""The keys of :data:`XLA_OPTIONS` given only where the loop compiles for the CPU."""


def _xla_options(platform: str) -> dict:
    """:data:`XLA_OPTIONS` for a loop compiled for ``platform`` (JAX's default backend)."""
    if platform == "cpu":
        return dict(XLA_OPTIONS)
    return {k: v for k, v in XLA_OPTIONS.items() if k not in CPU_ONLY_XLA_OPTIONS}


_BACKGROUND: list[threading.Event] = []  # one per compile started and not yet waited for
_BACKGROUND_LOCK = threading.Lock()


_WAITING = threading.local()  # per thread: the jobs its waits for a compile may run


def waiting_jobs(function: Callable) -> Callable:
    """Decorate an entry point whose calls may give this thread jobs to run while it waits
    for a background compile (:func:`add_waiting_jobs`); those not reached are dropped when
    the call returns (they may hold its model)."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        previous = getattr(_WAITING, "jobs", None)
        _WAITING.jobs = []
        try:
            return function(*args, **kwargs)
        finally:
            _WAITING.jobs = previous

    return wrapper


def add_waiting_jobs(*jobs: Callable[[], object]) -> None:
    """Run ``jobs`` (in order, in this thread) while this thread waits for a background
    compile (:func:`compile_in_background`) that a loop's call needs: work the call needs
    later anyway (a compile of its own, an import), done while XLA compiles on the other
    core instead of after it (posteriordb's Rate_3: 0.4 s of waiting). Only within a call
    of a :func:`waiting_jobs` entry point (elsewhere nothing is kept); a job that fails is
    dropped: the work is repeated where it is needed, and its error raised there."""
    queue = getattr(_WAITING, "jobs", None)
    if queue is not None:
        queue.extend(jobs)


def _wait(done: threading.Event) -> None:
    """Wait for ``done``, running this thread's jobs (:func:`add_waiting_jobs`) first."""
    jobs = getattr(_WAITING, "jobs", None)
    while jobs and not done.is_set():
        job = jobs.pop(0)
        try:
            job()
        except Exception:  # noqa: BLE001 - repeated where needed, and raised there
            pass
    done.wait()


def compile_in_background(compile_: Callable[[], object]) -> threading.Event:
    """Run ``compile_`` (an XLA compile) in a daemon thread; return an event set when it
    has returned (or failed: its exception is then printed, and the call that needed the
    compile compiles again and raises it).

    Wait on the event, never ``join`` the thread: on Python 3.12 a ``join`` interrupted by
    Ctrl-C marks a thread that still runs as stopped (``is_alive()`` is then False). The
    thread is a daemon, so that it never keeps a process alive, and registered, so that
    :func:`wait_for_background_compiles` waits for it when the interpreter exits: a thread
    still inside XLA's C++ compiler at interpreter shutdown is torn down there ("FATAL:
    exception not rethrown" or "terminate called after throwing an instance of ''", then
    SIGABRT).
    """
    done = threading.Event()

    def run():
        try:
            compile_()
        finally:
            done.set()

    with _BACKGROUND_LOCK:
        if not _BACKGROUND:
            atexit.register(_wait_at_exit)  # once; unregistered by the wait
        _BACKGROUND[:] = [*(d for d in _BACKGROUND if not d.is_set()), done]
    threading.Thread(target=run, name="pymc_anneal-compile", daemon=True).start()
    return done


def wait_for_background_compiles() -> float:
    """Wait until every compile of :func:`compile_in_background` has returned; return the
    seconds waited.

    Registered with :mod:`atexit` while a compile may run, so that a process stopped by
    Ctrl-C (or by any exception) during a run exits cleanly once the compile in progress
    ends (at most the loop's compile time) instead of aborting inside XLA. In the main
    thread, a Ctrl-C during the wait ends the process at once with exit code 130
    (``os._exit``: no interpreter teardown, so nothing is torn down inside XLA); the previous
    handler is restored after the wait.
    """
    import time

    with _BACKGROUND_LOCK:
        pending = [d for d in _BACKGROUND if not d.is_set()]
        _BACKGROUND.clear()
        atexit.unregister(_wait_at_exit)
    start = time.perf_counter()
    if not pending:
        return 0.0
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _exit_now) if main else None
    try:
        for done in pending:
            done.wait()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return time.perf_counter() - start


def _wait_at_exit() -> None:
    """:func:`wait_for_background_compiles`, saying why the exit waits. The handler that
    exits at once on Ctrl-C is in place before the message is printed: a Ctrl-C that the
    message prompts must find it. Registered too when a KeyboardInterrupt leaves
    :func:`interruptible`, so that such a program exits by SIGINT."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _exit_now) if main else None
    try:
        if any(not done.is_set() for done in _BACKGROUND):
            print("pymc_anneal: waiting for a JAX compile in progress to finish before "
                  "exiting (Ctrl-C again: exit at once)", file=sys.stderr, flush=True)
        wait_for_background_compiles()
        if _ended_by_our_interrupt():
            _join_our_threads()
            _mark_unhandled_interrupt()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _ended_by_our_interrupt() -> bool:
    """Whether the program is ending on an uncaught KeyboardInterrupt that left a run of
    :func:`interruptible` (printed by Python, so ``sys.last_exc``), outside a REPL."""
    return (_Interrupts.escaped and not hasattr(sys, "ps1")
            and isinstance(getattr(sys, "last_exc", None), KeyboardInterrupt))


def _join_our_threads(timeout: float = 30.0) -> None:
    """Wait (at most ``timeout`` seconds in all) for the package's other background threads
    (named ``pymc_anneal-...``: the import that the driver prefetches), which may still
    execute source text after the flag of :func:`_mark_unhandled_interrupt` was set."""
    import time

    end = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread.name.startswith("pymc_anneal-") and thread is not threading.current_thread():
            thread.join(max(0.0, end - time.monotonic()))


def _mark_unhandled_interrupt() -> None:
    """Tell CPython again that the program ended on a KeyboardInterrupt, so that it exits
    by SIGINT (as a shell expects of a process stopped by Ctrl-C) and not with code 1.

    CPython keeps that fact in one flag of the runtime, which it clears whenever any thread
    executes source text (``exec``/``eval`` of a string: a dataclass or namedtuple being
    defined): a compile thread we wait for at exit, or the driver's prefetching import
    (``arviz_stats`` defines namedtuples), can do so after the main thread set it;
    executing a string that raises KeyboardInterrupt sets the flag again.
    """
    try:
        exec("raise KeyboardInterrupt", {})
    except KeyboardInterrupt:
        pass


def _exit_now(signum, frame):
    """SIGINT while the exit waits for a compile: end the process now, as a shell reports
    a process stopped by Ctrl-C (128 + SIGINT)."""
    import os

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(128 + signal.SIGINT)


class _Interrupts:
    """What :func:`interruptible` knows: whether a run is in it, and whether a Ctrl-C
    came during that run."""

    active = False
    pending = False
    escaped = False  # a KeyboardInterrupt left the last run


def _on_interrupt(signum, frame):
    """SIGINT during a run: remember it, then raise as Python's default handler does."""
    _Interrupts.pending = True
    raise KeyboardInterrupt


def _lost_interrupts(hook):
    """``sys.unraisablehook`` during a run: a KeyboardInterrupt that Python could not raise
    (inside a garbage-collector callback, ``__del__`` or weakref callback) is remembered
    instead of printed; anything else goes to ``hook``, the hook that was there."""

    def unraisable(info):
        if isinstance(info.exc_value, KeyboardInterrupt):
            _Interrupts.pending = True
        else:
            hook(info)

    return unraisable


def raise_if_interrupted() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C came during the run of :func:`interruptible`
    and was lost (called before every compiled call, so at the latest at the next chunk)."""
    if _Interrupts.pending and threading.current_thread() is threading.main_thread():
        raise KeyboardInterrupt("Ctrl-C during the run (raised again at the next chunk: "
                                "the first was lost inside a garbage-collector callback)")


@contextlib.contextmanager
def interruptible():
    """Make Ctrl-C stop a run, however late it comes: a context manager (and decorator).

    Python raises KeyboardInterrupt wherever the main thread is when it handles SIGINT; one
    raised inside a garbage-collector callback (JAX's ``_xla_gc_callback``), a ``__del__`` or
    a weakref callback is printed as "Exception ignored in" and lost, and the run went on to
    exit with code 0. Inside this context a Ctrl-C is remembered (by the SIGINT handler,
    where it is Python's default one, and by ``sys.unraisablehook``), and while it is,
    :func:`raise_if_interrupted` (before every compiled call) raises KeyboardInterrupt
    again, and so does the context's exit if the body returned anyway. Both hooks are
    restored afterwards; nested contexts, and other threads, only run the body.

    A SIGINT that is ignored stays ignored: POSIX shells start the jobs of a
    non-interactive shell (``cmd &`` in a script) with SIGINT ignored, and ``kill -INT``
    then does nothing to them; send SIGTERM, or start the job from an interactive shell.
    """
    if _Interrupts.active or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = sys.unraisablehook
    own_handler = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    _Interrupts.active, _Interrupts.pending = True, False
    sys.unraisablehook = _lost_interrupts(previous)
    if own_handler:
        signal.signal(signal.SIGINT, _on_interrupt)
    _Interrupts.escaped = False
    try:
        yield
        raise_if_interrupted()
    except KeyboardInterrupt:
        _Interrupts.escaped = True
        atexit.unregister(_wait_at_exit)  # at most once, and whether or not a compile runs
        atexit.register(_wait_at_exit)
        raise
    finally:
        if own_handler:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = previous
        _Interrupts.active = _Interrupts.pending = False


def jax_mode():
    """PyTensor's JAX mode as every JAX function of the package compiles: PyTensor's
    run-time assertions (broadcast checks) removed, since JAX drops them when it traces with
    a warning each (XLA checks shapes itself at trace time), and lengths computed from
    shapes kept static (:func:`_shapes_are_not_negative`): after every other rewrite (the
    switches appear as late as "specialize"), before the JAX-specific ones (position 100)
    that turn shape arguments into static tuples; a batched split's sizes unbatched
    (:func:`_split_sizes_unbatched`); and normal draws made in two fusions
    (:func:`_split_normal`)."""
    from pytensor.compile.mode import get_mode

    mode = get_mode(BACKENDS["jax"]).including("local_remove_all_assert")
    _register_split_normal()
    return mode.register((_split_normal(), 0.5), (_shapes_are_not_negative(), 99),
                         (_split_sizes_unbatched(), 99.5))


@contextlib.contextmanager
def _quiet_jax_conversion():
    """PyTensor's warnings while it converts a graph to JAX, silenced: its "will likely
    fail" (a failure, if one comes, is read by ``jax_failure``), and that a parameter check
    inside a scan's inner graph is dropped on JAX, as the loop's own are
    (``local_remove_all_assert`` above: the log density is NaN there, which the driver reads
    as zero density)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Jax implementation will likely fail",
                                category=UserWarning)
        warnings.filterwarnings("ignore", message="Skipping .* as JAX tracing would remove it",
                                category=UserWarning)
        yield


def _jax_loop(rng, sequences, carries, constants, step_outputs,
              padding: int | None = None) -> Callable:
    """``jax.lax.scan`` over the step graph, jit-compiled (see :func:`compile_loop`; a step
    whose sequence ``padding`` is ``-0.0`` is skipped)."""
    import jax
    import jax.numpy as jnp
    from pytensor.link.jax.dispatch import jax_funcify

    inputs = [rng, *sequences, *carries, *constants]
    mode = jax_mode()
    with _quiet_jax_conversion():
        step = pytensor.function([pytensor.In(i, borrow=True) for i in inputs],
                                 [pytensor.Out(o, borrow=True) for o in step_outputs],
                                 mode=mode, on_unused_input="ignore")
        step_fn = jax_funcify(step.maker.fgraph)
    # shared variables (a model's pm.Data) are inputs of the step after the given ones;
    # their current values go in with each call, like the constants
    shared = step.maker.fgraph.inputs[len(inputs):]
    num_seq, num_carry = len(sequences), len(carries)

    def loop(key, stacked, initial, fixed):
        def step(carry, xs):
            key, values = carry
            # PyTensor's JAX random variables read and advance only the "jax_state" key
            rng_out, *outputs = step_fn({"jax_state": key}, *xs, *values, *fixed)
            return (rng_out["jax_state"], tuple(outputs[:num_carry])), tuple(outputs[num_carry:])

        def skip(carry, xs):  # a padding step: nothing computed, nothing changed
            shapes = jax.eval_shape(step, carry, xs)[1]
            return carry, tuple(jnp.zeros(a.shape, a.dtype) for a in shapes)

        def body(carry, xs):
            if padding is None:
                return step(carry, xs)
            marker = xs[padding]
            pads = (marker == 0) & jnp.signbit(marker)
            return jax.lax.cond(pads, skip, step, carry, xs)

        (key, final), per_step = jax.lax.scan(body, (key, tuple(initial)), tuple(stacked))
        return key, final, per_step

    enable_jax_cache()
    jitted = _cached_compile(jax.jit(loop,
                                     compiler_options=_xla_options(jax.default_backend())))
    compiling: dict = {}  # shapes -> the event set when the loop's compile for them is done

    def signature(args):
        return tuple((np.shape(a), np.result_type(a).str) for a in args)

    def precompile(*args):
        """Compile, in a background thread, the loop for arguments shaped like ``args``
        (the arguments of a call, after the RNG state), while the caller goes on (e.g. runs
        the tuning pilot on other shapes): a later call with such shapes then finds it
        compiled."""
        args = (*args, *(v.get_value(borrow=True) for v in shared))
        if signature(args) in compiling:
            return compiling[signature(args)]
        shardings = _particle_shardings(args[num_seq:num_seq + num_carry])
        specs = [jax.ShapeDtypeStruct(np.shape(a), np.result_type(a)) for a in args]
        for i, sharding in enumerate(shardings or ()):
            a = specs[num_seq + i]
            specs[num_seq + i] = jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding)
        example = _rbg_key(np.zeros(2, np.uint32))
        key = jax.ShapeDtypeStruct(example.shape, example.dtype,
                                   sharding=shardings and _replicated(shardings))
        lowered = jitted.__wrapped__.trace(key, tuple(specs[:num_seq]),
                               tuple(specs[num_seq:num_seq + num_carry]),
                               tuple(specs[num_seq + num_carry:])).lower()
        compiling[signature(args)] = compile_in_background(_cached_compile(lowered.compile))
        return compiling[signature(args)]

    def call(rng_state, *args):  # rng_state: a JAX RNG state (CompiledFunction converts)
        key = _rbg_key(rng_state["jax_state"])
        stacked = args[:num_seq]
        initial = args[num_seq:num_seq + num_carry]
        fixed = (*args[num_seq + num_carry:], *(v.get_value(borrow=True) for v in shared))
        if compiling:  # wait for a background compile of these shapes instead of repeating it
            done = compiling.pop(signature((*stacked, *initial, *fixed)), None)
            if done is not None:
                _wait(done)
        shardings = _particle_shardings(initial)
        if shardings is not None:  # the particles split over devices; the rest replicated
            initial = tuple(jax.device_put(a, s) for a, s in zip(initial, shardings))
            key = jax.device_put(key, _replicated(shardings))  # as precompile has it
        key, final, per_step = jitted(key, stacked, initial, fixed)
        _log_placement(final[0])
        return [{"jax_state": key}, *(np.asarray(x) for x in (*final, *per_step))]

    call.precompile = precompile
    return call


def _loop_devices() -> list:
    """The JAX devices a loop's particles are split over (:data:`DEVICES_VARIABLE`)."""
    import jax

    setting = os.environ.get(DEVICES_VARIABLE, "all").strip().lower()
    devices = jax.devices()
    if setting == "all":
        return devices
    count = int(setting) if setting.isdigit() else 0
    if count < 1:
        raise AnnealingError(
            f"{DEVICES_VARIABLE} must be 'all' or a positive number of devices, got "
            f"{setting!r}. Set it to 'all' (every device), or to '1' to run on one device.")
    return devices[:count]


@functools.cache
def _mesh(devices: tuple):
    from jax.sharding import Mesh

    return Mesh(np.array(devices), ("particles",))


def _particle_shardings(carries) -> tuple | None:
    """The placement of a loop's carries: each split over the devices along its first axis
    whose length they divide (the particles; ``(chains, draws)`` log weights along the
    chains, or along the draws when the chains do not divide), or replicated; None (one
    device, no placement) when there is one device or the number of particles (the first
    axis of the first carry) is not a multiple of the number of devices."""
    from jax.sharding import NamedSharding, PartitionSpec

    devices = _loop_devices()
    if len(devices) < 2 or not carries or np.shape(carries[0])[0] % len(devices):
        return None
    mesh = _mesh(tuple(devices))

    def spec(shape):
        axis = next((i for i, n in enumerate(shape[:2]) if n % len(devices) == 0), None)
        return PartitionSpec() if axis is None else PartitionSpec(*[None] * axis, "particles")

    return tuple(NamedSharding(mesh, spec(np.shape(c))) for c in carries)


def _replicated(shardings):
    """A whole copy on each device of the mesh of ``shardings`` (of the RNG key)."""
    from jax.sharding import NamedSharding, PartitionSpec

    return NamedSharding(shardings[0].mesh, PartitionSpec())


_PLACEMENTS: set = set()


def _log_placement(array) -> None:
    """Log (DEBUG, once per shape and placement) over how many devices a loop's first carry
    came back split: the record of what a run did (the tests of sharding read it)."""
    devices = 1 if array.sharding.is_fully_replicated else len(array.sharding.device_set)
    if (array.shape, devices) not in _PLACEMENTS:
        _PLACEMENTS.add((array.shape, devices))
        _LOG.debug("JAX loop: %d particles on %d device(s)", array.shape[0], devices)


def _split_sizes_unbatched():
    """A rewrite that takes the batch axes off a batched ``Split``'s sizes where they are
    of length 1 (the same sizes for every batch), and makes the sizes a constant where they
    are one.

    The gradient of a join batched over particles as a ``Blockwise`` (a particle's values
    beside a constant: the ``Dirichlet``'s simplex transform joins them, and its log density
    rewritten as PyMC's takes their ``logsumexp``) is a ``Blockwise`` ``Split`` whose sizes
    have batch axes of length 1. JAX vectorizes the split over them too, and its sizes
    become traced arrays, which ``jnp.split`` refuses ("Abstract tracer value encountered
    where concrete value is expected")."""
    import pytensor.tensor as pt
    from pytensor.graph.basic import Constant
    from pytensor.graph.rewriting.basic import in2out, node_rewriter
    from pytensor.tensor.basic import Split
    from pytensor.tensor.blockwise import Blockwise

    @node_rewriter([Blockwise])
    def split_sizes_unbatched(fgraph, node):
        if not isinstance(node.op.core_op, Split):
            return None
        x, sizes = node.inputs
        extra = sizes.type.ndim - 1
        if not all(sizes.type.broadcastable[:extra]):
            return None
        if isinstance(sizes, Constant):
            sizes = pt.constant(np.asarray(sizes.data)[(0,) * extra], dtype=sizes.dtype)
        else:
            sizes = sizes[(0,) * extra]
        batch_ndim = node.op.batch_ndim(node)
        x = pt.shape_padleft(x, batch_ndim + len(node.op.inputs_sig[0]) - x.type.ndim)
        core = node.op.core_op
        new = Split(core.len_splits, core.axis + batch_ndim)(x, sizes, return_list=True)
        if not all(o.type.is_super(n.type) for o, n in zip(node.outputs, new)):
            return None
        return new

    return in2out(split_sizes_unbatched)


class _SplitNormalRV(NormalRV):
    """PyTensor's ``NormalRV``, drawn on JAX in two fusions (:func:`_split_normal`)."""


def _split_normal():
    """A rewrite that makes each ``NormalRV`` of a JAX graph a :class:`_SplitNormalRV`: the
    same draws, bit for bit (JAX's ``jax.random.normal``: a uniform on (-1, 1), then
    ``sqrt(2) erf_inv(u)``), with an optimization barrier between the uniform and its
    transform. Fused with the bits' conversion, XLA's CPU backend computes ``erf_inv``
    element by element; apart, vectorized: a (5,000, 90) float64 draw took 11.6 ms fused
    and 5.0 ms split, and a step of the annealing loop on a 90-d model whose likelihood is
    cheap 13.9 ms against 8.6 (HMC's momentum is such a draw at every step:
    ``benchmarks/bench_split_normal.py``)."""
    from pytensor.graph.rewriting.basic import in2out, node_rewriter

    @node_rewriter([NormalRV])
    def split_normal(fgraph, node):
        if type(node.op) is not NormalRV:
            return None
        new = _SplitNormalRV(**node.op._props_dict()).make_node(*node.inputs).outputs
        if not all(o.type.is_super(n.type) for o, n in zip(node.outputs, new)):
            return None
        return new

    return in2out(split_normal)


@functools.cache
def _register_split_normal():
    """Register JAX's sampler of :class:`_SplitNormalRV` (once; JAX is an extra)."""
    import jax.numpy as jnp
    from pytensor.link.jax.dispatch.random import jax_sample_fn

    @jax_sample_fn.register(_SplitNormalRV)
    def jax_sample_split_normal(op, node):
        def sample_fn(rng_key, size, dtype, loc, scale):
            if size is None:
                size = jnp.broadcast_arrays(loc, scale)[0].shape
            return loc + split_standard_normal(rng_key, size, dtype) * scale

        return sample_fn


def split_standard_normal(key, shape, dtype):
    """``jax.random.normal(key, shape, dtype)`` for a real ``dtype``, bit for bit in float64,
    with an optimization barrier between the uniform draw and ``erf_inv`` on a CPU
    (:func:`_split_normal`); other dtypes: JAX's own."""
    import jax
    import jax.numpy as jnp

    dtype = jnp.dtype(dtype)
    if not jnp.issubdtype(dtype, jnp.floating):
        return jax.random.normal(key, shape, dtype)
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype)
    u = jax.random.uniform(key, shape, dtype, lo, np.array(1.0, dtype))
    if jax.default_backend() == "cpu":  # measured on CPUs; elsewhere fused, as JAX has it
        u = jax.lax.optimization_barrier(u)
    return np.array(np.sqrt(2), dtype) * jax.lax.erf_inv(u)


def _shapes_are_not_negative():
    """A rewrite that replaces ``eq(s, c)`` by False where ``s`` is computed from shapes and
    non-negative constants by sums and products and ``c`` is a negative constant, and a
    scalar ``switch`` on a constant condition by its branch (it runs after PyTensor's own
    rewrites, which would otherwise do that).

    ``Reshape`` infers its output shape as ``switch(eq(s, -1), size // ..., s)`` for each
    requested length ``s`` that is not a constant (a -1 would mean "the rest"). PyTensor
    removes the switch when ``s`` is a shape itself, but not when it is a product of one,
    such as the ``k * n`` rows of ``n`` particles repeated ``k`` times. On JAX the switch is
    then computed as a traced array, and any ``alloc`` or ``reshape`` that takes it as a
    length fails at trace time ("Shapes must be 1D sequences of concrete values"), whereas
    sums and products of shapes stay Python integers there.
    """
    import pytensor.scalar as ps
    from pytensor.graph.rewriting.basic import in2out, node_rewriter
    from pytensor.tensor.basic import get_underlying_scalar_constant_value
    from pytensor.tensor.elemwise import Elemwise
    from pytensor.tensor.exceptions import NotScalarConstantError
    from pytensor.tensor.shape import Shape_i

    def constant(v):
        try:
            return get_underlying_scalar_constant_value(v, only_process_constants=True)
        except NotScalarConstantError:
            return None

    def not_negative(v, depth=0):
        if constant(v) is not None:
            return constant(v) >= 0
        node = v.owner
        if node is None or depth > 8:
            return False
        if isinstance(node.op, Shape_i):
            return True
        return (isinstance(node.op, Elemwise)
                and isinstance(node.op.scalar_op, ps.Add | ps.Mul | ps.IntDiv | ps.Cast)
                and all(not_negative(i, depth + 1) for i in node.inputs))

    @node_rewriter([Elemwise])
    def never_equal(fgraph, node):
        out = node.outputs[0]
        if out.ndim:
            return None
        if isinstance(node.op.scalar_op, ps.EQ):
            for a, b in (node.inputs, node.inputs[::-1]):
                c = constant(b)
                if c is not None and c < 0 and not_negative(a):
                    return [pytensor.tensor.constant(np.array(False))]
        if isinstance(node.op.scalar_op, ps.Switch) and constant(node.inputs[0]) is not None:
            chosen = node.inputs[1] if constant(node.inputs[0]) else node.inputs[2]
            if chosen.type == out.type:
                return [chosen]
        return None

    return in2out(never_equal, name="shapes_are_not_negative")


def jax_rng_to_array(state) -> np.ndarray:
    """The JAX RNG state a compiled JAX loop passes back (``{"jax_state": key}``) as a
    uint32 array, for a checkpoint (:func:`jax_rng_from_array` restores it)."""
    import jax

    key = state["jax_state"]
    if jax.dtypes.issubdtype(getattr(key, "dtype", None), jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return np.asarray(key, dtype=np.uint32)


def jax_rng_from_array(data: np.ndarray) -> dict:
    """The JAX RNG state saved by :func:`jax_rng_to_array`."""
    import jax

    return {"jax_state": jax.random.wrap_key_data(np.asarray(data, dtype=np.uint32),
                                                  impl="rbg")}


def _rbg_key(key):
    """A JAX key of the ``"rbg"`` implementation: PyTensor's random variables draw with the
    implementation of the key they are given, and XLA's bit generator (``"rbg"``) makes
    float64 normals about 1.6x as fast as the default Threefry on a CPU, where they are most
    of an HMC step's time (a raw Threefry key from a NumPy Generator seeds it)."""
    import jax

    if jax.dtypes.issubdtype(getattr(key, "dtype", None), jax.dtypes.prng_key):
        return key
    data = np.asarray(key, dtype=np.uint32).ravel()
    return jax.random.key(((int(data[0]) << 32) | int(data[-1])) & (2**63 - 1), impl="rbg")


PYTHON_MODE_QUERY = dict(include=["fast_run", "py_only"],
                         exclude=["inplace", "fusion", "cxx_only", *SKIPPED_REWRITES])
"""The rewrites of :func:`python_mode`: PyTensor's ``FAST_RUN`` set, as PyMC's own compiled
functions (``model.compile_logp()``) run them, less what only pays in generated code
(elementwise fusion: a fused ``Composite`` runs one Python call per element in NumPy mode;
in-place updates; C-only ops) and :data:`SKIPPED_REWRITES`. The ``stabilize`` rewrites
among them are what make a log density PyMC's: ``pm.Bernoulli(logit_p=x)`` is
``log(sigmoid(x))`` as written, which underflows to ``-inf`` for ``x < -745``; stabilized,
``-softplus(-x)`` is finite everywhere. ``FAST_COMPILE``'s rewrites (used here before) skip
them, so a likelihood that PyMC finds finite at a wide prior's draws was ``-inf`` at most of
them (issue 39)."""


def python_mode():
    """PyTensor's ``FAST_RUN`` rewrites (:data:`PYTHON_MODE_QUERY`) with the pure-Python
    linker: NumPy implementations, no code generation, so the numbers are PyMC's own (to
    rounding) and nothing is compiled at all (``mode="FAST_COMPILE"``'s VM linker first
    builds PyTensor's C lazy linker, half a second with gcc on a cold cache). Sums of more
    than 31 terms are nested, since NumPy's ufuncs take at most 32 operands, and the scalar
    ops that have no NumPy function (softplus, log1mexp) are written out in NumPy's."""
    from pytensor.compile.mode import Mode
    from pytensor.graph.rewriting.db import RewriteDatabaseQuery
    from pytensor.link.basic import PerformLinker

    mode = Mode(PerformLinker(), RewriteDatabaseQuery(**PYTHON_MODE_QUERY))
    mode = mode.register((_inline_inner_graphs(), 99))  # after the others, some make them
    mode = mode.register((_numpy_scalar_ops(), 99.5))  # stabilize makes softplus
    return mode.register((_split_wide_sums(), 100))  # after every other rewrite


def _numpy_scalar_ops():
    """A rewrite that writes ``softplus`` and ``log1mexp`` (which the ``stabilize``
    rewrites make from ``log(sigmoid(x))`` and ``log(1 - exp(x))``) as the same branches in
    NumPy's ufuncs: PyTensor's scalar ops without a NumPy function run one Python call per
    element in Python mode (0.1 s for 150,000 elements, 10x the whole rest of a logistic
    likelihood). The branches and cut points are PyTensor's own ``impl``, so the values are
    the same to the last bit."""
    import pytensor.scalar.math as psm
    from pytensor.graph.rewriting.basic import in2out, node_rewriter
    from pytensor.tensor.elemwise import Elemwise

    @node_rewriter([Elemwise])
    def expand(fgraph, node):
        op = node.op.scalar_op
        if not isinstance(op, psm.Softplus | psm.Log1mexp):
            return None
        out = node.outputs[0]
        if not out.dtype.startswith("float"):
            return None
        pt = pytensor.tensor
        x = node.inputs[0].astype(out.dtype)
        if isinstance(op, psm.Softplus):
            value = pt.switch(x < -37.0, pt.exp(x),
                              pt.switch(x < 18.0, pt.log1p(pt.exp(x)),
                                        pt.switch(x < 33.3, x + pt.exp(-x), x)))
        else:
            value = pt.switch(x < np.log(0.5), pt.log1p(-pt.exp(x)), pt.log(-pt.expm1(x)))
        return [pt.cast(value, out.dtype)]

    return in2out(expand, name="numpy_scalar_ops")


def _inline_inner_graphs():
    """A rewrite that replaces every op with an inner graph (``logsumexp`` and its
    gradient), bare or in a ``Blockwise`` (as vectorizing a per-particle graph wraps it), by
    that graph, inlined (and vectorized). The Python linker would run such an op by
    compiling its inner graph in PyTensor's default mode, and a ``Blockwise`` through its
    core op: code generation again, 7 s for one ``logsumexp`` and its gradient on an empty
    cache, and 4 s of the first call of a mixture model with 40 summed labels."""
    from pytensor.compile.builders import OpFromGraph
    from pytensor.compile.rewriting import inline_ofg_node
    from pytensor.graph.replace import vectorize_graph
    from pytensor.graph.rewriting.basic import in2out, node_rewriter
    from pytensor.tensor.blockwise import Blockwise

    @node_rewriter([OpFromGraph, Blockwise])
    def inline(fgraph, node):
        if isinstance(node.op, OpFromGraph):
            return inline_ofg_node(node)
        core = node.op.core_op
        if not isinstance(core, OpFromGraph):
            return None
        batch = node.op.batch_ndim(node)
        core_inputs = [i.type.clone(shape=i.type.shape[batch:])() for i in node.inputs]
        inlined = inline_ofg_node(core.make_node(*core_inputs))
        return vectorize_graph(inlined, replace=dict(zip(core_inputs, node.inputs)))

    return in2out(inline, name="inline_inner_graphs")


def _split_wide_sums():
    """A rewrite that nests every elementwise sum or product of more than 31 terms (a log
    density summed from many variables' terms) into sums of at most 31: NumPy's ufuncs,
    which Python mode runs, take at most 32 operands."""
    from pytensor.graph.rewriting.basic import in2out, node_rewriter
    from pytensor.scalar import Add, Mul
    from pytensor.tensor.elemwise import Elemwise

    @node_rewriter([Elemwise])
    def split(fgraph, node):
        if not isinstance(node.op.scalar_op, Add | Mul) or len(node.inputs) <= 31:
            return None
        parts = [node.op(*node.inputs[i:i + 31]) for i in range(0, len(node.inputs), 31)]
        return [node.op(*parts)]

    return in2out(split, name="split_wide_sums")


@without_creation_traces
def compile_one_off(inputs: Sequence, outputs: Sequence, lazy: bool = False) -> CompiledFunction:
    """Compile a function called once per run on a batch (initial point, output mapping).

    Uses :func:`python_mode` (NumPy implementations, no code generation), whatever the
    backend of the loop: such calls are vectorized over particles, so code generation would
    only add latency. With ``lazy``, PyTensor's rewrites run at the first call instead of
    now (a loop's init: the loop's own compile then starts first, in the background on JAX,
    and the init's rewrites overlap it).
    """
    import time

    if lazy:
        return CompiledFunction(_LazyFunction(list(inputs), list(outputs)), "python", 0.0)
    start = time.perf_counter()
    fn = pytensor.function(list(inputs), list(outputs), mode=python_mode(),
                           on_unused_input="ignore")
    return CompiledFunction(fn, "python", time.perf_counter() - start)


REPEATED_BATCHES = (32, 256)
"""The batch sizes at which :func:`compile_repeated`'s JAX function is called: a call on
fewer rows is padded to the next, on more to a multiple of the last (JAX compiles once per
shape; an optimizer's rounds ask for 1-17 points, a Hessian's differences for up to 256,
an importance check for 2,048 at a time)."""


def compile_repeated(inputs: Sequence, outputs: Sequence) -> CompiledFunction:
    """Compile a function called many times on a point or a few (an optimizer's objective),
    whose outputs' rows depend each on the same row of the first input only.

    As :func:`compile_one_off`, except for a graph with a loop of its own (a ``Scan``: a
    GARCH recursion, an HMM's forward algorithm in the likelihood): in Python mode every
    step of the scan is a Python call, 0.5 s for one point of posteriordb's garch11, and an
    optimizer makes hundreds. Such a graph is compiled to JAX where it is installed, called
    at the batch sizes of :data:`REPEATED_BATCHES` (rows padded with copies of the first),
    else, or where JAX cannot trace it, to C: C's first compile in a process with an empty
    cache compiles a module per op, 47 s on posteriordb's hmm_drive_0, where JAX took 3 s
    and 1.2 s per batch size.
    """
    if not _has_scan(outputs):
        return compile_one_off(inputs, outputs)
    if default_backend() == "jax":
        import time

        start = time.perf_counter()
        try:
            with _quiet_jax_conversion():
                jax_function = compile_function(inputs, outputs, "jax")
        except (KeyboardInterrupt, MemoryError):
            raise
        except Exception as error:  # noqa: BLE001 - an op without a JAX implementation
            _log_jax_refusal(error)
        else:
            function = _PaddedRows(jax_function,
                                   lambda: compile_function(inputs, outputs, "c"))
            compiled = function.owner = CompiledFunction(function, "jax",
                                                         time.perf_counter() - start)
            return compiled
    return compile_function(inputs, outputs, "c")


def _log_jax_refusal(error: BaseException) -> None:
    _LOG.info("JAX cannot compile a repeated function (%s: %s): compiling it to C",
              type(error).__name__, str(error).strip().split("\n")[0])


class _PaddedRows:
    """A JAX function of a batch of rows called at the sizes of :data:`REPEATED_BATCHES`;
    where JAX fails to convert or trace it (at its first call), the C function of
    ``fallback`` instead (and ``owner``, the :class:`CompiledFunction` that holds this one,
    then says ``"c"``)."""

    owner: CompiledFunction | None = None

    def __init__(self, function: CompiledFunction, fallback: Callable[[], CompiledFunction]):
        self.function, self.fallback, self.traced = function, fallback, False

    def __call__(self, rows, *rest):
        if not self.traced:
            try:
                values = self._padded(rows, *rest)
            except (KeyboardInterrupt, MemoryError):
                raise
            except Exception as error:  # noqa: BLE001 - JAX's trace failed
                _log_jax_refusal(error)
                self.function, self.traced = self.fallback(), True
                if self.owner is not None:
                    self.owner.backend = "c"
                return self.function(rows, *rest)
            self.traced = True
            return values
        if self.function.backend != "jax":
            return self.function(rows, *rest)
        return self._padded(rows, *rest)

    def _padded(self, rows, *rest):
        rows = np.asarray(rows)
        n = rows.shape[0]
        last = REPEATED_BATCHES[-1]
        size = next((b for b in REPEATED_BATCHES if b >= n), -(-n // last) * last)
        if size > n:
            rows = np.concatenate([rows, np.repeat(rows[:1], size - n, axis=0)])
        with _quiet_jax_conversion():  # JAX traces at a new size's first call
            values = self.function(rows, *rest)
        values = [np.asarray(v) for v in values]  # rows of the padding dropped
        return [v[:n] if v.ndim and v.shape[0] == size else v for v in values]


def _has_scan(outputs: Sequence) -> bool:
    """Whether the graph of ``outputs`` holds a ``Scan``."""
    from pytensor.graph.traversal import apply_ancestors
    from pytensor.scan.op import Scan

    return any(isinstance(node.op, Scan) for node in apply_ancestors(list(outputs)))


class _LazyFunction:
    """A :func:`python_mode` function of ``inputs -> outputs``, compiled at its first call
    (the graph is held until then, and dropped after; once, whatever the threads)."""

    def __init__(self, inputs: list, outputs: list):
        self.graph, self.function = (inputs, outputs), None
        self.lock = threading.Lock()

    def __call__(self, *args):
        if self.function is None:
            self._compile()
        return self.function(*args)

    @without_creation_traces
    def _compile(self):
        with self.lock:
            if self.function is None:
                inputs, outputs = self.graph
                self.function = pytensor.function(inputs, outputs, mode=python_mode(),
                                                  on_unused_input="ignore")
                self.graph = None
