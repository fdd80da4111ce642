"""The helpers of benchmarks/bench_sop.py (the SOP case study): the patch group generator and the
patch grid, checked against their definitions."""

import numpy as np
import pytest
import torch

from featurelens.explainers.sop import PatchGroupGenerator


@pytest.fixture(scope="module")
def bench_sop(benchmark_script):
    return benchmark_script("bench_sop")


def test_patch_grid_labels_squares(bench_sop):
    grid = bench_sop.patch_grid(8, 2)
    assert grid.shape == (8, 8) and grid.dtype == np.int64
    assert sorted(np.unique(grid)) == list(range(16))
    assert (grid[:2, :2] == 0).all() and grid[0, 2] == 1 and grid[2, 0] == 4 and grid[7, 7] == 15


def test_patch_generator_masks_are_patch_constant_sparsemax_rescaled(bench_sop):
    gen = PatchGroupGenerator((1, 16, 16), 3, patch=4, hidden=5, seed=0)
    x = torch.randn(2, 1, 16, 16)
    m = gen(x)
    assert m.shape == (2, 3, 1, 16, 16)
    # every group's largest value is exactly 1, values in [0, 1]
    flat = m.reshape(2, 3, -1)
    assert torch.allclose(flat.max(-1).values, torch.ones(2, 3))
    assert (flat >= 0).all() and (flat <= 1).all()
    # constant on each 4x4 patch, and equal to sparsemax of the patch scores rescaled
    blocks = m[:, :, 0].reshape(2, 3, 4, 4, 4, 4)
    assert torch.equal(blocks.amax((3, 5)), blocks.amin((3, 5)))
    scores = gen.head(torch.relu(gen.embed(x))).reshape(2, 3, -1) + gen.prior
    z = scores - scores.max(-1, keepdim=True).values
    # brute-force sparsemax: tau solves sum(max(z - tau, 0)) = 1, by bisection
    lo, hi = z.min(-1, keepdim=True).values - 1, z.max(-1, keepdim=True).values
    for _ in range(200):
        mid = (lo + hi) / 2
        big = torch.clamp(z - mid, min=0).sum(-1, keepdim=True) > 1
        lo, hi = torch.where(big, mid, lo), torch.where(big, hi, mid)
    p = torch.clamp(z - (lo + hi) / 2, min=0)
    expected = p / p.max(-1, keepdim=True).values
    assert torch.allclose(blocks.amax((3, 5)).reshape(2, 3, -1), expected, atol=1e-5)


def test_patch_generator_refuses_a_patch_that_does_not_divide(bench_sop):
    with pytest.raises(ValueError, match="patch must divide the image size 10x10; got 4"):
        PatchGroupGenerator((1, 10, 10), 2, patch=4)


def test_sop_with_patch_generator_weights_sum_to_one(bench_sop):
    import featurelens as fl

    gen = PatchGroupGenerator((1, 64, 64), 4, patch=8)
    model = fl.SumOfParts(bench_sop.cnn64(0), 4, gen, seed=0)
    out = model.explain_forward(torch.randn(3, 1, 64, 64))
    assert out.logits.shape == (3, 2) and out.masks.shape == (3, 4, 1, 64, 64)
    assert torch.allclose(out.weights.sum(1), torch.ones(3), atol=1e-6)
    assert torch.allclose((out.weights.unsqueeze(-1) * out.group_outputs).sum(1), out.logits, atol=1e-6)


def _row(model, imd, corr, prec=None):
    r = {"model": model, "ins_minus_del": imd, "faith_corr": corr}
    if prec is not None:
        r["precision_at_k"] = prec
    return r


def test_verdicts_follow_the_numbers(bench_sop):
    def result(own, ig, plain_acc, sop_acc, prec_own, prec_plain, top_prec, chance):
        return {
            "plain": {"test_accuracy": plain_acc}, "sop": {"test_accuracy": sop_acc},
            "methods": {"sop (own groups)": _row("sop", own, own, prec_own),
                        "sop (own contributions)": _row("sop", 0.0, 0.0, 0.0),
                        "integrated_gradients of SOP": _row("sop", ig, ig, 0.0),
                        "integrated_gradients": _row("plain", 0.1, 0.1, prec_plain)},
            "groups": {"top_group_precision": top_prec, "chance_precision": chance, "top_group_coverage": 0.5},
        }

    good = {"a": result(0.9, 0.5, 0.90, 0.89, 0.7, 0.7, 0.6, 0.2), "b": result(0.8, 0.8, 0.80, 0.81, 0.6, 0.5, 0.5, 0.1)}
    v = bench_sop.verdicts(good)
    assert [v[k][0] for k in ("faithful", "accuracy", "localisation")] == ["reproduced"] * 3
    mixed = {"a": good["a"], "b": result(0.1, 0.8, 0.90, 0.80, 0.2, 0.7, 0.1, 0.1)}
    v = bench_sop.verdicts(mixed)
    assert [v[k][0] for k in ("faithful", "accuracy", "localisation")] == ["partly"] * 3
    bad = {"b": mixed["b"]}
    v = bench_sop.verdicts(bad)
    assert [v[k][0] for k in ("faithful", "accuracy", "localisation")] == ["not"] * 3
    assert "0 of 2 (data set, metric) pairs" in v["faithful"][1]
