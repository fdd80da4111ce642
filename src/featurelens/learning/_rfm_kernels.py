"""The kernel algebra of the Recursive Feature Machines (:mod:`featurelens.learning.rfm`): the
Mahalanobis kernel rows and Gram matrix (Laplace or Gaussian, ``||x - z||_M = sqrt((x - z)^T M (x - z))``),
the ridge solve ``alpha = (K + reg I)^{-1} Y``, the predictions ``K_M(x, X) alpha``, the input
gradients of the predictor chunk by chunk and their AGOP ``(1/n) sum_i J(x_i)^T J(x_i)``, and the
next metric ``M <- normalize(G^power)`` (Radhakrishnan et al., Science 2024, arXiv 2212.13881).

:class:`RFMKernels` is a base class of the estimators: its methods read their settings
(``kernel``, ``bandwidth``, ``reg``, ``power``, ``normalize``, ``batch_size``, ...).
"""

from __future__ import annotations

import math

from featurelens._optional import torch

from .._batching import chunks, rows_for_bytes

__all__ = ["RFMKernels", "EPS_DIST"]

#: Distances below this count as zero: the Laplace kernel is not differentiable there, so such
#: pairs are left out of the gradient (the sample itself always is, by index).
EPS_DIST = 1e-10


class RFMKernels:
    """The kernel, solve and AGOP steps of an RFM estimator (mixed into its base class)."""

    def _rows(self, n_cols: int, width: int) -> int:
        """Rows per chunk: ``batch_size`` if given, else the chunk budget of
        :func:`featurelens._batching.rows_for_bytes` for ``n_cols * width`` numbers per row, counted
        as float64 (a float32 fit thus uses half the budget)."""
        if self.batch_size is not None:
            return int(self.batch_size)
        return rows_for_bytes(8 * n_cols * width)

    @staticmethod
    def _metric_parts(X: torch.Tensor, M: torch.Tensor):
        """``X M`` and the squared M-norms of the rows of X (M is a (d,) vector when diagonal).

        Refuses rows whose squared M-norms overflow (or come within a factor 4 of overflowing,
        since ``||x - z||_M^2`` can reach ``4 max ||x||_M^2``) the dtype: the kernel would be NaN,
        and the fit would end in a misleading "singular system" or a NaN prediction."""
        XM = X * M if M.ndim == 1 else X @ M
        sq = (X * XM).sum(1)
        top = float(sq.max()) if sq.numel() else 0.0
        if not (math.isfinite(top) and 4.0 * top < torch.finfo(X.dtype).max and bool(torch.isfinite(XM).all())):
            big = float(X.abs().max()) if X.numel() else 0.0
            norms = f"{top:.3g}" if math.isfinite(top) else "more than the dtype holds"
            raise ValueError(
                f"the kernel's squared distances overflow {str(X.dtype).replace('torch.', '')}: the inputs, centred on "
                f"the training mean, reach {big:.3g} in magnitude (squared M-norms up to {norms}; the limit is "
                f"{torch.finfo(X.dtype).max / 4:.3g}), so K_M would be NaN; rescale X first (e.g. sklearn's "
                "StandardScaler)" + (", or pass float64 data" if X.dtype == torch.float32 else "")
            )
        return XM, sq

    def _kernel_rows(self, Xb, XbM, sqb, Z, sqz, out=None) -> torch.Tensor:
        """``K_M(Xb, Z)`` with ``||x - z||_M^2 = x^T M x + z^T M z - 2 x^T M z`` (one matmul), the
        elementwise steps done in place (these n x m passes, not the matmul, dominate)."""
        K = torch.addmm(sqz[None, :], XbM, Z.T, beta=1.0, alpha=-2.0, out=out)
        K.add_(sqb[:, None]).clamp_(min=0.0)
        L = float(self.bandwidth)
        if self.kernel == "laplace":
            K.sqrt_().mul_(-1.0 / L)
        else:
            K.mul_(-1.0 / (2.0 * L * L))
        return K.exp_()

    def _gram(self, X: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
        """``K_M(X, X)`` built chunk by chunk into one n x n matrix (the solve needs all of it)."""
        n = X.shape[0]
        XM, sq = self._metric_parts(X, M)
        K = torch.empty(n, n, dtype=X.dtype, device=X.device)
        for rows in chunks(n, self._rows(n, 1)):
            self._kernel_rows(X[rows], XM[rows], sq[rows], X, sq, out=K[rows])
        # Exactly 1 on the diagonal: the expansion of ||x - x||^2 leaves rounding residue.
        K.diagonal().fill_(1.0)
        return K

    def _solve(self, K: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        """``(K + reg I)^{-1} Y`` by an in-place Cholesky factorisation; LU when K + reg I is not
        numerically positive definite. ``reg`` is never changed behind the user's back: a singular
        system is an error."""
        A = K.clone()
        A.diagonal().add_(float(self.reg))
        info = torch.empty((), dtype=torch.int32, device=A.device)
        torch.linalg.cholesky_ex(A, out=(A, info))
        if int(info) == 0:
            # Two triangular solves: torch.cholesky_solve is ~15x slower than this on CPU for one
            # right-hand side (measured, torch 2.13, n = 3200).
            Z = torch.linalg.solve_triangular(A, Y, upper=False)
            return torch.linalg.solve_triangular(A.mT, Z, upper=True)
        A.copy_(K).diagonal().add_(float(self.reg))
        sol, info = torch.linalg.solve_ex(A, Y)
        if int(info) != 0 or not bool(torch.isfinite(sol).all()):
            raise ValueError(
                f"the kernel system K + reg*I is singular with reg={self.reg!r}; "
                "expected a larger reg (e.g. 1e-3) or fewer duplicate rows in X"
            )
        return sol

    def _predict_raw(self, X: torch.Tensor, Z: torch.Tensor, M: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
        """``f(X) = K_M(X, Z) alpha`` chunk by chunk, shape (n, outputs)."""
        ZM, sqz = self._metric_parts(Z, M)
        XM, sqx = self._metric_parts(X, M)
        out = torch.empty(X.shape[0], alpha.shape[1], dtype=X.dtype, device=X.device)
        for rows in chunks(X.shape[0], self._rows(Z.shape[0], 1)):
            out[rows] = self._kernel_rows(X[rows], XM[rows], sqx[rows], Z, sqz) @ alpha
        return out

    def _grad_chunks(self, X, Z, M, alpha, self_index=None, K=None):
        """Yield ``(rows, H)`` with ``H`` (rows, outputs, d) such that ``grad f_c(x_i) = s M h_ic``.

        Laplace: ``h_ic = sum_j alpha_jc K_ij / ||x_i - z_j||_M (z_j - x_i)``, ``s = 1/L``;
        Gaussian: ``h_ic = sum_j alpha_jc K_ij (z_j - x_i)``, ``s = 1/L^2``. Written as
        ``Q (alpha_c * Z) - (Q alpha_c) x_i`` it is one matmul per chunk, no loop over samples.
        ``self_index[i]`` is the column of x_i in Z (its own term is dropped: the Laplace kernel has
        no gradient at distance 0, and the Gaussian term is 0 there anyway). ``K``: the training
        Gram matrix K_M(Z, Z) when the x_i are training rows; its rows are reused (for Laplace,
        ``K / dist = -K / (L log K)``) instead of recomputing distances.
        """
        n_z, d = Z.shape
        c = alpha.shape[1]
        L = float(self.bandwidth)
        if K is None:
            ZM, sqz = self._metric_parts(Z, M)
            XM, sqx = self._metric_parts(X, M)
        AZ = (alpha[:, :, None] * Z[:, None, :]).reshape(n_z, c * d)
        for rows in chunks(X.shape[0], self._rows(n_z, 2)):
            if self.kernel == "laplace":
                if K is None:
                    Q = self._kernel_rows(X[rows], XM[rows], sqx[rows], Z, sqz)
                else:
                    Q = K[self_index[rows]]
                logK = torch.log(Q)  # = -||x - z||_M / L
                Q.div_(logK).mul_(-1.0 / L)  # K / ||x - z||_M
                Q.masked_fill_(logK >= -EPS_DIST / L, 0.0)  # distance < eps: no gradient
                del logK
            else:
                Q = K[self_index[rows]] if K is not None else self._kernel_rows(X[rows], XM[rows], sqx[rows], Z, sqz)
            if self_index is not None:
                r = torch.arange(rows.stop - rows.start, device=X.device)
                Q[r, self_index[rows]] = 0.0
            H = (Q @ AZ).reshape(-1, c, d) - (Q @ alpha)[:, :, None] * X[rows][:, None, :]
            yield rows, H

    def _scale(self) -> float:
        L = float(self.bandwidth)
        return 1.0 / L if self.kernel == "laplace" else 1.0 / (L * L)

    def _gradients(self, X, Z, M, alpha, self_index=None) -> torch.Tensor:
        """Per-sample Jacobians of the predictor, shape (n, outputs, d)."""
        out = torch.empty(X.shape[0], alpha.shape[1], X.shape[1], dtype=X.dtype, device=X.device)
        s = self._scale()
        for rows, H in self._grad_chunks(X, Z, M, alpha, self_index):
            out[rows] = s * (H * M if M.ndim == 1 else H @ M)  # M symmetric: (M h)^T = h^T M
        return out

    def _agop(self, X, Z, M, alpha, self_index, K=None) -> torch.Tensor:
        """``G = (1/n) sum_i J_i^T J_i`` (minus ``sum_c gbar_c gbar_c^T`` when centering), in
        float64. Because ``J_i = s H_i M``, ``G = s^2 M (1/n sum_i H_i^T H_i) M``: the d x d
        products with M are done once, not per sample."""
        n, d = X.shape
        c = alpha.shape[1]
        dev = X.device
        acc = torch.zeros(d if self.diag else (d, d), dtype=torch.float64, device=dev)
        hsum = torch.zeros(c, d, dtype=torch.float64, device=dev)
        for _, H in self._grad_chunks(X, Z, M, alpha, self_index, K):
            Hf = H.reshape(-1, d).to(torch.float64)
            if self.diag:
                acc += (Hf * Hf).sum(0)
            else:
                acc += Hf.T @ Hf
            hsum += H.to(torch.float64).sum(0)
        acc /= n
        if self.centering:
            mean = hsum / n  # per-output mean gradient (before the M factor)
            acc -= (mean * mean).sum(0) if self.diag else mean.T @ mean
        M64 = M.to(torch.float64)
        G = M64 * acc * M64 if self.diag else M64 @ acc @ M64
        return G * self._scale() ** 2

    def _next_M(self, G: torch.Tensor) -> torch.Tensor | None:
        """``normalize(G^power)``; None when G is zero (a constant predictor has no features)."""
        if self.diag:
            G = G.clamp(min=0.0)
            P = G if float(self.power) == 1.0 else torch.sqrt(G)
        else:
            G = 0.5 * (G + G.T)
            if float(self.power) == 1.0:
                P = G
            else:
                w, U = torch.linalg.eigh(G)
                P = (U * w.clamp(min=0.0).sqrt()) @ U.T
                P = 0.5 * (P + P.T)
        if self.normalize == "max":
            scale = float(P.abs().max())
            if scale <= 0.0 or not math.isfinite(scale):
                return None
            P = P / scale
        elif self.normalize == "trace":
            tr = float(P.sum() if self.diag else P.diagonal().sum())
            if tr <= 0.0 or not math.isfinite(tr):
                return None
            P = P * (P.shape[0] / tr)
        elif float(P.abs().max()) <= 0.0:
            return None
        return P

    # ------------------------------------------------------------------ fit
