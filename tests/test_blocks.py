"""A run in blocks of the pilot's shape (JAX on one CPU device).

The JAX loop compiles per shape. A run whose chains' ``draws`` are a multiple of the
pilot's ``num_pilot`` goes through the loop compiled for the pilot (one chain of
``num_pilot`` particles), a block at a time, instead of compiling its own shape: each
chain's per-step statistics are pooled from its blocks' (``scan.combine_blocks``), exactly,
to rounding. Checked here against the statistics of whole chains at random weights (a
fifth of them zero, a block and a chain without weight, non-finite slopes), and on a run:
one compiled shape, and the exact evidence.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from pymc_anneal.driver.scan import (
    BLOCK_STAT_NAMES,
    STAT_NAMES,
    _chain_statistics,
    combine_blocks,
)


def _statistics_function():
    log_w, slope = pt.matrix("log_w"), pt.vector("slope")
    accept, extra = pt.vector("accept"), pt.vector("extra")
    divergent = pt.vector("divergent", dtype="bool")
    info = SimpleNamespace(acceptance_rate=accept, is_divergent=divergent, extra=[extra])
    outputs = _chain_statistics(log_w, slope, info)
    return pytensor.function([log_w, slope, accept, divergent, extra], list(outputs))


@pytest.mark.parametrize("seed", range(12))
def test_a_chains_blocks_pool_to_its_statistics(seed):
    fn = _statistics_function()
    names = (*STAT_NAMES, *BLOCK_STAT_NAMES, "extra")
    rng = np.random.default_rng(seed)
    chains, blocks, block = 3, int(rng.integers(2, 5)), int(rng.integers(1, 6))
    draws = blocks * block
    log_w = rng.normal(scale=rng.uniform(0.1, 40.0), size=(chains, draws))
    log_w[rng.random(log_w.shape) < 0.2] = -np.inf
    if seed % 3 == 0:
        log_w[1, :block] = -np.inf  # a block without weight
    if seed % 4 == 1:
        log_w[2] = -np.inf  # a chain without weight
    slope = rng.normal(scale=10.0, size=chains * draws)
    slope[rng.random(slope.size) < 0.1] = np.nan
    accept = rng.uniform(size=chains * draws)
    divergent = rng.random(chains * draws) < 0.3
    extra = rng.normal(size=chains * draws)

    whole = dict(zip(names, fn(log_w, slope, accept, divergent, extra)))
    flat = log_w.reshape(-1)
    per_block = []
    for start in range(0, chains * draws, block):
        rows = slice(start, start + block)
        out = fn(flat[rows].reshape(1, block), slope[rows], accept[rows], divergent[rows],
                 extra[rows])
        per_block.append({n: np.asarray(o)[None, :] for n, o in zip(names, out)})  # 1 step
    pooled = combine_blocks(per_block, chains, block)

    assert set(pooled) == set(names)
    for name in (*STAT_NAMES, "extra"):
        assert pooled[name].shape == (1, chains), name
        np.testing.assert_allclose(pooled[name][0], whole[name], rtol=1e-10, atol=1e-9,
                                   err_msg=name)
    assert pooled["divergences"].dtype == whole["divergences"].dtype
    if seed % 4 == 1:
        assert pooled["log_z"][0, 2] == -np.inf and pooled["ess"][0, 2] == 0.0


def _normal_mean():
    from tests.analytic import normal_mean

    return normal_mean()


def _record_shapes(monkeypatch):
    from pymc_anneal.driver import scan

    called, compiled = [], []
    calls, precompile = scan.CompiledLoop._calls, scan.CompiledLoop.precompile

    def record_calls(self, rng, pieces, state, log_w, path_parameters):
        called.append(np.shape(log_w))
        return calls(self, rng, pieces, state, log_w, path_parameters)

    def record_compiles(self, num_particles, num_chains, *args, **kwargs):
        compiled.append((num_particles, num_chains))
        return precompile(self, num_particles, num_chains, *args, **kwargs)

    monkeypatch.setattr(scan.CompiledLoop, "_calls", record_calls)
    monkeypatch.setattr(scan.CompiledLoop, "precompile", record_compiles)
    return called, compiled


def test_a_run_on_a_cpu_goes_through_the_pilots_loop_in_blocks(monkeypatch):
    """draws = 2 x num_pilot: every call has the pilot's shape, nothing else is compiled,
    and the estimate meets the exact evidence (its check chain included, 3 chains)."""
    pytest.importorskip("jax")
    import pymc_anneal as pa
    from pymc_anneal.backends import loops_reuse_pilot_shape

    if not loops_reuse_pilot_shape("jax"):
        pytest.skip("JAX runs on another device here")
    target = _normal_mean()
    called, compiled = _record_shapes(monkeypatch)
    idata = pa.sample_ais(draws=200, chains=2, num_pilot=100, base="prior", backend="jax",
                          model=target.build(), random_seed=3, progressbar=False)
    assert set(called) == {(1, 100)}
    assert set(compiled) == {(100, 1)}
    est = pa.log_evidence(idata)
    assert abs(est.log_evidence - target.log_evidence) < 4 * est.standard_error
    stats = idata["annealing_stats"]
    assert stats["acceptance_rate"].shape[0] == 2  # the reported chains, as before


def test_a_run_whose_draws_the_pilot_does_not_divide_keeps_its_shape(monkeypatch):
    pytest.importorskip("jax")
    import pymc_anneal as pa

    target = _normal_mean()
    called, compiled = _record_shapes(monkeypatch)
    pa.sample_ais(draws=150, chains=2, num_pilot=100, base="prior", backend="jax",
                  model=target.build(), random_seed=3, progressbar=False)
    assert (1, 100) in called and (3, 150) in called  # the pilot's, then the run's
    assert (450, 3) in compiled


def test_a_long_pass_compiles_its_own_shape(monkeypatch):
    """More than ``MAX_BLOCKED_STEPS`` temperatures: the fixed cost of the loop's steps,
    paid once per block, would cost more than the compile (seeds_centered at 640)."""
    pytest.importorskip("jax")
    import pymc_anneal as pa
    from pymc_anneal.driver.run import MAX_BLOCKED_STEPS

    target = _normal_mean()
    called, compiled = _record_shapes(monkeypatch)
    pa.sample_ais(draws=200, chains=2, num_pilot=100, num_steps=MAX_BLOCKED_STEPS + 1,
                  base="prior", backend="jax", model=target.build(), random_seed=3,
                  progressbar=False)
    assert (2, 200) in called and (400, 2) in compiled
