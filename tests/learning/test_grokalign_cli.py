"""`featurelens diagnose --grokalign WEIGHT` and ``run_grokking(grokalign=...)``: the penalised
step is AdamW on MSE + lambda * mean ||J||_F (checked against a hand-written step with brute-force
Jacobians), a zero weight trains exactly like no penalty, the alignment recorded matches a
brute-force centroid cosine, the default run is unchanged, and bad weights are refused."""

import json

import numpy as np
import pytest
import torch

from featurelens.cli import main
from featurelens.learning._grokking import modular_addition, quadratic_network, run_grokking

TINY = dict(p=5, width=8, train_fraction=0.6, seed=3, metrics=("updates",), eval_every=1, probe_every=2,
            monitor_kwargs={"window": 2})


def _brute_jacobians(model, X):
    """(n, C, d) per-row Jacobians, one torch.autograd.functional.jacobian call per row."""
    return torch.stack([torch.autograd.functional.jacobian(lambda r: model(r[None])[0], x, create_graph=True)
                        for x in X])


def test_grokalign_step_is_adamw_on_mse_plus_exact_jacobian_norm():
    lam, lr, wd = 0.3, 0.01, 0.5
    _, model, (Xtr, ytr, _, _), summary = run_grokking(
        steps=1, lr=lr, weight_decay=wd, grokalign=lam, grokalign_projections=None, **TINY)
    # the same step by hand: the loss of train_with_monitor ("mse", summed over classes) plus the
    # exact Frobenius norm of each row's Jacobian, averaged, then one AdamW step
    ref = quadratic_network(5, 8, 3)
    X, y = modular_addition(5, 0.6, 3)[:2]
    assert torch.equal(X, Xtr) and torch.equal(y, ytr)
    out = ref(X)
    mse = torch.nn.functional.mse_loss(out, torch.nn.functional.one_hot(y, 5).float()) * 5
    J = _brute_jacobians(ref, X)
    norm = J.flatten(1).norm(dim=1).mean()
    opt = torch.optim.AdamW(ref.parameters(), lr=lr, weight_decay=wd)
    opt.zero_grad()
    (mse + lam * norm).backward()
    opt.step()
    for a, b in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
    # the logged penalty is lambda * mean ||J||_F at the weights before the step
    assert summary["grokalign"] == lam and summary["grokalign_projections"] is None
    assert summary["final_grokalign_penalty"] == pytest.approx(lam * float(norm.detach()), rel=1e-5)


def test_zero_weight_trains_exactly_like_no_penalty_and_records_alignment():
    mon0, m0, _, s0 = run_grokking(steps=6, **TINY)
    mon1, m1, _, s1 = run_grokking(steps=6, grokalign=0.0, **TINY)
    for a, b in zip(m0.parameters(), m1.parameters()):
        assert torch.equal(a, b)
    np.testing.assert_array_equal(mon0.series("test_accuracy")[1], mon1.series("test_accuracy")[1])
    # the default run: no penalty, no alignment (unchanged behaviour)
    assert "grokalign" not in s0 and "final_jacobian_cosine" not in s0
    assert not any(r["metric"].startswith("jacobian") for r in mon0.records)
    assert mon1.metrics == ("updates", "jacobian_alignment")
    assert s1["final_grokalign_penalty"] == 0.0
    steps, _ = mon1.series("jacobian_centroid_cosine")
    np.testing.assert_array_equal(steps, [2, 4, 6])
    assert mon1.series("jacobian_cosine")[0].tolist() == [2, 4, 6]  # the Monitor's own "alignment" rows


def test_recorded_alignment_matches_brute_force_on_the_final_model():
    mon, model, (Xtr, _, _, _), s = run_grokking(steps=4, grokalign=0.05, **TINY)
    J = _brute_jacobians(model, Xtr).detach().double()  # (n, C, d)
    x = Xtr.double()
    c = J.sum(1)
    centroid = float(((c * x).sum(1) / (c.norm(dim=1) * x.norm(dim=1))).mean())
    cos = (J * x[:, None]).sum(2) / (J.norm(dim=2) * x.norm(dim=1)[:, None])
    sv = torch.linalg.svdvals(J)
    share = float((sv[:, 0] ** 2 / (sv ** 2).sum(1)).mean())
    assert s["final_jacobian_centroid_cosine"] == pytest.approx(centroid, abs=1e-6)
    assert s["final_jacobian_cosine"] == pytest.approx(float(cos.mean()), abs=1e-6)
    assert s["final_jacobian_rank_one_share"] == pytest.approx(share, abs=1e-6)
    # f(x) = V (W x)^2 is homogeneous of degree 2: Euler gives J x = 2 f(x)
    torch.testing.assert_close((J @ x[:, :, None])[..., 0], 2 * model(Xtr).detach().double(), rtol=1e-5, atol=1e-6)
    pen = mon.series("grokalign_penalty")[1]
    assert pen.shape == (4,) and np.all(pen > 0)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(grokalign=-0.1), ValueError, "grokalign must be a finite number >= 0"),
    (dict(grokalign=float("nan")), ValueError, "grokalign must be"),
    (dict(grokalign="0.1"), TypeError, "grokalign must be"),
    (dict(grokalign=0.1, grokalign_projections=0), ValueError, "grokalign_projections must be"),
])
def test_bad_grokalign_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        run_grokking(steps=1, **{**TINY, **kwargs})


@pytest.mark.slow
def test_diagnose_with_grokalign_writes_and_prints_the_alignment(tmp_path, capsys):
    out = tmp_path / "diag"
    code = main(["diagnose", "--out", str(out), "--steps", "20", "--p", "5", "--width", "8",
                 "--probe-every", "10", "--seed", "2", "--no-progress", "--grokalign", "0.02"])
    assert code == 0
    summary = json.loads((out / "results.json").read_text())
    assert summary["grokalign"] == 0.02 and summary["final_grokalign_penalty"] > 0
    for key in ("final_jacobian_cosine", "final_jacobian_rank_one_share", "final_jacobian_centroid_cosine",
                "final_jacobian_top_singular_cosine"):
        assert -1.0 <= summary[key] <= 1.0, key
    import csv

    with open(out / "history.csv") as f:
        rows = list(csv.DictReader(f))
    centroid = [float(r["value"]) for r in rows if r["metric"] == "jacobian_centroid_cosine"]
    assert len(centroid) == 2 and centroid[-1] == pytest.approx(summary["final_jacobian_centroid_cosine"])
    assert "GrokAlign weight 0.02" in (out / "index.html").read_text()
    printed = capsys.readouterr().out
    assert "GrokAlign weight 0.02" in printed and "final Jacobian alignment" in printed


@pytest.mark.parametrize("value, message", [("-1", "expected a non-negative"), ("x", "expected a non-negative"),
                                            ("nan", "expected a non-negative")])
def test_diagnose_grokalign_usage_errors(tmp_path, capsys, value, message):
    assert main(["diagnose", "--out", str(tmp_path), "--grokalign", value]) == 2
    err = capsys.readouterr().err
    assert "--grokalign" in err and message in err
