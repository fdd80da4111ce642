"""The grokking runner's options: the ReLU arm, the B-matrix sign rule (Tian's feature repulsion)
against a brute-force projector and on planted similar features, and the refusals."""

import numpy as np
import pytest
import torch

from featurelens.learning._grokking import quadratic_network, repulsion_sign_rule, run_grokking


def test_relu_arm_has_the_same_weights_and_a_relu():
    q = quadratic_network(7, 16, seed=3)
    r = quadratic_network(7, 16, seed=3, activation="relu")
    assert isinstance(r[1], torch.nn.ReLU)
    for a, b in zip(q.parameters(), r.parameters()):
        assert torch.equal(a, b)
    x = torch.randn(5, 14)
    h = x @ q[0].weight.T
    torch.testing.assert_close(q(x), (h * h) @ q[2].weight.T)
    torch.testing.assert_close(r(x), torch.relu(h) @ r[2].weight.T)
    with pytest.raises(ValueError, match="activation"):
        quadratic_network(7, 16, activation="gelu")


def test_sign_rule_matches_a_brute_force_projector_and_holds_exactly():
    rng = np.random.default_rng(0)
    F = rng.standard_normal((40, 9)) + 0.5 * rng.standard_normal((40, 1))  # correlated features
    eta = 0.3
    out = repulsion_sign_rule(F, eta, pairs=10)
    B = np.linalg.inv(F.T @ F + eta * np.eye(9))
    for (j, m), b, proj in zip(out["pairs"], out["B_pairs"], out["projected"]):
        rest = [i for i in range(9) if i not in (j, m)]
        Fr = F[:, rest]
        P = np.eye(40) - Fr @ np.linalg.inv(Fr.T @ Fr + eta * np.eye(7)) @ Fr.T
        assert proj == pytest.approx(F[:, j] @ P @ F[:, m], rel=1e-8, abs=1e-10)
        assert b == pytest.approx(B[j, m], rel=1e-10)
        # the 2 x 2 Schur complement: B_jl = -S_12 / det S (block inversion)
        S = F[:, [j, m]].T @ P @ F[:, [j, m]] + eta * np.eye(2)
        assert b == pytest.approx(-S[0, 1] / np.linalg.det(S), rel=1e-7)
    assert out["agreement"] == 1.0
    # the pairs are the most cosine-similar ones, in order
    G = F.T @ F
    n = np.sqrt(np.diag(G))
    C = G / np.outer(n, n)
    assert np.all(np.diff(out["cosine"]) <= 1e-12)
    assert out["cosine"][0] == pytest.approx(C[np.triu_indices(9, 1)].max())


def test_similar_features_get_negative_coupling():
    # features 0 and 1 are near copies, the rest independent: B_01 < 0 (repulsion)
    rng = np.random.default_rng(1)
    F = rng.standard_normal((60, 6))
    F[:, 1] = F[:, 0] + 0.1 * rng.standard_normal(60)
    out = repulsion_sign_rule(F, 0.1, pairs=1)
    assert tuple(out["pairs"][0]) == (0, 1)
    assert out["B_pairs"][0] < 0 and out["negative_share"] == 1.0 and out["projected"][0] > 0


def test_sign_rule_refusals_name_the_argument():
    F = np.random.default_rng(0).standard_normal((10, 5))
    with pytest.raises(ValueError, match="eta"):
        repulsion_sign_rule(F, 0.0)
    with pytest.raises(ValueError, match="pairs"):
        repulsion_sign_rule(F, 0.1, pairs=0)
    with pytest.raises(ValueError, match="F must"):
        repulsion_sign_rule(F[:, :2], 0.1)
    with pytest.raises(ValueError, match="sign_rule_every"):
        run_grokking(p=5, steps=5, sign_rule_every=10)
    with pytest.raises(ValueError, match="sign_rule"):
        run_grokking(p=5, steps=5, sign_rule=-1.0)


def test_runner_logs_the_sign_rule_and_the_activation():
    mon, model, _, s = run_grokking(p=7, width=16, steps=40, seed=0, metrics=("updates",), activation="relu",
                                    sign_rule=0.5, sign_rule_every=20, sign_rule_pairs=5)
    assert isinstance(model[1], torch.nn.ReLU) and s["activation"] == "relu"
    steps, agree = mon.series("sign_rule_agreement")
    assert list(steps) == [20, 40]
    assert s["final_sign_rule_agreement"] == agree[-1]
    assert 0.0 <= s["final_sign_rule_negative_share"] <= 1.0
