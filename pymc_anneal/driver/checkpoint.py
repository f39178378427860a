r"""Checkpoints: a run's whole state between chunks, on disk, so that a call resumes.

An entry point given ``checkpoint="run.ckpt"`` opens a :class:`Checkpoint` and hands it to
each :func:`~pymc_anneal.driver.run.run_annealing` it calls (stage 0, 1, ... in call order:
``sample_ais(base="gaussian")`` has the fitting run and the final run). After every chunk of
temperatures the stage's state is written: the particles' kernel state (positions, momenta,
cached log densities), log weights, the statistics so far, the step reached, the RNG state
of the loop, the pilot's tuned per-step values and schedule, and which pass of
``num_steps="auto"`` it is. A finished stage keeps its final state, so a call that
resumes after it skips it. Calling again with the same path resumes from the last chunk
written, and gives the result an uninterrupted call would have given, bit for bit (the RNG
streams are spawned in the same order and the loop's state is restored exactly;
``tests/test_checkpoint.py``).

**Format: one ``.npz`` file, arrays and a JSON header, no pickle.** ``numpy.load`` with
``allow_pickle=False`` never runs code, the file needs no dependency, and writing it is a
copy of the arrays (the state of a run is a few arrays; netCDF would add a schema and
h5py's write latency for nothing here). The header holds the format, the fingerprint of
the call (model, data and every setting: :func:`pymc_anneal._digest.fingerprint`), the seed,
each stage's scalars, and a SHA-256 digest of the header and of every array: a truncated or
altered file is refused, never half-read.

**Atomic writes**: the new state goes to a temporary file in the same directory, is
flushed to disk (``fsync``), and replaces the old file with ``os.replace``: a crash while
writing leaves the last good checkpoint.

**A path that cannot be written is refused before anything runs**: the file's directory
must exist (it is not created) and take a new file (:func:`check_writable` creates and
removes a temporary file there, which also catches missing permissions, a read-only file
system or ``/proc``), and the path must not be a directory. **A write that fails later** (the disk fills, the directory goes
away) never costs the run: the run goes on without its checkpoint and returns its result
with an :class:`~pymc_anneal.exceptions.AnnealingWarning` that names the file and the
error (no further write is tried).

**How often**: the state is recorded after every chunk, but written at most once every
``PYMC_ANNEAL_CHECKPOINT_INTERVAL`` seconds (default 10) and never more often than 19 times
the last write's duration, so that writing costs at most 5 % of the run (a crash loses at
most the interval's work; ``0`` writes after every chunk). A call that ends writes its final
state, and so does one stopped by an exception or Ctrl-C: the last completed chunk is on
disk when the call returns or raises, whatever the interval.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pathlib
import tempfile
import time
import zipfile

import numpy as np

from pymc_anneal._digest import fingerprint
from pymc_anneal.exceptions import AnnealingError, warn

FORMAT = "pymc_anneal-checkpoint-1"
INTERVAL_VARIABLE = "PYMC_ANNEAL_CHECKPOINT_INTERVAL"
DEFAULT_INTERVAL = 10.0
"""Seconds between checkpoint writes, unless :data:`INTERVAL_VARIABLE` says otherwise."""
MAX_WRITE_SHARE = 0.05
"""Writes wait at least ``(1 - share) / share`` times the last write's duration."""


def write_interval() -> float:
    """The minimum number of seconds between two writes (``PYMC_ANNEAL_CHECKPOINT_INTERVAL``;
    0: after every chunk)."""
    text = os.environ.get(INTERVAL_VARIABLE, "").strip()
    if not text:
        return DEFAULT_INTERVAL
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also NaN
        raise AnnealingError(
            f"{INTERVAL_VARIABLE} must be a number of seconds >= 0, got {text!r}: e.g. "
            f"{INTERVAL_VARIABLE}=60 (at most one write a minute) or 0 (after every chunk).")
    return value


class Checkpoint:
    """A checkpoint file for one call of an entry point.

    Parameters
    ----------
    path : str or os.PathLike
        The file (created on the first write; read if it exists), in a directory that
        exists (:func:`check_writable`; :func:`open_checkpoint` checks it).
    fingerprint : str
        The call's identity (model, data and settings); a file with another one is refused.
    random_seed
        The call's ``random_seed``. With a file, the seed stored there is used (``None`` or
        a Generator: the stored one; an int or a sequence must equal it). Without one, an
        int or sequence is kept, and ``None`` or a Generator becomes a fresh integer, stored,
        so that a resumed call draws the same numbers.
    """

    def __init__(self, path, fingerprint: str, random_seed=None):
        self.path = pathlib.Path(os.fspath(path))
        self.fingerprint = fingerprint
        self.stages: dict[int, dict] = {}
        self._calls = 0
        self.interval = write_interval()
        self._last_write = time.monotonic()  # a run's first seconds are not written
        self._write_cost = 0.0
        self.pending = False  # recorded state not yet on disk
        self.failed: OSError | None = None  # the write that failed; none is tried after it
        stored = self._read() if self.path.exists() else None
        if stored is not None:
            header, arrays = stored
            self.seed = header["seed"]
            _check_seed(random_seed, self.seed, self.path)
            if header["fingerprint"] != fingerprint:
                raise AnnealingError(
                    f"the checkpoint {self.path} was written by a call with another model, "
                    "other data or other settings (its fingerprint differs from this call's), "
                    "so it cannot be resumed here. Call with the same model, data and "
                    "arguments to resume, or give another checkpoint path (or delete this "
                    "file) to start afresh.")
            for key, scalars in header["stages"].items():
                prefix = f"{key}/"
                self.stages[int(key)] = {
                    **scalars, "arrays": {k[len(prefix):]: v for k, v in arrays.items()
                                          if k.startswith(prefix)}}
        else:
            self.seed = _fresh_seed(random_seed)
        self.resumed = stored is not None

    def next_stage(self) -> tuple[int, dict | None]:
        """The index of the next :func:`run_annealing` call of this entry point, and its
        stored record (None: not reached before)."""
        index = self._calls
        self._calls += 1
        return index, self.stages.get(index)

    def save(self, index: int, scalars: dict, arrays: dict[str, np.ndarray],
             force: bool = False) -> None:
        """Record stage ``index`` (JSON-able ``scalars`` and named ``arrays``), and write the
        file atomically if ``force`` or if the last write is long enough ago (see the module
        docstring); otherwise it is written later (:meth:`flush`)."""
        # copies (a backend may reuse its output buffers in the next chunk), in one store:
        # a Ctrl-C leaves the record of either this chunk or the one before, never a mix
        self.stages[index] = {**scalars, "arrays": {k: np.array(v) for k, v in arrays.items()}}
        self.pending = True
        wait = max(self.interval, self._write_cost * (1 - MAX_WRITE_SHARE) / MAX_WRITE_SHARE)
        if force or self.interval == 0 or time.monotonic() - self._last_write >= wait:
            self._try_write()

    def flush(self) -> None:
        """Write the recorded state if it is not on disk yet."""
        if self.pending:
            self._try_write()

    # ------------------------------------------------------------------ the file
    def _try_write(self) -> None:
        """:meth:`_write`, unless a write failed before; a write that fails (an
        :class:`OSError`: the disk, the directory) warns once and stops the writes, so that
        the run goes on and its result is returned."""
        if self.failed is not None:
            return
        try:
            self._write()
        except OSError as error:
            self.failed = error
            warn(f"the checkpoint {self.path} could not be written "
                 f"({type(error).__name__}: {error.strerror or error}); the run goes on "
                 "without it and its result is returned, but it is not saved: a call with "
                 "this checkpoint cannot resume from this run's last chunks. Free the disk "
                 "or give a checkpoint path in a writable directory to keep the next run.")

    def _write(self) -> None:
        start = time.monotonic()
        arrays = {f"{i}/{k}": np.asarray(v) for i, stage in self.stages.items()
                  for k, v in stage["arrays"].items()}
        header = {"format": FORMAT, "fingerprint": self.fingerprint, "seed": self.seed,
                  "stages": {str(i): {k: v for k, v in stage.items() if k != "arrays"}
                             for i, stage in self.stages.items()}}
        header["sha256"] = _digest(header, arrays)
        buffer = io.BytesIO()
        np.savez(buffer, __header__=np.frombuffer(json.dumps(header).encode(), np.uint8),
                 **arrays)
        fd, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(buffer.getbuffer())
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            pathlib.Path(temporary).unlink(missing_ok=True)
            raise
        self.pending = False
        self._last_write = time.monotonic()
        self._write_cost = self._last_write - start

    def _read(self) -> tuple[dict, dict[str, np.ndarray]]:
        try:
            raw = io.BytesIO(self.path.read_bytes())  # np.load leaks the file on a bad zip
            with np.load(raw, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
            header = json.loads(arrays.pop("__header__").tobytes().decode())
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
            # a truncated zip, a damaged member (CRC), an unreadable header
            raise self._corrupt(f"it cannot be read ({type(error).__name__}: {error})") \
                from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise self._corrupt(f"it is not a {FORMAT} file")
        if header.pop("sha256", None) != _digest(header, arrays):
            raise self._corrupt("its checksum does not match its contents (truncated or "
                                "altered)")
        return header, arrays

    def _corrupt(self, why: str) -> AnnealingError:
        return AnnealingError(
            f"the checkpoint {self.path} is damaged: {why}. It was not used. Delete it (or "
            "give another path) to start the run afresh.")


def _digest(header: dict, arrays: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256(json.dumps(header, sort_keys=True).encode())
    for name in sorted(arrays):
        value = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}{value.dtype.str}{value.shape}".encode())
        digest.update(value.tobytes())
    return digest.hexdigest()


def _fresh_seed(random_seed):
    if random_seed is None or isinstance(random_seed, np.random.Generator):
        source = random_seed if random_seed is not None else np.random.default_rng()
        return int(source.integers(2**63))
    if isinstance(random_seed, np.integer):
        return int(random_seed)
    if isinstance(random_seed, np.ndarray):
        return random_seed.tolist()
    return list(random_seed) if isinstance(random_seed, tuple) else random_seed


def _check_seed(random_seed, stored, path) -> None:
    if random_seed is None or isinstance(random_seed, np.random.Generator):
        return
    given = _fresh_seed(random_seed)
    if given != stored:
        raise AnnealingError(
            f"the checkpoint {path} was written with random_seed={stored!r}, and this call "
            f"gives random_seed={given!r}. Resume with the same seed (or random_seed=None, "
            "which uses the stored one), or give another checkpoint path to start afresh.")


# ---------------------------------------------------------------- RNG states as arrays
def rng_to_arrays(rng) -> tuple[dict, dict[str, np.ndarray]]:
    """A loop's RNG state (a NumPy Generator, or the JAX state the compiled JAX loop passes
    back) as JSON-able scalars and arrays (:func:`rng_from_arrays` restores it)."""
    if isinstance(rng, np.random.Generator):
        state = rng.bit_generator.state
        return {"rng_kind": "numpy", "rng_state": json.dumps(state)}, {}
    from pymc_anneal.backends import jax_rng_to_array

    return {"rng_kind": "jax"}, {"rng_key": jax_rng_to_array(rng)}


def rng_from_arrays(scalars: dict, arrays: dict):
    """The RNG state stored by :func:`rng_to_arrays`."""
    if scalars["rng_kind"] == "numpy":
        state = json.loads(scalars["rng_state"])
        generator = np.random.Generator(getattr(np.random, state["bit_generator"])())
        generator.bit_generator.state = state
        return generator
    from pymc_anneal.backends import jax_rng_from_array

    return jax_rng_from_array(arrays["rng_key"])


# ---------------------------------------------------------------- one run_annealing call
class Stage:
    """The record of one :func:`~pymc_anneal.driver.run.run_annealing` call in a checkpoint
    (a no-op without one): what it restores, and what it writes after each chunk.

    Its scalars: ``status`` (``"tuned"``, ``"annealing"``, ``"done"``), ``pass_index`` (0,
    or the repeat of ``num_steps="auto"``), ``done_steps`` (steps of the pass completed),
    ``realized`` (the check chain's variance, once known) and the RNG's; its arrays: the
    pilot's (``pilot/...``), the pass's schedule and values (``pass/...``) and its state
    (``state/...``, ``log_w``, ``stats/...``).
    """

    def __init__(self, checkpoint: Checkpoint | None):
        self.checkpoint = checkpoint
        self.index, record = (None, None) if checkpoint is None else checkpoint.next_stage()
        record = dict(record or {})
        self.arrays: dict[str, np.ndarray] = record.pop("arrays", {})
        self.scalars: dict = record

    @property
    def done(self) -> bool:
        return self.scalars.get("status") == "done"

    @property
    def pass_index(self) -> int:
        return int(self.scalars.get("pass_index", 0))

    @property
    def realized(self):
        return self.scalars.get("realized")

    def _group(self, prefix: str) -> dict[str, np.ndarray]:
        return {k[len(prefix):]: v for k, v in self.arrays.items() if k.startswith(prefix)}

    def _write(self, force: bool = False) -> None:
        if self.checkpoint is not None:
            self.checkpoint.save(self.index, self.scalars, self.arrays, force=force)

    def pilot(self):
        """The stored pilot (:class:`~pymc_anneal.driver.tuning.Pilot`), or None."""
        from pymc_anneal.driver.tuning import Pilot

        if "pilot/betas" not in self.arrays:
            return None
        return Pilot(self.arrays["pilot/betas"], self._group("pilot/value/"),
                     self.arrays["pilot/ratio_var"], float(self.scalars["pilot_inefficiency"]))

    def keep_pilot(self, pilot) -> None:
        if self.checkpoint is None or "pilot/betas" in self.arrays:
            return
        self.arrays.update({"pilot/betas": pilot.betas, "pilot/ratio_var": pilot.ratio_var,
                            **{f"pilot/value/{k}": v for k, v in pilot.values.items()}})
        self.scalars.update(status="tuned", pilot_inefficiency=float(pilot.inefficiency))
        self._write()

    def pass_schedule(self) -> tuple[np.ndarray, dict] | None:
        """The stored pass's input schedule and values (a repeat's), or None."""
        if "pass/betas" not in self.arrays:
            return None
        return self.arrays["pass/betas"], self._group("pass/value/")

    def resume(self, pass_index: int) -> dict | None:
        """The stored state of pass ``pass_index`` after its last chunk written, or None."""
        if "log_w" not in self.arrays or self.pass_index != pass_index:
            return None
        return {"state": self._group("state/"), "log_w": self.arrays["log_w"],
                "stats": self._group("stats/"), "done_steps": int(self.scalars["done_steps"]),
                "rng": rng_from_arrays(self.scalars, self._group("rng/"))}

    def save_pass(self, pass_index: int, betas, values: dict, state: dict, log_w, stats: dict,
                  rng, done_steps: int, realized=None) -> None:
        """Write pass ``pass_index``'s state after ``done_steps`` of its steps (``stats``:
        each statistic's chunks so far; nothing is done without a checkpoint)."""
        if self.checkpoint is None:
            return
        rng_scalars, rng_arrays = rng_to_arrays(rng)
        pilot = {k: v for k, v in self.arrays.items() if k.startswith("pilot/")}
        self.arrays = {**pilot, "pass/betas": np.asarray(betas),
                       **{f"pass/value/{k}": np.asarray(v) for k, v in values.items()},
                       **{f"state/{k}": np.asarray(v) for k, v in state.items()},
                       "log_w": np.asarray(log_w),
                       **{f"stats/{k}": np.concatenate(v, axis=0) for k, v in stats.items()},
                       **{f"rng/{k}": v for k, v in rng_arrays.items()}}
        self.scalars = {**{k: v for k, v in self.scalars.items() if not k.startswith("rng_")},
                        **rng_scalars, "status": "annealing", "pass_index": int(pass_index),
                        "done_steps": int(done_steps),
                        "realized": None if realized is None else float(realized)}
        self._write()

    def finish(self, realized) -> None:
        """Mark the call done (its last pass is the result)."""
        if self.checkpoint is None:
            return
        self.scalars.update(status="done", realized=None if realized is None
                            else float(realized))
        self._write(force=True)


SKIPPED_ARGUMENTS = ("model", "checkpoint", "progressbar", "random_seed", "idata_kwargs")
"""Arguments that do not change the numbers (or, the seed, are checked on their own)."""


def check_writable(path) -> pathlib.Path:
    """``path`` (a checkpoint file) as a :class:`pathlib.Path`, if a checkpoint can be
    written there: not a directory, in a directory that exists and takes a new file.

    The check creates and removes a temporary file in the directory, as each write does
    (:meth:`Checkpoint._write`): missing permissions or a read-only file system are found
    before anything runs, not after the annealing (a disk that fills later is
    :meth:`Checkpoint._try_write`'s warning).

    Raises
    ------
    AnnealingError
        Naming the path and why it cannot be written.
    """
    path = pathlib.Path(os.fspath(path))
    directory = path.parent
    if path.is_dir():
        raise AnnealingError(f"the checkpoint {path} is a directory; give a file path in it "
                             f"(e.g. checkpoint={str(path / 'run.ckpt')!r}).")
    if not directory.is_dir():
        why = ("is a file, not a directory" if directory.exists() else
               "does not exist: create it first, or give a path in an existing directory")
        raise AnnealingError(f"the checkpoint {path} cannot be written: its directory "
                             f"{directory} {why}.")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    except OSError as error:
        raise AnnealingError(f"the checkpoint {path} cannot be written: a file cannot be "
                             f"created in {directory} ({type(error).__name__}: "
                             f"{error.strerror or error}). Give a checkpoint path in a "
                             "directory you can write to.") from None
    os.close(fd)
    pathlib.Path(probe).unlink(missing_ok=True)
    return path


def open_checkpoint(path, model_parts, arguments: dict,
                    random_seed) -> tuple[Checkpoint | None, object]:
    """An entry point's checkpoint (None without ``path``) and the seed to run with.

    ``model_parts()`` describes the model and its data (``model_content``; called only with
    a ``path``, so that a bad model still gets its own error), ``arguments`` are
    the call's arguments (``locals()`` at its start; those in :data:`SKIPPED_ARGUMENTS` are
    left out): their :func:`~pymc_anneal._digest.fingerprint` must match the file's."""
    if path is None:
        return None, random_seed
    if not isinstance(path, str | os.PathLike) or not os.fspath(path):
        raise AnnealingError(
            f"checkpoint must be a file path (str or os.PathLike), got {path!r}: e.g. "
            "checkpoint='run.ckpt'.")
    check_writable(path)  # before the model is read: nothing is done for a bad path
    settings = {k: v for k, v in arguments.items() if k not in SKIPPED_ARGUMENTS}
    checkpoint = Checkpoint(path, fingerprint([*model_parts(), settings]), random_seed)
    return checkpoint, checkpoint.seed
