r"""Annealing paths: a base density, a target, and the tempered log density between them.

Every path here has the form

.. math:: \log f_\beta(x) = \log f_0(x) + \beta \, \ell(x), \qquad 0 \le \beta \le 1,

where :math:`f_0` is the normalized-or-known base and :math:`\ell` the *log ratio* that
annealing switches on. For a PyMC model :math:`f_0` is the prior in the unconstrained value
space (with the transforms' log-Jacobians, so :math:`Z_0 = 1`) and :math:`\ell` the
log-likelihood; for a geometric path between a base :math:`q` and a target :math:`p`,
:math:`\ell = \log p - \log q`. The AIS weight increment of step k is then
:math:`(\beta_k - \beta_{k-1})\,\ell(x_{k-1})`.

A path is a pure graph builder: given a symbolic batch of positions of shape
``(num_particles, num_dims)`` it returns symbolic per-particle log densities. It knows
nothing of kernels or backends.

**The path contract.** The driver treats every path alike; it reads

- ``num_dims``, ``dtype`` (of the state), ``name``, ``info`` (what is worth reporting);
- ``parameters``: numeric inputs of the compiled loop (not constants baked into it), handed
  back to the graph builders as symbolic tensors of the same names;
- ``sample_base(rng, num_draws)`` and ``log_base_normalizer``: exact draws from the
  normalized base and :math:`\log Z_0`; ``base_scale`` (or ``None``), a starting scale;
- ``to_model(positions)``: the final positions in the model's own space (as NumPyro's
  ``postprocess_fn``): the identity, except on a path that runs in other coordinates (the
  whitened ones of :func:`gaussian_base_path`);
- ``weight_increment(state, beta, delta, params)``: the graph of the AIS weight increment
  :math:`\log f_\beta(x) - \log f_{\beta-\delta}(x)` at a kernel's state (``delta`` may be
  negative: a run backwards from the target). A continuous path reads the state's cached
  ``log_ratio`` when the kernel keeps one; a Gibbs path sums its auxiliary variables out;
- ``compile_key()``: what the compiled loop depends on, ``(owner, key)``;
- ``default_kernel``, and ``require(capability, who)``, through which a kernel states what it
  needs (``"evaluate"``: log densities and gradients; ``"gibbs_sweep"``: conditionals).

A graph that is compiled once and called a few times (a loop's init, an optimizer's
objective) is built inside :func:`one_off_graph`: there a path may answer with its
densities already compiled, as one opaque op with a gradient (a PyMC model's path does:
its log density is then compiled once per path, not once per such graph). The loops' own
graphs are never built there.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable
from scipy.linalg import solve_triangular
from scipy.special import gammaln

from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.validation import check_probability

__all__ = ["GibbsPath", "Path", "PathPoint", "check_gaussian_base", "component_offsets",
           "fit_gaussian", "gaussian_base_path", "in_one_off_graph", "mixture_base_path",
           "one_off_graph"]

_ONE_OFF: contextvars.ContextVar[bool] = contextvars.ContextVar("one_off_graph", default=False)


@contextlib.contextmanager
def one_off_graph() -> Iterator[None]:
    """Build, within it, graphs that are compiled once and called a few times (the module's
    notes): a path may answer with an opaque op of its compiled densities."""
    token = _ONE_OFF.set(True)
    try:
        yield
    finally:
        _ONE_OFF.reset(token)


def in_one_off_graph() -> bool:
    """Whether the graph being built is a one-off's (:func:`one_off_graph`)."""
    return _ONE_OFF.get()


class _Contract:
    """What the driver and kernels ask of every path (see the module docstring)."""

    capabilities: tuple[str, ...] = ()
    default_kernel: str = "hais"

    def to_model(self, positions: np.ndarray) -> np.ndarray:
        """``positions`` (``(..., num_dims)``, in this path's coordinates) in the model's own
        space; the identity here."""
        return positions

    def require(self, capability: str, who: str) -> None:
        """Raise a clear error unless this path offers ``capability`` (asked by ``who``)."""
        if capability not in self.capabilities:
            needs = {"evaluate": "log densities with gradients (a continuous Path)",
                     "gibbs_sweep": "Gibbs conditionals (a GibbsPath, such as an RBM's)"}
            raise AnnealingError(
                f"{who} needs {needs.get(capability, capability)}, which {self.name!r} (a "
                f"{type(self).__name__}) does not offer; it offers {list(self.capabilities)}. "
                f"Use its default kernel {self.default_kernel!r}."
            )


class PathPoint(NamedTuple):
    """Log densities and their gradients at a batch of positions."""

    log_base: TensorVariable
    log_ratio: TensorVariable
    grad_log_base: TensorVariable | None
    grad_log_ratio: TensorVariable | None


@dataclass(frozen=True)
class Path(_Contract):
    """A tempered family ``log f_beta = log_base + beta * log_ratio`` over R^num_dims.

    Parameters
    ----------
    num_dims : int
        Dimension of the (unconstrained) state.
    build_log_densities : callable
        ``position (N, d) -> (log_base (N,), log_ratio (N,))`` as PyTensor graphs.
    sample_base : callable
        ``(rng: numpy.random.Generator, num_draws: int) -> ndarray (num_draws, d)``: exact
        draws from the normalized base.
    log_base_normalizer : float, default 0
        ``log Z_0`` of the base density, added to every log weight.
    base_scale : ndarray, optional
        Per-coordinate scale of the base, a starting point for the mass matrix.
    name : str
        Shown in results and progress bars.
    parameters : dict of str to ndarray, optional
        Numeric inputs of the compiled loop (not constants baked into it). When given,
        ``build_log_densities`` is called as ``(position, params)`` with symbolic tensors of
        these names, so paths that differ only in these values share compiled functions.
    cache_owner : object, optional
        With ``parameters``: the object whose lifetime the shared compiled functions follow
        (paths with the same owner and ``structure`` must build identical graphs).
    structure : hashable
        Distinguishes differently built paths of one owner.
    info : dict, optional
        What is worth reporting about the base (numbers go to the result's attributes).
    lower_bounds : ndarray (num_dims,), optional
        Per-coordinate lower bounds of the support (``-inf`` where there is none). The base
        must live on the constrained space and ``log f`` be ``-inf`` outside it; the HMC
        kernels reflect at the bounds (HAIS §2.3), the others reject moves across them.
    discrete_dims : tuple of int, optional
        Coordinates that live on the integers (a PyMC model's discrete variables that are
        annealed rather than summed out): the base draws them as integers, gradient-based
        kernels leave them alone (HMC gives them no momentum), and the ``"discrete"``
        compound kernel (:mod:`pymc_anneal.kernels.compound`) moves them.
    discrete_supports : tuple, optional
        For each of ``discrete_dims``, ``(low, high)`` when its support is a small finite
        range (the compound kernel then draws it from its exact tempered conditional), or
        ``None`` (Metropolis on neighbouring integers). Empty: ``None`` for all.
    build_discrete_base : callable, optional
        ``position (N, d) -> (N,)``: the log density of the ``discrete_dims`` under their
        prior given the other coordinates, a normalized distribution over the integers for
        any value of those. With :attr:`sample_discrete` it lets :func:`gaussian_base_path`
        keep the discrete coordinates' prior as their base while a Gaussian covers the
        others.
    sample_discrete : callable, optional
        ``(rng, positions (N, d)) -> positions``: the ``discrete_dims`` drawn from that
        distribution given the other coordinates of ``positions``.
    postprocess : callable, optional
        ``positions (..., d) -> positions (..., d)``, NumPy: this path's coordinates mapped
        to the model's space (:meth:`to_model`); ``None`` where they are the model's.
    """

    num_dims: int
    build_log_densities: Callable[..., tuple[TensorVariable, TensorVariable]]
    sample_base: Callable[[np.random.Generator, int], np.ndarray]
    log_base_normalizer: float = 0.0
    base_scale: np.ndarray | None = field(default=None, compare=False)
    name: str = "path"
    parameters: dict = field(default_factory=dict, compare=False)
    cache_owner: object = field(default=None, compare=False)
    structure: tuple = ()
    info: dict = field(default_factory=dict, compare=False)
    lower_bounds: np.ndarray | None = field(default=None, compare=False)
    discrete_dims: tuple[int, ...] = ()
    discrete_supports: tuple = ()
    build_discrete_base: Callable | None = field(default=None, compare=False)
    sample_discrete: Callable | None = field(default=None, compare=False)
    postprocess: Callable[[np.ndarray], np.ndarray] | None = field(default=None, compare=False)

    dtype = "float64"
    capabilities = ("evaluate",)
    default_kernel = "hais"

    def compile_key(self) -> tuple[object, tuple]:
        """``(owner, key)``: compiled loops live as long as ``owner`` (this path, or the
        ``cache_owner`` whose paths share them) and are told apart by ``key``."""
        return (self if self.cache_owner is None else self.cache_owner), ("path", self.structure)

    def to_model(self, positions: np.ndarray) -> np.ndarray:
        """``positions`` (``(..., num_dims)``, in this path's coordinates) in the model's own
        space: ``postprocess(positions)``, or ``positions`` themselves without one."""
        return positions if self.postprocess is None else self.postprocess(positions)

    def weight_increment(self, state, beta, delta, params: dict) -> TensorVariable:
        r""":math:`\delta\,\ell(x)` at ``state`` (-inf where :math:`\ell` is not finite), from the
        state's cached ``log_ratio`` when it has one."""
        log_ratio = getattr(state, "log_ratio", None)
        if log_ratio is None:
            log_ratio = self.evaluate(state.position, gradients=False, params=params).log_ratio
        return pt.switch(pt.isfinite(log_ratio), delta * log_ratio, -np.inf)

    def evaluate(self, position: TensorVariable, gradients: bool = True,
                 params: dict | None = None) -> PathPoint:
        """Symbolic log densities (and optionally gradients) at ``position`` (N, d).

        ``params`` maps the names in :attr:`parameters` to symbolic tensors (the driver's
        loop inputs); without it, paths with parameters use them as constants.
        """
        if self.parameters:
            if params is None:
                params = {k: pt.as_tensor(v) for k, v in self.parameters.items()}
            log_base, log_ratio = self.build_log_densities(
                position, {k: params[k] for k in self.parameters})
        else:
            log_base, log_ratio = self.build_log_densities(position)
        if not gradients:
            return PathPoint(log_base, log_ratio, None, None)
        # a density that reads the position only through integers (annealed discrete
        # coordinates cast to int) has no gradient there: zero, as for any constant
        grad_base, grad_ratio = (pt.grad(g.sum(), position, disconnected_inputs="ignore")
                                 for g in (log_base, log_ratio))
        return PathPoint(log_base, log_ratio, grad_base, grad_ratio)


@dataclass(frozen=True)
class GibbsPath(_Contract):
    r"""A path with tractable blocked-Gibbs conditionals, where ``log f_beta`` may be any
    function of :math:`\beta` (not only linear).

    This is the form of annealing in the joint (visible, hidden) space of restricted
    Boltzmann machines (Salakhutdinov & Murray 2008): the intermediate distributions are
    RBMs with scaled parameters, the hidden (and auxiliary) units are summed or integrated
    out in :math:`\log f_\beta(x)` and sampled afresh in each Gibbs sweep, so the annealed
    state is only the visible vector ``x``. The AIS weight increment of step k is
    :math:`\log f_{\beta_k}(x_{k-1}) - \log f_{\beta_{k-1}}(x_{k-1})`.

    The model's numbers (weights, biases, base moments) are ``parameters``: inputs of the
    compiled loop, not constants baked into it, so every path with the same ``structure``
    shares one compiled function (and Numba's on-disk cache) whatever its sizes and values.

    Parameters
    ----------
    num_dims : int
        Dimension of the state ``x``.
    parameters : dict of str to ndarray
        The numeric inputs, passed to the builders as symbolic tensors of the same names.
    build_log_density : callable
        ``(x (N, d), beta scalar, params) -> (N,)`` float64 graph of :math:`\log f_\beta(x)`,
        up to a constant that may depend on :math:`\beta` only at :math:`0 < \beta < 1`
        (at the endpoints it must be exact: :math:`\log Z_0` is ``log_base_normalizer`` and
        :math:`f_1` is the target). Build the :math:`\beta`-free parts (matrix products) as
        expressions of ``x`` alone so that PyTensor merges them across the two evaluations
        and the Gibbs sweep of a step.
    build_gibbs_sweep : callable
        ``(rng, x (N, d), beta, params) -> (rng, x_new)``: one sweep that leaves
        :math:`p_\beta` invariant.
    sample_base : callable
        ``(rng: numpy.random.Generator, num_draws) -> ndarray (num_draws, d)``: exact draws
        from :math:`p_0`.
    log_base_normalizer : float
        :math:`\log Z_0`.
    structure : tuple
        Hashable; paths with equal structure must build identical graphs from their builders.
    dtype : {"float64", "float32"}
        Dtype of the state (log weights are always float64).
    name : str
    info : dict
        What is worth reporting about the base (numbers go to the result's attributes).
    build_log_increment : callable, optional
        ``(x, beta, delta, params) -> (N,)`` float64 graph of the weight increment
        :math:`\log f_\beta(x) - \log f_{\beta - \delta}(x)`, when it can be computed more
        cheaply than as the difference of two ``build_log_density`` graphs (and with
        subexpressions the sweep shares). By default, that difference.
    """

    num_dims: int
    parameters: dict
    build_log_density: Callable
    build_gibbs_sweep: Callable
    sample_base: Callable[[np.random.Generator, int], np.ndarray]
    log_base_normalizer: float
    structure: tuple
    dtype: str = "float64"
    name: str = "path"
    info: dict = field(default_factory=dict)
    build_log_increment: Callable | None = None

    base_scale = None
    capabilities = ("gibbs_sweep",)
    default_kernel = "gibbs"

    def compile_key(self) -> tuple[object, tuple]:
        """``(None, key)``: every value is a parameter, so one compiled loop serves every
        path of this structure and dtype, whatever its size."""
        return None, ("gibbs", self.structure, self.dtype)

    def gibbs_sweep(self, rng, x, beta, params):
        """One sweep of the conditionals at ``beta``: ``(rng, x_new)``."""
        return self.build_gibbs_sweep(rng, x, beta, params)

    def weight_increment(self, state, beta, delta, params: dict) -> TensorVariable:
        """:meth:`log_increment` at the state's position (NaN read as -inf)."""
        increment = self.log_increment(state.position, beta, delta, params)
        return pt.switch(pt.isnan(increment), -np.inf, increment)

    def log_increment(self, x, beta, delta, params):
        r"""Graph of :math:`\log f_\beta(x) - \log f_{\beta - \delta}(x)` (float64, ``(N,)``)."""
        if self.build_log_increment is not None:
            return self.build_log_increment(x, beta, delta, params)
        return (self.build_log_density(x, beta, params)
                - self.build_log_density(x, beta - delta, params)).astype("float64")

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


# ---------------------------------------------------------------------------------------
# a Gaussian base fitted to the target


def fit_gaussian(positions: np.ndarray, log_weights: np.ndarray | None = None,
                 inflation: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    r"""Mean and full covariance of weighted draws, shrunk to stay well conditioned.

    The correlation matrix is shrunk toward the identity with the Ledoit-Wolf intensity
    (computed on the standardized weighted draws, with the weights' effective sample size in
    place of the number of draws), so a few hundred draws in 100 dimensions
    still give a positive definite, not overconfident, covariance; ``inflation`` scales it.
    """
    x = np.asarray(positions, dtype=np.float64)
    n, d = x.shape
    if log_weights is None:
        w = np.full(n, 1.0 / n)
    else:
        lw = np.asarray(log_weights, dtype=np.float64)
        finite = np.isfinite(lw)
        if not finite.any():
            raise AnnealingError("every draw has zero weight; cannot fit a Gaussian.")
        w = np.where(finite, np.exp(lw - lw[finite].max()), 0.0)
        w /= w.sum()
    ess = 1.0 / np.sum(w**2)
    mean = w @ x
    centered = x - mean
    var = w @ centered**2
    sd = np.sqrt(np.where(var > 0, var, 1.0))
    z = centered / sd
    corr = (z * w[:, None]).T @ z
    corr = 0.5 * (corr + corr.T)
    # Ledoit-Wolf intensity toward the identity: sum of the entries' sampling variances
    # over the squared distance to the target
    off = corr - np.eye(d)
    distance = np.sum(off**2)
    if d > 1 and distance > 0:
        chunk = max(1, int(2e7 // (d * d)))  # bound the (chunk, d, d) temporary
        sampling = 0.0
        for start in range(0, n, chunk):
            zz, ww = z[start:start + chunk], w[start:start + chunk]
            sampling += np.sum(ww[:, None, None] * (np.einsum("ni,nj->nij", zz, zz) - corr) ** 2)
        sampling /= ess
        shrinkage = float(np.clip(sampling / distance, 0.0, 1.0))
    else:
        shrinkage = 0.0
    corr = (1.0 - shrinkage) * corr + shrinkage * np.eye(d)
    cov = inflation * corr * np.outer(sd, sd)
    return mean, cov


def check_gaussian_base(path: Path) -> None:
    """Raise a clear error unless :func:`gaussian_base_path` can be built on ``path``."""
    if path.parameters:
        raise AnnealingError("gaussian_base_path needs a path without parameters of its own.")
    if path.discrete_dims and (path.build_discrete_base is None or path.sample_discrete is None):
        raise AnnealingError(
            f"{path.name!r} has integer coordinates {sorted(path.discrete_dims)} without a "
            "base for them (their prior given the rest cannot be drawn here: a symbolic "
            "distribution, or a prior that depends on a summed variable), so a Gaussian base "
            'cannot cover the others alone; use base="prior".')


DEFENSIVE_WEIGHT = 0.1
"""Weight of the prior in :func:`gaussian_base_path`'s defensive mixture base."""


def gaussian_base_path(path: Path, mean: np.ndarray, cov: np.ndarray,
                       defensive: float = DEFENSIVE_WEIGHT,
                       defensive_width: float | None = None) -> Path:
    r"""The geometric path from a Gaussian :math:`q = \mathcal N(\mu, \Sigma)` to the
    target of ``path``, in whitened coordinates.

    With :math:`x = \mu + L z` (:math:`\Sigma = L L^\top`), the base is
    :math:`\mathcal N(0, I)` in :math:`z` and the target
    :math:`f_1(z) = \pi_0(x)\,e^{\ell(x)}\,|\det L|`, the unnormalized target of
    ``path`` (its base times its likelihood ratio, times :math:`Z_0`) carried to :math:`z`,
    so the normalizing constant is unchanged. This is the posterior-fitted base of the
    design notes, the analogue of Kiwaki & Aihara's full-covariance base: when :math:`q` is
    close to the target, few temperatures are needed, and whitening makes the identity a
    good mass matrix. ``mean`` and ``cov`` are inputs of the compiled loop, so every fit for
    the same ``path`` reuses one compiled function. The path's :meth:`Path.to_model` maps
    the final particles back, ``mean + z @ L.T`` (:func:`numpy.linalg.cholesky` of ``cov``).

    A path with integer coordinates (``discrete_dims``, a PyMC model's annealed discrete
    variables) keeps them as they are: ``mean`` and ``cov`` cover the other coordinates
    only, and the base of the integer ones is their prior given the others,
    :math:`q(z_c)\,p(z_d \mid x_c)` (``path.build_discrete_base``, drawn by
    ``path.sample_discrete``), normalized for every :math:`x_c`, so :math:`Z_0` is still 1
    and the target still :math:`Z_1`.

    **A defensive mixture** (Hesterberg 1995). The base is
    :math:`(1 - a)\,q + a\,\pi_0` with :math:`a` = ``defensive`` (0.1 by default) and
    :math:`\pi_0` the base of ``path`` (for a PyMC model, the prior), carried to :math:`z`
    (times :math:`|\det L|`). A Gaussian fitted to a short run's particles can miss part of the
    target (a funnel's neck, a far mode); there the weights of the pure Gaussian base are
    heavy-tailed, and a few hundred particles rarely show it: the estimate is low with a
    small standard error and no warning (the calibration suite found a funnel at
    :math:`z = -7.6`). The prior's share keeps mass everywhere the prior has it, and costs
    nothing to evaluate (the path computes :math:`\log \pi_0` anyway). ``defensive=0`` is
    the pure Gaussian.

    Where the prior cannot be drawn (``transform=ordered``; a prior that overflows), a
    ``defensive_width`` :math:`s` makes the defensive component the wide Gaussian
    :math:`\mathcal N(\mu, s^2 \Sigma)` instead (:math:`\mathcal N(0, s^2 I)` in
    :math:`z`): still normalized, so the estimate stays unbiased, with tails :math:`s` times
    the fit's.
    """
    check_gaussian_base(path)
    defensive = check_probability("defensive", defensive, low_open=False, high_open=True)
    d = path.num_dims
    discrete = np.array(sorted(path.discrete_dims), dtype=int)
    continuous = np.setdiff1d(np.arange(d), discrete)
    dc = continuous.size
    mean = np.asarray(mean, dtype=np.float64).reshape(dc)
    cov = np.asarray(cov, dtype=np.float64).reshape(dc, dc)
    if not np.all(np.isfinite(mean)) or not np.all(np.isfinite(cov)):
        raise AnnealingError("the Gaussian base's mean and covariance must be finite, got "
                             f"{np.sum(~np.isfinite(mean))} non-finite mean and "
                             f"{np.sum(~np.isfinite(cov))} non-finite covariance entries.")
    chol = _floored_cholesky(cov)
    log_det = float(np.sum(np.log(np.diag(chol))))
    log_z0 = float(path.log_base_normalizer)
    const = -0.5 * dc * np.log(2.0 * np.pi)
    wide = None if defensive_width is None else float(defensive_width)
    if wide is not None and (not np.isfinite(wide) or wide <= 0.0 or discrete.size):
        raise AnnealingError(
            f"defensive_width must be a positive number on a path without integer "
            f"coordinates, got {defensive_width!r} on a path with {discrete.size} of them.")

    def build(z, params):
        x = _unwhiten(z, params["base_mean"], params["base_chol"], continuous, d)
        log_prior, log_ratio = path.build_log_densities(x)
        log_q = -0.5 * (z[:, continuous] ** 2).sum(axis=-1) + const
        if discrete.size:
            log_q = log_q + path.build_discrete_base(x)
        log_prior_z = log_prior + params["base_log_det"]  # pi_0 carried to z
        log_q = _defensive_mixture(log_q, log_prior_z, z, defensive, wide, dc)
        log_target = log_prior_z + log_ratio + log_z0
        return log_q, log_target - log_q

    def sample_base(rng: np.random.Generator, num_draws: int) -> np.ndarray:
        z = np.zeros((num_draws, d))
        z[:, continuous] = rng.standard_normal((num_draws, dc))
        if discrete.size:  # the integer coordinates from their prior given the rest
            z[:, discrete] = path.sample_discrete(rng, to_model(z))[:, discrete]
        from_prior = rng.random(num_draws) < defensive
        if from_prior.any() and wide is not None:  # the wide Gaussian's share
            z[from_prior] = wide * rng.standard_normal((int(from_prior.sum()), d))
        elif from_prior.any():  # the mixture's prior share: pi_0's draws, whitened
            x = np.asarray(path.sample_base(rng, int(from_prior.sum())), dtype=np.float64)
            z[from_prior] = x
            z[np.ix_(from_prior, continuous)] = solve_triangular(
                chol, (x[:, continuous] - mean).T, lower=True).T
        return z

    def to_model(z: np.ndarray) -> np.ndarray:  # whitened -> the model's value space
        return _unwhiten(np.asarray(z, dtype=np.float64), mean, chol, continuous, d)

    scale = np.ones(d)
    if discrete.size and path.base_scale is not None:
        scale[discrete] = np.asarray(path.base_scale)[discrete]
    return Path(
        num_dims=d,
        build_log_densities=build,
        sample_base=sample_base,
        log_base_normalizer=0.0,
        base_scale=scale,
        name=path.name,
        parameters={"base_mean": mean, "base_chol": chol,
                    "base_log_det": np.asarray(log_det)},
        cache_owner=path,
        structure=("gaussian_base", float(defensive), wide),
        discrete_dims=path.discrete_dims,
        discrete_supports=path.discrete_supports,
        postprocess=to_model,
    )


def _defensive_mixture(log_q, log_prior_z, z, defensive: float, wide: float | None,
                       dims: int):
    r"""``log_q`` mixed with its defensive share ``defensive``: the path's own base carried
    to the whitened coordinates (``log_prior_z``), or :math:`\mathcal N(0, s^2 I)` over the
    ``dims`` continuous coordinates of ``z`` with ``s = wide``."""
    if defensive <= 0.0:
        return log_q
    log_other = log_prior_z if wide is None else (
        -0.5 * (z ** 2).sum(axis=-1) / wide**2 - 0.5 * dims * np.log(2.0 * np.pi)
        - dims * np.log(wide))
    return pt.logaddexp(np.log1p(-defensive) + log_q, np.log(defensive) + log_other)


def _floored_cholesky(cov: np.ndarray) -> np.ndarray:
    """Cholesky factor of ``cov`` (symmetrized), its spectrum floored where it is not
    positive definite: a base wider than needed in a few directions is harmless."""
    cov = 0.5 * (cov + cov.T)
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        values, vectors = np.linalg.eigh(cov)
        values = np.maximum(values, 1e-8 * max(values.max(), 1e-300))
        return np.linalg.cholesky((vectors * values) @ vectors.T)


def component_offsets(chols: np.ndarray, component: np.ndarray,
                      eps: np.ndarray) -> np.ndarray:
    """``chols[component[n]] @ eps[n]`` for each row n: one matrix product per component
    drawn (a gather of a (n, d, d) stack of factors and an ``einsum`` over it took 0.54 s
    for 4,000 draws of a 90-d base)."""
    out = np.empty_like(eps)
    for k in np.unique(component):
        rows = component == k
        out[rows] = eps[rows] @ chols[k].T
    return out


def mixture_base_path(path: Path, means: np.ndarray, covs: np.ndarray, weights: np.ndarray,
                      defensive: float = DEFENSIVE_WEIGHT,
                      defensive_width: float | None = None,
                      df: float | None = None) -> Path:
    r""":func:`gaussian_base_path` with a mixture of Gaussians
    :math:`q = \sum_k w_k \mathcal N(\mu_k, \Sigma_k)` (one per mode of the target) in place
    of one, on a path without integer coordinates; with one component it is
    :func:`gaussian_base_path` itself.

    The coordinates are whitened by the first component (:math:`x = \mu_1 + L_1 z`), where
    component k is :math:`\mathcal N(L_1^{-1}(\mu_k - \mu_1), L_1^{-1}\Sigma_k L_1^{-\top})`;
    the defensive share is the path's own base (``defensive_width=None``) or
    :math:`\mathcal N(\mu_1, s^2 \Sigma_1)`. Every density is exact and normalized, so the
    estimate is unbiased whatever the components; their number is part of the compiled
    loop's structure, their values are its inputs. With ``df`` the components are
    multivariate Student-t with ``df`` degrees of freedom (scale matrices ``covs``): tails
    heavier than any Gaussian's, for importance sampling from the base alone
    (:mod:`pymc_anneal.driver.importance`)."""
    means = np.asarray(means, dtype=np.float64)
    covs = np.asarray(covs, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64).ravel()
    if (means.ndim != 2 or covs.shape != means.shape + means.shape[-1:]
            or weights.shape != means.shape[:1]):
        raise AnnealingError(
            f"mixture_base_path needs means (K, d), covs (K, d, d) and weights (K,), got "
            f"shapes {means.shape}, {covs.shape} and {weights.shape}.")
    if not (np.all(np.isfinite(weights)) and np.all(weights > 0)):
        raise AnnealingError(f"the mixture's weights must be positive, got {weights}.")
    if not (np.all(np.isfinite(means)) and np.all(np.isfinite(covs))):
        raise AnnealingError("the mixture's means and covariances must be finite.")
    weights = weights / weights.sum()
    if df is not None and not (np.isfinite(df) and df > 0):
        raise AnnealingError(f"df must be a positive number, got {df!r}.")
    if weights.size == 1 and df is None:
        return gaussian_base_path(path, means[0], covs[0], defensive, defensive_width)
    check_gaussian_base(path)
    if path.discrete_dims:
        raise AnnealingError("mixture_base_path covers paths without integer coordinates; "
                             f"{path.name!r} has {len(path.discrete_dims)}.")
    defensive = check_probability("defensive", defensive, low_open=False, high_open=True)
    wide = None if defensive_width is None else float(defensive_width)
    if wide is not None and (not np.isfinite(wide) or wide <= 0.0):
        raise AnnealingError(f"defensive_width must be a positive number, got "
                             f"{defensive_width!r}.")
    d, num = path.num_dims, weights.size
    every = np.arange(d)
    mean, chol = means[0], _floored_cholesky(covs[0])
    log_det = float(np.sum(np.log(np.diag(chol))))
    z_means = solve_triangular(chol, (means - mean).T, lower=True).T
    # L_1^{-1} L_k is lower triangular with a positive diagonal: component k's factor in z
    z_chols = np.array([solve_triangular(chol, _floored_cholesky(c), lower=True)
                        for c in covs])
    z_inv = np.array([solve_triangular(c, np.eye(d), lower=True) for c in z_chols])
    log_w = np.log(weights) - np.array([np.sum(np.log(np.diag(c))) for c in z_chols])
    log_z0 = float(path.log_base_normalizer)
    const = -0.5 * d * np.log(2.0 * np.pi) if df is None else float(
        gammaln(0.5 * (df + d)) - gammaln(0.5 * df) - 0.5 * d * np.log(df * np.pi))

    def kernel(squared):  # a component's log density less its constant, by its distance
        return -0.5 * squared if df is None else -0.5 * (df + d) * pt.log1p(squared / df)

    def build(z, params):
        x = _unwhiten(z, params["base_mean"], params["base_chol"], every, d)
        log_prior, log_ratio = path.build_log_densities(x)
        terms = [params["mix_log_w"][k] + kernel((
            ((z - params["mix_means"][k]) @ params["mix_inv"][k].T) ** 2).sum(axis=-1))
            for k in range(num)]
        log_q = pt.logsumexp(pt.stack(terms, axis=-1), axis=-1) + const
        log_prior_z = log_prior + params["base_log_det"]  # pi_0 carried to z
        log_q = _defensive_mixture(log_q, log_prior_z, z, defensive, wide, d)
        return log_q, log_prior_z + log_ratio + log_z0 - log_q

    def sample_base(rng: np.random.Generator, num_draws: int) -> np.ndarray:
        component = rng.choice(num, size=num_draws, p=weights)
        eps = rng.standard_normal((num_draws, d))
        if df is not None:  # a Student-t: a Gaussian over the root of a chi-square / df
            eps = eps / np.sqrt(rng.chisquare(df, size=(num_draws, 1)) / df)
        z = z_means[component] + component_offsets(z_chols, component, eps)
        share = rng.random(num_draws) < defensive
        if share.any() and wide is not None:
            z[share] = wide * rng.standard_normal((int(share.sum()), d))
        elif share.any():  # the prior's draws, whitened
            x = np.asarray(path.sample_base(rng, int(share.sum())), dtype=np.float64)
            z[share] = solve_triangular(chol, (x - mean).T, lower=True).T
        return z

    def to_model(z: np.ndarray) -> np.ndarray:
        return _unwhiten(np.asarray(z, dtype=np.float64), mean, chol, every, d)

    return Path(
        num_dims=d,
        build_log_densities=build,
        sample_base=sample_base,
        log_base_normalizer=0.0,
        base_scale=np.ones(d),
        name=path.name,
        parameters={"base_mean": mean, "base_chol": chol, "base_log_det": np.asarray(log_det),
                    "mix_means": z_means, "mix_inv": z_inv, "mix_log_w": log_w},
        cache_owner=path,
        structure=("mixture_base", num, float(defensive), wide, df),
        postprocess=to_model,
    )


def _unwhiten(z, mean, chol, continuous: np.ndarray, num_dims: int):
    r""":math:`x = \mu + L z` on the ``continuous`` coordinates of ``z`` (``(..., num_dims)``),
    the others as they are: NumPy arrays, or PyTensor graphs (``z`` a matrix, ``mean`` and
    ``chol`` the loop's symbolic parameters). The one map from whitened coordinates to the
    model's: of the loop's log densities, of the base's draws, of the final particles."""
    index = (slice(None),) * (z.ndim - 1) + (continuous,)
    moved = mean + z[index] @ chol.T
    if isinstance(z, np.ndarray):
        if continuous.size == num_dims:
            return moved
        x = z.copy()
        x[index] = moved
        return x
    x = moved if continuous.size == num_dims else pt.set_subtensor(z[index], moved)
    return pt.specify_shape(x, z.shape)
