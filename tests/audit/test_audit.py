"""fl.audit: method choice, scores with analytic values, ranking on XAI-TRIS, the HTML report."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens import _audit, _harness
from featurelens._audit import core, scoring
from featurelens.metrics.randomisation import _cascade_score
from featurelens.groundtruth.models import build_model
from featurelens.datasets import xai_tris
from featurelens.models import Model

GRADIENT = ["saliency", "input_x_gradient", "integrated_gradients", "smoothgrad"]


def planted_llr(data):
    """An LLR whose class-c weights are the planted tetromino of class c: f_c(x) = <P_c, x>.
    No training, and the maps that should be found are known exactly."""
    model = build_model("llr", 8)
    rows = []
    for c in (0, 1):
        pattern = np.abs(data.patterns[data.y == c][0]) > 0
        rows.append(pattern.astype(np.float32).ravel())
    with torch.no_grad():
        model.linear.weight.copy_(torch.tensor(np.stack(rows)))
    return model


@pytest.fixture(scope="module")
def linear_audit(tmp_path_factory):
    pytest.importorskip("pandas")  # the table comes back as a DataFrame
    data = xai_tris("linear", "white", image_size=8, n_samples=64, seed=0)
    model = planted_llr(data)
    out = tmp_path_factory.mktemp("audit") / "report"
    table = fl.audit(
        model, data.X, data.y, methods=GRADIENT + ["random"], ground_truth=data.ground_truth, out=out,
        n_explain=12, seed=0, progress=False, steps=16, n_subsets=30, robustness_samples=3,
    )
    return table, data, model, out


def row(table, method):
    return table[table["method"] == method].iloc[0]


def test_random_is_last_and_gradients_beat_it_on_faithfulness(linear_audit):
    table, *_ = linear_audit
    ok = table[table["status"] == "ok"]
    assert list(ok["rank"]) == list(range(1, len(ok) + 1))
    assert ok.iloc[-1]["method"] == "random"
    rnd = row(table, "random")
    for m in GRADIENT:
        r = row(table, m)
        assert r["faithfulness_rank"] < rnd["faithfulness_rank"]
        assert r["insertion_minus_deletion"] > rnd["insertion_minus_deletion"] + 0.5
        assert r["faithfulness_correlation"] > rnd["faithfulness_correlation"] + 0.5
    assert "random map" in table.attrs["verdict"] and table.attrs["verdict"].startswith("Trust ")
    assert "4 of 4 methods beat the random map" in table.attrs["verdict"]


def test_analytic_scores_of_the_linear_model(linear_audit):
    table, *_ = linear_audit
    # f linear with zero baseline: removing S drops f by sum_S w_i x_i = sum_S (x * grad)_i, so
    # input x gradient (= IG here) has faithfulness correlation exactly 1.
    for m in ("input_x_gradient", "integrated_gradients"):
        assert row(table, m)["faithfulness_correlation"] == pytest.approx(1.0, abs=1e-6)
    # The gradient of f_t is the planted pattern P_t: all |a| lies in the ground-truth union mask,
    # and it does not move under input noise (sensitivity 0).
    assert row(table, "saliency")["relevance_mass"] == pytest.approx(1.0, abs=1e-9)
    assert row(table, "saliency")["avg_sensitivity"] == pytest.approx(0.0, abs=1e-6)
    # The seeded random map ignores the weights: Spearman similarity 1 after randomisation; its
    # relevance mass is about the mask's share of the image, 8/64.
    assert row(table, "random")["randomization_similarity"] == pytest.approx(1.0, abs=1e-9)
    assert row(table, "random")["relevance_mass"] == pytest.approx(8 / 64, abs=0.05)
    assert row(table, "saliency")["randomization_similarity"] < 0.5


def test_report_files(linear_audit):
    table, _, _, out = linear_audit
    page = (out / "index.html").read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == 2  # example maps, curves
    assert "<table" in page and "Verdict" in page
    for m in GRADIENT + ["random"]:
        assert m in page
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert [r["method"] for r in doc["table"]] == list(table["method"])
    assert doc["ranking_rule"] == fl._audit.RANKING_RULE
    assert len(doc["per_sample"]["saliency"]["deletion_auc"]) == 12
    lines = (out / "results.csv").read_text(encoding="utf-8").strip().splitlines()
    assert len(lines) == 1 + len(table)
    assert table.attrs["report"] == os.path.join(os.fspath(out), "index.html")


def test_report_opens_in_headless_chromium(linear_audit, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no headless browser installed")
    _, _, _, out = linear_audit
    # A copy of the page that records, once loaded, each image's decoded size and the table's
    # rendered size: proof that the browser parsed the table and decoded the embedded PNGs.
    probe = (
        "<script>window.addEventListener('load', function () {"
        "var t = document.querySelector('table').getBoundingClientRect();"
        "document.body.setAttribute('data-table', Math.round(t.width) + 'x' + Math.round(t.height));"
        "document.body.setAttribute('data-images', Array.prototype.map.call(document.images,"
        " function (i) { return i.naturalWidth + 'x' + i.naturalHeight; }).join(','));});</script>"
    )
    page = (out / "index.html").read_text(encoding="utf-8").replace("</body>", probe + "</body>")
    check = tmp_path / "check.html"
    check.write_text(page, encoding="utf-8")
    try:
        dom = subprocess.run(
            [browser, "--headless", "--disable-gpu", "--no-sandbox", "--virtual-time-budget=3000",
             "--dump-dom", check.as_uri()],
            capture_output=True, text=True, timeout=60,
        ).stdout
    except (subprocess.TimeoutExpired, OSError) as err:
        pytest.skip(f"browser did not run: {err}")
    import re

    table = re.search(r'data-table="(\d+)x(\d+)"', dom)
    images = re.search(r'data-images="([^"]*)"', dom)
    assert table and images, dom[:500]
    assert int(table.group(1)) > 300 and int(table.group(2)) > 100
    sizes = [tuple(map(int, s.split("x"))) for s in images.group(1).split(",")]
    assert len(sizes) == 2 and all(w > 100 and h > 100 for w, h in sizes)


def test_blackbox_audit_of_a_linear_regressor_is_exact():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 6)).astype(np.float32) * np.array([1, 2, 3, 1, 1, 20], dtype=np.float32)
    reg = LinearRegression().fit(X, X @ np.array([3.0, -2.0, 1.0, 0.0, 0.5, 1.5]))
    table = fl.audit(reg, X, n_explain=6, seed=1, progress=False, as_frame=False, robustness_samples=2,
                     n_subsets=20)
    assert isinstance(table, _audit.AuditTable) and isinstance(table[0], dict)
    ok = [r for r in table if r["status"] == "ok"]
    assert [r["method"] for r in ok][-1] == "random"
    assert {"kernel_shap", "permutation_shap", "exact_shapley"} <= {r["method"] for r in ok}
    # For f linear and the feature-mean baseline, the Shapley value is w_i (x_i - mean_i), and
    # removing a subset drops f by exactly the sum of its values: correlation 1.
    exact = table.explanations["exact_shapley"].values
    x = X[np.sort(np.random.default_rng(1).choice(60, 6, replace=False))]
    np.testing.assert_allclose(exact, reg.coef_ * (x - X.mean(0)), rtol=1e-4, atol=1e-4)
    for r in ok[:-1]:
        assert r["faithfulness_correlation"] == pytest.approx(1.0, abs=1e-5)
    assert any("different scales" in n for n in table.notes)


def test_choose_methods():
    cnn, llr = Model(build_model("cnn", 8)), Model(build_model("llr", 8))
    chosen, skipped = _audit.choose_methods(cnn, (1, 8, 8))
    assert "gradcam" in chosen and chosen[-1] == "random"
    assert "kernel_shap" not in chosen and "agop_local" in skipped
    chosen, skipped = _audit.choose_methods(llr, (1, 8, 8))
    assert "gradcam" not in chosen and "convolutional" in skipped["gradcam"]
    numpy_model = Model(lambda x: x.reshape(len(x), -1).sum(1))
    chosen, skipped = _audit.choose_methods(numpy_model, (1, 8, 8))
    assert not any(m in chosen for m in GRADIENT)
    assert "kernel_shap" in chosen and "exact_shapley" in skipped  # 64 players > 10
    chosen, _ = _audit.choose_methods(numpy_model, (5,))
    assert "exact_shapley" in chosen
    chosen, skipped = _audit.choose_methods(numpy_model, (5,), methods=["saliency", "random"])
    assert chosen == ["random"] and "gradients" in skipped["saliency"]


def test_patch_groups_cover_the_image_with_at_most_64_players():
    g = core.patch_groups((3, 30, 30))
    assert g.shape == (3, 30, 30)
    labels = np.unique(g)
    assert labels.size <= 64 and np.array_equal(labels, np.arange(labels.size))
    assert np.array_equal(g[0], g[2])  # channels share a patch
    # Each patch is a square block: pixels (0,0) and (3,3) share the first patch of side 4.
    assert g[0, 0, 0] == g[0, 3, 3] != g[0, 0, 4]
    assert core.patch_groups((1, 8, 8)) is None


def test_targets_map_labels_through_classes():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)).astype(np.float32)
    labels = np.where(X[:, 0] > 0, "yes", "no")
    clf = LogisticRegression().fit(X, labels)
    t = core._targets(Model(clf.predict_proba), X[:5], labels[:5], None, clf.classes_)
    np.testing.assert_array_equal(t, np.searchsorted(clf.classes_, labels[:5]))
    with pytest.raises(ValueError, match="not one of the model's classes"):
        core._targets(Model(clf.predict_proba), X[:2], np.array(["yes", "maybe"]), None, clf.classes_)


def test_a_failing_metric_or_explainer_is_reported_not_fatal(monkeypatch):
    pytest.importorskip("pandas")
    def broken(a):
        raise RuntimeError("boom")

    # The audit calls each metric through its spec, which reads the function of its module.
    monkeypatch.setattr(sys.modules["featurelens.metrics.complexity"], "sparseness", broken)
    real = _harness.explainer

    def make(name, model, **kw):
        if name == "smoothgrad":
            raise RuntimeError("explainer exploded")
        return real(name, model, **kw)

    monkeypatch.setattr(_harness, "explainer", make)
    model = torch.nn.Sequential(torch.nn.Linear(4, 2))
    X = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    table = fl.audit(model, X, methods=["saliency", "smoothgrad", "random"], n_explain=4, progress=False,
                     robustness_samples=0, randomization=False, n_subsets=10)
    sal = row(table, "saliency")
    assert sal["status"] == "ok" and np.isnan(sal["sparseness"]) and np.isfinite(sal["complexity"])
    assert any("sparseness failed (RuntimeError: boom)" in n for n in table.attrs["notes"])
    sg = row(table, "smoothgrad")
    assert sg["status"] == "failed" and "explainer exploded" in sg["reason"] and sg["rank"] is pd_na()


def pd_na():
    import pandas as pd

    return pd.NA


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(X=np.full((4, 4), np.nan, np.float32)), ValueError, "X contains NaN"),
        (dict(X=np.zeros(4, np.float32)), ValueError, "X must be a batch"),
        (dict(y=np.zeros(3, np.int64)), ValueError, "y must hold one label per sample"),
        (dict(methods=["saliencyy"]), ValueError, "unknown explainer name 'saliencyy'"),
        (dict(methods=[]), ValueError, "at least one explainer"),
        (dict(n_explain=0), ValueError, "n_explain must be an int >= 1; got 0"),
        (dict(ground_truth=np.zeros((3, 4), bool)), ValueError, "ground_truth must hold one mask per sample"),
        (dict(X=np.zeros((8, 5), np.float32)), ValueError, "cannot take them"),
        (dict(as_frame="yes"), TypeError, "as_frame must be True, False or None"),
        (dict(baseline="blur"), TypeError, "baseline must be None, a number or an array"),
        (dict(baseline=np.zeros(3, np.float32)), ValueError, r"baseline must be a scalar, shaped like one input \(4,\)"),
        (dict(radius=-1.0), ValueError, "radius must be a finite number > 0"),
    ],
)
def test_bad_input(kwargs, error, match):
    model = torch.nn.Sequential(torch.nn.Linear(4, 2))
    args = dict(X=np.zeros((8, 4), np.float32), y=None)
    args.update(kwargs)
    X = args.pop("X")
    y = args.pop("y")
    with pytest.raises(error, match=match):
        fl.audit(model, X, y, progress=False, **args)


def test_ranking_rule_on_hand_made_scores():
    def r(method, ins, corr, sens, status="ok"):
        return {"method": method, "status": status, "insertion_minus_deletion": ins,
                "faithfulness_correlation": corr, "avg_sensitivity": sens, "reason": ""}

    rows = [r("A", 0.5, 0.9, 0.3), r("B", 0.6, 0.8, 0.1), r("C", 0.1, 0.2, 0.0),
            r("random", 0.0, 0.0, 0.5), r("D", float("nan"), float("nan"), float("nan"), "failed")]
    ranked = scoring.rank_rows(rows)
    # A and B both have mean faithfulness rank (2 + 1) / 2 = 1.5; B is more robust (0.1 < 0.3).
    assert [x["method"] for x in ranked] == ["B", "A", "C", "random", "D"]
    assert [x["rank"] for x in ranked] == [1, 2, 3, 4, None]
    assert ranked[0]["faithfulness_rank"] == ranked[1]["faithfulness_rank"] == 1.5
    scoring.add_reasons(ranked)
    assert scoring.verdict_text(ranked).startswith("Trust B most") and "3 of 3 methods beat" in scoring.verdict_text(ranked)
    rows = [r("A", 0.5, 0.9, 0.3), r("random", 0.9, 0.95, 0.5)]
    ranked = scoring.rank_rows(rows)
    scoring.add_reasons(ranked)
    assert ranked[0]["method"] == "random"
    assert "Not more faithful than the random map" in ranked[1]["reason"]
    assert scoring.verdict_text(ranked).startswith("No method beats the random map")


def test_sensitivity_pair_equals_the_public_metrics():
    # The audit explains the noisy copies once for both robustness scores; they must equal
    # fl.metrics.avg_sensitivity / max_sensitivity on the same draws.
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    x = np.random.default_rng(2).normal(size=(6, 5)).astype(np.float32)
    ex = fl.explainer("saliency", net)
    t = np.array([0, 1, 2, 0, 1, 2])
    a = ex.explain(x, target=t).values
    ctx = fl.metrics.ScoreContext(explainer=ex, x=x, target=t, a=a, radius=0.1, n_noise=4, seed=3)
    avg, mx = (fl.metrics.spec(m).score(ctx) for m in ("avg_sensitivity", "max_sensitivity"))
    assert list(ctx.cache) == ["sensitivities"]  # one set of noisy copies for both
    np.testing.assert_allclose(avg, fl.metrics.avg_sensitivity(ex, x, target=t, radius=0.1, n_samples=4, seed=3))
    np.testing.assert_allclose(mx, fl.metrics.max_sensitivity(ex, x, target=t, radius=0.1, n_samples=4, seed=3))
    assert (mx >= avg).all() and (avg > 0).all()


def test_one_channel_gradcam_maps_on_two_channel_signals():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv1d(2, 3, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(3 * 16, 2))
    X = np.random.default_rng(0).normal(size=(6, 2, 16)).astype(np.float32)
    table = fl.audit(net, X, methods=["gradcam", "random"], n_explain=4, progress=False, robustness_samples=2,
                     randomization=False, n_subsets=10, as_frame=False)
    assert table.notes == []
    gc = next(r for r in table if r["method"] == "gradcam")
    assert table.explanations["gradcam"].values.shape == (4, 1, 16)
    assert np.isfinite(gc["avg_sensitivity"]) and gc["max_sensitivity"] >= gc["avg_sensitivity"]
    assert np.isfinite(gc["insertion_minus_deletion"])


def test_randomization_explainers_get_the_audited_batch_size():
    # The randomised models' explainers must be built with the same parameters as the audited
    # one; batch_size used to be dropped, so the user's memory bound did not hold there.
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2))
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    seen = {}

    def fake(name, x, target=None, *, model=None, seed=0, explainer_params=None, attributions=None):
        seen.update(explainer_params)
        return fl.metrics.model_randomization(name, x, model=model, target=target, seed=seed,
                                              explainer_params=explainer_params, attributions=attributions)

    model = fl.models.Model(net)
    t = np.zeros(5, dtype=np.int64)
    ctx = fl.metrics.ScoreContext(model=model, x=x, target=t, seed=0, explainer_name="smoothgrad",
                                  explainer_params={"seed": 4, "batch_size": 3})
    got = _cascade_score(fake, ctx)
    assert seen == {"seed": 4, "batch_size": 3}
    ref = fl.metrics.model_randomization("smoothgrad", x, model=net, target=t, seed=0,
                                         explainer_params={"seed": 4, "batch_size": 3})["last"]
    np.testing.assert_allclose(got, ref)


def test_numpy_scalar_baseline_is_a_number():
    # baseline=X.mean() of float32 data is an np.float32; it was refused as a 0-d array.
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    X = np.random.default_rng(0).normal(size=(10, 5)).astype(np.float32)
    kw = dict(methods=["saliency"], n_explain=4, progress=False, robustness_samples=0, randomization=False,
              n_subsets=5, as_frame=False)
    ours = fl.audit(net, X, baseline=np.float32(0.25), **kw)
    ref = fl.audit(net, X, baseline=0.25, **kw)
    assert ours[0]["deletion_auc"] == ref[0]["deletion_auc"]
    with pytest.raises(ValueError, match="baseline must be a finite number"):
        fl.audit(net, X, baseline=np.float64("nan"), **kw)


@pytest.mark.parametrize("shape", [(1, 1024), (3, 5, 1000), (3, 32, 32), (28, 28), (2, 3, 7, 9)])
def test_patch_groups_give_at_most_64_players_for_thin_inputs_too(shape):
    # The patch side was sized for square inputs: a (1, 1024) signal got 256 players and a
    # (3, 5, 1000) image 112, above the bound the black-box games are sized for.
    groups = core.patch_groups(shape)
    n = core._players(shape, groups)
    assert 1 < n <= 64
    assert groups.shape == shape and np.array_equal(np.unique(groups), np.arange(n))
    if len(shape) >= 3:  # patches are shared over the channels
        assert (groups == groups[:1]).all()


def test_signal_ground_truth_over_the_length_holds_for_every_channel():
    # Masks shaped like the spatial part (L,) of (C, L) signals, as the docstring allows, made every
    # localisation metric fail (the signal was flattened to C * L, the mask stayed L long).
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv1d(2, 3, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(3 * 16, 2))
    X = np.random.default_rng(0).normal(size=(6, 2, 16)).astype(np.float32)
    gt = np.zeros((6, 16), bool)
    gt[:, 4:8] = True
    kw = dict(methods=["saliency", "random"], n_explain=4, progress=False, robustness_samples=0,
              randomization=False, n_subsets=10, as_frame=False)
    spatial = fl.audit(net, X, ground_truth=gt, **kw)
    full = fl.audit(net, X, ground_truth=np.broadcast_to(gt[:, None], X.shape), **kw)
    assert spatial.notes == []
    for r, ref in zip(spatial, full):
        for key in ("relevance_mass", "relevance_rank_accuracy", "precision_at_k"):
            assert np.isfinite(r[key]) and r[key] == ref[key]


def test_values_in_other_units_than_the_metrics_are_named_in_the_notes():
    """tree_shap on a boosted classifier explains the log-odds margin while the audit's metrics read
    predict_proba: the notes say so for that method, and for no method whose units agree."""
    from sklearn.ensemble import GradientBoostingClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    model = GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0).fit(X, y)
    table = fl.audit(model, X, y, methods=["tree_shap", "occlusion"], n_explain=6, as_frame=False,
                     progress=False, randomization=False)
    assert table.explanations["tree_shap"].output == "log_odds"
    unit_notes = [n for n in table.notes if "units" in n and "metrics read" in n]
    assert len(unit_notes) == 1 and unit_notes[0].startswith("tree_shap: its values are in log_odds units")
