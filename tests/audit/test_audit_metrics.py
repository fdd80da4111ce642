"""fl.audit(metrics=...): every metric family in the audit, their columns, reasons and
skip reasons, parity with the public metrics, and `featurelens audit --metrics`."""

import html
import json

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens._audit import scoring
from featurelens.metrics.robustness._stability import _continuity_steps
from featurelens.metrics.faithfulness._subsets import _sizes
from featurelens.cli import main

# The CLI test writes a traced TorchScript file; torch 2.13 deprecates torch.jit.trace but still runs it.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.trace")


def tiny_cnn(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(2 * 6 * 6, 3))


def images(n=4, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 1, 6, 6)).astype(np.float32)


FAST = dict(progress=False, steps=3, n_subsets=4, robustness_samples=2, as_frame=False)


# ------------------------------------------------------------------------------------------------
# choosing metrics


def test_resolve_metrics_default_all_names_and_errors():
    assert scoring.resolve_metrics(None) == scoring.default_metrics()
    assert scoring.resolve_metrics("all") == tuple(scoring.audit_specs())
    assert scoring.resolve_metrics(["irof", "all"]) == tuple(scoring.audit_specs())
    # audit_specs() order, duplicates dropped
    assert scoring.resolve_metrics(["completeness", "road", "road"]) == ("road", "completeness")
    assert scoring.resolve_metrics("irof") == ("irof",)
    with pytest.raises(ValueError, match=r"metrics: unknown metric 'roads'; valid names: deletion, insertion, .*road"):
        scoring.resolve_metrics(["roads"])
    with pytest.raises(ValueError, match="at least one metric"):
        scoring.resolve_metrics([])
    with pytest.raises(TypeError, match="metric names"):
        scoring.resolve_metrics([3])
    with pytest.raises(TypeError, match="metrics must be None"):
        scoring.resolve_metrics(3)


def test_every_metric_has_columns_a_family_and_a_reason_with_a_direction():
    keys = [k for k, _, _ in scoring.audit_columns()]
    assert len(keys) == len(set(keys))
    covered = {spec.column for spec in scoring.audit_specs().values()} | {"insertion_minus_deletion"}
    assert covered == set(keys)
    reasons = scoring.metric_reasons(scoring.audit_specs())
    for name, spec in scoring.audit_specs().items():
        assert spec.family in ("faithfulness", "robustness", "randomisation", "complexity", "axiomatic", "localisation")
        assert "better" in spec.reason, name  # what it measures and which way is better
        assert reasons[name].startswith(spec.reason) and f"({spec.family}; column " in reasons[name]
    # The default set is the table before metrics= existed: its twelve columns, in their order.
    assert scoring.metric_columns(scoring.default_metrics()) == tuple(keys[:12])
    assert scoring.metric_columns(["insertion"]) == ("insertion_auc",)
    assert scoring.metric_columns(["insertion", "deletion"]) == ("insertion_minus_deletion", "deletion_auc", "insertion_auc")


def test_unknown_metric_is_a_clear_error_before_any_work():
    with pytest.raises(ValueError, match="unknown metric 'nope'.*relative_input_stability"):
        fl.audit(torch.nn.Linear(4, 2), np.zeros((3, 4), np.float32), metrics=["nope"], progress=False)


def test_continuity_grid_never_has_the_zero_shift():
    for length in range(1, 70):
        k = _continuity_steps(length)
        dx = (2 * length + 1) // k
        shifts = [-length + (j + 1) * dx for j in range(k)]
        assert 1 <= k <= 8 and dx >= 1 and 0 not in shifts
    assert _continuity_steps(6) == 3  # 8..4 steps would all hit shift 0 on a 6-wide image
    assert _sizes(64) == [6, 19, 32] and _sizes(1) == [1]


# ------------------------------------------------------------------------------------------------
# the table


def test_default_table_is_unchanged_and_equals_the_explicit_default_list():
    pytest.importorskip("pandas")
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    X = np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)
    kw = dict(methods=["saliency", "random"], n_explain=5, progress=False, steps=4, n_subsets=5, robustness_samples=2)
    default = fl.audit(net, X, **kw)
    explicit = fl.audit(net, X, metrics=list(scoring.default_metrics()), **kw)
    assert list(default.columns) == list(scoring._ROW_KEYS)
    assert [k for k in default.columns if k in {c[0] for c in scoring.audit_columns()}] == [
        "insertion_minus_deletion", "deletion_auc", "insertion_auc", "faithfulness_correlation", "avg_sensitivity",
        "max_sensitivity", "sparseness", "complexity", "randomization_similarity", "relevance_mass",
        "relevance_rank_accuracy", "precision_at_k"]
    metric = [c[0] for c in scoring.audit_columns()[:9]]
    np.testing.assert_array_equal(default[metric].to_numpy(float), explicit[metric].to_numpy(float))
    assert default.attrs["notes"] == []  # no masks: localisation skips silently, as before
    # explicitly requested, the same skip is noted
    assert explicit.attrs["notes"] == [f"{m}: not applicable (needs ground_truth masks)"
                                       for m in ("relevance_mass", "relevance_rank_accuracy", "precision_at_k")]
    assert set(default.attrs["metrics"]) == set(scoring.default_metrics()) - {
        "relevance_mass", "relevance_rank_accuracy", "precision_at_k"}


def test_metrics_select_exactly_their_columns_and_the_values_equal_the_public_metrics():
    net = tiny_cnn()
    X = images()
    table = fl.audit(net, X, methods=["input_x_gradient", "random"], metrics=["irof", "completeness", "deletion", "road"],
                     n_explain=4, seed=0, **FAST)
    cols = [k for k in table[0] if k in {c[0] for c in scoring.audit_columns()}]
    assert cols == ["deletion_auc", "road", "irof", "completeness"]  # no ins - del without insertion
    assert set(table.metrics) == {"deletion", "irof", "completeness", "road"}
    assert table.skipped_metrics == {}
    assert any("neither was run" in n for n in table.notes)  # the ranking has nothing to read
    # Every row audited (n_explain = n), targets = predicted class: the columns are the public metrics' means.
    x = X
    t = net(torch.from_numpy(x)).argmax(1).numpy()
    a = table.explanations["input_x_gradient"].values
    r = next(row for row in table if row["method"] == "input_x_gradient")
    assert r["irof"] == pytest.approx(fl.metrics.irof(net, x, a, target=t, baseline=0.0)[1].mean(), rel=1e-9)
    gap = fl.metrics.completeness(net, x, a, target=t, baseline=0.0)
    assert r["completeness"] == pytest.approx(np.abs(gap).mean(), rel=1e-9)
    pct = 100.0 * (np.arange(3) + 0.5) / 3
    assert r["road"] == pytest.approx(fl.metrics.road(net, x, a, target=t, percentages=pct, seed=0)[1].mean(), abs=1e-12)


def test_completeness_is_zero_for_input_x_gradient_on_a_linear_model():
    # f_t(x) = w_t . x + b with the zero baseline: sum_i x_i w_ti = f_t(x) - f_t(0) exactly.
    torch.manual_seed(0)
    net = torch.nn.Linear(6, 2)
    X = np.random.default_rng(2).normal(size=(5, 6)).astype(np.float32)
    table = fl.audit(net, X, methods=["input_x_gradient", "saliency"], metrics=["completeness", "selectivity"],
                     baseline=0.0, n_explain=5, **FAST)
    rows = {r["method"]: r for r in table}
    assert rows["input_x_gradient"]["completeness"] == pytest.approx(0.0, abs=1e-5)
    assert rows["saliency"]["completeness"] > 1e-2  # the gradient alone does not sum to the change
    # Selectivity on a linear model: removing features in the order of w * x is the fastest fall.
    assert rows["input_x_gradient"]["selectivity"] <= rows["saliency"]["selectivity"] + 1e-9


# ------------------------------------------------------------------------------------------------
# skip reasons


def test_inapplicable_metrics_are_skipped_with_reasons_not_failures():
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 1)  # tabular rows, a single output
    X = np.random.default_rng(0).normal(size=(4, 4)).astype(np.float32)
    table = fl.audit(net, X, methods=["saliency"], n_explain=4, randomization=False, progress=False,
                     metrics=["road", "continuity", "random_logit", "sufficiency", "selectivity", "model_randomization",
                              "relevance_mass"], as_frame=False)
    why = table.skipped_metrics
    assert set(why) == {"road", "continuity", "random_logit", "sufficiency", "model_randomization", "relevance_mass"}
    assert "needs images" in why["road"] and "(4, 4)" in why["road"]
    assert "translates the input" in why["continuity"]
    assert why["random_logit"] == why["sufficiency"] == "needs a model with at least 2 outputs (classes); this one has 1"
    assert why["model_randomization"] == "randomization=False"
    assert why["relevance_mass"] == "needs ground_truth masks"
    for m, reason in why.items():
        assert f"{m}: not applicable ({reason})" in table.notes
    assert not any("failed" in n for n in table.notes), table.notes
    r = table[0]
    assert r["status"] == "ok" and np.isfinite(r["selectivity"]) and np.isnan(r["road"])
    assert list(table.metrics) == ["selectivity"]


def test_randomisation_and_noise_metrics_skip_without_a_module_or_noise():
    X = np.random.default_rng(0).normal(size=(4, 8)).astype(np.float32)
    w = np.random.default_rng(1).normal(size=(8, 2))
    table = fl.audit(lambda z: np.asarray(z) @ w, X, methods=["occlusion"], n_explain=4, robustness_samples=0,
                     metrics=["efficient_mprt", "smooth_mprt", "relative_input_stability", "random_logit"],
                     progress=False, as_frame=False)
    assert "needs a torch module with parameters" in table.skipped_metrics["efficient_mprt"]
    assert "needs a torch module with parameters" in table.skipped_metrics["smooth_mprt"]
    assert table.skipped_metrics["relative_input_stability"] == "robustness_samples=0 (no noisy copies)"
    assert list(table.metrics) == ["random_logit"]
    assert np.isfinite(table[0]["random_logit"])


# ------------------------------------------------------------------------------------------------
# "all" on a small CNN, and the report


@pytest.fixture(scope="module")
def audit_all(tmp_path_factory):
    net = tiny_cnn(1)
    X = images(5, seed=3)
    masks = np.zeros((5, 6, 6), bool)
    masks[:, 1:4, 1:4] = True
    out = tmp_path_factory.mktemp("m") / "report"
    table = fl.audit(net, X, methods=["saliency", "random"], metrics="all", ground_truth=masks, out=out,
                     n_explain=5, seed=0, **FAST)
    return table, out


def test_all_runs_every_metric_on_a_small_cnn_without_failures(audit_all):
    table, _ = audit_all
    assert table.skipped_metrics == {}
    assert set(table.metrics) == set(scoring.audit_specs())
    assert not any("failed" in n for n in table.notes), table.notes
    keys = [c[0] for c in scoring.audit_columns()]
    for r in table:
        assert r["status"] == "ok"
        assert [k for k in r if k in keys] == keys
        # sufficiency and consistency compare samples with each other: NaN where no other map is close
        finite = [k for k in keys if k not in ("sufficiency", "consistency")]
        assert all(np.isfinite(r[k]) for k in finite), {k: r[k] for k in finite if not np.isfinite(r[k])}
    rnd = next(r for r in table if r["method"] == "random")
    assert rnd["randomization_similarity"] == pytest.approx(1.0)  # the random map ignores the weights
    assert rnd["smooth_mprt"] == pytest.approx(1.0)
    assert rnd["efficient_mprt"] == pytest.approx(0.0)


def test_report_lists_each_metric_with_its_reason(audit_all):
    table, out = audit_all
    page = html.unescape((out / "index.html").read_text(encoding="utf-8"))
    assert "What each metric measures" in page
    for name, line in table.metrics.items():
        assert f"{name}: {line}" in page, name
    assert "IROF ↑" in page and "ROAD ↓" in page  # the new columns with their directions
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["metrics"] == table.metrics and doc["skipped_metrics"] == {}
    assert doc["settings"]["metrics"] == list(scoring.audit_specs())
    header = (out / "results.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header == list(scoring.row_keys(scoring.metric_columns(scoring.audit_specs())))


def test_report_lists_skip_reasons(tmp_path):
    net = torch.nn.Linear(3, 1)
    X = np.random.default_rng(0).normal(size=(3, 3)).astype(np.float32)
    fl.audit(net, X, methods=["saliency"], metrics=["road", "complexity"], out=tmp_path / "r", n_explain=3,
             progress=False, as_frame=False)
    page = html.unescape((tmp_path / "r" / "index.html").read_text(encoding="utf-8"))
    assert "Metrics not applicable here" in page and "road: needs images" in page
    assert "complexity: entropy of |a| / sum |a| (Bhatt et al. 2020); lower is a simpler map" in page


# ------------------------------------------------------------------------------------------------
# the command line


def test_cli_metrics_option(tmp_path, capsys):
    pytest.importorskip("pandas")
    net = tiny_cnn(2)
    ts = torch.jit.trace(net, torch.zeros(1, 1, 6, 6))
    ts.save(str(tmp_path / "m.pt"))
    np.save(tmp_path / "X.npy", images(3, seed=4))
    rc = main(["audit", "--model", str(tmp_path / "m.pt"), "--trust-model-file", "--data", str(tmp_path / "X.npy"), "--methods",
               "saliency", "--metrics", "irof", "effective_complexity", "--n-explain", "3", "--out",
               str(tmp_path / "r"), "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "r" / "results.json").read_text(encoding="utf-8"))
    assert doc["settings"]["metrics"] == ["irof", "effective_complexity"]
    assert set(doc["metrics"]) == {"irof", "effective_complexity"}
    row = doc["table"][0]
    assert np.isfinite(row["irof"]) and "effective_complexity" in row and "deletion_auc" not in row
    capsys.readouterr()
    rc = main(["audit", "--model", str(tmp_path / "m.pt"), "--trust-model-file", "--data", str(tmp_path / "X.npy"), "--metrics", "roads"])
    err = capsys.readouterr().err
    assert rc == 2 and "--metrics: unknown value 'roads'" in err and "road, irof" in err and "all" in err


def test_cli_parser_accepts_all():
    from featurelens.cli import build_parser

    args = build_parser().parse_args(["audit", "--model", "m.pt", "--data", "x.npy", "--metrics", "all"])
    assert args.metrics == ["all"]
    assert build_parser().parse_args(["audit", "--model", "m", "--data", "x"]).metrics is None


def test_new_metrics_on_an_executor_equal_the_serial_run():
    from featurelens.parallel import ThreadExecutor

    net = tiny_cnn(5)
    X = images(4, seed=6)
    kw = dict(methods=["saliency"], n_explain=4, seed=0, **FAST,
              metrics=["irof", "continuity", "consistency", "relative_input_stability", "efficient_mprt", "random_logit"])
    serial = fl.audit(net, X, **kw)[0]
    with ThreadExecutor(2) as ex:
        par = fl.audit(net, X, executor=ex, **kw)[0]
    for key in ("irof", "continuity", "consistency", "relative_input_stability", "efficient_mprt", "random_logit"):
        np.testing.assert_allclose(par[key], serial[key], rtol=1e-5, equal_nan=True, err_msg=key)


def test_re_explaining_and_subset_columns_equal_the_public_metrics():
    net = tiny_cnn(7)
    X = images(4, seed=8)
    names = ["sensitivity_n", "continuity", "relative_input_stability", "random_logit", "monotonicity"]
    table = fl.audit(net, X, methods=["saliency"], metrics=names, n_explain=4, seed=0, baseline=0.0, **FAST)
    r = table[0]
    t = net(torch.from_numpy(X)).argmax(1).numpy()
    ex = fl.explainer("saliency", net)
    a = ex.explain(X, target=t).values
    groups = np.arange(36).reshape(1, 6, 6)  # 36 elements <= 64: every element is a region
    sn = fl.metrics.sensitivity_n(net, X, a, target=t, ns=[4, 11, 18], n_subsets=4, seed=0, baseline=0.0, groups=groups)
    assert r["sensitivity_n"] == pytest.approx(np.nanmean(np.nanmean(sn, axis=1)), rel=1e-9)
    assert r["continuity"] == pytest.approx(fl.metrics.continuity(ex, X, target=t, steps=3).mean(), rel=1e-6)
    ris = fl.metrics.relative_input_stability(ex, X, target=t, radius=0.1, n_samples=2, seed=0)
    assert r["relative_input_stability"] == pytest.approx(np.nanmean(ris), rel=1e-6)
    assert r["random_logit"] == pytest.approx(fl.metrics.random_logit(ex, X, target=t, seed=0).mean(), rel=1e-6)
    mono = fl.metrics.monotonicity(net, X, a, target=t, steps=3, baseline=0.0, groups=groups)
    assert r["monotonicity"] == pytest.approx(mono.mean(), abs=1e-12)
