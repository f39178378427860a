"""Particles sharded over JAX devices (issue 25, item 5): with two (CPU) devices a run's
particles are split over both, the estimate is the one-device run's to rounding (often bit
for bit, not always) and within its standard error of the exact
value, and a sharded run stopped at a chunk boundary resumes from its checkpoint bit for bit.

The test process's JAX has one device, so the sharded runs happen in a subprocess started
with ``XLA_FLAGS=--xla_force_host_platform_device_count=2``; it switches between one device
and both with ``PYMC_ANNEAL_JAX_DEVICES`` (read at each call), and reports what the backend
logged about the placement of the particles.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pymc_anneal import backends
from pymc_anneal.exceptions import AnnealingError

ROOT = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent("""
    import json, logging, os, sys, warnings
    sys.path.insert(0, {root!r})
    import numpy as np, pymc_anneal as pa
    from tests.analytic import linear_regression
    from tests.test_checkpoint import _assert_same, _call, _rbm
    from pymc_anneal.driver import checkpoint as C

    placements = []
    class Record(logging.Handler):
        def emit(self, record):
            placements.append(record.getMessage())
    logging.getLogger("pymc_anneal.backends").addHandler(Record())
    logging.getLogger("pymc_anneal.backends").setLevel(logging.DEBUG)
    warnings.simplefilter("ignore", pa.AnnealingWarning)  # small runs

    target = linear_regression(num_features=3, n=20)
    def runs():
        with target.build():
            yield "sample_ais", pa.sample_ais(draws=100, chains=2, num_steps=64,
                                              random_seed=5, progressbar=False)
        yield "ais", pa.ais(_rbm(), draws=100, chains=2, num_steps=64, random_seed=5,
                            progressbar=False)
    report = {{"exact": {{"sample_ais": target.log_evidence, "ais": _rbm().exact_log_z()}}}}
    results = {{}}
    for devices in ("1", "all"):
        os.environ["PYMC_ANNEAL_JAX_DEVICES"] = devices
        placements.clear()
        for name, result in runs():
            estimate = pa.log_evidence(result)
            results[devices, name] = result
            report[devices + "/" + name] = [estimate.log_evidence, estimate.standard_error]
        report[devices + "/placements"] = list(placements)
    report["same"] = {{}}
    for name in ("sample_ais", "ais"):
        one, two = results["1", name], results["all", name]
        report["same"][name] = all(one[g].to_dataset().equals(two[g].to_dataset())
                                   for g in one.children)
        report["log_weight_diff"] = report.get("log_weight_diff", {{}})
        report["log_weight_diff"][name] = float(np.max(np.abs(
            one["particles"]["log_weight"].values - two["particles"]["log_weight"].values)))

    # a sharded run stopped by Ctrl-C after its third checkpoint write, then resumed
    path = {path!r}
    original, count = C.Checkpoint.save, [0]
    def save(self, *args, **kwargs):
        original(self, *args, **kwargs)
        count[0] += 1
        if count[0] == 3:
            raise KeyboardInterrupt
    C.Checkpoint.save = save
    try:
        _call("sample_ais", checkpoint=path)
    except KeyboardInterrupt:
        report["stopped"] = True
    C.Checkpoint.save = original
    resumed = _call("sample_ais", checkpoint=path)
    _assert_same(resumed, _call("sample_ais"))
    report["resumed"] = True
    print("REPORT", json.dumps(report))
""")


@pytest.mark.slow  # a subprocess that compiles each loop for one device and for two: ~40 s
def test_two_cpu_devices_split_the_particles_and_agree_with_one(tmp_path):
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
           "PYMC_ANNEAL_JAX_DEVICES": "all"}
    child = subprocess.run(
        [sys.executable, "-c", CHILD.format(root=str(ROOT), path=str(tmp_path / "run.ckpt"))],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=env, check=False)
    assert child.returncode == 0, child.stderr[-3000:]
    report = json.loads(child.stdout.split("REPORT ", 1)[1])
    # every loop call of the sharded runs (the pilot's 256 particles, the runs' 200) had its
    # particles split over both devices; with PYMC_ANNEAL_JAX_DEVICES=1, over one
    assert report["all/placements"], report
    assert all(m.endswith("on 2 device(s)") for m in report["all/placements"]), report
    assert all(m.endswith("on 1 device(s)") for m in report["1/placements"]), report
    for name in ("sample_ais", "ais"):
        (one, one_se), (estimate, se) = report["1/" + name], report["all/" + name]
        # the random bits do not depend on the placement; sums over particles (a chain's
        # statistics, hence the tuned step sizes) may be summed in another order: equal to
        # rounding (a few ulps of log-weights of order 10, amplified by nothing here)
        assert report["log_weight_diff"][name] < 1e-9, report
        if name == "ais":  # Gibbs, nothing tuned: no sum over particles reaches a particle
            assert report["same"][name], report
        assert estimate == pytest.approx(one, abs=1e-9) and se == pytest.approx(one_se, abs=1e-9)
        assert abs(estimate - report["exact"][name]) < 4 * se, (name, estimate, se)
    assert report["stopped"] and report["resumed"]


def test_one_device_places_nothing(monkeypatch):
    carries = [np.zeros((8, 3)), np.zeros((2, 4))]
    monkeypatch.setenv(backends.DEVICES_VARIABLE, "all")
    assert backends._particle_shardings(carries) is None  # the test process has one device
    monkeypatch.setenv(backends.DEVICES_VARIABLE, "1")
    assert backends._particle_shardings(carries) is None


@pytest.mark.parametrize("setting", ["0", "two", "-1"])
def test_a_bad_device_setting_is_refused(setting, monkeypatch):
    monkeypatch.setenv(backends.DEVICES_VARIABLE, setting)
    with pytest.raises(AnnealingError, match="PYMC_ANNEAL_JAX_DEVICES must be 'all'"):
        backends._particle_shardings([np.zeros((8, 3))])
