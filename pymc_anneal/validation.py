"""Input checks shared by every public function (NumPy only).

Each check returns the value in its canonical type or raises
:class:`~pymc_anneal.exceptions.AnnealingError` (a :class:`ValueError`) with a message that
names the argument, says what is accepted and quotes what was received. Where a call site
has its own established wording (matched by users and tests), it passes it as ``what``:
the message is then ``f"{name} must be {what}, got {value!r}."``.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np

from pymc_anneal.exceptions import AnnealingError

__all__ = [
    "BACKEND_PACKAGES",
    "MASS_MATRICES",
    "check_backend",
    "check_chain_weights",
    "check_choice",
    "check_count",
    "check_counts",
    "check_data_rows",
    "check_finite_array",
    "check_fixed_parameters",
    "check_initial_positions",
    "check_model",
    "check_num_steps",
    "check_one_of",
    "check_positive_float",
    "check_probability",
    "check_random_seed",
    "check_real",
    "check_schedule",
    "check_tuning",
    "is_integer",
    "missing_gradient",
]


def is_integer(value) -> bool:
    """Whether ``value`` is a Python or NumPy integer (a bool is not).

    Parameters
    ----------
    value : object

    Returns
    -------
    bool
    """
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def check_count(name: str, value, minimum: int, *, what: str | None = None) -> int:
    """``value`` as an int if it is an integer (not a bool) >= ``minimum``.

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    value : object
        What the caller passed.
    minimum : int
        The smallest accepted value.
    what : str, optional
        What is accepted, in words, for the message (default ``"an integer >= {minimum}"``,
        e.g. ``"a positive integer"``).

    Returns
    -------
    int

    Raises
    ------
    AnnealingError
        ``f"{name} must be {what}, got {value!r}."`` if ``value`` is a bool, not an integer
        (a float such as ``2.0`` included) or below ``minimum``.
    """
    if not is_integer(value) or value < minimum:
        raise AnnealingError(f"{name} must be {what or f'an integer >= {minimum}'}, got {value!r}.")
    return int(value)


def _is_real(value) -> bool:
    """A Python or NumPy real number, or a 0-d integer or float array; not a bool."""
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and (np.issubdtype(value.dtype, np.integer)
                                    or np.issubdtype(value.dtype, np.floating))
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _interval(low, high, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        return f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"{'<' if high_open else '<='} {high:g}"
    return ""


def check_real(name: str, value, *, low: float | None = None, high: float | None = None,
               low_open: bool = False, high_open: bool = False, allow_none: bool = False,
               finite: bool = True, what: str | None = None) -> float | None:
    """``value`` as a float if it is a (finite) real number within the given bounds.

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    value : object
        What the caller passed: a Python or NumPy real number (not a bool, not a string).
    low, high : float, optional
        Bounds; ``None`` for none.
    low_open, high_open : bool, default False
        Whether the bound itself is excluded.
    allow_none : bool, default False
        Return ``None`` for ``None`` (an optional argument left at its default).
    finite : bool, default True
        Reject infinities (NaN is always rejected).
    what : str, optional
        What is accepted, in words, for the message (default e.g. ``"a finite number >= 0"``
        or ``"a number in (0, 1]"``).

    Returns
    -------
    float or None

    Raises
    ------
    AnnealingError
        ``f"{name} must be {what}, got {value!r}."``, naming the type when ``value`` is not
        a real number at all.
    """
    if value is None and allow_none:
        return None
    if what is None:
        bounds = _interval(low, high, low_open, high_open)
        if low is not None and high is not None:
            what = f"a number in {bounds}"
        else:
            what = f"{'a finite' if finite else 'a'} number {bounds}".rstrip()
    if not _is_real(value):
        raise AnnealingError(f"{name} must be {what} (a real number, not "
                             f"{type(value).__name__}), got {value!r}.")
    number = float(value)
    if (np.isnan(number) or (finite and np.isinf(number))
            or (low is not None and (number <= low if low_open else number < low))
            or (high is not None and (number >= high if high_open else number > high))):
        raise AnnealingError(f"{name} must be {what}, got {value!r}.")
    return number


def check_positive_float(name: str, value, *, allow_none: bool = False,
                         what: str = "a positive float (finite and > 0)") -> float | None:
    """``value`` as a float if it is a finite number > 0.

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    value : object
        What the caller passed: a Python or NumPy real number (not a bool, not a string).
    allow_none : bool, default False
        Return ``None`` for ``None`` (e.g. "choose it adaptively").
    what : str, default "a positive float (finite and > 0)"
        What is accepted, in words, for the message.

    Returns
    -------
    float or None

    Raises
    ------
    AnnealingError
        ``f"{name} must be {what}, got {value!r}."`` for zero, a negative number, NaN, an
        infinity or a non-number.
    """
    return check_real(name, value, low=0.0, low_open=True, allow_none=allow_none, what=what)


def check_probability(name: str, value, *, low_open: bool = True, high_open: bool = False,
                      allow_none: bool = False, what: str | None = None) -> float | None:
    """``value`` as a float in (0, 1] (the ends closed or open as asked).

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    value : object
        What the caller passed: a Python or NumPy real number (not a bool, not a string).
    low_open : bool, default True
        Exclude 0.
    high_open : bool, default False
        Exclude 1.
    allow_none : bool, default False
        Return ``None`` for ``None``.
    what : str, optional
        What is accepted, in words, for the message (default ``"in (0, 1]"`` etc.).

    Returns
    -------
    float or None

    Raises
    ------
    AnnealingError
        ``f"{name} must be {what}, got {value!r}."`` outside the interval, for NaN or for a
        non-number.
    """
    what = what or f"in {_interval(0, 1, low_open, high_open)}"
    return check_real(name, value, low=0.0, high=1.0, low_open=low_open, high_open=high_open,
                      allow_none=allow_none, what=what)


def check_choice(name: str, value, options: Iterable[str], *, what: str | None = None):
    """``value`` if it is one of ``options`` (names of things, e.g. kernels or backends, or a
    setting with a few values).

    Parameters
    ----------
    name : str
        What is chosen (``"kernel"``), for the message.
    value : object
        What the caller passed.
    options : iterable of str
        The accepted names (a dict's keys are its names).
    what : str, optional
        What is accepted, in words, where a call site has its own established wording (e.g.
        ``"one of ['pcd', 'cd']"``, in the order that matters there).

    Returns
    -------
    str
        ``value``.

    Raises
    ------
    AnnealingError
        ``f"unknown {name} {value!r}; must be one of {sorted(options)}."``, or with ``what``
        ``f"{name} must be {what}, got {value!r}."``
    """
    options = list(options)
    if isinstance(value, str) and value in options:
        return value
    if what is not None:
        raise AnnealingError(f"{name} must be {what}, got {value!r}.")
    raise AnnealingError(f"unknown {name} {value!r}; must be one of {sorted(options)}.")


def check_one_of(name: str, value, options: Iterable[str]):
    """:func:`check_choice` with the options listed in the given order: ``f"{name} must be one
    of {list(options)}, got {value!r}."`` (the wording of the energy models' settings)."""
    options = list(options)
    return check_choice(name, value, options, what=f"one of {options}")


def check_finite_array(name: str, value, shape: tuple | None = None) -> np.ndarray:
    """``value`` as a float64 array of ``shape``, all finite.

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    value : array_like
        What the caller passed.
    shape : tuple of (int or None), optional
        The required shape; ``None`` entries accept any length. Any shape if not given.

    Returns
    -------
    numpy.ndarray
        float64 (``value`` itself, not a copy, if it already is one).

    Raises
    ------
    AnnealingError
        If ``value`` is not numeric, has the wrong shape, or contains NaN or infinities.
    """
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise AnnealingError(
            f"{name} must be a numeric array, got {type(value).__name__}.") from err
    if shape is not None and (array.ndim != len(shape) or any(
            want is not None and got != want for got, want in zip(array.shape, shape))):
        wanted = "(" + ", ".join("N" if s is None else str(s) for s in shape) + \
                 ("," if len(shape) == 1 else "") + ")"
        raise AnnealingError(f"{name} must have shape {wanted}, got {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise AnnealingError(f"{name} contains {int(np.sum(~np.isfinite(array)))} NaN or "
                             "infinite values; remove or replace them.")
    return array


BACKEND_PACKAGES = {"c": None, "jax": "jax", "numba": "numba"}
"""The backends of ``backend=`` (besides ``"auto"``), each with the package it needs
(:data:`pymc_anneal.backends.BACKENDS` maps them to PyTensor modes)."""


def check_backend(backend) -> str:
    """The backend's name, ``"auto"`` resolved, if it is known and its package is installed.

    ``"auto"`` is JAX when it is installed, else Numba (why: :mod:`pymc_anneal.backends`).

    Parameters
    ----------
    backend : str or None
        One of :data:`BACKEND_PACKAGES` or ``"auto"``, in any case; ``None`` is ``"auto"``
        (:func:`pymc.sample_smc`'s default spelling).

    Returns
    -------
    str
        ``"c"``, ``"jax"`` or ``"numba"``.

    Raises
    ------
    AnnealingError
        For an unknown backend, or one whose package is missing.
    """
    import importlib.util

    names = [*sorted(BACKEND_PACKAGES), "auto"]
    backend = "auto" if backend is None else backend
    if not isinstance(backend, str) or backend.lower() not in names:
        raise AnnealingError(f"unknown backend {backend!r}; must be one of {names}.")
    backend = backend.lower()
    if backend == "auto":
        backend = "jax" if importlib.util.find_spec("jax") is not None else "numba"
    module = BACKEND_PACKAGES[backend]
    if module is not None:
        try:
            __import__(module)
        except ImportError as err:
            raise AnnealingError(
                f'backend="{backend}" needs the {module} package, which is not installed; '
                f"install it with `pip install pymc-anneal[{module}]` or choose another backend."
            ) from err
    return backend


def missing_gradient(path) -> str | None:
    """Why ``path``'s log density has no gradient with respect to the position, or None
    where it has one.

    The path's log densities are built at a symbolic batch of positions and PyTensor is
    asked for their gradients, as a gradient kernel's graph asks (nothing is compiled):
    an op without a gradient on the way from the position to the density (an ODE solver
    or a NumPy function wrapped with ``pytensor.compile.ops.as_op``) makes PyTensor raise
    ``NotImplementedError`` ("pullback not implemented for ...") or, for a gradient it
    declares undefined or not implemented, ``NullTypeGradError``. PyTensor is imported
    here, not with this module.

    Parameters
    ----------
    path : Path
        A path with the ``"evaluate"`` capability (others have no gradient to ask for:
        None).

    Returns
    -------
    str or None
        PyTensor's words (``"NotImplementedError: pullback not implemented for
        ODESolveOp"``), for a message.
    """
    if "evaluate" not in getattr(path, "capabilities", ()):
        return None
    import pytensor.tensor as pt
    from pytensor.gradient import NullTypeGradError

    try:
        path.evaluate(pt.matrix("position", dtype=path.dtype), gradients=True)
    except (NotImplementedError, NullTypeGradError) as error:
        text = " ".join(str(error).split())
        text = text if len(text) <= 300 else text[:297] + "..."
        return f"{type(error).__name__}: {text}" if text else type(error).__name__
    return None


def check_random_seed(random_seed) -> tuple[np.random.Generator, str | None]:
    """A Generator for ``random_seed``, and the seed as recorded in results.

    A Generator is not advanced by more than one draw: a new one is seeded from it.

    Parameters
    ----------
    random_seed : None, int, sequence of int or numpy.random.Generator

    Returns
    -------
    rng : numpy.random.Generator
    recorded : str or None
        ``str(random_seed)`` for an int or a sequence, else ``None``.

    Raises
    ------
    AnnealingError
        For anything else (a negative int, a float, a string, a bool: ``True`` is not the
        seed 1).
    """
    if isinstance(random_seed, np.random.Generator):
        return np.random.default_rng(random_seed.integers(2**63)), None
    message = (f"random_seed must be None, a non-negative integer (or a sequence of them) or a "
               f"numpy Generator, got {random_seed!r}.")
    if isinstance(random_seed, bool | np.bool_) or (
            isinstance(random_seed, list | tuple | np.ndarray)
            and any(isinstance(s, bool | np.bool_) for s in np.ravel(np.asarray(random_seed,
                                                                                dtype=object)))):
        raise AnnealingError(message[:-1] + " (a bool is not a seed).")
    try:
        sequence = np.random.SeedSequence(random_seed)
    except (TypeError, ValueError) as err:
        raise AnnealingError(message) from err
    return np.random.default_rng(sequence), None if random_seed is None else str(random_seed)


MASS_MATRICES = ("adapt", "base", "identity")
"""Values of ``mass_matrix``: how the pilot sets kernel parameters tuned to ``"variance"``."""


def check_tuning(*, step_size=None, momentum_refresh=None, mass_matrix="adapt",
                 num_tuning_bands=8, num_pilot=250, target_acceptance=None,
                 schedule=None) -> dict:
    """The entry points' tuning arguments, checked, as keyword arguments of
    :class:`pymc_anneal.driver.TuningOptions`.

    ``step_size`` and ``momentum_refresh`` fix the kernel parameters ``step_size`` and
    ``refresh`` at every temperature; ``schedule="adaptive"`` turns on the re-spacing of the
    schedule from the pilot.
    """
    fixed = {}
    if step_size is not None:
        fixed["step_size"] = check_positive_float("step_size", step_size)
    if momentum_refresh is not None:
        fixed["refresh"] = check_probability("momentum_refresh", momentum_refresh)
    if target_acceptance is not None:
        target_acceptance = check_probability("target_acceptance", target_acceptance,
                                              high_open=True)
    return dict(
        fixed=fixed,
        mass_matrix=check_choice("mass_matrix", mass_matrix, MASS_MATRICES),
        num_bands=check_count("num_tuning_bands", num_tuning_bands, 1),
        num_pilot=check_count("num_pilot", num_pilot, 2),
        target_acceptance=target_acceptance,
        adapt_schedule=isinstance(schedule, str) and schedule == "adaptive",
    )


def check_schedule(betas, *, num_steps: int | None = None) -> np.ndarray:
    """A user schedule as a float64 array: 1-D, finite, strictly increasing from exactly 0 to
    exactly 1 (and of ``num_steps`` steps, when that is given too).

    Parameters
    ----------
    betas : array_like
        Inverse temperatures ``0 = beta_0 < ... < beta_K = 1``.
    num_steps : int, optional
        K, where the caller was given it beside the array.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    AnnealingError
        Naming the first thing wrong (not numeric, not 1-D, non-finite values, the ends, the
        first step that does not increase).
    """
    try:
        arr = np.asarray(betas, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise AnnealingError(f"schedule must be an array of floats, got {betas!r}.") from err
    if arr.ndim != 1 or arr.size < 2:
        raise AnnealingError(
            "schedule must be a 1-D array of at least 2 inverse temperatures (0 and 1), "
            f"got shape {arr.shape}."
        )
    if not np.all(np.isfinite(arr)):
        raise AnnealingError(
            f"schedule contains non-finite values: {arr[~np.isfinite(arr)][:5].tolist()}."
        )
    if arr[0] != 0.0 or arr[-1] != 1.0:
        raise AnnealingError(
            "schedule must start at exactly 0 and end at exactly 1, got "
            f"{float(arr[0])!r} ... {float(arr[-1])!r}."
        )
    steps = np.diff(arr)
    if np.any(steps <= 0):
        k = int(np.argmax(steps <= 0))
        raise AnnealingError(f"schedule must be strictly increasing, but beta[{k}] = "
                             f"{float(arr[k])!r} >= beta[{k + 1}] = {float(arr[k + 1])!r}.")
    if num_steps is not None and num_steps != arr.size - 1:
        raise AnnealingError(
            f"num_steps={num_steps} disagrees with the schedule array, which has "
            f"{arr.size - 1} steps; pass num_steps=None with an explicit schedule.")
    return arr



def check_num_steps(num_steps, schedule, dlogz=None) -> tuple[int | str | None, float | None]:
    """``sample_ais``' ``num_steps`` (and ``dlogz``, its target error) against its schedule.

    Parameters
    ----------
    num_steps : int, "auto" or None
        ``None`` is ``"auto"`` with a schedule name, and nothing with a schedule array.
    schedule : str or array
    dlogz : float, optional
        Only with ``"auto"``.

    Returns
    -------
    num_steps : int, "auto" or None
    dlogz : float or None

    Raises
    ------
    AnnealingError
        For ``"auto"`` with a schedule array (the pilot needs a named grid), a count below 1,
        or a ``dlogz`` that is not a positive float or comes with a fixed ``num_steps``.
    """
    if num_steps is None and isinstance(schedule, str):
        num_steps = "auto"
    auto = isinstance(num_steps, str) and num_steps == "auto"
    if auto and not isinstance(schedule, str):
        raise AnnealingError('num_steps="auto" chooses the temperatures itself; give a '
                             "schedule name (the pilot's grid), not an array.")
    if not auto and num_steps is not None:
        num_steps = check_count("num_steps", num_steps, 1, what='an integer >= 1 or "auto"')
    if dlogz is not None:
        dlogz = check_positive_float("dlogz", dlogz)
        if not auto:
            raise AnnealingError('dlogz is the target error of num_steps="auto"; with a fixed '
                                 f"num_steps ({num_steps}) it has no effect. Pass "
                                 'num_steps="auto" or drop dlogz.')
    return num_steps, dlogz


def check_fixed_parameters(fixed, kernel) -> None:
    """Refuse fixed values (``step_size=``, ``momentum_refresh=``) of parameters that
    ``kernel`` (a :class:`pymc_anneal.kernels.Kernel`) does not have.

    Raises
    ------
    AnnealingError
        Naming the unknown ones and the kernel's parameters.
    """
    unknown = sorted(set(fixed) - set(kernel.parameter_names))
    if unknown:
        raise AnnealingError(f"the {kernel.name!r} kernel has no parameter(s) {unknown} to fix; "
                             f"its parameters are {list(kernel.parameter_names)}.")


def check_initial_positions(initial_positions, *, direction: str, shape: tuple[int, int],
                            dtype, own_base_draws: bool) -> np.ndarray | None:
    """A run's starting states as an array of ``shape`` (``(chains * draws, num_dims)``).

    Parameters
    ----------
    initial_positions : array or None
    direction : {"forward", "backward"}
        A backward run needs them.
    shape : tuple
    dtype : str
        The path's state dtype.
    own_base_draws : bool
        Whether the run draws from the base itself (a ``num_steps="auto"`` forward run, whose
        check chain needs the base's draws): then there must be none.

    Returns
    -------
    numpy.ndarray or None
    """
    if initial_positions is None:
        if direction == "backward":
            raise AnnealingError("a backward run starts from given states: pass "
                                 f"initial_positions of shape {shape}.")
        return None
    if own_base_draws:
        raise AnnealingError(
            "with tuning.auto_variance (num_steps='auto') a forward run starts from the base's "
            "own draws: its extra check chain needs them too. Drop initial_positions, or fix "
            "the number of temperatures (auto_variance=None).")
    initial_positions = np.asarray(initial_positions, dtype=dtype)
    if initial_positions.shape != tuple(shape):
        raise AnnealingError(f"initial_positions must have shape {tuple(shape)} "
                             f"(chains * draws, num_dims), got {initial_positions.shape}.")
    return initial_positions


def check_data_rows(data) -> None:
    """Refuse training ``data`` without rows (``None`` passes: no data).

    Raises
    ------
    AnnealingError
        ``"data must have at least one row, got shape ..."``.
    """
    if data is not None and np.ndim(data) >= 1 and len(data) == 0:
        raise AnnealingError(f"data must have at least one row, got shape {np.shape(data)}. "
                             "Pass the training data, or leave data=None.")


def check_counts(name: str, value, minimum: int) -> list[int]:
    """``value`` (an integer or a non-empty sequence of them, each >= ``minimum``) as a list.

    Parameters
    ----------
    name : str
    value : int or sequence of int
    minimum : int

    Returns
    -------
    list of int
    """
    values = [value] if np.ndim(value) == 0 else list(value)
    if not values:
        raise AnnealingError(f"{name} must be an integer >= {minimum} or a non-empty list of "
                             "them, got an empty sequence.")
    return [check_count(name, v, minimum) for v in values]


def check_model(model):
    """The PyMC model to use: ``model`` itself, or the model on the context stack for ``None``.

    Parameters
    ----------
    model : pymc.Model or None

    Returns
    -------
    pymc.Model

    Raises
    ------
    AnnealingError
        If ``model`` is neither ``None`` nor a :class:`pymc.Model` (a model's name, say), or
        if it is ``None`` outside a ``with pm.Model():`` block.
    """
    import pymc as pm

    if model is not None and not isinstance(model, pm.Model):
        raise AnnealingError(
            f"model must be a pymc.Model (or None for the model of the enclosing `with "
            f"pm.Model():` block), got {type(model).__name__} {model!r}. Pass the model "
            "object, not its name.")
    try:
        return pm.modelcontext(model)
    except TypeError as err:
        raise AnnealingError(
            "no model given and none on the context stack: call this inside `with "
            "pm.Model():` or pass model=<the pymc.Model>.") from err


def check_chain_weights(log_w, *, subject: str = "the log-likelihood",
                        fix: str = "Increase draws so that every chain has particles where "
                                   "the likelihood is non-zero, and check the data against "
                                   "the likelihood's support.") -> None:
    r"""Refuse a run in which some, but not all, chains have only zero weights.

    Such a chain's estimate is :math:`\log \hat Z = -\infty` with no standard error, and
    the pooled estimate rests on the other chains' few particles, whose own diagnostics then
    see too little to warn. (Every chain dead is :func:`pymc_anneal.diagnostics.check_weights`'
    error.)

    Parameters
    ----------
    log_w : array (chains, draws)
        Final log weights (``-inf``: zero weight).
    subject : str
        What is ``-inf`` or NaN at a zero weight, for the message.
    fix : str
        What to do, for the message.

    Raises
    ------
    AnnealingError
        Naming the dead chains and the number of particles left with a non-zero weight.
    """
    log_w = np.atleast_2d(np.asarray(log_w, dtype=np.float64))
    finite = np.isfinite(log_w)
    dead = np.flatnonzero(~finite.any(axis=1))
    if dead.size == 0 or dead.size == log_w.shape[0]:
        return
    alive = int(finite.sum())
    raise AnnealingError(
        f"every particle of chain{'s' if dead.size > 1 else ''} {dead.tolist()} (of "
        f"{log_w.shape[0]} chains of {log_w.shape[1]} particles) has zero weight: {subject} is "
        f"-inf or NaN wherever they went, so {'their' if dead.size > 1 else 'its'} log "
        "evidence is -inf with no standard error, and the pooled estimate would rest on "
        f"{alive} particle{'s' if alive != 1 else ''} with non-zero weight in the other "
        f"chains. {fix}")


IDATA_KWARGS = ("log_likelihood",)
"""The keys of ``sample_ais(idata_kwargs=...)``, as :func:`pymc.sample` takes them."""


def check_idata_kwargs(idata_kwargs) -> dict:
    """``idata_kwargs`` (None or a dict with keys in :data:`IDATA_KWARGS`, boolean values)
    as a dict."""
    if idata_kwargs is None:
        return {}
    if not isinstance(idata_kwargs, dict):
        raise AnnealingError("idata_kwargs must be a dict such as {'log_likelihood': True}, "
                             f"got {type(idata_kwargs).__name__}.")
    unknown = sorted(map(str, set(idata_kwargs) - set(IDATA_KWARGS)))
    if unknown:
        raise AnnealingError(f"idata_kwargs takes the key(s) {list(IDATA_KWARGS)}, got "
                             f"{unknown}; e.g. idata_kwargs={{'log_likelihood': True}} adds the "
                             "pointwise log-likelihood that az.loo reads.")
    for key, value in idata_kwargs.items():
        if not isinstance(value, bool | np.bool_):
            raise AnnealingError(f"idata_kwargs[{key!r}] must be True or False, got {value!r}.")
    return {key: bool(value) for key, value in idata_kwargs.items()}
