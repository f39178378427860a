"""The one-off compile mode (:func:`pymc_anneal.backends.python_mode`): NumPy implementations,
no generated code, and the rewrites that make PyMC's batched graphs run there. Then the
Numba compiles' bits: no fast math, the same bits in a new process and on C (to where gcc
fuses multiply-adds), and one compile directory per test process."""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest
import pytensor.tensor as pt
from pytensor.compile.builders import OpFromGraph
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import ancestors
from pytensor.tensor.blockwise import Blockwise
from scipy import special

from pymc_anneal.backends import compile_one_off, compile_repeated


def _ops(fn):
    return [node.op for node in fn.function.maker.fgraph.toposort()]


def test_batched_logsumexp_and_its_gradient_are_inlined():
    """Vectorizing a per-particle graph wraps ``logsumexp`` (an inner graph) in a Blockwise;
    Python mode must run it as plain NumPy, with the right values and gradient."""
    x = pt.vector("x")
    per_particle = pt.logsumexp(2.0 * x) + x[0]
    xs = pt.matrix("xs")
    batched = vectorize_graph(per_particle, replace={x: xs})
    grad = pt.grad(batched.sum(), xs)
    before = [v.owner.op for v in ancestors([batched, grad]) if v.owner is not None]
    assert any(isinstance(op, Blockwise) and isinstance(op.core_op, OpFromGraph)
               for op in before)  # so the rewrite has something to do
    fn = compile_one_off([xs], [batched, grad])
    ops = _ops(fn)
    assert not any(isinstance(op, OpFromGraph) for op in ops)
    assert not any(isinstance(op, Blockwise) and isinstance(op.core_op, OpFromGraph)
                   for op in ops)

    values = np.random.default_rng(0).normal(size=(5, 3))
    out, out_grad = fn(values)
    np.testing.assert_allclose(out, special.logsumexp(2 * values, axis=1) + values[:, 0])
    softmax = special.softmax(2 * values, axis=1)
    expected_grad = 2 * softmax
    expected_grad[:, 0] += 1
    np.testing.assert_allclose(out_grad, expected_grad, rtol=1e-12)


def test_sums_of_more_than_32_terms_run():
    """NumPy's ufuncs take at most 32 operands; a log density summed from many variables'
    terms is nested instead of failing."""
    xs = [pt.scalar(f"x{i}") for i in range(70)]
    fn = compile_one_off(xs, [pt.add(*xs), pt.mul(*xs[:40])])
    values = np.linspace(0.5, 1.5, 70)
    total, product = fn(*values)
    np.testing.assert_allclose(total, values.sum())
    np.testing.assert_allclose(product, np.prod(values[:40]))


def test_the_one_off_compiles_skip_the_assumption_rewrites_and_keep_the_values():
    """A product with a diagonal matrix is what ``dot_diag_to_elemwise`` rewrites (PyTensor's
    ``FAST_RUN`` does, so the graph gives it something to do); the one-off compiles leave
    it out (:data:`~pymc_anneal.backends.SKIPPED_REWRITES`: its graph walks cost a fifth of
    their rewrite time) and keep the product, with the same values."""
    import pytensor

    from pymc_anneal.backends import SKIPPED_REWRITES, python_mode

    v, x = pt.vector("v"), pt.matrix("x")
    out = pt.diag(v) @ x
    rng = np.random.default_rng(0)
    values = rng.normal(size=3), rng.normal(size=(3, 4))

    def products(ops):
        return sum(type(op).__name__ in {"Dot", "Dot22", "Matmul"} for op in ops)

    fast_run = pytensor.function([v, x], out, mode="FAST_RUN")
    assert products(n.op for n in fast_run.maker.fgraph.toposort()) == 0
    for fn in (compile_one_off([v, x], [out]), compile_repeated([v, x], [out])):
        assert products(_ops(fn)) == 1
        np.testing.assert_allclose(fn(*values)[0], np.diag(values[0]) @ values[1],
                                   rtol=1e-15)
    assert set(SKIPPED_REWRITES) <= set(python_mode()._optimizer.exclude)


def test_graph_building_and_compiles_skip_creation_traces_unless_asked():
    """``without_creation_traces``: variables made inside carry no creation trace (PyTensor
    walks the stack for each otherwise), those made outside keep theirs, the flag comes back
    after the call (and after an error in it), and a user who asked for traces during
    compiles (``traceback__compile_limit > 0``) keeps them."""
    import pytensor
    import pytest

    from pymc_anneal.backends import without_creation_traces

    x = pt.vector("x")

    @without_creation_traces
    def build():
        return pt.exp(x) + 1.0

    @without_creation_traces
    def fail():
        raise ValueError("inside")

    assert (pt.exp(x) + 1.0).tag.trace  # PyTensor's default: a trace
    assert not build().tag.trace
    before = pytensor.config.traceback__limit
    with pytest.raises(ValueError, match="inside"):
        fail()
    assert pytensor.config.traceback__limit == before
    assert (pt.exp(x) + 1.0).tag.trace
    with pytensor.config.change_flags(traceback__compile_limit=5):
        assert build().tag.trace


# Numba without fast math (issue 39): the package's Numba functions are compiled with
# LLVM's fast-math flags off, so a seeded run has the same bits in every process, whatever
# PyTensor's Numba disk cache held; and no two test processes share that cache.

FAST_MATH = re.compile(r"\b(?:fadd|fsub|fmul|fdiv|frem|fneg|fcmp|call)\b.*"
                       r"\b(?:fast|reassoc|nnan|ninf|nsz|arcp|contract|afn)\b")
"""An LLVM instruction with a fast-math flag (``fadd reassoc nsz arcp contract afn double``)."""


def _fast_math_lines(function) -> list[str]:
    """The instructions with fast-math flags in the LLVM IR of a compiled PyTensor Numba
    function (its own code and what it calls, linked in), for each signature it has run."""
    jitted = function.vm.jit_fn
    assert jitted.signatures, "call the function first: Numba compiles at the first call"
    return [line for signature in jitted.signatures
            for line in jitted.inspect_llvm(signature).splitlines() if FAST_MATH.search(line)]


def test_the_numba_functions_compile_without_fast_math_whatever_the_users_flag():
    """Read off the LLVM IR (Numba's disk cache off, so that the IR is there to read): no
    instruction of a :func:`compile_function` or :func:`compile_loop` function carries a
    fast-math flag, under PyTensor's default ``numba__fastmath=True``, which stays the
    user's: the same graph compiled by ``pytensor.function`` before and after has them (so
    the check sees them where they are)."""
    import pytensor

    from pytensor.tensor.random.type import random_generator_type

    from pymc_anneal.backends import compile_function, compile_loop

    assert pytensor.config.numba__fastmath  # PyTensor's default, the case that matters
    x = pt.matrix("x")
    value = pt.logsumexp(pt.exp(x) * 2.0 + x * x, axis=1).sum()
    data = np.random.default_rng(0).normal(size=(3, 4))
    with pytensor.config.change_flags(numba__cache=False):
        users_before = pytensor.function([x], value, mode="NUMBA")
        users_before(data)
        ours = compile_function([x], [value], "numba")
        assert pytensor.config.numba__fastmath  # given back
        np.testing.assert_allclose(ours(data)[0], users_before(data), rtol=1e-13)
        users_after = pytensor.function([x], value, mode="NUMBA")
        users_after(data)

        rng, beta, position = random_generator_type("rng"), pt.scalar("beta"), pt.vector("p")
        next_rng, noise = pt.random.normal(size=position.shape, rng=rng,
                                           return_next_rng=True)
        moved = position + beta * noise
        loop = compile_loop(rng, [beta], [position], [],
                            [next_rng, moved, pt.logsumexp(moved * moved)], "numba")
        loop(np.random.default_rng(1), np.linspace(0.1, 1.0, 5), np.zeros(3))
    assert _fast_math_lines(users_before) and _fast_math_lines(users_after)
    assert _fast_math_lines(ours.function) == []
    assert _fast_math_lines(loop.function) == []


SEEDED_RUN = """
import json, sys, warnings
sys.path.insert(0, {root!r})
import pytensor
import pymc_anneal as pa
from pymc_anneal import backends
from tests.test_backends import _digest, _eight_schools
backends.NUMBA_FASTMATH = {fastmath!r}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", pa.AnnealingWarning)  # a short run
    result = pa.sample_ais(model=_eight_schools(), **{kw!r})
print(json.dumps([_digest(result), pa.log_evidence(result).log_evidence,
                  str(pytensor.config.base_compiledir)]))
"""
SEEDED = {"draws": 200, "chains": 2, "num_steps": 100, "random_seed": 1,
          "progressbar": False}
"""A run on which fast math moved bits between a cold and a warm cache (2026-11-27)."""


def _eight_schools():
    from tests import eight_schools as es

    return es.build_model()  # centered


def _digest(result) -> str:
    """A digest of every number of a result (all groups, all variables)."""
    import hashlib

    digest = hashlib.sha256()
    for group in sorted(result.children):
        dataset = result[group].to_dataset()
        for name in sorted(dataset.data_vars):
            values = np.asarray(dataset[name].values)
            if values.dtype.kind in "fiub":
                digest.update(name.encode() + np.ascontiguousarray(values).tobytes())
    return digest.hexdigest()


def _seeded_run(backend: str):
    import warnings

    import pymc_anneal as pa

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pa.AnnealingWarning)  # a short run
        result = pa.sample_ais(model=_eight_schools(), backend=backend, **SEEDED)
    return _digest(result), pa.log_evidence(result).log_evidence


def _seeded_run_in_a_new_process(compiledir, fastmath: bool = False) -> list:
    """:data:`SEEDED`'s run on Numba in a new process compiling in ``compiledir``."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    flags = [f for f in os.environ.get("PYTENSOR_FLAGS", "").split(",")
             if f.strip() and not f.strip().startswith("base_compiledir=")]
    env = {**os.environ, "PYTENSOR_FLAGS": ",".join([*flags, f"base_compiledir={compiledir}"])}
    code = SEEDED_RUN.format(root=str(root), fastmath=fastmath,
                             kw={**SEEDED, "backend": "numba"})
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True,
                         text=True, check=False, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # two new processes, the first compiling the loop from nothing
def test_a_seeded_numba_run_has_the_same_bits_in_a_new_process_that_finds_it_cached(
        tmp_path):
    """The same seeded run in a process that compiles the loop (empty compile directory),
    in one that finds it in the first one's disk cache, and here (this test process's own
    cache, in whatever state): the same bits. With PyTensor's default fast math the first
    two differed on this run (``benchmarks/bench_numba_fastmath.py``)."""
    cold = _seeded_run_in_a_new_process(tmp_path)
    assert list((tmp_path / "numba").glob("*.nbi")), "the first process cached nothing"
    warm = _seeded_run_in_a_new_process(tmp_path)
    assert cold[2] == warm[2] == str(tmp_path)
    assert cold[:2] == warm[:2] == list(_seeded_run("numba"))


@pytest.mark.slow  # C compiles of the loop (once per compile directory)
def test_numba_and_c_agree_bit_for_bit_where_gcc_fuses_no_multiply_adds():
    """Numba without fast math is IEEE arithmetic operation by operation; so is PyTensor's C
    code, but gcc compiles it with ``-march=native`` and, by default, contracts ``a * b + c``
    into a fused multiply-add where the processor has one (``-ffp-contract=fast``): the last
    bits then differ. With ``-ffp-contract=off`` the two runs are bit-identical (every
    number of the result); with gcc's default they agree to rounding."""
    import pytensor

    numba_digest, numba_log_z = _seeded_run("numba")
    flags = f"{pytensor.config.gcc__cxxflags} -ffp-contract=off".strip()
    with pytensor.config.change_flags(gcc__cxxflags=flags):
        assert _seeded_run("c") == (numba_digest, numba_log_z)
    c_digest, c_log_z = _seeded_run("c")  # gcc's default: fused where it can
    assert c_log_z == pytest.approx(numba_log_z, rel=1e-12)


def test_each_test_process_compiles_in_its_own_directory():
    """``tests/conftest.py``: this process's PyTensor compile directory, with its Numba
    cache, is its slot, named after its pytest-xdist worker, and no other process can take
    the slot while this one lives (Numba writes its cache index without a lock)."""
    import os
    import subprocess
    import sys

    import pytensor
    from pytensor.link.numba import cache

    from tests import conftest

    pytest.importorskip("fcntl")
    slot = os.environ["PYMC_ANNEAL_TEST_SLOT"]
    assert slot.startswith(f"worker-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}")
    assert pytensor.config.base_compiledir == conftest.COMPILEDIR
    assert conftest.COMPILEDIR.name == slot
    assert cache.NUMBA_CACHE_PATH == conftest.COMPILEDIR / "numba"
    take = "import fcntl, sys; fcntl.flock(open(sys.argv[1], 'w'), fcntl.LOCK_EX | fcntl.LOCK_NB)"
    lock = conftest.COMPILEDIR.parent / f"{slot}.lock"
    out = subprocess.run([sys.executable, "-c", take, str(lock)], capture_output=True,
                         text=True, check=False, timeout=60)
    assert out.returncode != 0 and "BlockingIOError" in out.stderr


def _rows_with_a_scan():
    """A batch of rows ``x (n, 7)``, each row's value a recursion over its entries (one
    scan over the batch, as a model's batched GARCH recursion is) and a softplus sum."""
    import pytensor

    x = pt.matrix("x", dtype="float64")
    recursion = pytensor.scan(lambda a, prev: 0.5 * prev + a ** 2, sequences=[x.T],
                              outputs_info=[pt.zeros((x.shape[0],), dtype="float64")],
                              return_updates=False)
    total = recursion[-1] + pt.log1p(pt.exp(x)).sum(axis=1)
    return x, total


def test_an_optimizers_objective_with_a_scan_is_compiled_to_jax_or_c(monkeypatch):
    """``compile_repeated`` (the Laplace fit's objective, called hundreds of times): a
    graph with a scan (garch11's recursion: 0.5 s a point in Python mode, 40 s of its fit)
    is compiled to JAX where it is installed (called at the batch sizes of
    ``REPEATED_BATCHES``, the rows padded: C's first compile with an empty cache took 47 s
    on hmm_drive_0), else to C, with the numbers of Python mode at every number of rows;
    a graph without one stays in Python mode (nothing compiled)."""
    import pymc_anneal.backends as backends

    x, total = _rows_with_a_scan()
    outputs = [total, pt.grad(total.sum(), x)]
    reference = compile_one_off([x], outputs)
    plain = compile_repeated([x], [pt.log1p(pt.exp(x)).sum(axis=1)])
    assert plain.backend == "python"
    rng = np.random.default_rng(2)
    have_jax = importlib.util.find_spec("jax") is not None
    for backend in (["jax"] if have_jax else []) + ["c"]:
        if backend == "c":
            monkeypatch.setattr(backends, "default_backend", lambda: "numba")
        looped = compile_repeated([x], outputs)
        assert looped.backend == backend
        for n in (1, 5, 32, 33, 300, 1):  # below, at and past each padded size
            points = rng.normal(size=(n, 7))
            for got, want in zip(looped(points), reference(points)):
                assert got.shape == want.shape
                np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("obstacle", ["no JAX implementation", "a shape from the data"])
def test_a_repeated_function_that_jax_cannot_compile_is_compiled_to_c(obstacle):
    """An op without a JAX implementation (found as the graph is converted), or a shape
    computed from the input (found as JAX traces it, at the first call), in a graph with a
    scan: ``compile_repeated`` compiles it to C instead, with the same numbers, and says so
    in its ``backend`` (the log says why)."""
    pytest.importorskip("jax")
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op

    class Doubled(Op):  # Python only: no JAX conversion
        def make_node(self, v):
            v = pt.as_tensor(v)
            return Apply(self, [v], [v.type()])

        def perform(self, node, inputs, outputs):
            outputs[0][0] = 2.0 * inputs[0]

    x, total = _rows_with_a_scan()
    if obstacle == "no JAX implementation":
        out = Doubled()(total)
    else:  # a slice of 2 + floor|x[0, 0]| entries: a stop that JAX's trace cannot know
        out = total + x[0, :pt.cast(2 + pt.floor(pt.abs(x[0, 0])), "int64")].sum()
    looped = compile_repeated([x], [out])
    points = np.random.default_rng(3).normal(size=(4, 7))
    got = looped(points)[0]
    assert looped.backend == "c"
    np.testing.assert_allclose(got, compile_one_off([x], [out])(points)[0], rtol=1e-12)


def test_the_jax_loop_skips_the_steps_that_pad_a_call():
    """A JAX call runs ``JAX_LOOP_LENGTH`` steps; a shorter piece is padded with steps that
    change nothing (``pad_steps``: ``delta_beta = -0.0``), and the loop skips them
    (``jax.lax.cond``) instead of computing identity transitions. Twenty real steps padded
    to 32 give what the same twenty steps give in a call of their own length, bit for bit:
    the state, the log weights, the per-step statistics and the RNG key, which a padding
    step that ran would have advanced."""
    pytest.importorskip("jax")
    from pymc_anneal.backends import JAX_LOOP_LENGTH, PADDING
    from pymc_anneal.driver.scan import build_loop, pad_steps
    from pymc_anneal.driver.tuning import step_arrays
    from pymc_anneal.kernels import resolve_kernel
    from pymc_anneal.schedules import make_schedule
    from tests.gaussian_paths import DEFAULT

    path = DEFAULT.path
    loop = build_loop(path, resolve_kernel("hais", path), "jax")
    betas = make_schedule("geometric", 20)
    values = {p.name: np.tile(p.initial(path.num_dims), (20,) + (1,) * p.per_dimension)
              for p in loop.parameters if p.derive is None}
    values["step_size"] = np.full(20, 0.4)
    arrays = step_arrays(loop.parameters, betas, values, {})
    padded = pad_steps(loop.parameters, arrays, JAX_LOOP_LENGTH)
    assert padded["delta_beta"].size == JAX_LOOP_LENGTH
    assert np.all(np.signbit(padded["delta_beta"][20:])) and PADDING == 0.0
    rng = np.random.default_rng(5)
    positions = DEFAULT.sample(rng, 0.0, 64)
    path_parameters = [path.parameters[k] for k in sorted(path.parameters)]
    first = {k: v[0] for k, v in arrays.items()}
    outputs = []
    for piece in (padded, arrays):  # the padded call, then a call of twenty steps
        key, state = loop.init(np.random.default_rng(9), positions, first, path_parameters)
        out = loop.chunk_fn(key, piece["beta"], piece["delta_beta"],
                            *(piece[n] for n in loop.parameter_names),
                            *(state[f] for f in loop.field_names), np.zeros((1, 64)),
                            *path_parameters)
        outputs.append(out)
    (key_a, *rest_a), (key_b, *rest_b) = outputs
    import jax

    def key_bits(key):
        return np.asarray(jax.random.key_data(key["jax_state"]))

    np.testing.assert_array_equal(key_bits(key_a), key_bits(key_b))
    num_final = len(loop.field_names) + 1
    for a, b in zip(rest_a[:num_final], rest_b[:num_final]):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for a, b in zip(rest_a[num_final:], rest_b[num_final:]):  # per-step statistics
        np.testing.assert_array_equal(np.asarray(a)[:20], np.asarray(b))
    assert not np.array_equal(np.asarray(rest_b[0]), positions)  # the real steps moved


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("impl", ["rbg", "threefry2x32"])
def test_the_split_normal_draws_are_jaxs_bit_for_bit(impl, dtype):
    """:func:`~pymc_anneal.backends.split_standard_normal` (the uniform and its ``erf_inv``
    in two fusions) draws what ``jax.random.normal`` draws from the same key, for either
    key (PyTensor's JAX states are ``rbg`` keys), at several shapes, jitted or not: in
    float64 (the loops') bit for bit, in float32 within four units in the last place
    (two measured)."""
    jax = pytest.importorskip("jax")
    import pytensor.link.jax.dispatch  # noqa: F401  (as the JAX loops: float64 on)

    from pymc_anneal.backends import split_standard_normal

    for seed, shape in [(0, (5000, 3)), (1, (7,)), (2, (3, 4, 5)), (3, ())]:
        key = jax.random.key(seed, impl=impl)
        expected = np.asarray(jax.random.normal(key, shape, dtype))
        got = np.asarray(split_standard_normal(key, shape, dtype))
        jitted = np.asarray(jax.jit(split_standard_normal, static_argnums=(1, 2))(
            key, shape, dtype))
        assert got.dtype == jitted.dtype == expected.dtype == np.dtype(dtype)
        if dtype == "float64":  # the loops' precision: the same bits
            np.testing.assert_array_equal(got, expected)
            np.testing.assert_array_equal(jitted, expected)
        else:  # XLA's float32 erf_inv fused and apart: a few units in the last place
            np.testing.assert_allclose(got, expected, rtol=4 * 2.0**-23, atol=0)
            np.testing.assert_allclose(jitted, expected, rtol=4 * 2.0**-23, atol=0)
    assert abs(float(np.mean(np.asarray(split_standard_normal(
        jax.random.key(9, impl=impl), (200_000,), dtype))))) < 5 / np.sqrt(200_000)


def test_the_jax_loop_draws_its_normals_split_and_gets_the_same_bits(monkeypatch):
    """The JAX loop's normal draws (HAIS's momenta) go through the split sampler
    (:func:`~pymc_anneal.backends._split_normal`, which XLA's CPU backend runs about twice
    as fast), and the loop's outputs are those of a loop compiled without it, bit for bit:
    the final state, the log weights and the per-step statistics."""
    pytest.importorskip("jax")
    from pymc_anneal import backends
    from pymc_anneal.driver.scan import build_loop
    from pymc_anneal.driver.tuning import step_arrays
    from pymc_anneal.kernels import resolve_kernel
    from pymc_anneal.schedules import make_schedule
    from tests.gaussian_paths import DEFAULT

    calls = []
    split = backends.split_standard_normal

    def counted(*args):
        calls.append(args[1])
        return split(*args)

    monkeypatch.setattr(backends, "split_standard_normal", counted)
    path = DEFAULT.path
    betas = make_schedule("geometric", 12)
    rng = np.random.default_rng(5)
    positions = DEFAULT.sample(rng, 0.0, 48)
    path_parameters = [path.parameters[k] for k in sorted(path.parameters)]
    outputs = []
    for split_on in (True, False):
        if not split_on:  # the same loop, its normals drawn by PyTensor's JAX sampler
            from pytensor.graph.rewriting.basic import in2out, node_rewriter
            from pytensor.tensor.random.basic import NormalRV

            @node_rewriter([NormalRV])
            def nothing(fgraph, node):
                return None

            monkeypatch.setattr(backends, "_split_normal", lambda: in2out(nothing))
        before = len(calls)
        loop = build_loop(path, resolve_kernel("hais", path), "jax")
        values = {p.name: np.tile(p.initial(path.num_dims), (12,) + (1,) * p.per_dimension)
                  for p in loop.parameters if p.derive is None}
        values["step_size"] = np.full(12, 0.4)
        arrays = step_arrays(loop.parameters, betas, values, {})
        first = {k: v[0] for k, v in arrays.items()}
        key, state = loop.init(np.random.default_rng(9), positions, first, path_parameters)
        out = loop.chunk_fn(key, arrays["beta"], arrays["delta_beta"],
                            *(arrays[n] for n in loop.parameter_names),
                            *(state[f] for f in loop.field_names), np.zeros((1, 48)),
                            *path_parameters)
        outputs.append([np.asarray(a) for a in out[1:]])
        assert (len(calls) > before) == split_on, calls
    assert any(shape == (48, path.num_dims) for shape in calls), calls
    for a, b in zip(*outputs):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(outputs[0][0], positions)  # the steps moved


def test_the_loops_xla_level_is_given_on_cpus_only():
    """The cheaper LLVM pipeline (``xla_backend_optimization_level=1``) was measured on
    CPUs (``benchmarks/bench_xla_level.py``); elsewhere XLA's default stays, while the
    other options (constant folding off) hold on every device."""
    from pymc_anneal import backends

    cpu, gpu = backends._xla_options("cpu"), backends._xla_options("gpu")
    assert cpu["xla_backend_optimization_level"] == 1
    assert "xla_backend_optimization_level" not in gpu
    assert cpu["xla_disable_hlo_passes"] == gpu["xla_disable_hlo_passes"] == "constant_folding"


def test_waiting_jobs_run_while_a_compile_is_awaited_and_are_dropped_after():
    """Within an entry point (:func:`~pymc_anneal.backends.waiting_jobs`), the jobs given
    run in order in the waiting thread until the compile is done (here the second job
    finishes it), a failing job is dropped silently, the jobs not reached are dropped
    when the call returns, and nothing is kept outside a call or seen by another thread."""
    import threading

    from pymc_anneal import backends

    ran, done = [], threading.Event()

    @backends.waiting_jobs
    def entry():
        backends.add_waiting_jobs(lambda: ran.append("a"), lambda: 1 / 0,
                                  lambda: (ran.append("b"), done.set()),
                                  lambda: ran.append("c"))
        seen = []
        other = threading.Thread(target=lambda: seen.append(
            getattr(backends._WAITING, "jobs", None)))
        other.start()
        other.join()
        backends._wait(done)
        return list(backends._WAITING.jobs), seen

    left, seen = entry()
    assert ran == ["a", "b"] and len(left) == 1 and seen == [None]
    assert getattr(backends._WAITING, "jobs", None) is None
    backends.add_waiting_jobs(lambda: ran.append("outside"))  # no call: nothing kept
    backends._wait(done)
    assert ran == ["a", "b"]


def test_sample_ais_gives_its_later_work_to_the_waits_and_keeps_none(monkeypatch):
    """``sample_ais`` gives its waits the Pareto fit's import, xarray's array backends and
    the compile of its output map, and leaves no job behind."""
    import pymc_anneal as pa
    from pymc_anneal import backends
    from pymc_anneal.pymc import sampling
    from tests import analytic

    given = []
    monkeypatch.setattr(sampling, "add_waiting_jobs", lambda *jobs: given.extend(jobs))
    pa.sample_ais(model=analytic.normal_mean().build(), draws=100, chains=2,
                  progressbar=False, random_seed=1)
    names = [getattr(job, "__name__", "") for job in given]
    assert names == ["load_pareto_fit", "load_array_backends", "output_function"], names
    assert getattr(backends._WAITING, "jobs", None) is None
