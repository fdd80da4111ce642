"""Audit fixes of issue 11 item 8: ties in the verdict, TorchScript models, the --labels hint."""

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens._audit import scoring
from featurelens.cli import main

# torch 2.13 deprecates torch.jit.script but still runs it.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def _row(method, ins, corr, sens):
    return {"method": method, "status": "ok", "insertion_minus_deletion": ins,
            "faithfulness_correlation": corr, "avg_sensitivity": sens, "reason": ""}


def _three_way_tie(sens_k, sens_p, sens_o):
    # Ranks on ins - del: kernel 1, permutation 2, occlusion 3; on correlation the reverse: each
    # method's mean faithfulness rank is 2, so only robustness separates them.
    rows = [_row("occlusion", 0.7, 0.7, sens_o), _row("kernel_shap", 0.9, 0.5, sens_k),
            _row("permutation_shap", 0.8, 0.6, sens_p), _row("random", 0.0, 0.0, 9.0)]
    ranked = scoring.rank_rows(rows)
    scoring.add_reasons(ranked)
    return ranked, scoring.verdict_text(ranked)


def test_verdict_names_a_tie_on_faithfulness_and_the_robustness_that_broke_it():
    ranked, verdict = _three_way_tie(4.0, 4.971, 5.5)
    assert [r["faithfulness_rank"] for r in ranked[:3]] == [2.0, 2.0, 2.0]
    assert ranked[0]["method"] == "kernel_shap"
    assert verdict.startswith("Trust kernel_shap most")
    assert "kernel_shap, permutation_shap and occlusion tie on faithfulness" in verdict
    pct = (4.971 - 4.0) / 4.971
    assert f"kernel_shap is the most robust (average sensitivity 4.000 against 4.971 for permutation_shap, " \
           f"{100 * pct:.1f}% lower)" in verdict
    assert "ranks first on faithfulness" not in verdict  # the old wording hid the tie
    assert "3 of 3 methods beat the random map" in verdict


def test_verdict_calls_methods_within_the_tolerance_indistinguishable():
    # 4.965 against 4.971 is 0.12% apart, below the 1% tolerance: no winner is named.
    assert abs(4.971 - 4.965) / 4.971 < scoring.ROBUSTNESS_TOLERANCE
    ranked, verdict = _three_way_tie(4.965, 4.971, 5.5)
    assert verdict.startswith("Trust kernel_shap and permutation_shap equally")
    assert "kernel_shap, permutation_shap and occlusion tie on faithfulness" in verdict
    assert "kernel_shap and permutation_shap are indistinguishable on robustness too" in verdict
    assert "4.965 to 4.971" in verdict and "occlusion is less robust" in verdict
    assert "most robust" not in verdict
    # All three within 1% of each other: all three are trusted equally.
    _, verdict = _three_way_tie(4.965, 4.971, 4.99)
    assert verdict.startswith("Trust kernel_shap, permutation_shap and occlusion equally")
    assert "they are indistinguishable on robustness too" in verdict


def test_verdict_without_a_tie_keeps_its_wording():
    rows = [_row("a", 0.9, 0.9, 1.0), _row("b", 0.5, 0.5, 0.5), _row("random", 0.0, 0.0, 2.0)]
    ranked = scoring.rank_rows(rows)
    scoring.add_reasons(ranked)
    verdict = scoring.verdict_text(ranked)
    assert verdict.startswith("Trust a most for this model and these inputs: it ranks first on faithfulness")
    assert "tie" not in verdict


# ------------------------------------------------------------------------------------------------
# TorchScript


def _cnn():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3, padding=1), torch.nn.BatchNorm2d(3), torch.nn.ReLU(),
        torch.nn.Conv2d(3, 2, 3, padding=1), torch.nn.Flatten(), torch.nn.Linear(2 * 6 * 6, 3),
    ).eval()
    X = np.random.default_rng(0).normal(size=(6, 1, 6, 6)).astype(np.float32)
    return net, X


_KW = dict(n_explain=4, progress=False, robustness_samples=2, n_subsets=10, steps=8, as_frame=False)


def test_torchscript_randomisation_runs_and_equals_the_eager_model():
    # It failed for every method ("no layers with parameters"): TorchScript layers have no
    # reset_parameters. The layers are redrawn as torch.nn does, so the similarities equal the eager
    # model's under the same seed (same layers, same order, same draws).
    net, X = _cnn()
    script = torch.jit.script(net)
    before = {k: v.clone() for k, v in script.state_dict().items()}
    eager = fl.audit(net, X, methods=["saliency", "input_x_gradient", "random"], **_KW)
    scripted = fl.audit(script, X, methods=["saliency", "input_x_gradient", "random"], **_KW)
    assert scripted.notes == [], scripted.notes
    for method in ("saliency", "input_x_gradient"):
        e = next(r for r in eager if r["method"] == method)
        s = next(r for r in scripted if r["method"] == method)
        assert np.isfinite(s["randomization_similarity"])
        np.testing.assert_allclose(s["randomization_similarity"], e["randomization_similarity"], rtol=1e-9)
    for k, v in script.state_dict().items():  # the user's model is never modified
        assert torch.equal(v, before[k]), k


def test_reinitialise_matches_reset_parameters_of_eager_layers():
    from featurelens._audit._torchscript import ScriptLayers

    net, _ = _cnn()
    with torch.no_grad():
        for p in net.parameters():
            p.add_(1.0)
    script = torch.jit.script(net)
    wrapper = ScriptLayers(script)
    handles = [m for _, m in wrapper.named_modules() if hasattr(m, "reset_parameters")]
    eager_layers = [m for m in net if hasattr(m, "reset_parameters")]
    assert len(handles) == len(eager_layers) == 4
    for handle, layer in zip(handles, eager_layers):
        torch.manual_seed(7)
        handle.reset_parameters()
        torch.manual_seed(7)
        layer.reset_parameters()
    for k, v in net.state_dict().items():
        assert torch.equal(script.state_dict()[k], v), k


def test_torchscript_gradcam_is_skipped_with_the_true_reason():
    # It said "the model has no convolutional layer" although the model has two.
    net, X = _cnn()
    table = fl.audit(torch.jit.script(net), X, methods=["gradcam", "saliency", "random"], randomization=False,
                     **_KW)
    row = next(r for r in table if r["method"] == "gradcam")
    assert row["status"] == "n/a"
    assert "has none" not in row["reason"]
    assert "TorchScript" in row["reason"] and "2 convolutions" in row["reason"] and "Conv2d" in row["reason"]
    # The eager model with the same layers runs it.
    eager = fl.audit(net, X, methods=["gradcam", "random"], randomization=False, **_KW)
    assert next(r for r in eager if r["method"] == "gradcam")["status"] == "ok"


# ------------------------------------------------------------------------------------------------
# --labels hint


def test_forgotten_labels_column_gets_the_hint(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    import joblib
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    y = (X[:, 0] > 0).astype(np.int64)
    joblib.dump(LogisticRegression().fit(X, y), tmp_path / "clf.joblib")
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["diagnosis"] = y
    frame.to_csv(tmp_path / "data.csv", index=False)
    args = ["audit", "--model", str(tmp_path / "clf.joblib"), "--data", str(tmp_path / "data.csv"),
            "--trust-model-file", "--no-progress", "--out", str(tmp_path / "report")]
    rc = main(args)
    err = capsys.readouterr().err
    assert rc == 1
    assert "expects 4 features" in err and "has 5" in err
    assert "if one column is the label, pass --labels NAME" in err
    assert "'diagnosis' looks like labels" in err
    # Two columns too many: no label hint (one label column cannot explain it).
    frame["extra"] = 1.5
    frame.to_csv(tmp_path / "data2.csv", index=False)
    rc = main(args[:4] + [str(tmp_path / "data2.csv")] + args[5:])
    err = capsys.readouterr().err
    assert rc == 1 and "has 6" in err and "--labels" not in err


def test_verdict_warns_when_the_trusted_method_fails_the_randomisation_check():
    # A ranks first but its maps survive weight randomisation (Spearman 0.91 > 0.5); B is the
    # best-ranked method that passes; C passes too but ranks lower.
    rows = [_row("A", 0.9, 0.9, 0.1), _row("B", 0.8, 0.8, 0.1), _row("C", 0.7, 0.7, 0.1),
            _row("random", 0.0, 0.0, 9.0)]
    for row, sim in zip(rows, (0.91, 0.12, 0.05, 1.0)):
        row["randomization_similarity"] = sim
    ranked = scoring.rank_rows(rows)
    scoring.add_reasons(ranked)
    verdict = scoring.verdict_text(ranked)
    assert verdict.startswith("Trust A most")
    assert "Caveat: the maps of A barely change when the weights are randomised (Spearman 0.91)" in verdict
    assert "the best-ranked method that passes that check is B (rank 2" in verdict
    # every method failing: no alternative is named
    for row in rows[:3]:
        row["randomization_similarity"] = 0.8
    ranked = scoring.rank_rows(rows)
    scoring.add_reasons(ranked)
    assert "no method that beats the random map passes that check" in scoring.verdict_text(ranked)
    # the trusted method passing: no caveat
    rows[0]["randomization_similarity"] = 0.2
    ranked = scoring.rank_rows(rows)
    scoring.add_reasons(ranked)
    assert "Caveat" not in scoring.verdict_text(ranked)


def test_a_method_that_raises_is_shown_failed_with_its_reason_and_never_ranked(tmp_path, monkeypatch):
    # A method that raises (here deeplift, made to: on a TorchScript module it is now refused up
    # front, n/a, by Requires.hooks): the audit shows it as failed with the reason, on the page and
    # in results.json, unranked.
    import json

    from featurelens.explainers._base import explainer_class

    reason = "deeplift needs forward hooks, which a torch.jit.ScriptModule does not run"

    def refuse(self, *args, **kwargs):
        raise TypeError(reason)

    monkeypatch.setattr(explainer_class("deeplift"), "_attribute", refuse)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2))
    X = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    table = fl.audit(net, X, methods=["deeplift", "input_x_gradient", "random"], n_explain=4, randomization=False,
                     metrics=["deletion", "insertion"], out=str(tmp_path / "r"), as_frame=False)
    row = next(r for r in table if r["method"] == "deeplift")
    assert row["status"] == "failed" and row["rank"] is None and reason in row["reason"]
    assert [r["rank"] for r in table if r["method"] != "deeplift"] == [1, 2]
    doc = json.loads((tmp_path / "r" / "results.json").read_text(encoding="utf-8"))
    saved = next(r for r in doc["table"] if r["method"] == "deeplift")
    assert saved["status"] == "failed" and saved["rank"] is None and reason in saved["reason"]
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    assert f"failed: TypeError: {reason}" in page
