import math

import numpy as np
import pytest
import torch

from featurelens.learning.losses import SupConLoss, multiclass_bce


def supcon_loop(features, labels, tau):
    """Khosla et al. 2020, eq. 2, by a direct double loop; returns per-anchor terms (None: skipped)."""
    z = [f / np.linalg.norm(f) for f in features]
    n = len(z)
    terms = []
    for i in range(n):
        P = [p for p in range(n) if p != i and labels[p] == labels[i]]
        if not P:
            terms.append(None)
            continue
        denom = sum(math.exp(z[i] @ z[a] / tau) for a in range(n) if a != i)
        terms.append(-sum(math.log(math.exp(z[i] @ z[p] / tau) / denom) for p in P) / len(P))
    return terms


@pytest.mark.parametrize("tau", [0.1, 0.5, 1.0])
def test_supcon_equals_double_loop(tau):
    rng = np.random.default_rng(0)
    f = rng.standard_normal((11, 5)) * rng.uniform(0.5, 3, (11, 1))
    labels = np.array([0, 1, 0, 2, 1, 1, 3, 0, 2, 2, 4])  # labels 3 and 4 have no positive
    terms = supcon_loop(f, labels, tau)
    kept = [t for t in terms if t is not None]
    x = torch.as_tensor(f)
    got_sum = SupConLoss(tau, reduction="sum")(x, labels)
    got_mean = SupConLoss(tau)(x, torch.as_tensor(labels))
    got_none = SupConLoss(tau, reduction="none")(x, labels)
    assert float(got_sum) == pytest.approx(sum(kept), abs=1e-10, rel=1e-12)
    assert float(got_mean) == pytest.approx(sum(kept) / len(kept), abs=1e-10, rel=1e-12)
    np.testing.assert_allclose(got_none.numpy(), [0.0 if t is None else t for t in terms], atol=1e-10, rtol=1e-12)


def test_supcon_scale_invariant_gradients_and_no_positive_batch():
    rng = np.random.default_rng(1)
    f = torch.tensor(rng.standard_normal((8, 4)), requires_grad=True)
    y = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    loss = SupConLoss(0.2)(f, y)
    loss.backward()
    assert torch.isfinite(f.grad).all() and f.grad.abs().sum() > 0
    assert float(SupConLoss(0.2)(3.0 * f.detach(), y)) == pytest.approx(float(loss.detach()), rel=1e-12)
    # Perfectly clustered features give a lower loss than random ones.
    centers = torch.eye(4, dtype=torch.float64)
    assert float(SupConLoss(0.2)(centers[y] + 1e-3 * f.detach(), y)) < float(loss.detach())
    g = torch.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    zero = SupConLoss()(g, np.arange(4))
    zero.backward()
    assert zero.item() == 0.0 and (g.grad == 0).all()


def test_supcon_errors():
    f = torch.randn(4, 3)
    with pytest.raises(ValueError, match="temperature must be a finite number > 0.0; got 0"):
        SupConLoss(0)
    with pytest.raises(ValueError, match="reduction must be one of 'mean', 'sum', 'none'"):
        SupConLoss(reduction="avg")
    with pytest.raises(ValueError, match=r"features must have shape \(n, d\); got shape \(4,\)"):
        SupConLoss()(torch.randn(4), [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"labels must have shape \(4,\), one label per row; got shape \(3,\)"):
        SupConLoss()(f, [0, 1, 0])
    with pytest.raises(TypeError, match="labels must hold integer class labels; got dtype float64"):
        SupConLoss()(f, np.array([0.0, 1, 0, 1]))
    with pytest.raises(TypeError, match="features must be a torch.Tensor"):
        SupConLoss()(np.zeros((4, 3)), [0, 1, 0, 1])
    bad = f.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="features contains NaN"):
        SupConLoss()(bad, [0, 1, 0, 1])
    zero_row = f.clone()
    zero_row[2] = 0
    with pytest.raises(ValueError, match="1 all-zero row"):
        SupConLoss()(zero_row, [0, 1, 0, 1])


def test_multiclass_bce_equals_bce_with_logits_on_one_hot():
    rng = np.random.default_rng(2)
    z = torch.tensor(rng.standard_normal((9, 4)) * 5, requires_grad=True)
    y = rng.integers(0, 4, 9)
    onehot = torch.nn.functional.one_hot(torch.as_tensor(y), 4).double()
    ref_sum = torch.nn.BCEWithLogitsLoss(reduction="sum")(z, onehot)
    assert multiclass_bce(z, y, reduction="sum").item() == pytest.approx(ref_sum.item(), rel=1e-12)
    assert multiclass_bce(z, y).item() == pytest.approx(ref_sum.item() / 9, rel=1e-12)
    # torch's default "mean" averages over n * C entries: ours is C times it.
    ref_mean = torch.nn.BCEWithLogitsLoss()(z, onehot)
    assert multiclass_bce(z, torch.as_tensor(y)).item() == pytest.approx(4 * ref_mean.item(), rel=1e-12)
    # Direct formula per sample.
    p = 1 / (1 + np.exp(-z.detach().numpy()))
    direct = -(onehot.numpy() * np.log(p) + (1 - onehot.numpy()) * np.log(1 - p)).sum(1)
    np.testing.assert_allclose(multiclass_bce(z, y, reduction="none").detach().numpy(), direct, rtol=1e-10)
    multiclass_bce(z, y).backward()
    assert torch.isfinite(z.grad).all()


def test_multiclass_bce_errors():
    z = torch.randn(5, 3)
    with pytest.raises(ValueError, match=r"y holds labels in \[0, 3\]; expected 0 <= label < 3"):
        multiclass_bce(z, [0, 1, 2, 3, 0])
    with pytest.raises(ValueError, match="logits must have C >= 2 class columns"):
        multiclass_bce(torch.randn(5, 1), [0, 0, 0, 0, 0])
    with pytest.raises(ValueError, match=r"y must have shape \(5,\)"):
        multiclass_bce(z, [0, 1])
    with pytest.raises(ValueError, match="reduction must be one of"):
        multiclass_bce(z, [0, 1, 2, 0, 1], reduction="batchmean")
    with pytest.raises(TypeError, match="y must hold integer class labels"):
        multiclass_bce(z, torch.tensor([0.0, 1, 2, 0, 1]))
    bad = z.clone()
    bad[1, 1] = float("inf")
    with pytest.raises(ValueError, match="logits contains NaN or inf"):
        multiclass_bce(bad, [0, 1, 2, 0, 1])
