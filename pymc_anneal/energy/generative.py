r"""Linear and bilinear generative models: the test log-likelihood as one evidence per point.

A generative model draws latent coefficients :math:`\mathbf a` from a prior and the data
from :math:`p(\mathbf x \mid \mathbf a)` (Sohl-Dickstein & Culpepper, 2012, §3, eqs. 27-35):

.. math:: p(\mathbf x \mid \mathbf a) = \mathcal N(\mathbf x;\, \Phi \mathbf a,\,
          \sigma^2 I_M), \qquad p(\mathbf x) = \int p(\mathbf x \mid \mathbf a)\,
          p(\mathbf a)\, d\mathbf a .

Each test point's log-likelihood :math:`\log p(\mathbf x_n)` is the log normalizing constant
of the posterior :math:`p(\mathbf a \mid \mathbf x_n)` (eqs. 28-29), so it takes one AIS
run per point over the latents, from the (normalized) prior at :math:`\beta = 0` to prior
:math:`\times` likelihood at :math:`\beta = 1`: the path
:math:`\log f_\beta(\mathbf a) = \log p(\mathbf a) + \beta \log p(\mathbf x_n \mid \mathbf a)`
with :math:`Z_0 = 1`. :func:`pymc_anneal.batched_ais` runs all points in one compiled loop
(:meth:`evidence_path`).

- :class:`LinearGenerative`: :math:`\mathbf a \in \mathbb R^L` with a standard Gaussian
  prior (eq. 31; then :math:`p(\mathbf x) = \mathcal N(0, \Phi\Phi^\top + \sigma^2 I)` in
  closed form, :meth:`LinearGenerative.exact_log_likelihood`) or a Laplace prior
  :math:`p(a_l) = \tfrac12 e^{-|a_l|}` (eq. 32).
- :class:`BilinearGenerative` (Culpepper et al., 2011): :math:`\mathbf a = (\Theta\mathbf
  c) \odot (\Psi \mathbf d)` with Laplace :math:`\mathbf c` (eq. 34) and exponential
  :math:`\mathbf d \ge 0` (eq. 35). The constraint :math:`\mathbf d \ge 0` is declared on the
  path (``lower_bounds``), and the HMC kernels reflect at it (HAIS §2.3).

References
----------
Sohl-Dickstein, J. & Culpepper, B. J. (2012). Hamiltonian annealed importance sampling for
partition function estimation. arXiv:1205.1925, §3.

Culpepper, B. J., Sohl-Dickstein, J. & Olshausen, B. A. (2011). Building a better
probabilistic model of images by factorization. *ICCV*.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable

from pymc_anneal.energy.base import cast_finite, check_dtype
from pymc_anneal.energy.rbm import as_generator
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.paths import Path
from pymc_anneal.validation import check_choice, check_finite_array, check_positive_float

__all__ = ["BilinearGenerative", "GenerativeModel", "LinearGenerative"]

_LOG_2PI = float(np.log(2.0 * np.pi))
_LOG_2 = float(np.log(2.0))


def _matrix(name: str, value, rows: int | None = None) -> np.ndarray:
    array = check_finite_array(name, value).astype(np.float64)
    if array.ndim != 2 or min(array.shape) < 1 or (rows is not None and array.shape[0] != rows):
        want = f"({rows}, k)" if rows is not None else "(rows, columns)"
        raise AnnealingError(f"{name} must be a 2-D array of shape {want} with at least one "
                             f"column, got shape {array.shape}.")
    array.flags.writeable = False
    return array


class GenerativeModel:
    """A latent-variable model :math:`p(\\mathbf x) = \\int p(\\mathbf x \\mid \\mathbf z)
    p(\\mathbf z)\\,d\\mathbf z` whose test log-likelihood :func:`pymc_anneal.batched_ais`
    estimates, one evidence per test point.

    Subclasses set ``num_dims`` (of the data), ``num_latent`` (of the annealed state),
    ``noise_scale``, ``name``, and implement :meth:`_mean` (the noise-free image of the
    latents, a graph), :meth:`_log_prior` (normalized, a graph), :meth:`sample_prior`, and
    optionally ``lower_bounds`` of the latents.
    """

    num_dims: int
    num_latent: int
    noise_scale: float
    name: str
    lower_bounds: np.ndarray | None = None
    prior_scale: np.ndarray

    def _mean(self, z: TensorVariable) -> TensorVariable:  # pragma: no cover - abstract
        raise NotImplementedError

    def _log_prior(self, z: TensorVariable) -> TensorVariable:  # pragma: no cover - abstract
        raise NotImplementedError

    def sample_prior(self, num_draws: int, rng=None) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _mean_numpy(self, z: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def check_data(self, data) -> np.ndarray:
        """``data`` as a finite float64 ``(N, num_dims)`` array with N >= 1."""
        array = check_finite_array("data", data).astype(np.float64)
        if array.ndim != 2 or array.shape[1] != self.num_dims or array.shape[0] < 1:
            hint = " (for a single point use data.reshape(1, -1))" if array.ndim == 1 else ""
            raise AnnealingError(
                f"data must have shape (N, {self.num_dims}) with N >= 1 for "
                f"{type(self).__name__} {self.name!r} over {self.num_dims} dimensions, got "
                f"shape {array.shape}{hint}.")
        return array

    def _const(self, value):
        return pt.constant(np.asarray(value, dtype=self.dtype))

    def _log_noise(self, x: TensorVariable, mean: TensorVariable) -> TensorVariable:
        s = self.noise_scale
        return (self._const(-0.5 / s**2) * pt.sum((x - mean) ** 2, axis=1)
                - self._const(self.num_dims * (np.log(s) + 0.5 * _LOG_2PI)))

    def log_joint(self, x, z) -> TensorVariable:
        r"""PyTensor graph of :math:`\log p(\mathbf x, \mathbf z)` for rows ``x`` (N,
        num_dims) and latents ``z`` (N, num_latent), in the model's dtype."""
        x, z = pt.as_tensor(x), pt.as_tensor(z)
        return self._log_prior(z) + self._log_noise(x, self._mean(z))

    def log_joint_numpy(self, x, z) -> np.ndarray:
        r""":math:`\log p(\mathbf x, \mathbf z)` in NumPy (float64), the twin of
        :meth:`log_joint`."""
        x, z = np.asarray(x, dtype=np.float64), np.asarray(z, dtype=np.float64)
        s = self.noise_scale
        log_noise = (-0.5 * np.sum((x - self._mean_numpy(z)) ** 2, axis=1) / s**2
                     - self.num_dims * (np.log(s) + 0.5 * _LOG_2PI))
        return self._log_prior_numpy(z) + log_noise

    def sample(self, num_draws: int, rng=None) -> np.ndarray:
        """``num_draws`` exact draws of the data, ``(num_draws, num_dims)``."""
        rng = as_generator(rng)
        z = self.sample_prior(num_draws, rng)
        return self._mean_numpy(z) + self.noise_scale * rng.standard_normal((num_draws, self.num_dims))

    def evidence_path(self, data) -> Path:
        r"""The path whose particle ``i`` anneals point ``i mod N`` of ``data`` (N rows).

        Its base is the prior over the latents (:math:`Z_0 = 1`), its log ratio the
        log-likelihood of the particle's point; the data are an input of the compiled loop
        (not a constant), so every data set of the same size shares one compiled loop.
        """
        data = self.check_data(data)
        points = data.shape[0]

        def log_densities(z, params):
            # the model's arithmetic in its dtype; the state and the log densities in float64
            x = params["data"].astype(self.dtype)
            zd = z.astype(self.dtype)
            rows = pt.arange(z.shape[0]) % x.shape[0]
            return (self._log_prior(zd).astype("float64"),
                    self._log_noise(x[rows], self._mean(zd)).astype("float64"))

        return Path(num_dims=self.num_latent, build_log_densities=log_densities,
                    sample_base=lambda rng, n: self.sample_prior(n, rng),
                    log_base_normalizer=0.0, base_scale=self.prior_scale, name=self.name,
                    parameters={"data": data}, cache_owner=self,
                    structure=("evidence", points), lower_bounds=self.lower_bounds,
                    info={"base": "prior", "num_points": points})


class LinearGenerative(GenerativeModel):
    r"""Linear generative model :math:`\mathbf x = \Phi \mathbf a + \sigma \boldsymbol
    \epsilon` with a Gaussian or Laplace prior on :math:`\mathbf a` (eqs. 30-32).

    Parameters
    ----------
    basis : array (num_dims, num_latent)
        :math:`\Phi`, one basis function per column.
    noise_scale : float
        :math:`\sigma > 0`.
    prior : {"gaussian", "laplace"}, default "gaussian"
        :math:`\mathcal N(0, 1)` or :math:`\tfrac12 e^{-|a|}` for each coefficient.
    name : str, default "linear"

    Examples
    --------
    >>> import numpy as np, pymc_anneal as pa
    >>> from pymc_anneal.energy import LinearGenerative
    >>> model = LinearGenerative(np.array([[1.0, 0.5], [0.0, 1.0], [0.3, -0.2]]), 0.5)
    >>> x = model.sample(3, rng=0)
    >>> result = pa.batched_ais(model, x, draws=200, num_steps=200, random_seed=1,
    ...                         progressbar=False)
    >>> err = result["sample_stats"]["log_likelihood"].values - model.exact_log_likelihood(x)
    >>> bool(np.all(np.abs(err) < 0.1))
    True
    """

    def __init__(self, basis, noise_scale: float, prior: str = "gaussian",
                 dtype: str = "float64", name: str = "linear"):
        self.basis = _matrix("basis", basis)
        self.num_dims, self.num_latent = self.basis.shape
        self.noise_scale = check_positive_float("noise_scale", noise_scale)
        self.prior = check_choice("prior", prior, ("gaussian", "laplace"))
        self.prior_scale = np.full(self.num_latent, 1.0 if prior == "gaussian" else np.sqrt(2.0))
        self.dtype = check_dtype(dtype)
        cast_finite(self.basis, self.dtype, "basis")
        self.name = name

    def _mean(self, a):
        return pt.dot(a, self._const(self.basis.T))

    def _mean_numpy(self, a):
        return a @ self.basis.T

    def _log_prior(self, a):
        if self.prior == "gaussian":
            return (self._const(-0.5) * pt.sum(a**2, axis=1)
                    - self._const(0.5 * self.num_latent * _LOG_2PI))
        return -pt.sum(pt.abs(a), axis=1) - self._const(self.num_latent * _LOG_2)

    def _log_prior_numpy(self, a):
        if self.prior == "gaussian":
            return -0.5 * np.sum(a**2, axis=1) - 0.5 * self.num_latent * _LOG_2PI
        return -np.sum(np.abs(a), axis=1) - self.num_latent * _LOG_2

    def sample_prior(self, num_draws: int, rng=None) -> np.ndarray:
        rng = as_generator(rng)
        shape = (int(num_draws), self.num_latent)
        return rng.standard_normal(shape) if self.prior == "gaussian" else rng.laplace(size=shape)

    def exact_log_likelihood(self, data) -> np.ndarray:
        r"""Per-point :math:`\log p(\mathbf x_n) = \log\mathcal N(\mathbf x_n; 0,
        \Phi\Phi^\top + \sigma^2 I)`; only for the Gaussian prior."""
        if self.prior != "gaussian":
            raise AnnealingError(
                f"a LinearGenerative with a {self.prior} prior has no closed-form likelihood; "
                "estimate it with pymc_anneal.batched_ais(model, data).")
        x = self.check_data(data)
        cov = self.basis @ self.basis.T + self.noise_scale**2 * np.eye(self.num_dims)
        chol = np.linalg.cholesky(cov)
        z = np.linalg.solve(chol, x.T)
        return (-0.5 * np.sum(z**2, axis=0) - np.sum(np.log(np.diag(chol)))
                - 0.5 * self.num_dims * _LOG_2PI)

    def __repr__(self) -> str:
        return (f"LinearGenerative(num_dims={self.num_dims}, num_latent={self.num_latent}, "
                f"noise_scale={self.noise_scale:g}, prior={self.prior!r}, name={self.name!r})")


class BilinearGenerative(GenerativeModel):
    r"""Bilinear generative model: :math:`\mathbf x = \Phi[(\Theta\mathbf c) \odot (\Psi
    \mathbf d)] + \sigma\boldsymbol\epsilon`, :math:`p(c_i) = \tfrac12 e^{-|c_i|}`,
    :math:`p(d_j) = e^{-d_j}` on :math:`d_j \ge 0` (eqs. 33-35).

    The annealed state is :math:`(\mathbf c, \mathbf d)`; ``lower_bounds`` marks
    :math:`\mathbf d \ge 0`, at which the HMC kernels reflect.

    Parameters
    ----------
    basis : array (num_dims, L)
        :math:`\Phi`.
    theta : array (L, num_c)
        :math:`\Theta`.
    psi : array (L, num_d)
        :math:`\Psi`.
    noise_scale : float
    name : str, default "bilinear"
    """

    def __init__(self, basis, theta, psi, noise_scale: float, dtype: str = "float64",
                 name: str = "bilinear"):
        self.basis = _matrix("basis", basis)
        self.num_dims, num_a = self.basis.shape
        self.theta = _matrix("theta", theta, rows=num_a)
        self.psi = _matrix("psi", psi, rows=num_a)
        self.num_c, self.num_d = self.theta.shape[1], self.psi.shape[1]
        self.num_latent = self.num_c + self.num_d
        self.noise_scale = check_positive_float("noise_scale", noise_scale)
        self.lower_bounds = np.r_[np.full(self.num_c, -np.inf), np.zeros(self.num_d)]
        self.prior_scale = np.r_[np.full(self.num_c, np.sqrt(2.0)), np.ones(self.num_d)]
        self.dtype = check_dtype(dtype)
        for label in ("basis", "theta", "psi"):
            cast_finite(getattr(self, label), self.dtype, label)
        self.name = name

    def _split(self, z):
        return z[:, :self.num_c], z[:, self.num_c:]

    def _mean(self, z):
        c, d = self._split(z)
        a = pt.dot(c, self._const(self.theta.T)) * pt.dot(d, self._const(self.psi.T))
        return pt.dot(a, self._const(self.basis.T))

    def _mean_numpy(self, z):
        c, d = z[:, :self.num_c], z[:, self.num_c:]
        return ((c @ self.theta.T) * (d @ self.psi.T)) @ self.basis.T

    def _log_prior(self, z):
        c, d = self._split(z)
        log_c = -pt.sum(pt.abs(c), axis=1) - self._const(self.num_c * _LOG_2)
        return log_c + pt.switch(pt.all(d >= 0, axis=1), -pt.sum(d, axis=1), self._const(-np.inf))

    def _log_prior_numpy(self, z):
        c, d = z[:, :self.num_c], z[:, self.num_c:]
        log_d = np.where(np.all(d >= 0, axis=1), -np.sum(d, axis=1), -np.inf)
        return -np.sum(np.abs(c), axis=1) - self.num_c * _LOG_2 + log_d

    def sample_prior(self, num_draws: int, rng=None) -> np.ndarray:
        rng = as_generator(rng)
        n = int(num_draws)
        return np.concatenate([rng.laplace(size=(n, self.num_c)),
                               rng.exponential(size=(n, self.num_d))], axis=1)

    def __repr__(self) -> str:
        return (f"BilinearGenerative(num_dims={self.num_dims}, num_c={self.num_c}, "
                f"num_d={self.num_d}, noise_scale={self.noise_scale:g}, name={self.name!r})")
