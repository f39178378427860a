r"""Energy-based models as PyTensor graphs: the interface the annealing code works against.

An :class:`EnergyModel` is an unnormalized density :math:`p^*(x) = \exp(-F(x))` over
:math:`\mathbb R^d` (or :math:`\{0, 1\}^d`) with normalizing constant
:math:`Z = \int p^*(x)\,dx` (a sum for binary states). For restricted Boltzmann machines
``x`` is the visible vector and :math:`F` the *free energy*: the hidden units are summed out,
:math:`p^*(v) = \sum_h \exp(-E(v, h))`. A model provides

- :meth:`~EnergyModel.log_unnormalized`: the PyTensor graph of :math:`\log p^*` over a batch
  ``(N, d) -> (N,)``, which annealing paths and kernels build on;
- :meth:`~EnergyModel.log_unnormalized_numpy`: the same in NumPy (float64), for tests and for
  evaluating data;
- :meth:`~EnergyModel.exact_log_z` where :math:`Z` is tractable (enumeration, closed form);
- :meth:`~EnergyModel.log_likelihood`: :math:`\log p(x_i) = \log p^*(x_i) - \log Z` per row,
  given an exact or estimated :math:`\log Z`.

:class:`FunctionEnergy` wraps any user-supplied graph builder.

**Is Z finite?** A user's energy may not be normalizable: flat in some direction, or
growing too slowly (:math:`p^*(x) = 1 / (1 + |x|)`). Annealing from a Gaussian base then
still returns a finite :math:`\log \hat Z`, which grows with the number of temperatures
(each :math:`f_\beta`, :math:`\beta < 1`, is normalizable, and :math:`\log Z_\beta \to
\infty` as :math:`\beta \to 1`); its weights look no worse than those of a hard, proper
target, and the estimates of the passes of ``num_steps="auto"`` grow by about the
half-logarithm of their ratio of temperatures, within their noise at a few hundred
particles. So :meth:`FunctionEnergy.annealing_path` looks at the energy itself before
anything is annealed (:func:`check_normalizable`): a direction along which the energy does
not change at all (none of its gradients at draws of the base has a component along it,
and shifts along it of up to :math:`10^6` base scales leave it unchanged) makes
:math:`Z = \infty` and is refused; rays from the base's center along which
:math:`r^d \exp(-E(r u))` does not fall out to :data:`TAIL_RADII` base scales (random
directions; along the coordinate axes, :math:`\exp(-E)` that does not fall at all) warn that
the energy may not be normalizable, or is far wider than the base.

**The default annealing path.** :func:`gaussian_energy_path` makes the linear path from a
normalized Gaussian base :math:`q` (diagonal, or with a full covariance) to any model,
:math:`\log f_\beta = \log q + \beta(\log p^* - \log q)`, for the HMC, MALA and
Metropolis kernels; :math:`\log Z_0 = 0`. A model with a better path of its own (Gibbs
conditionals, a fitted base) provides it in its module and overrides
:meth:`EnergyModel.annealing_path`.
"""

from __future__ import annotations

import abc
import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable

from pymc_anneal._digest import attribute_content, graph_content
from pymc_anneal.exceptions import AnnealingError, warn
from pymc_anneal.paths import Path, fit_gaussian
from pymc_anneal.validation import check_choice, check_count, check_finite_array, check_real

__all__ = ["DTYPES", "GAUSSIAN_BASES", "TAIL_RADII", "EnergyModel", "FunctionEnergy", "Moments",
           "as_moments", "check_normalizable", "data_moments", "gaussian_energy_path"]

DTYPES = ("float64", "float32")
"""Supported dtypes of a model's parameters and PyTensor graphs."""


def check_dtype(dtype) -> str:
    """Return ``dtype`` as ``"float64"`` or ``"float32"``, or raise :class:`AnnealingError`."""
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = None
    if name not in DTYPES:
        raise AnnealingError(f"dtype must be one of {list(DTYPES)}, got {dtype!r}.")
    return name


def check_positive_int(value, name: str) -> int:
    """``value`` as an int if it is an integer >= 1 (:func:`pymc_anneal.validation.check_count`)."""
    return check_count(name, value, 1, what="a positive integer")


def check_log_z(log_z) -> float:
    """``log_z`` as a float if it is a finite real number, or raise :class:`AnnealingError`."""
    return check_real("log_z", log_z, what="finite (a real number)")


def cast_finite(array: np.ndarray, dtype: str, name: str) -> np.ndarray:
    """``array`` in ``dtype``, refusing values that overflow it (finite in float64, infinite
    in float32): check parameters for finiteness *after* the cast, not only before it."""
    with np.errstate(over="ignore"):
        cast = np.asarray(array).astype(dtype)
    if not np.all(np.isfinite(cast)):
        raise AnnealingError(
            f"{name} overflow {dtype}: {int(np.sum(~np.isfinite(cast)))} values exceed its largest "
            f"number {np.finfo(dtype).max:.3g} in magnitude. Rescale them or use dtype='float64'."
        )
    return cast


def readonly(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


GAUSSIAN_BASES = ("isotropic", "diagonal", "full")
"""Gaussian bases that :meth:`EnergyModel.annealing_path` fits to moments or data."""


class Moments(NamedTuple):
    """First and second moments of a target distribution."""

    mean: np.ndarray  # (D,)
    covariance: np.ndarray  # (D, D)
    source: str  # "mcmc", "data" or "given"


def data_moments(data, num_dims: int) -> Moments:
    """Mean and covariance of ``data`` (N >= 2, num_dims), finite."""
    data = check_finite_array("data", data, (None, num_dims))
    if data.shape[0] < 2:
        raise AnnealingError(f"moments of data need at least 2 rows, got shape {data.shape}.")
    return Moments(data.mean(axis=0), np.cov(data, rowvar=False).reshape(num_dims, num_dims), "data")


def as_moments(moments, num_dims: int) -> Moments:
    """``moments``, a pair (mean (num_dims,), covariance (num_dims, num_dims)) or
    :class:`Moments`, checked, with the covariance symmetrized."""
    try:
        mean, cov = (np.asarray(m, dtype=np.float64) for m in moments[:2])
    except (TypeError, ValueError) as err:
        raise AnnealingError("moments must be a pair (mean (D,), covariance (D, D)), "
                             f"got {type(moments).__name__}.") from err
    if mean.shape != (num_dims,) or cov.shape != (num_dims, num_dims):
        raise AnnealingError(f"moments must have shapes ({num_dims},) and ({num_dims}, {num_dims}), "
                             f"got {mean.shape} and {cov.shape}.")
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))):
        raise AnnealingError("moments contain NaN or infinite values.")
    return Moments(mean, (cov + cov.T) / 2, getattr(moments, "source", "given"))


class EnergyModel(abc.ABC):
    r"""An unnormalized density :math:`p^*(x) = \exp(-F(x))` over a batch of states.

    Subclasses set ``num_dims``, ``dtype`` and ``name`` and implement
    :meth:`log_unnormalized` and :meth:`log_unnormalized_numpy`; they override
    :meth:`exact_log_z` where :math:`\log Z` is tractable and :meth:`check_data` to validate
    the data they accept (e.g. binary).

    Attributes
    ----------
    num_dims : int
        Dimension of the annealed state ``x`` (for RBMs: the number of visible units).
    dtype : {"float64", "float32"}
        Dtype of the parameters and of the PyTensor graphs.
    name : str
        Shown in results and progress bars.
    """

    num_dims: int
    dtype: str
    name: str

    @abc.abstractmethod
    def log_unnormalized(self, x) -> TensorVariable:
        r"""PyTensor graph of :math:`\log p^*(x)`: ``x`` of shape ``(N, num_dims)`` -> ``(N,)``.

        When ``x`` has the model's ``dtype`` the output has it too.
        """

    @abc.abstractmethod
    def log_unnormalized_numpy(self, x: np.ndarray) -> np.ndarray:
        r""":math:`\log p^*(x)` in NumPy: ``(N, num_dims)`` -> ``(N,)`` float64."""

    def annealing_path(self, *, kernel=None, base=None, data=None, moments=None,
                       base_mean=None, base_scale=None, rng=None):
        """The path :func:`pymc_anneal.ais` anneals, and its kernel: ``(path, kernel)``.

        By default the linear path from a diagonal Gaussian base (``base_mean``,
        ``base_scale``; standard normal if not given) to this model's unnormalized density
        (:func:`gaussian_energy_path`), with the ``"hais"``
        kernel. A Gaussian base can instead be fitted: ``base`` in
        :data:`GAUSSIAN_BASES` (``"isotropic"``: one variance, their mean; ``"diagonal"``;
        ``"full"``: the whole covariance) from ``moments=(mean, covariance)`` (e.g. of MCMC
        draws of the model) or ``data`` (draws of the model or training data; the
        covariance shrunk as in :func:`pymc_anneal.paths.fit_gaussian`). A base should be
        at least as wide as the target in every direction (see
        :mod:`pymc_anneal.diagnostics`). A model with a better path of its own
        (conditionals, a fitted base) overrides this method, which is all
        :func:`pymc_anneal.ais` needs of a new model.
        """
        if base is None and data is None and moments is None:
            return gaussian_energy_path(self, base_mean, base_scale), kernel or "hais"
        base = check_choice("base", "diagonal" if base is None else base, GAUSSIAN_BASES)
        if base_mean is not None or base_scale is not None:
            raise AnnealingError(f"base={base!r} is fitted to data or moments; give either that "
                                 "or base_mean and base_scale, not both.")
        if moments is not None:
            mean, cov = as_moments(moments, self.num_dims)[:2]
        elif data is not None:
            array = self.check_data(data)
            if array.shape[0] < 2:
                raise AnnealingError(f"fitting a Gaussian base needs at least 2 rows of data, "
                                     f"got {array.shape[0]}.")
            mean, cov = fit_gaussian(array)
        else:
            raise AnnealingError(
                f"base={base!r} is fitted to the target: pass data (draws of the model, or "
                "training data, shape (N, num_dims)) or moments=(mean, covariance).")
        variances = np.diag(cov)
        if base == "isotropic":
            cov = np.eye(self.num_dims) * variances.mean()
        elif base == "diagonal":
            cov = np.diag(variances)
        return gaussian_energy_path(self, mean, cov=cov), kernel or "hais"

    def exact_log_z(self) -> float:
        r"""The exact :math:`\log Z`; this model has none, so this raises :class:`AnnealingError`."""
        raise AnnealingError(
            f"{type(self).__name__} {self.name!r} has no exact log Z. Estimate it with annealed "
            "importance sampling: pymc_anneal.ais(model, ...)."
        )

    def check_data(self, data) -> np.ndarray:
        """Validate ``data`` as a finite ``(N, num_dims)`` array and return it as float64."""
        array = np.asarray(data)
        if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
            raise AnnealingError(f"data must be a numeric array, got dtype {array.dtype}.")
        array = array.astype(np.float64)
        if array.ndim != 2 or array.shape[1] != self.num_dims:
            hint = " (for a single row use data.reshape(1, -1))" if array.ndim == 1 else ""
            raise AnnealingError(
                f"data must have shape (N, {self.num_dims}) for {type(self).__name__} "
                f"{self.name!r} with {self.num_dims} dimensions, got shape {array.shape}{hint}."
            )
        return check_finite_array("data", array)

    def log_likelihood(self, data, log_z: float) -> np.ndarray:
        r"""Per-row log density :math:`\log p(x_i) = \log p^*(x_i) - \log Z`.

        Parameters
        ----------
        data : array of shape (N, num_dims)
        log_z : float
            The exact (:meth:`exact_log_z`) or estimated log partition function.

        Returns
        -------
        ndarray of shape (N,), float64. Its mean is the average log-likelihood.
        """
        log_z = check_log_z(log_z)
        return self.log_unnormalized_numpy(self.check_data(data)) - log_z

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, num_dims={self.num_dims}, dtype={self.dtype!r})"

    def content(self) -> list:
        """What defines the model, for a result's ``model_fingerprint``: its class, its
        attributes that are arrays, numbers or strings (weights, biases, sizes), by name,
        and the graph of :meth:`log_unnormalized` (which tells apart two
        :class:`FunctionEnergy` of different functions)."""
        x = pt.matrix("x", dtype=self.dtype)
        return attribute_content(self) + graph_content([self.log_unnormalized(x)], [x])


class FunctionEnergy(EnergyModel):
    r"""A user-supplied energy: ``log_unnormalized`` maps a ``(N, num_dims)`` tensor to ``(N,)``.

    Parameters
    ----------
    log_unnormalized : callable
        ``x (N, num_dims) -> (N,)`` PyTensor graph of :math:`\log p^*(x) = -F(x)`. It is called
        once at construction on a symbolic input to check the output's shape.
    num_dims : int
    dtype : {"float64", "float32"}, default "float64"
        Dtype of the symbolic input; the output is cast to it.
    name : str, default "energy"
    log_z : float, optional
        The exact :math:`\log Z`, if known (returned by :meth:`exact_log_z`).

    Examples
    --------
    A standard normal in 3 dimensions, :math:`\log Z = \tfrac32 \log 2\pi`:

    >>> import numpy as np
    >>> from pymc_anneal.energy import FunctionEnergy
    >>> model = FunctionEnergy(lambda x: -0.5 * (x**2).sum(axis=1), num_dims=3,
    ...                        log_z=1.5 * np.log(2 * np.pi))
    >>> model.log_likelihood(np.ones((2, 3)), model.exact_log_z()).round(4)
    array([-4.2568, -4.2568])
    """

    def __init__(
        self,
        log_unnormalized: Callable[[TensorVariable], TensorVariable],
        num_dims: int,
        dtype: str = "float64",
        name: str = "energy",
        log_z: float | None = None,
    ):
        if not callable(log_unnormalized):
            raise AnnealingError(
                "log_unnormalized must be a callable mapping a (N, num_dims) PyTensor tensor to "
                f"the (N,) log unnormalized density, got {type(log_unnormalized).__name__}."
            )
        self.num_dims = check_positive_int(num_dims, "num_dims")
        self.dtype = check_dtype(dtype)
        self.name = str(name)
        self._log_z = None if log_z is None else check_log_z(log_z)
        self._function = log_unnormalized
        self._compiled = None
        x = pt.matrix("x", dtype=self.dtype)
        self._check_output(self._call(x))

    def _call(self, x) -> TensorVariable:
        try:
            out = self._function(x)
        except Exception as err:
            raise AnnealingError(
                f"calling log_unnormalized of FunctionEnergy {self.name!r} on a symbolic "
                f"({self.dtype}) matrix of shape (N, {self.num_dims}) failed with "
                f"{type(err).__name__}: {err}. It must build a PyTensor graph (use "
                "pytensor.tensor functions, not NumPy ones)."
            ) from err
        try:
            out = pt.as_tensor_variable(out)
        except (TypeError, ValueError) as err:
            raise AnnealingError(
                f"log_unnormalized of FunctionEnergy {self.name!r} must return a PyTensor tensor, "
                f"got {type(out).__name__}."
            ) from err
        return out

    def _check_output(self, out: TensorVariable) -> None:
        if out.ndim != 1:
            raise AnnealingError(
                f"log_unnormalized of FunctionEnergy {self.name!r} must map x of shape "
                f"(N, {self.num_dims}) to one value per row, shape (N,); its output has "
                f"ndim={out.ndim}. Sum over the last axis (e.g. (...).sum(axis=1))."
            )
        if not out.dtype.startswith("float"):
            raise AnnealingError(
                f"log_unnormalized of FunctionEnergy {self.name!r} must return floats, got dtype {out.dtype}."
            )

    def log_unnormalized(self, x) -> TensorVariable:
        out = self._call(pt.as_tensor_variable(x))
        self._check_output(out)
        return out if out.dtype == self.dtype else pt.cast(out, self.dtype)

    def log_unnormalized_numpy(self, x: np.ndarray) -> np.ndarray:
        if self._compiled is None:
            x_sym = pt.matrix("x", dtype=self.dtype)
            self._compiled = pytensor.function([x_sym], self.log_unnormalized(x_sym))
        x = np.asarray(x, dtype=self.dtype)
        if x.ndim != 2 or x.shape[1] != self.num_dims:
            raise AnnealingError(f"x must have shape (N, {self.num_dims}), got {x.shape}.")
        return np.asarray(self._compiled(x), dtype=np.float64)

    def annealing_path(self, *, kernel=None, base=None, data=None, moments=None,
                       base_mean=None, base_scale=None, rng=None):
        r""":meth:`EnergyModel.annealing_path`, after checking that the energy can be
        normalized (:func:`check_normalizable`): an energy that is constant along a direction
        is refused (:math:`Z = \infty`), one whose tails do not fall fast enough along the
        base's rays warns."""
        path, kernel = super().annealing_path(kernel=kernel, base=base, data=data,
                                              moments=moments, base_mean=base_mean,
                                              base_scale=base_scale, rng=rng)
        check_normalizable(self, path)
        return path, kernel

    def exact_log_z(self) -> float:
        """The ``log_z`` given at construction; raises :class:`AnnealingError` if none was."""
        if self._log_z is None:
            raise AnnealingError(
                f"FunctionEnergy {self.name!r} was built without log_z, so it has no exact log Z. "
                "Pass log_z=... if you know it, or estimate it with pymc_anneal.ais(model, ...)."
            )
        return self._log_z


# -- is Z finite? ----------------------------------------------------------------------------

TAIL_RADII = 8.0 * 4.0 ** np.arange(9)
"""Radii of the rays of :func:`check_normalizable`, in the base's scales (8 to 524,288)."""
NUM_TAIL_RAYS = 16
"""Random directions of :func:`check_normalizable`."""
MAX_AXIS_DIMS = 64
"""Models of up to this many dimensions also get rays along each coordinate axis (2 d)."""
MAX_GRADIENT_DIMS = 512
"""Models of up to this many dimensions get the flat-direction test (``d + 8`` gradients)."""
FLAT_SHIFTS = {"float64": (1e2, 1e6), "float32": (1e1, 1e3)}
"""Shifts, in base scales, along a candidate flat direction (float32 keeps fewer digits)."""
FLAT_TOLERANCE = {"float64": 1e-6, "float32": 1e-2}
"""The change of ``log p*`` (relative to ``1 + |log p*|``) below which a shift leaves it
unchanged."""


def _probe_function(model):
    """``x (N, d) -> (log p* (N,), its gradient (N, d) or None)`` in float64, compiled with
    PyTensor's Python linker (a few tens of milliseconds; no C compile), or None where the
    graph cannot be built or compiled (the run reports its own errors)."""
    from pytensor.compile.mode import Mode

    mode = Mode(linker="py", optimizer="fast_compile")
    x = pt.matrix("x", dtype=model.dtype)
    with warnings.catch_warnings():  # PyTensor's own notes are not the user's business here
        warnings.simplefilter("ignore")
        try:
            out = model.log_unnormalized(x).astype("float64")
        except Exception:  # the run says what is wrong with the graph
            return None
        try:
            function = pytensor.function([x], [out, pt.grad(out.sum(), x)], mode=mode)
            with_gradient = True
        except Exception:  # no gradient: the flat-direction test is left out
            try:
                function = pytensor.function([x], out, mode=mode)
            except Exception:
                return None
            with_gradient = False

    def evaluate(points: np.ndarray):
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                values = function(np.asarray(points, dtype=model.dtype))
        except Exception:  # an energy that fails far out: nothing to conclude
            return None, None
        if not with_gradient:
            return np.asarray(values, dtype=np.float64), None
        return (np.asarray(values[0], dtype=np.float64),
                np.asarray(values[1], dtype=np.float64))

    return evaluate


def _flat_direction(evaluate, draws, scale, dtype):
    """A direction (in the model's coordinates) along which ``log p*`` does not change, or
    None: a null direction of the gradients at ``draws`` (whitened by ``scale``) that shifts
    of :data:`FLAT_SHIFTS` base scales leave unchanged at 16 of the draws."""
    values, gradients = evaluate(draws)
    if values is None or gradients is None:
        return None
    finite = np.isfinite(values) & np.all(np.isfinite(gradients), axis=1)
    d = draws.shape[1]
    if finite.sum() < d:
        return None
    whitened = gradients[finite] * scale
    _, singular, rows = np.linalg.svd(whitened)
    singular = np.concatenate([singular, np.zeros(d - singular.size)])
    top = singular.max()
    points, base_values = draws[finite][:16], values[finite][:16]
    tolerance = FLAT_TOLERANCE[dtype] * (1.0 + np.abs(base_values))
    for index in np.flatnonzero(singular <= 1e-8 * top)[:3] if top > 0 else range(min(d, 3)):
        direction = scale * rows[index]
        direction /= np.linalg.norm(direction)
        step = float(np.sqrt(np.mean(scale**2)))
        shifted = [evaluate(points + sign * shift * step * direction)[0]
                   for shift in FLAT_SHIFTS[dtype] for sign in (1.0, -1.0)]
        if all(v is not None and np.all(np.isfinite(v))
               and np.all(np.abs(v - base_values) <= tolerance) for v in shifted):
            return direction
    return None


def _rays_not_decaying(evaluate, center, scale, rng) -> tuple[int, int, list[str]]:
    r"""How many of :data:`NUM_TAIL_RAYS` random rays from ``center`` (in base scales) have
    :math:`r^d \exp(-E(r u))` not falling over the last three :data:`TAIL_RADII`, out of
    how many could be judged (finite values), and which coordinate axes (``"+x0"``; models
    of up to :data:`MAX_AXIS_DIMS` dimensions) have :math:`\exp(-E)` not falling at all."""
    d = center.size
    directions = rng.standard_normal((NUM_TAIL_RAYS, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    axes = np.concatenate([np.eye(d), -np.eye(d)]) if d <= MAX_AXIS_DIMS else np.zeros((0, d))
    rays = np.concatenate([directions, axes])
    points = center + TAIL_RADII[:, None, None] * (rays * scale)[None]
    values, _ = evaluate(points.reshape(-1, d))
    if values is None:
        return 0, 0, []
    values = values.reshape(TAIL_RADII.size, rays.shape[0])[-3:]

    def rising(v):  # not falling over the last radii (+inf: rising; NaN, -inf: judged not)
        judged = ~np.any(np.isnan(v) | (v == -np.inf), axis=0)
        with np.errstate(invalid="ignore"):
            slack = 1e-9 * (1.0 + np.abs(v[:-1]))
            up = np.all((v[1:] >= v[:-1] - slack) | (v[1:] == np.inf), axis=0)
        return judged, judged & up

    judged, up = rising(values[:, :NUM_TAIL_RAYS] + d * np.log(TAIL_RADII[-3:, None]))
    _, flat = rising(values[:, NUM_TAIL_RAYS:])
    names = [f"{'+' if k < d else '-'}x{k % d}" for k in np.flatnonzero(flat)]
    return int(up.sum()), int(judged.sum()), names


def _components(direction: np.ndarray, most: int = 6) -> str:
    """``{x0: 0.707, x1: 0.707}``: the largest components of a unit vector (>= 0.01)."""
    shown = [k for k in np.argsort(-np.abs(direction))[:most] if abs(direction[k]) >= 0.01]
    more = ", ..." if np.sum(np.abs(direction) >= 0.01) > most else ""
    return "{" + ", ".join(f"x{k}: {direction[k] + 0.0:.3g}" for k in sorted(shown)) + more + "}"


def check_normalizable(model: EnergyModel, path: Path) -> None:
    r"""Refuse an energy that cannot be normalized, and warn about one that may not be,
    from its values far out along the rays of ``path``'s base (the base's center and
    per-coordinate scale; a fixed generator chooses the rays, so a model gets the same
    verdict every time).

    - **Refused** (:class:`AnnealingError`), in models of up to :data:`MAX_GRADIENT_DIMS`
      dimensions: a direction :math:`v` along which :math:`\log p^*` does not change at
      all. The gradients of :math:`\log p^*` at ``d + 8`` draws of the base have no
      component along it (a singular value of their whitened matrix below
      :math:`10^{-8}` of the largest), and shifting 16 draws along it by
      :data:`FLAT_SHIFTS` base scales changes :math:`\log p^*` by less than
      :data:`FLAT_TOLERANCE`. Then :math:`\int \exp(-E)\,dx` diverges along :math:`v`:
      :math:`Z = \infty`.
    - **Warned** (:class:`~pymc_anneal.exceptions.AnnealingWarning`): random rays
      :math:`x = c + r\,(s \odot u)` along which :math:`r^d \exp(-E(x))`, the integrand of
      the radial integral times :math:`r`, does not fall between the last three of
      :data:`TAIL_RADII` (a tail heavier than :math:`r^{-d}`, whose integral diverges if it
      goes on), or coordinate axes along which :math:`\exp(-E)` does not fall at all. A
      normalizable energy far wider than the base (more than about :math:`10^5` base
      scales) looks the same, and the warning says so.

    Nothing is concluded where the energy cannot be evaluated (no gradient, NaN or an
    error far out): annealing reports those itself.
    """
    evaluate = _probe_function(model)
    if evaluate is None:
        return
    rng = np.random.default_rng(0)
    d = int(model.num_dims)
    draws = np.asarray(path.sample_base(rng, d + 8), dtype=np.float64)
    center = draws.mean(axis=0)
    scale = (np.asarray(path.base_scale, dtype=np.float64) if path.base_scale is not None
             else draws.std(axis=0))
    scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
    name = f"{type(model).__name__} {model.name!r}"
    fix = ("Make the energy grow in every direction (e.g. add a prior term such as "
           "-0.5 * (x / s)**2 to log_unnormalized)")
    if d <= MAX_GRADIENT_DIMS:
        direction = _flat_direction(evaluate, draws, scale, model.dtype)
        if direction is not None:
            raise AnnealingError(
                f"{name} is not normalizable: log_unnormalized does not change along the "
                f"direction v = {_components(direction)} (its gradients at draws of the base "
                "have no component along v, and shifting them along v by up to "
                f"{max(FLAT_SHIFTS[model.dtype]):,.0f} base scales leaves it unchanged), so "
                "exp(-E) is constant along lines in that direction and its integral Z is "
                "infinite: annealing would return a finite log Z that only grows with the "
                f"number of temperatures. {fix}, or leave out the coordinates it does not "
                "use.")
    up, judged, axes = _rays_not_decaying(evaluate, center, scale, rng)
    if up or axes:
        where = []
        if up:
            where.append(f"{up} of {judged} random rays from the base's center (r^d exp(-E) "
                         f"does not fall between {TAIL_RADII[-3]:,.0f} and "
                         f"{TAIL_RADII[-1]:,.0f} base scales)")
        if axes:
            where.append(f"the axes {axes} (exp(-E) does not fall at all)")
        warn(f"{name} may not be normalizable: exp(-E) does not decay along "
             f"{' nor along '.join(where)}, so Z may be infinite. Annealing then returns a "
             "finite log Z that grows with the number of temperatures, and more "
             f"temperatures do not fix it. {fix}; if it is normalizable but far wider than "
             "the base, give a base as wide (base_scale=...).")


# -- the default annealing path --------------------------------------------------------------


def gaussian_energy_path(model, mean=None, scale=None, cov=None) -> Path:
    r"""The linear path from a normalized Gaussian :math:`q = \mathcal N(\mu, \operatorname{diag}(s^2))`
    to ``model``'s unnormalized density, for the ``"hais"``, ``"hmc"`` and ``"metropolis"`` kernels.

    Parameters
    ----------
    model : EnergyModel
    mean, scale : array (num_dims,) or float, optional
        The base's mean (default 0) and standard deviations (default 1). A base close to the
        target in location and scale makes AIS far more efficient.
    cov : array (num_dims, num_dims), optional
        A full covariance instead of ``scale``.
    """
    d = int(model.num_dims)
    if cov is not None:
        return _full_gaussian_energy_path(model, mean, cov)
    mean = np.broadcast_to(np.asarray(0.0 if mean is None else mean, dtype=np.float64), (d,)).copy()
    scale = np.broadcast_to(np.asarray(1.0 if scale is None else scale, dtype=np.float64), (d,)).copy()
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(scale)) and np.all(scale > 0)):
        raise AnnealingError(f"the Gaussian base needs a finite mean and positive finite scales; got "
                             f"mean {mean[:3].tolist()}..., scale {scale[:3].tolist()}...")
    mean_t, scale_t = pt.constant(mean), pt.constant(scale)
    log_norm = -0.5 * d * np.log(2 * np.pi) - float(np.log(scale).sum())

    def log_densities(x):
        log_q = -0.5 * (((x - mean_t) / scale_t) ** 2).sum(axis=1) + log_norm
        log_p = model.log_unnormalized(x.astype(model.dtype)).astype("float64")
        return log_q, log_p - log_q

    def sample_base(rng, num_draws):
        return mean + scale * rng.standard_normal((num_draws, d))

    return Path(num_dims=d, build_log_densities=log_densities, sample_base=sample_base,
                log_base_normalizer=0.0, base_scale=scale, name=getattr(model, "name", "energy"))


def _full_gaussian_energy_path(model, mean, cov) -> Path:
    """:func:`gaussian_energy_path` with a full-covariance base."""
    d = int(model.num_dims)
    mean = np.broadcast_to(np.asarray(0.0 if mean is None else mean, dtype=np.float64), (d,)).copy()
    cov = np.asarray(cov, dtype=np.float64)
    try:
        chol = np.linalg.cholesky(0.5 * (cov + cov.T))
    except np.linalg.LinAlgError as err:
        raise AnnealingError("the Gaussian base's covariance is not positive definite; "
                             "give more data or moments with a full-rank covariance.") from err
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(chol))):
        raise AnnealingError("the Gaussian base needs a finite mean and covariance.")
    inv_chol = np.linalg.inv(chol)
    log_norm = -0.5 * d * np.log(2 * np.pi) - float(np.log(np.diag(chol)).sum())
    mean_t, inv_chol_t = pt.constant(mean), pt.constant(inv_chol.T.copy())

    def log_densities(x):
        z = pt.dot(x - mean_t, inv_chol_t)
        log_q = -0.5 * pt.sum(z**2, axis=1) + log_norm
        log_p = model.log_unnormalized(x.astype(model.dtype)).astype("float64")
        return log_q, log_p - log_q

    def sample_base(rng, num_draws):
        return mean + rng.standard_normal((num_draws, d)) @ chol.T

    return Path(num_dims=d, build_log_densities=log_densities, sample_base=sample_base,
                log_base_normalizer=0.0, base_scale=np.sqrt(np.diag(chol @ chol.T)),
                name=getattr(model, "name", "energy"), info={"base": "gaussian_full"})
