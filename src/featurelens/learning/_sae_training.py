"""The training loop of :class:`featurelens.learning.sae.SparseAutoencoder`: initialisation,
minibatch Adam, the BatchTopK inference threshold, the AuxK auxiliary loss and dead-latent
resampling. The formulas and citations are in the docstring of :mod:`featurelens.learning.sae`;
this module holds the mechanics so that the estimator's module stays readable.

It never imports ``sae`` (``sae`` imports it): the estimator is passed in and its ``_scores`` /
``_activate`` / ``_magnitude`` / ``_codes`` give the forward pass.
"""

from __future__ import annotations

import math

from featurelens._optional import torch

from .._random import torch_generator
from .._validation import progress_bar

#: Norms below this are clamped in the cosine/blend scores: a zero input has no direction, its score
#: is the bias alone (w . 0 = 0) rather than NaN.
NORM_EPS = 1e-8
#: Rows scored to pick inputs for dead-latent resampling and to start the geometric median.
SAMPLE_ROWS = 4096
#: Gao et al. (2025) call a latent dead for AuxK when it has not fired on the last 10M tokens; the
#: default ``dead_steps`` is that many rows or one epoch, whichever is shorter.
_DEAD_TOKENS = 10_000_000

HISTORY_KEYS = ("loss", "reconstruction", "sparsity", "l1", "dead", "resampled", "blend", "aux", "threshold")


def geometric_median(X: torch.Tensor, iters: int = 30) -> torch.Tensor:
    """Weiszfeld's iteration, started at the mean; robust to the many zero rows of sparse data."""
    m = X.mean(0)
    for _ in range(iters):
        w = 1.0 / (X - m).norm(dim=1).clamp_min(1e-8)
        m_new = (w[:, None] * X).sum(0) / w.sum()
        if float((m_new - m).norm()) <= 1e-7 * (1.0 + float(m.norm())):
            return m_new
        m = m_new
    return m


def batch_topk(s: torch.Tensor, k: int) -> torch.Tensor:
    """BatchTopK (Bussmann, Leask, Nanda 2024, arXiv 2412.06410): of the post-ReLU scores of the
    whole batch ``s`` (B, m), keep the ``k * B`` largest (ties broken by torch.topk), zero the rest.
    Rows get a variable number of active latents, ``k`` on average (fewer where fewer are > 0)."""
    flat = torch.relu(s).reshape(-1)
    top = torch.topk(flat, min(int(k) * s.shape[0], flat.numel()))
    return torch.zeros_like(flat).scatter(0, top.indices, top.values).view_as(s)


def default_dead_steps(n: int, batch_size: int) -> int:
    """Steps without firing after which AuxK calls a latent dead: one epoch (ceil(n / batch_size)
    steps) or Gao et al.'s 10M rows (ceil(1e7 / batch_size) steps), whichever is shorter."""
    return max(1, min(math.ceil(n / batch_size), math.ceil(_DEAD_TOKENS / batch_size)))


def aux_loss(s: torch.Tensor, x: torch.Tensor, xhat: torch.Tensor, W_dec: torch.Tensor, dead: torch.Tensor,
             aux_k: int, magnitude=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Gao et al.'s (2025) AuxK loss on one batch: ``(L_aux, var_x)``.

    ``e = x - xhat`` (detached), ``z`` = ReLU of the ``aux_k`` largest scores among the ``dead``
    latents of each row (all dead ones when fewer), ``ehat = W_dec z``; ``L_aux = sum ||e - ehat||^2
    / sum ||e - mean_batch(e)||^2`` (their code's ``normalized_mse``); ``var_x = mean ||x -
    mean_batch(x)||^2`` (detached) converts it to the units of the unnormalised reconstruction
    term. Both are 0 for a batch of one row (no variance to normalise by). ``magnitude`` (None: the
    identity) maps the selected dead scores to the codes decoded, as the autoencoder's ``magnitude``.
    """
    e = (x - xhat).detach()
    kk = min(int(aux_k), int(dead.sum()))
    top = torch.topk(s.masked_fill(~dead, -math.inf), kk, dim=1)
    z = torch.zeros_like(s).scatter(1, top.indices, torch.relu(top.values))
    if magnitude is not None:
        z = magnitude(z)
    ehat = z @ W_dec.T
    denom = (e - e.mean(0)).pow(2).sum()
    if not bool(denom > 0):
        return s.new_zeros(()), s.new_zeros(())
    var_x = (x - x.mean(0)).pow(2).sum(1).mean().detach()
    return (e - ehat).pow(2).sum() / denom, var_x


def train(sae, X: torch.Tensor) -> dict:
    """Fit ``sae`` on the float32 tensor X (n, d) already on its device; sets its state and
    returns the history (per-epoch lists)."""
    dev = X.device
    n, d = X.shape
    m = int(sae.n_latents)
    gen = torch_generator(sae.seed)  # CPU generator: the same draws on every device

    sample = X[torch.randperm(n, generator=gen)[:SAMPLE_ROWS].to(dev)] if n > SAMPLE_ROWS else X
    b_pre = geometric_median(sample) if sae.pre_bias else torch.zeros(d, device=dev)
    W_dec = torch.randn(d, m, generator=gen).to(dev)
    # Atoms start at centred data points (those with a direction), Gaussian directions where
    # there are too few: on sparse data many points lie near a single true atom.
    centred = sample - b_pre
    cand = centred[centred.norm(dim=1) > NORM_EPS]
    take = min(m, cand.shape[0])
    if take:
        W_dec[:, :take] = cand[torch.randperm(cand.shape[0], generator=gen)[:take].to(dev)].T
    W_dec /= W_dec.norm(dim=0, keepdim=True).clamp_min(NORM_EPS)
    W_enc = W_dec.T.clone()
    b_enc = torch.zeros(m, device=dev)
    theta = None
    if sae.score == "blend":
        theta = torch.zeros((), device=dev)
    elif sae.score == "blend_per_feature":
        theta = torch.zeros(m, device=dev)
    # The tied start overshoots: with unit atoms every active latent adds its full projection,
    # so the first reconstructions are many times too large (about 40x for TopK on MiniLM) and
    # a small learning rate spends epochs shrinking them. Every score is linear in W_enc and
    # ReLU / TopK / BatchTopK keep their pattern under a positive scale (b_enc = 0), so the
    # reconstruction of c W_enc is c times that of W_enc (the "norm" and "inner" magnitudes are
    # linear in W_enc too): take the least-squares c on the sample.
    with torch.no_grad():
        recon = sae._codes(sample, W_enc, b_enc, b_pre, theta, training=True)[1] @ W_dec.T
        denom = float((recon * recon).sum())
        if denom > 0:
            c = float(((sample - b_pre) * recon).sum()) / denom
            if math.isfinite(c) and c > 0:
                W_enc *= c
    params = [W_enc, b_enc, W_dec] + ([b_pre] if sae.pre_bias else []) + ([] if theta is None else [theta])
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.Adam(params, lr=float(sae.lr))
    l1 = float(sae.l1) if sae.sparsity == "l1" else 0.0
    bs = int(sae.batch_size)
    batchtopk = sae.sparsity == "batchtopk"
    aux_k = None if sae.aux_k is None else int(sae.aux_k)
    aux_coef = float(sae.aux_coef)
    dead_steps = default_dead_steps(n, bs) if sae.dead_steps is None else int(sae.dead_steps)
    since = torch.zeros(m, dtype=torch.long, device=dev)  # steps since each latent last fired
    all_minima = []
    history = {key: [] for key in HISTORY_KEYS}
    epochs = int(sae.epochs)
    bar = progress_bar(epochs, sae.progress, "sparse autoencoder")
    try:
        for epoch in range(epochs):
            perm = torch.randperm(n, generator=gen).to(dev)
            fired = torch.zeros(m, dtype=torch.bool, device=dev)
            sums = torch.zeros(5, dtype=torch.float64, device=dev)
            minima = []  # BatchTopK: the smallest kept activation of every batch of this epoch
            for s0 in range(0, n, bs):
                x = X[perm[s0 : s0 + bs]]
                s = sae._scores(x, W_enc, b_enc, b_pre, theta)
                sel = sae._activate(s, training=True)  # the selection
                f = sae._magnitude(sel, x, W_enc, b_enc, b_pre)  # the codes decoded ("score": f is sel)
                xhat = f @ W_dec.T + b_pre
                recon = (x - xhat).pow(2).sum(1).mean()
                l1_term = f.sum(1).mean()
                loss = recon + l1 * l1_term
                aux = loss.new_zeros(())
                if aux_k is not None:
                    dead = since >= dead_steps
                    if bool(dead.any()):
                        aux, var_x = aux_loss(s, x, xhat, W_dec, dead, aux_k,
                                              lambda z: sae._magnitude(z, x, W_enc, b_enc, b_pre))
                        loss = loss + aux_coef * var_x * aux
                opt.zero_grad(set_to_none=True)
                loss.backward()
                with torch.no_grad():
                    g = W_dec.grad
                    g -= (g * W_dec).sum(0, keepdim=True) * W_dec
                opt.step()
                with torch.no_grad():
                    W_dec /= W_dec.norm(dim=0, keepdim=True).clamp_min(NORM_EPS)
                    fd = f.detach()
                    active = fd > 0
                    now = active.any(0)
                    fired |= now
                    since = torch.where(now, torch.zeros_like(since), since + 1)
                    if batchtopk and bool(now.any()):
                        gd = sel.detach()  # theta thresholds the selection score, whatever the magnitude
                        if bool((gd > 0).any()):
                            minima.append(gd[gd > 0].min())
                    rows = x.shape[0]
                    sums += torch.stack([loss.detach() * rows, recon.detach() * rows, active.sum().to(loss.dtype),
                                         l1_term.detach() * rows, aux.detach() * rows]).double()
            loss_sum, recon_sum, l0_sum, l1_sum, aux_sum = (float(v) / n for v in sums)
            n_dead = int((~fired).sum())
            resampled = 0
            if sae.resample_dead and n_dead and epoch < epochs - 1:
                revived = _resample(sae, X, ~fired, W_enc, b_enc, W_dec, b_pre, theta, opt, gen)
                since[revived] = 0  # a resampled latent starts afresh
                resampled = int(revived.numel())
            history["loss"].append(loss_sum)
            history["reconstruction"].append(recon_sum)
            history["sparsity"].append(l0_sum)
            history["l1"].append(l1_sum)
            history["dead"].append(n_dead)
            history["resampled"].append(resampled)
            a = sae._alpha(theta)
            history["blend"].append(float(a.detach().mean()) if a is not None else (1.0 if sae.score == "inner" else 0.0))
            history["aux"].append(aux_sum)
            history["threshold"].append(float(torch.stack(minima).mean()) if minima else math.nan)
            all_minima += minima
            if bar is not None:
                bar.set_postfix(loss=f"{loss_sum:.4g}", dead=n_dead)
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    threshold = None
    if batchtopk:
        # theta: the mean smallest kept activation over the batches of the last epoch (those of the
        # final encoder); over all of training if none fired then; 0 (plain ReLU) if none ever did.
        last = history["threshold"][-1]
        threshold = last if math.isfinite(last) else (float(torch.stack(all_minima).mean()) if all_minima else 0.0)
    sae._set_state(W_enc, b_enc, W_dec, b_pre, theta, threshold)
    return history


def _resample(sae, X, dead, W_enc, b_enc, W_dec, b_pre, theta, opt, gen) -> torch.Tensor:
    """Bricken et al. (2023) resampling of the ``dead`` latents (module docstring of ``sae``);
    returns the indices of the latents resampled."""
    n = X.shape[0]
    dev = X.device
    none = torch.zeros(0, dtype=torch.long, device=dev)
    with torch.no_grad():
        idx = torch.randperm(n, generator=gen)[:SAMPLE_ROWS].to(dev)
        x = X[idx]
        f = sae._codes(x, W_enc, b_enc, b_pre, theta, training=True)[1]
        err = (x - (f @ W_dec.T + b_pre)).pow(2).sum(1)
        weights = err.pow(2).double().cpu()
        if not bool(weights.sum() > 0):
            return none  # nothing is badly reconstructed: nothing to point dead latents at
        dead_idx = dead.nonzero().flatten()
        pick = torch.multinomial(weights, dead_idx.numel(), replacement=True, generator=gen).to(dev)
        v = x[pick] - b_pre
        norms = v.norm(dim=1, keepdim=True)
        ok = norms.flatten() > NORM_EPS
        dead_idx, v = dead_idx[ok], v[ok] / norms[ok]
        if dead_idx.numel() == 0:
            return none
        live = ~dead
        scale = float(W_enc[live].norm(dim=1).mean()) if bool(live.any()) else 1.0
        W_dec[:, dead_idx] = v.T
        W_enc[dead_idx] = 0.2 * scale * v
        b_enc[dead_idx] = 0.0
        for p, where in ((W_dec, (slice(None), dead_idx)), (W_enc, (dead_idx,)), (b_enc, (dead_idx,))):
            state = opt.state.get(p, {})
            for key in ("exp_avg", "exp_avg_sq"):
                if key in state:
                    state[key][where] = 0.0
    return dead_idx
