"""benchmarks/compare_results.py on planted old/new results pairs: an equal pair passes, a changed
value is caught (with its size), a changed timing is not a failure, a slower ratio is flagged
against the noise the old file records (or 10%), and the key-name classification is the one
documented."""

from __future__ import annotations

import copy
import json

import pytest


@pytest.fixture(scope="module")
def cr(benchmark_script):
    return benchmark_script("compare_results")


def planted():
    """A results file shaped like bench_gradients.json: environment, run settings, rows, runs."""
    rows = [
        {"model": "A", "method": "saliency", "featurelens_s": 0.010, "captum_best_s": 0.020,
         "captum_best_setting": "default", "ratio_vs_captum_best": 0.5, "max_abs_diff": 1.25e-9,
         "max_abs_value": 0.5, "calls_per_sample": {"featurelens": 33}, "rounds": 9, "meets_target": True,
         "all_times_s": {"featurelens": [0.010, 0.0102, 0.0104]}, "status": "ok", "terms_out": 20},
        {"model": "A", "method": "ig", "featurelens_s": 1.0, "captum_best_s": 2.0,
         "captum_best_setting": "internal_batch_size=256", "ratio_vs_captum_best": 0.5, "max_abs_diff": 0.0,
         "max_abs_value": 0.25, "calls_per_sample": {"featurelens": 1}, "rounds": 3, "meets_target": True,
         "all_times_s": {"featurelens": [1.0]}, "status": "ok", "terms_out": 7},
    ]
    return {"environment": {"torch": "2.13.0+cpu", "threads": 2, "platform": "Linux-a"},
            "run": {"repeats": 9, "batch": 32, "load_before": [0.5, 0.4, 0.3], "load_after": [2.0, 1.0, 0.5],
                    "seconds": 315.0},
            "rows": rows}


def test_equal_pair_passes(cr):
    old = planted()
    res = cr.compare(old, copy.deepcopy(old), "gradients")
    assert res["ok"]
    assert res["value_diffs"] == [] and res["slower_ratios"] == []
    # per row: model, method, max_abs_diff, max_abs_value, status, n_terms are values (6 x 2 rows), plus run.batch
    assert res["values_equal"] == 13
    assert res["values_exact"] == 13
    assert res["values_max_abs_diff"] == 0.0


def test_changed_value_is_caught_with_its_size(cr):
    old, new = planted(), planted()
    new["rows"][0]["max_abs_diff"] = 1.5e-9
    new["rows"][1]["terms_out"] = 8
    new["rows"][1]["status"] = "timeout"
    res = cr.compare(old, new, "gradients")
    assert not res["ok"]
    diffs = {d["field"]: d for d in res["value_diffs"]}
    assert set(diffs) == {"rows[model=A, method=saliency].max_abs_diff", "rows[model=A, method=ig].terms_out",
                          "rows[model=A, method=ig].status"}
    d = diffs["rows[model=A, method=saliency].max_abs_diff"]
    assert d["old"] == 1.25e-9 and d["new"] == 1.5e-9
    assert d["abs_diff"] == pytest.approx(0.25e-9)
    assert d["rel_diff"] == pytest.approx(0.25 / 1.5)
    assert diffs["rows[model=A, method=ig].terms_out"]["abs_diff"] == 1.0


def test_float_tolerance_is_relative(cr):
    old, new = planted(), planted()
    new["rows"][0]["max_abs_value"] = 0.5 * (1 + 4e-10)  # inside 1e-9 relative
    res = cr.compare(old, new, "gradients")
    assert res["ok"]
    assert res["values_exact"] == res["values_equal"] - 1
    assert res["values_max_abs_diff"] == pytest.approx(2e-10)
    new["rows"][0]["max_abs_value"] = 0.5 * (1 + 4e-9)  # outside
    assert not cr.compare(old, new, "gradients")["ok"]
    assert cr.compare(old, new, "gradients", rel_tol=1e-8)["ok"]


def test_changed_timings_and_environment_are_not_failures(cr):
    old, new = planted(), planted()
    for r in new["rows"]:
        r["featurelens_s"] *= 0.9  # faster, so the ratio falls
        r["captum_best_s"] *= 0.9
        r["all_times_s"]["featurelens"] = [t * 3 for t in r["all_times_s"]["featurelens"]]
        r["calls_per_sample"]["featurelens"] += 5
        r["captum_best_setting"] = "internal_batch_size=1024"
        r["meets_target"] = False
        r["rounds"] = 5
    new["run"].update(seconds=900.0, load_before=[5.0, 4.0, 3.0], repeats=5)
    new["environment"]["platform"] = "Linux-b"
    res = cr.compare(old, new, "gradients")
    assert res["ok"] and res["value_diffs"] == []
    assert res["slower_ratios"] == []
    assert {s["field"] for s in res["settings"]} == {
        "run.repeats", "rows[model=A, method=saliency].rounds", "rows[model=A, method=ig].rounds"}
    assert {e["field"] for e in res["environment"]} == {"environment.platform", "run.load_before"}
    assert res["timings"] > 0


def test_slower_ratio_is_flagged_against_the_recorded_noise(cr):
    old, new = planted(), planted()
    # saliency: featurelens' own rounds spread by 4% in the old file; +5% is flagged, +3% is not
    new["rows"][0]["ratio_vs_captum_best"] = 0.5 * 1.05
    # ig: one round recorded, so the 10% default applies; +8% is not flagged
    new["rows"][1]["ratio_vs_captum_best"] = 0.5 * 1.08
    res = cr.compare(old, new, "gradients")
    assert res["ok"]  # a slower ratio is a flag, not a value failure
    flagged = {r["field"]: r for r in res["slower_ratios"]}
    assert set(flagged) == {"rows[model=A, method=saliency].ratio_vs_captum_best"}
    f = flagged["rows[model=A, method=saliency].ratio_vs_captum_best"]
    assert f["noise"] == pytest.approx(0.04)
    assert f["change"] == pytest.approx(0.05)
    ig = next(r for r in res["ratios"] if "ig" in r["field"])
    assert ig["noise"] == 0.10 and ig["noise_source"].startswith("none recorded")
    new["rows"][0]["ratio_vs_captum_best"] = 0.5 * 1.03
    new["rows"][1]["ratio_vs_captum_best"] = 0.5 * 1.12
    res = cr.compare(old, new, "gradients")
    assert [r["field"] for r in res["slower_ratios"]] == ["rows[model=A, method=ig].ratio_vs_captum_best"]


def test_noise_from_repeated_runs_and_speedup_direction(cr):
    old = planted()
    run2 = copy.deepcopy(old["rows"])
    run2[1]["ratio_vs_captum_best"] = 0.6  # the old file's two runs differ by 20% on ig
    old["runs"] = [copy.deepcopy(old["rows"]), run2]
    new = copy.deepcopy(old)
    new["rows"][1]["ratio_vs_captum_best"] = 0.5 * 1.15
    res = cr.compare(old, new, "gradients")
    ig = next(r for r in res["ratios"] if r["field"] == "rows[model=A, method=ig].ratio_vs_captum_best")
    assert ig["noise"] == pytest.approx(0.2) and not ig["slower"]
    # a speed-up (larger = featurelens faster) that falls is a slowdown
    old2 = {"rows": [{"case": "c", "speedup_vs_loop": 12.0, "value": 1.0}]}
    new2 = {"rows": [{"case": "c", "speedup_vs_loop": 10.0, "value": 1.0}]}
    res = cr.compare(old2, new2, "agop")
    assert [r["field"] for r in res["slower_ratios"]] == ["rows[case=c].speedup_vs_loop"]
    assert res["slower_ratios"][0]["change"] == pytest.approx(0.2)
    # bench_metrics' "ratio" is Quantus time / featurelens time: larger is faster
    res = cr.compare({"rows": [{"metric": "m", "ratio": 8.0}]}, {"rows": [{"metric": "m", "ratio": 6.0}]}, "metrics")
    assert len(res["slower_ratios"]) == 1
    res = cr.compare({"rows": [{"metric": "m", "ratio": 8.0}]}, {"rows": [{"metric": "m", "ratio": 6.0}]}, "tree")
    assert res["slower_ratios"] == []
    # a reference library's row (its own time against the floor) is reported, not flagged
    res = cr.compare({"rows": [{"method": "shap KernelExplainer", "time_vs_floor": 4.0}]},
                     {"rows": [{"method": "shap KernelExplainer", "time_vs_floor": 6.0}]}, "shapley")
    assert res["slower_ratios"] == [] and res["ratios"][0]["change"] == pytest.approx(0.5)
    res = cr.compare({"rows": [{"method": "featurelens kernel_shap", "time_vs_floor": 4.0}]},
                     {"rows": [{"method": "featurelens kernel_shap", "time_vs_floor": 6.0}]}, "shapley")
    assert len(res["slower_ratios"]) == 1


def test_rows_are_matched_by_identity_and_subsets_are_not_failures(cr):
    old, new = planted(), planted()
    new["rows"] = [new["rows"][1]]  # a rerun of one method, in another order
    res = cr.compare(old, new, "gradients")
    assert res["ok"]
    assert "rows[model=A, method=saliency].max_abs_diff" in res["only_old"]
    assert res["only_new"] == []


@pytest.mark.parametrize("path, category", [
    (("environment", "torch"), "environment"),
    (("run", "load_before"), "environment"),
    (("rows", 0, "featurelens_s"), "timing"),
    (("rows", 0, "all_times_s", "featurelens"), "timing"),
    (("rows", 0, "floor_s_by_setting", "one call"), "timing"),
    (("run", "reference_seconds"), "timing"),
    (("ms_per_query",), "timing"),
    (("timing", "digits 8x8 (256)", "saliency", "median"), "timing"),
    (("rows", 0, "captum_best_setting"), "timing"),
    (("rows", 0, "ratio_vs_floor_best"), "ratio"),
    (("comparisons", "x vs y", "time_ratio_featurelens_over_xrfm"), "ratio"),
    (("rows", 0, "loop_variants", "numpy", "speedup"), "ratio"),
    (("rows", 0, "speedup_bound_loop_over_floor"), "timing"),
    (("rows", 0, "featurelens_peak_mib"), "memory"),
    (("run", "repeats"), "setting"),
    (("rows", 0, "max_abs_diff"), "value"),
    (("rows", 0, "mae_vs_shap_most_accurate"), "value"),
    (("rows", 0, "errors_by_seed", 0, 1), "value"),
    (("run", "reference_half_diff_max"), "value"),
    (("rows", 0, "agreement"), "value"),
])
def test_classification_by_key_name(cr, path, category):
    assert cr.classify(path)[0] == category


def test_report_files(cr, tmp_path):
    old, new = planted(), planted()
    new["rows"][0]["max_abs_diff"] = 2e-9
    new["rows"][0]["ratio_vs_captum_best"] = 0.7
    (tmp_path / "old.json").write_text(json.dumps(old))
    folder = tmp_path / "round"
    folder.mkdir()
    (folder / "gradients.json").write_text(json.dumps(new))
    (folder / "runs.json").write_text(json.dumps({"gradients": {
        "command": "bench_gradients.py --batch 32", "head": "abc1234", "rc": 0, "wall_s": 10.0,
        "load_before": [1.0, 1.0, 1.0], "load_after": [2.0, 1.5, 1.0], "started_utc": "2026-12-03T09:00:00Z"}}))
    rc = cr.main(["--old", str(tmp_path / "old.json"), "--round", f"r1={folder}", "--report", str(tmp_path / "rep")])
    assert rc == 1  # a value differs
    md = (tmp_path / "rep.md").read_text()
    assert "rows[model=A, method=saliency].max_abs_diff" in md and "SLOWER" in md
    assert "[1.0, 1.0, 1.0] before" in md and "How fields were classified" in md
    data = json.loads((tmp_path / "rep.json").read_text())
    assert data["results"][0]["value_diffs"][0]["new"] == 2e-9
    assert data["results"][0]["slower_ratios"][0]["new"] == 0.7


def test_round_against_another_folder(cr, tmp_path):
    """LABEL=DIR@OLD_DIR:NAMES compares with the files of OLD_DIR (an A/B on one machine), only NAMES."""
    old, new = planted(), planted()
    for d, tree in (("a", old), ("b", new)):
        (tmp_path / d).mkdir()
        (tmp_path / d / "gradients.json").write_text(json.dumps(tree))
        (tmp_path / d / "other.json").write_text(json.dumps({"rows": [{"case": "c", "value": 1.0 if d == "a" else 2.0}]}))
    assert cr.main(["--round", f"ab={tmp_path / 'b'}@{tmp_path / 'a'}:gradients", "--report", str(tmp_path / "r")]) == 0
    data = json.loads((tmp_path / "r.json").read_text())
    assert [r["name"] for r in data["results"]] == ["gradients"]
    assert data["results"][0]["old_file"] == str(tmp_path / "a" / "gradients.json")
    assert cr.main(["--round", f"ab={tmp_path / 'b'}@{tmp_path / 'a'}"]) == 1  # other.json's value differs
