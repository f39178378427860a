r"""Products of experts with linear filters: Laplace and Student-t experts.

A product of experts (Hinton, 2002) over :math:`x \in \mathbb R^M` with ``L`` linear
filters :math:`f_l` (the rows of :math:`F`, shape ``(L, M)``) multiplies one-dimensional
expert densities of the filter responses :math:`u_l = f_l \cdot x`
(Sohl-Dickstein & Culpepper, 2012, §3 model 3, eqs. 36-38):

.. math:: p^*(x) = \prod_{l=1}^L \phi_l(f_l \cdot x), \qquad
          \log p^*(x) = -\sum_{l=1}^L E_l(f_l \cdot x),

with the **Laplace** expert :math:`E_l(u) = |u|` (:class:`LaplacePOE`; the paper's weight
:math:`\lambda_l` is absorbed into the length of :math:`f_l`) or the **Student-t** expert
:math:`E_l(u) = \alpha_l \log(1 + u^2)` (:class:`StudentTPOE`; Welling et al., 2003).

**Normalizability.** :math:`Z = \int p^*(x)\,dx` is finite only if the filters span
:math:`\mathbb R^M` (rank ``M``, so ``L >= M``): along a direction orthogonal to every filter
the density is constant. A Laplace set of rank ``M`` is always normalizable. For Student-t
experts the tails must also decay fast enough: along a subspace :math:`V` of dimension
:math:`k` the density decays like :math:`r^{-2\sum_{l: f_l \not\perp V} \alpha_l}`, so
:math:`Z < \infty` requires :math:`2 \sum_{l: f_l \not\perp V} \alpha_l > k` for every
:math:`V \ne 0`. For a complete set this is exactly :math:`\alpha_l > 1/2` for every
:math:`l`, which the class checks; for an over-complete set only the necessary condition
:math:`2 \sum_l \alpha_l > M` (:math:`V = \mathbb R^M`) is checked.

**Complete sets** (:math:`L = M`, :math:`F` invertible). The change of variables
:math:`u = F x`, :math:`dx = |\det F|^{-1} du`, factorizes the integral:

.. math:: Z = |\det F|^{-1} \prod_{l=1}^M \int \phi_l(u)\,du, \qquad
          \int e^{-|u|}\,du = 2, \qquad
          \int (1 + u^2)^{-\alpha}\,du = \frac{\sqrt\pi\,\Gamma(\alpha - \tfrac12)}{\Gamma(\alpha)},

and :math:`x = F^{-1} u` with independent :math:`u_l` from the normalized experts, which
gives exact draws (:meth:`ProductOfExperts.sample`) and moments
(:meth:`ProductOfExperts.exact_moments`): mean 0 and covariance
:math:`F^{-1} \operatorname{diag}(v) F^{-\top}` with :math:`v_l = 2` for a Laplace(0, 1)
expert and :math:`v_l = 1 / (2\alpha_l - 3)` for a Student-t expert with
:math:`\alpha_l > 3/2` (the density :math:`\propto (1 + u^2)^{-\alpha}` is that of
:math:`t_\nu / \sqrt\nu` with :math:`\nu = 2\alpha - 1` degrees of freedom). Over-complete
sets (:math:`L > M`) have no closed form: estimate :math:`\log Z` with
:func:`pymc_anneal.ais`.

References
----------
Sohl-Dickstein, J. & Culpepper, B. J. (2012). Hamiltonian annealed importance sampling for
partition function estimation. arXiv:1205.1925, §3 model 3.

Hinton, G. E. (2002). Training products of experts by minimizing contrastive divergence.
*Neural Computation*, 14(8), 1771-1800.

Welling, M., Hinton, G. E. & Osindero, S. (2003). Learning sparse topographic
representations with products of Student-t distributions. *NIPS 15*.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable
from scipy.special import gammaln

from pymc_anneal.energy.base import (
    GAUSSIAN_BASES,
    EnergyModel,
    cast_finite,
    check_dtype,
    check_positive_int,
    readonly,
)
from pymc_anneal.energy.rbm import as_generator
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.validation import check_choice, check_finite_array, check_positive_float

__all__ = ["LaplacePOE", "ProductOfExperts", "StudentTPOE"]

_LOG_2 = float(np.log(2.0))
_HALF_LOG_PI = 0.5 * float(np.log(np.pi))


def _as_filters(filters, model: str) -> np.ndarray:
    """``filters`` as a float64 ``(L, M)`` array with ``L >= M >= 1``, finite and of rank ``M``."""
    filters = check_finite_array("filters", filters).copy()
    if filters.ndim != 2 or filters.shape[1] < 1:
        raise AnnealingError(
            f"filters of a {model} must be a 2-D array of shape (num_experts, num_dims) with "
            f"num_dims >= 1 (one filter per row), got shape {filters.shape}. For a single "
            "filter use filters.reshape(1, -1)."
        )
    L, M = filters.shape
    if L < M:
        raise AnnealingError(
            f"a {model} needs at least as many experts as dimensions: filters of shape {(L, M)} "
            f"give {L} expert{'s' if L != 1 else ''} for {M} dimensions, too few experts, so "
            f"the density is constant along the directions orthogonal to every filter and not "
            f"normalizable. Pass at least {M} filters (rows) that span R^{M}."
        )
    # the rank of the rows scaled to max |f_lm| = 1: the same, but blind to each expert's scale
    scales = np.abs(filters).max(axis=1, keepdims=True)
    rank = int(np.linalg.matrix_rank(filters / np.where(scales > 0, scales, 1.0)))
    if rank < M:
        raise AnnealingError(
            f"the filters must span R^{M} (have rank {M}) for the {model} to be normalizable; "
            f"filters of shape {(L, M)} have rank {rank}, so the density is constant along "
            f"{M - rank} direction(s). Remove linearly dependent filters or add independent ones."
        )
    return filters


class ProductOfExperts(EnergyModel):
    r"""Shared parts of the linear-filter products of experts
    :math:`\log p^*(x) = -\sum_l E_l(f_l \cdot x)`.

    Subclasses implement :meth:`_energy_numpy` and :meth:`_energy_graph` (the expert energies
    :math:`E_l(u)` summed over experts, for responses ``u`` of shape ``(N, L)``), and
    :meth:`_log_expert_integrals`, :meth:`_expert_variances` and :meth:`_sample_experts` (the
    normalized one-dimensional experts, used for complete sets).

    Attributes
    ----------
    filters : ndarray of shape (num_experts, num_dims)
        Read-only copy in ``dtype``; row ``l`` is :math:`f_l`.
    num_experts, num_dims : int
    is_complete : bool
    dtype : {"float64", "float32"}
    name : str
    """

    _kind = "ProductOfExperts"

    def _set_filters(self, filters, dtype, name) -> None:
        self.dtype = check_dtype(dtype)
        filters = _as_filters(filters, self._kind)
        self.filters = readonly(cast_finite(filters, self.dtype, "filters"))
        # float64 copy of the (possibly float32-rounded) filters for the NumPy side, so that
        # NumPy and PyTensor evaluate the same model
        self._F = readonly(self.filters.astype(np.float64))
        if self.dtype != "float64":
            _as_filters(self._F, f"{self._kind} (filters rounded to {self.dtype})")
        self.num_dims = check_positive_int(self._F.shape[1], "num_dims")
        self.name = str(name)

    @property
    def num_experts(self) -> int:
        """Number of experts ``L`` (rows of ``filters``)."""
        return int(self._F.shape[0])

    @property
    def is_complete(self) -> bool:
        """Whether the filter set is complete (``num_experts == num_dims``): then
        :meth:`exact_log_z`, :meth:`exact_moments` and :meth:`sample` are available."""
        return self.num_experts == self.num_dims

    # -- the experts (subclasses) ----------------------------------------------------------

    def _energy_numpy(self, u: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _energy_graph(self, u) -> TensorVariable:
        raise NotImplementedError

    def _log_expert_integrals(self) -> np.ndarray:
        raise NotImplementedError

    def _expert_variances(self) -> np.ndarray:
        raise NotImplementedError

    def _sample_experts(self, num_draws: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    # -- densities -------------------------------------------------------------------------

    def log_unnormalized(self, x) -> TensorVariable:
        r"""PyTensor graph of :math:`-\sum_l E_l(f_l \cdot x)`: ``(N, num_dims) -> (N,)``."""
        x = pt.as_tensor_variable(x)
        filters_t = pt.as_tensor_variable(readonly(self.filters.T.copy()))
        return -self._energy_graph(pt.dot(x, filters_t))

    def log_unnormalized_numpy(self, x) -> np.ndarray:
        r""":math:`-\sum_l E_l(f_l \cdot x)` in float64: ``(N, num_dims) -> (N,)``."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.num_dims:
            raise AnnealingError(
                f"x must have shape (N, {self.num_dims}) for {type(self).__name__} {self.name!r} "
                f"(filters of shape {self._F.shape}), got {x.shape}."
            )
        return -self._energy_numpy(x @ self._F.T)

    # -- the annealing path ----------------------------------------------------------------

    _base_alpha_cap = 1.5

    def _base_alpha(self) -> float:
        """The base's expert exponent: heavy enough that the weights stay bounded."""
        return self._base_alpha_cap

    def _gaussian_base_caveat(self) -> str | None:
        """Why a Gaussian base cannot be trusted for this model (None: it can). Laplace
        experts decay exponentially: on the 36-d complete Laplace POE of
        ``examples/hais_poe.py --base isotropic`` every run without a weight warning was
        within 0.05 nat of the closed form."""
        return None

    def annealing_path(self, *, kernel=None, base=None, data=None, moments=None,
                       base_mean=None, base_scale=None, rng=None):
        r"""The path :func:`pymc_anneal.ais` anneals, and its kernel (``"hais"``).

        ``base="student_t"`` (default): a complete Student-t product of experts with the
        target's filters (for an over-complete set, the symmetric square root
        :math:`G = (F^\top F\, M / L)^{1/2}` of their Gram matrix), divided by
        ``base_scale`` (default 1.25), with the target's exponents for a complete
        Student-t set and :math:`\alpha_0 = \min(1.5, \min_l \alpha_l)` otherwise
        (1.5 for Laplace experts; an over-complete Student-t set with some
        :math:`\alpha_l \le 1/2` has no such base, which is an error). Its tails are at
        least as heavy as the target's, so the importance weights stay bounded for complete
        sets. ``base="gaussian"`` (``base_mean``,
        ``base_scale``), ``"isotropic"``, ``"diagonal"`` or ``"full"`` (fitted to ``data`` or
        ``moments``): the Gaussian bases of :meth:`EnergyModel.annealing_path`. Against the
        polynomial tails of Student-t experts a Gaussian base gives weights of infinite
        variance and estimates that are too low by more than their standard error, while the
        weights look healthy; the path then carries that caveat (``info["weight_caveat"]``),
        which :func:`pymc_anneal.ais` raises as an :class:`~pymc_anneal.AnnealingWarning`.
        """
        base = check_choice("base", "student_t" if base is None else base,
                            ("student_t", "gaussian", *GAUSSIAN_BASES))
        if base != "student_t":
            path, kernel = super().annealing_path(
                kernel=kernel, base=None if base == "gaussian" else base, data=data,
                moments=moments, base_mean=base_mean, base_scale=base_scale, rng=rng)
            caveat = self._gaussian_base_caveat()
            if caveat is not None:
                path = dataclasses.replace(path, info={**path.info, "weight_caveat": caveat})
            return path, kernel
        given = sorted(k for k, v in dict(data=data, moments=moments, base_mean=base_mean).items()
                       if v is not None)
        if given:
            raise AnnealingError(f"{given} do not apply to the student_t base of "
                                 f"{type(self).__name__}; it is centred at 0 and widened by "
                                 "base_scale (a number).")
        scale = 1.25 if base_scale is None else check_positive_float("base_scale", base_scale)
        return self._student_t_base_path(scale), kernel or "hais"

    def _student_t_base_path(self, scale: float):
        from pymc_anneal.paths import Path

        if self.is_complete:
            g = self._F
        else:
            gram = self._F.T @ self._F * (self.num_dims / self.num_experts)
            values, vectors = np.linalg.eigh(0.5 * (gram + gram.T))
            g = (vectors * np.sqrt(values)) @ vectors.T
        alpha = self._base_alpha()
        base_model = StudentTPOE(g / scale, np.broadcast_to(alpha, (self.num_dims,)), name="base")
        log_z0 = base_model.exact_log_z()
        response_scale = np.sqrt(np.sum(np.linalg.inv(g / scale) ** 2, axis=1))

        def log_densities(x):
            log_q = base_model.log_unnormalized(x) - log_z0
            return log_q, self.log_unnormalized(x.astype(self.dtype)).astype("float64") - log_q

        return Path(num_dims=self.num_dims, build_log_densities=log_densities,
                    sample_base=lambda rng, n: base_model.sample(n, rng),
                    log_base_normalizer=0.0, base_scale=response_scale, name=self.name,
                    info={"base": "student_t", "base_alpha": alpha, "base_scale": scale})

    def responses(self, x) -> np.ndarray:
        r"""Filter responses :math:`u_{nl} = f_l \cdot x_n`, float64 ``(N, num_experts)``."""
        x = self.check_data(x)
        return x @ self._F.T

    def check_data(self, data) -> np.ndarray:
        """Validate finite data of shape ``(N, num_dims)``, matching the filters' second
        dimension; return it as float64."""
        array = np.asarray(data)
        if array.ndim == 2 and array.shape[1] != self.num_dims:
            raise AnnealingError(
                f"data must have shape (N, {self.num_dims}) for {type(self).__name__} "
                f"{self.name!r}: its filters have shape {self._F.shape} (num_experts, num_dims), "
                f"got data of shape {array.shape}. Project the data to {self.num_dims} "
                "dimensions, or pass filters with one column per data dimension."
            )
        return super().check_data(data)

    # -- complete sets: closed forms -------------------------------------------------------

    def _require_complete(self, what: str) -> None:
        if not self.is_complete:
            raise AnnealingError(
                f"{type(self).__name__} {self.name!r} is over-complete ({self.num_experts} experts "
                f"for {self.num_dims} dimensions), so {what} has no closed form: it exists only "
                "for a complete filter set (num_experts == num_dims). Estimate log Z with "
                "annealed importance sampling: pymc_anneal.ais(model, ...)."
            )

    def exact_log_z(self) -> float:
        r"""Exact :math:`\log Z = -\log|\det F| + \sum_l \log \int \phi_l(u)\,du` of a complete
        filter set (see the module docstring).

        Raises
        ------
        AnnealingError
            For an over-complete set, which has no closed form (use :func:`pymc_anneal.ais`).
        """
        self._require_complete("log Z")
        _sign, log_abs_det = np.linalg.slogdet(self._F)
        return float(self._log_expert_integrals().sum() - log_abs_det)

    def exact_moments(self) -> tuple[np.ndarray, np.ndarray]:
        r"""Exact mean ``(num_dims,)`` and covariance ``(num_dims, num_dims)`` of a complete
        set: :math:`0` and :math:`F^{-1} \operatorname{diag}(v) F^{-\top}`, :math:`v_l` the
        variance of the normalized expert :math:`l`.

        Raises
        ------
        AnnealingError
            For an over-complete set, or when some expert has infinite variance.
        """
        self._require_complete("the moments")
        variances = self._expert_variances()
        F_inv = np.linalg.inv(self._F)
        cov = (F_inv * variances) @ F_inv.T
        return np.zeros(self.num_dims), (cov + cov.T) / 2

    def sample(self, num_draws: int, rng) -> np.ndarray:
        r"""Exact independent draws from a complete set: :math:`x = F^{-1} u` with the
        :math:`u_l` drawn independently from the normalized experts.

        Parameters
        ----------
        num_draws : int
        rng : numpy.random.Generator or seed

        Returns
        -------
        ndarray of shape (num_draws, num_dims), float64.

        Raises
        ------
        AnnealingError
            For an over-complete set (draw from it by MCMC instead).
        """
        self._require_complete("exact sampling")
        num_draws = check_positive_int(num_draws, "num_draws")
        u = self._sample_experts(num_draws, as_generator(rng))
        return np.linalg.solve(self._F, u.T).T

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(num_experts={self.num_experts}, num_dims={self.num_dims}, "
                f"dtype={self.dtype!r}, name={self.name!r})")


class LaplacePOE(ProductOfExperts):
    r"""A product of Laplace experts: :math:`\log p^*(x) = -\sum_{l=1}^L |f_l \cdot x|`
    (Sohl-Dickstein & Culpepper, 2012, eq. 37 with :math:`\lambda_l = 1`).

    For a complete set, :math:`Z = 2^M / |\det F|`.

    Parameters
    ----------
    filters : array of shape (num_experts, num_dims)
        The filters :math:`f_l` as rows; finite, spanning :math:`\mathbb R^M`
        (``num_experts >= num_dims``). Scale a row to change its expert's weight.
    dtype : {"float64", "float32"}, default "float64"
        Dtype of the stored filters and of the PyTensor graph. The NumPy methods compute in
        float64 from the stored (possibly float32-rounded) filters.
    name : str, default "laplace_poe"

    Attributes
    ----------
    filters : ndarray
        Read-only copy in ``dtype``.
    num_experts, num_dims : int
    is_complete : bool

    References
    ----------
    Sohl-Dickstein, J. & Culpepper, B. J. (2012). Hamiltonian annealed importance sampling
    for partition function estimation. arXiv:1205.1925.

    Hinton, G. E. (2002). Training products of experts by minimizing contrastive divergence.
    *Neural Computation*, 14(8), 1771-1800.

    Examples
    --------
    A complete set in 2 dimensions, :math:`\log Z = \log(2^2 / |\det F|)`:

    >>> import numpy as np
    >>> from pymc_anneal.energy import LaplacePOE
    >>> model = LaplacePOE([[2.0, 0.0], [1.0, 1.0]])
    >>> model
    LaplacePOE(num_experts=2, num_dims=2, dtype='float64', name='laplace_poe')
    >>> bool(np.isclose(model.exact_log_z(), np.log(4.0 / 2.0)))
    True
    >>> model.log_unnormalized_numpy(np.array([[1.0, -1.0]]))
    array([-2.])
    """

    _kind = "LaplacePOE"

    def __init__(self, filters, dtype: str = "float64", name: str = "laplace_poe"):
        self._set_filters(filters, dtype, name)

    def _energy_numpy(self, u):
        return np.abs(u).sum(axis=1)

    def _energy_graph(self, u):
        return pt.abs(u).sum(axis=-1)

    def _log_expert_integrals(self):
        return np.full(self.num_experts, _LOG_2)

    def _expert_variances(self):
        return np.full(self.num_experts, 2.0)

    def _sample_experts(self, num_draws, rng):
        return rng.laplace(0.0, 1.0, size=(num_draws, self.num_experts))


class StudentTPOE(ProductOfExperts):
    r"""A product of Student-t experts:
    :math:`\log p^*(x) = -\sum_{l=1}^L \alpha_l \log\big(1 + (f_l \cdot x)^2\big)`
    (Sohl-Dickstein & Culpepper, 2012, eq. 38, with :math:`\lambda_l = \alpha_l`; Welling
    et al., 2003).

    The expert :math:`(1 + u^2)^{-\alpha}` is, up to normalization, the density of
    :math:`t_\nu / \sqrt\nu` with :math:`\nu = 2\alpha - 1` degrees of freedom; its integral
    is :math:`\sqrt\pi\,\Gamma(\alpha - \frac12) / \Gamma(\alpha)`, finite iff
    :math:`\alpha > 1/2`; its mean is finite iff :math:`\alpha > 1` and its variance,
    :math:`1 / (2\alpha - 3)`, iff :math:`\alpha > 3/2`.

    Parameters
    ----------
    filters : array of shape (num_experts, num_dims)
        The filters :math:`f_l` as rows; finite, spanning :math:`\mathbb R^M`
        (``num_experts >= num_dims``).
    alpha : float or array of shape (num_experts,)
        Expert exponents :math:`\alpha_l > 0` (a scalar is broadcast). A complete set is
        normalizable iff every :math:`\alpha_l > 1/2`; for an over-complete set
        :math:`2\sum_l \alpha_l > M` is required (necessary, not sufficient: see the module
        docstring).
    dtype : {"float64", "float32"}, default "float64"
        Dtype of the stored parameters and of the PyTensor graph. The NumPy methods compute
        in float64 from the stored (possibly float32-rounded) parameters.
    name : str, default "student_t_poe"

    Attributes
    ----------
    filters : ndarray
        Read-only copy in ``dtype``.
    alpha : ndarray of shape (num_experts,)
        Read-only copy in ``dtype``.
    num_experts, num_dims : int
    is_complete : bool

    References
    ----------
    Sohl-Dickstein, J. & Culpepper, B. J. (2012). Hamiltonian annealed importance sampling
    for partition function estimation. arXiv:1205.1925.

    Hinton, G. E. (2002). Training products of experts by minimizing contrastive divergence.
    *Neural Computation*, 14(8), 1771-1800.

    Welling, M., Hinton, G. E. & Osindero, S. (2003). Learning sparse topographic
    representations with products of Student-t distributions. *NIPS 15*.

    Examples
    --------
    With :math:`\alpha = 1` each expert is a Cauchy density times :math:`\pi`, so for the
    identity filters in 2 dimensions :math:`\log Z = 2 \log \pi`:

    >>> import numpy as np
    >>> from pymc_anneal.energy import StudentTPOE
    >>> model = StudentTPOE(np.eye(2), alpha=1.0)
    >>> bool(np.isclose(model.exact_log_z(), 2 * np.log(np.pi)))
    True
    >>> model.sample(3, rng=0).shape
    (3, 2)
    """

    _kind = "StudentTPOE"

    def __init__(self, filters, alpha, dtype: str = "float64", name: str = "student_t_poe"):
        self._set_filters(filters, dtype, name)
        alpha = self._check_alpha(alpha)
        self.alpha = readonly(cast_finite(alpha, self.dtype, "alpha"))
        self._alpha = readonly(self.alpha.astype(np.float64))
        if self.dtype != "float64":
            self._check_alpha(self._alpha, f" (alpha rounded to {self.dtype})")

    def _base_alpha(self):
        if self.is_complete:
            return self._alpha
        alpha0 = float(min(self._base_alpha_cap, self._alpha.min()))
        if alpha0 <= 0.5:
            bad = np.flatnonzero(self._alpha <= 0.5)
            raise AnnealingError(
                f"StudentTPOE {self.name!r} has no default base: its base='student_t' is a "
                f"complete product of Student-t experts with the exponent alpha0 = min(1.5, "
                f"min(alpha)) = {alpha0:g}, normalizable only for alpha0 > 1/2, and this "
                f"over-complete model ({self.num_experts} experts for {self.num_dims} "
                f"dimension{'s' if self.num_dims > 1 else ''}) has alpha "
                f"{self._alpha[bad][:5].tolist()} at experts {bad[:5].tolist()}. Pass "
                "base='gaussian' (or 'isotropic', 'diagonal' or 'full' with data= or "
                "moments=), whose weights may have infinite variance "
                "against these heavy tails (ais warns), or give every expert alpha > 1/2.")
        return alpha0

    def _gaussian_base_caveat(self):
        return (
            "a Gaussian base against the polynomial tails of Student-t experts gives the "
            "importance weights infinite variance: log Z tends to come out too low, by more "
            "than its standard error, and the weights need not show it (measured on a 36-d "
            "complete Student-t POE fitted to image patches, isotropic Gaussian base, HAIS "
            "with 100,000 temperatures: 0.35 nat low, 4.4 standard errors, with a healthy "
            "weight ESS). Use the default base='student_t', which is as heavy-tailed as "
            "the model."
        )

    def _check_alpha(self, alpha, rounded: str = "") -> np.ndarray:
        L, M = self.num_experts, self.num_dims
        alpha = check_finite_array("alpha", alpha).copy()
        if alpha.ndim == 0:
            alpha = np.full(L, float(alpha))
        if alpha.shape != (L,):
            raise AnnealingError(
                f"alpha of a StudentTPOE must be a scalar or have shape ({L},) (one per expert, "
                f"i.e. per row of filters of shape {(L, M)}), got shape {alpha.shape}."
            )
        bad = np.flatnonzero(alpha <= 0)
        if bad.size:
            raise AnnealingError(
                f"alpha must be > 0 (expert exponents){rounded}; got {alpha[bad][:5].tolist()} at "
                f"experts {bad[:5].tolist()}."
            )
        if self.is_complete:
            bad = np.flatnonzero(alpha <= 0.5)
            if bad.size:
                raise AnnealingError(
                    f"a complete StudentTPOE is normalizable only if every alpha > 1/2 (the "
                    f"integral of (1 + u^2)^(-alpha) diverges for alpha <= 1/2), so this one is "
                    f"not normalizable{rounded}: got alpha {alpha[bad][:5].tolist()} at experts "
                    f"{bad[:5].tolist()}. Use alpha > 0.5."
                )
        elif 2.0 * alpha.sum() <= M:
            raise AnnealingError(
                f"this over-complete StudentTPOE is not normalizable{rounded}: its density decays "
                f"like |x|^(-2 sum(alpha)) along generic directions, which needs 2 sum(alpha) > "
                f"num_dims = {M}; got sum(alpha) = {alpha.sum():g}. Increase alpha."
            )
        return alpha

    def _energy_numpy(self, u):
        return np.log1p(u * u) @ self._alpha

    def _energy_graph(self, u):
        alpha = pt.as_tensor_variable(self.alpha)
        return (alpha * pt.log1p(u * u)).sum(axis=-1)

    def _log_expert_integrals(self):
        a = self._alpha
        return _HALF_LOG_PI + gammaln(a - 0.5) - gammaln(a)

    def _expert_variances(self):
        bad = np.flatnonzero(self._alpha <= 1.5)
        if bad.size:
            raise AnnealingError(
                f"StudentTPOE {self.name!r} has infinite variance: the expert (1 + u^2)^(-alpha) "
                f"has a finite variance only for alpha > 3/2, got alpha "
                f"{self._alpha[bad][:5].tolist()} at experts {bad[:5].tolist()}. Its draws "
                "(sample) exist, but its covariance does not."
            )
        return 1.0 / (2.0 * self._alpha - 3.0)

    def _sample_experts(self, num_draws, rng):
        nu = 2.0 * self._alpha - 1.0
        return rng.standard_t(nu, size=(num_draws, self.num_experts)) / np.sqrt(nu)
