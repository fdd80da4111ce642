"""The audit's ranking and verdict: ties on faithfulness broken by robustness, methods within the
tolerance called indistinguishable, the randomisation caveat, and a method that raises shown as
failed with its reason and never ranked."""

import numpy as np
import torch

import featurelens as fl
from featurelens._audit import scoring


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
