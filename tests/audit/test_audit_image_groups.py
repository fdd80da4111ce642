"""The audit on 224 x 224 images: black-box methods play square patches with budgets that fit, and
the audit says which grouping, how many players and which budgets (issue 34 item 4)."""

import numpy as np
import pytest

import featurelens as fl

torch = pytest.importorskip("torch")


class SmallCNN(torch.nn.Module):
    """A convolution over 28 px cells and a linear head: cheap at 224 x 224."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 4, 28, stride=28)
        self.head = torch.nn.Linear(4 * 8 * 8, 3)
        self.rows = 0

    def forward(self, x):
        self.rows += int(x.shape[0])
        return self.head(torch.relu(self.conv(x)).flatten(1))


def test_audit_of_a_cnn_on_224_images_plays_patches_with_budgets_that_fit():
    net = SmallCNN().eval()
    X = torch.rand(2, 3, 224, 224)
    table = fl.audit(net, X, methods=["occlusion", "kernel_shap", "permutation_shap"], metrics=["deletion"],
                     as_frame=False, progress=False, randomization=False)
    assert {r["method"]: r["status"] for r in table} == {
        "occlusion": "ok", "kernel_shap": "ok", "permutation_shap": "ok"}
    for name in ("occlusion", "kernel_shap", "permutation_shap"):
        e = table.explanations[name]
        assert e.group_values.shape == (2, 64)  # 64 patches of 28 x 28 px, not 150,528 pixels
    for name in ("kernel_shap", "permutation_shap"):
        e = table.explanations[name]
        assert e.params["n_players"] == 64 and e.params["budget"] == 256  # 4 x 64 evaluations per image
        assert e.model_calls <= 2 * 256 + 4  # plus the target pass and one setup pass per game
        gap = np.asarray(e.params["full_values"]) - np.asarray(e.params["base_values"])
        np.testing.assert_allclose(e.group_values.sum(1), gap, rtol=1e-5, atol=1e-6)
    assert table.explanations["occlusion"].model_calls <= 2 * 65 + 1  # x and one occlusion per patch; targets
    note = [n for n in table.notes if n.startswith("Black-box methods play")]
    assert note == ["Black-box methods play 64 square patches of 28 x 28 elements, shared over the 3 channels (not "
                    "the 150,528 input elements); budgets: kernel_shap 256 game evaluations per sample (512 model "
                    "rows), permutation_shap 256 game evaluations per sample (512 model rows)."]
