"""The ground-truth benchmark runner and its HTML report."""

import base64
import csv
import json
import math
import os
from html.parser import HTMLParser

import pytest

from featurelens.groundtruth import run_benchmark
from featurelens.groundtruth.report import write_benchmark_report
from featurelens.groundtruth.methods import default_methods
from featurelens.report import HTMLReport

TINY = dict(
    scenarios=["linear"],
    backgrounds=["white"],
    models=["llr", "mlp"],
    methods=["saliency", "gradcam", "agop_global", "random"],
    n_samples=2000,
    n_explain=40,
    epochs=40,
    patience=30,
    seed=0,
    progress=False,
    n_jobs=1,
)


@pytest.fixture(scope="module")
def tiny():
    return run_benchmark(**TINY)


def test_rows_cover_every_model_and_method(tiny):
    keys = [(r["model"], r["method"]) for r in tiny.rows]
    assert keys == [(m, meth) for m in ("llr", "mlp") for meth in TINY["methods"]]
    assert {(r["scenario"], r["background"]) for r in tiny.rows} == {("linear", "white")}
    assert [(m["model"], m["scenario"]) for m in tiny.models] == [("llr", "linear"), ("mlp", "linear")]


def test_gradcam_is_not_applicable_without_a_convolution(tiny):
    for model in ("llr", "mlp"):
        row = tiny.row("linear", "white", model, "gradcam")
        assert row["status"] == "not applicable" and row["n"] == 0
        assert math.isnan(row["precision_mean"])
        assert "convolutional" in row["reason"]
    assert all(r["status"] == "ok" for r in tiny.rows if r["method"] != "gradcam")


def test_llr_saliency_beats_random_on_the_linear_scenario(tiny):
    sal = tiny.row("linear", "white", "llr", "saliency")
    rnd = tiny.row("linear", "white", "llr", "random")
    # The LLR's gradient is its weight vector, which sits on the two tetromino locations.
    assert sal["precision_mean"] > rnd["precision_mean"] + 0.4
    assert sal["iou_mean"] > rnd["iou_mean"] + 0.4
    assert sal["emd_mean"] > rnd["emd_mean"]
    # A uniform random map finds about k/D of the pattern pixels: 8 of 64.
    assert rnd["precision_mean"] == pytest.approx(8 / 64, abs=0.08)
    assert sal["n"] == rnd["n"] == tiny.models[0]["n_explained"]
    assert 0 < sal["n"] <= TINY["n_explain"]


def test_models_are_trained_to_useful_accuracy(tiny):
    for rec in tiny.models:
        assert rec["test_accuracy"] > 0.7, rec
        assert rec["epochs"] <= TINY["epochs"]


def test_summary_pools_models_and_backgrounds(tiny):
    s = tiny.summary_row("saliency", "linear")
    rows = [tiny.row("linear", "white", m, "saliency") for m in ("llr", "mlp")]
    assert s["n"] == sum(r["n"] for r in rows)
    expected = sum(r["precision_mean"] * r["n"] for r in rows) / s["n"]
    assert s["precision_mean"] == pytest.approx(expected)
    # gradcam applies to no model here: its summary has no samples.
    assert tiny.summary_row("gradcam", "linear")["n"] == 0


def test_text_table_lists_methods_and_marks_the_best(tiny):
    text = tiny.format_table()
    for method in TINY["methods"]:
        assert method in text
    assert "LIN" in text and "precision" in text and "EMD" in text
    best_line = [line for line in text.splitlines() if line.startswith("agop_global") or line.startswith("saliency")]
    assert any("*" in line for line in best_line)
    assert "not appl." in text and "gradcam: not applicable: needs a convolutional layer" in text


def test_example_figures_are_pngs(tiny):
    assert list(tiny.figures) == ["example_maps.png"]
    assert tiny.figures["example_maps.png"][:8] == b"\x89PNG\r\n\x1a\n"


def test_run_is_deterministic():
    kw = dict(TINY, models=["llr"], methods=["saliency", "smoothgrad", "random"], epochs=5, n_explain=10)
    a, b = run_benchmark(**kw), run_benchmark(**kw)
    assert [r["precision_mean"] for r in a.rows] == [r["precision_mean"] for r in b.rows]
    assert [r["emd_mean"] for r in a.rows] == [r["emd_mean"] for r in b.rows]
    assert a.models[0]["best_val_loss"] == b.models[0]["best_val_loss"]


def test_default_methods_are_gradient_and_agop_then_random():
    methods = default_methods()
    assert methods[-1] == "random"
    for name in ("saliency", "integrated_gradients", "smoothgrad", "gradcam", "agop_global", "agop_weighted"):
        assert name in methods


def test_default_methods_follow_the_class_declarations(monkeypatch):
    """The defaults are read from the classes (benchmark_default, benchmark_order, requires), so a
    new gradient explainer joins them, a declared reason keeps one out, and the declared places
    come first; brute force over the registry, independent of the runner's sort."""
    from featurelens.explainers import _base
    from featurelens.explainers._base import Explainer, Requires, explainer_class

    class NewGradient(Explainer):
        requires = Requires(gradients=True)

    class LeftOut(Explainer):
        requires = Requires(gradients=True)
        benchmark_default = "too slow for the benchmark"

    class First(Explainer):
        requires = Requires(gradients=False)
        benchmark_default = True
        benchmark_order = -1

    registry = dict(_base._REGISTRY, zz_new_gradient=NewGradient, zz_left_out=LeftOut, zz_first=First)
    monkeypatch.setattr(_base, "_REGISTRY", registry)
    methods = default_methods()
    assert methods[0] == "zz_first" and "zz_new_gradient" in methods and "zz_left_out" not in methods
    assert methods[-1] == "random"
    expected_set = {n for n in registry if n != "random" and (
        registry[n].benchmark_default is True
        or (registry[n].benchmark_default is None and registry[n].requires.gradients))}
    assert set(methods[:-1]) == expected_set
    placed = [n for n in methods[:-1] if explainer_class(n).benchmark_order is not None]
    assert methods[:len(placed)] == placed  # the declared places first ...
    assert [explainer_class(n).benchmark_order for n in placed] == sorted(
        explainer_class(n).benchmark_order for n in placed)  # ... in their order ...
    assert methods[len(placed):-1] == sorted(methods[len(placed):-1])  # ... then the others by name


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(methods=["saliency", "nope"]), r"unknown method 'nope'.*saliency"),
        (dict(scenarios=["lin"]), r"unknown scenario 'lin'.*linear"),
        (dict(backgrounds=["pink"]), r"unknown background 'pink'.*white"),
        (dict(models=["resnet"]), r"unknown model 'resnet'.*llr"),
        (dict(models=["llr"], scenarios=["xor"]), r"linear"),
        (dict(n_samples=802), r"divisible by 4"),
        (dict(image_size=16), r"image_size"),
    ],
)
def test_bad_arguments_name_the_option(kwargs, match):
    with pytest.raises(ValueError, match=match):
        run_benchmark(**dict(TINY, **kwargs))


# -- the report ----------------------------------------------------------------------------------


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.images, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "img":
            self.images.append(dict(attrs))

    def handle_data(self, data):
        self.text.append(data)


def test_report_folder(tiny, tmp_path):
    path = write_benchmark_report(tiny, tmp_path / "report")
    folder = tmp_path / "report"
    assert path == os.path.join(folder, "index.html")
    for name in ("index.html", "results.csv", "results.json", "example_maps.png"):
        assert (folder / name).is_file(), name

    page = (folder / "index.html").read_text(encoding="utf-8")
    parsed = _Collector()
    parsed.feed(page)
    parsed.close()
    assert parsed.tags.count("table") >= 4  # summary, two per-model tables, trained models
    # The example grid: input, ground truth and the maps of the example model (the LLR here: no
    # CNN was trained), each panel an embedded PNG; gradcam has no map and is listed instead.
    shown = [m for m in TINY["methods"] if m in tiny.examples[0]["maps"]]
    assert shown == ["saliency", "agop_global", "random"]
    assert len(parsed.images) == 2 + len(shown)
    for image in parsed.images:
        assert image["src"].startswith("data:image/png;base64,")
        assert base64.b64decode(image["src"].split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    text = " ".join(parsed.text)
    assert "How to read this" in text and "random map is the floor" in text
    assert "agop_global" in text and "gradcam: not applicable: needs a convolutional layer" in text
    assert 'class="best"' in page

    with open(folder / "results.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(tiny.rows)
    sal = next(r for r in rows if r["model"] == "llr" and r["method"] == "saliency")
    assert float(sal["precision_mean"]) == pytest.approx(tiny.row("linear", "white", "llr", "saliency")["precision_mean"], rel=1e-5)
    assert next(r for r in rows if r["method"] == "gradcam")["precision_mean"] == ""

    data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert len(data["rows"]) == len(tiny.rows)
    assert data["settings"]["n_explain"] == TINY["n_explain"]
    assert data["versions"]["featurelens"] and data["versions"]["torch"]
    assert data["timings"]["total_seconds"] > 0
    assert data["figures"] == ["example_maps.png"]
    assert data["rows"][1]["precision_mean"] is None  # gradcam not applicable: NaN becomes null
    assert data["rows"][1]["status"] == "not applicable" and "convolutional" in data["rows"][1]["reason"]


def test_html_report_escapes_text(tmp_path):
    page = HTMLReport("<b>title</b>", subtitle="a & b")
    page.add_paragraph("<script>alert(1)</script>")
    page.add_table([["<h>"]], [["<td-text>", 1]])
    html = page.render()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<b>title</b>" not in html and "&lt;b&gt;title&lt;/b&gt;" in html
    assert "&lt;td-text&gt;" in html and "a &amp; b" in html
    with pytest.raises(ValueError, match="PNG"):
        page.add_image(b"not a png", "x")
    out = page.save(tmp_path / "page.html")
    assert open(out, encoding="utf-8").read() == html


def test_seed_takes_an_int_or_a_generator_and_records_the_int_used():
    import numpy as np

    small = dict(TINY, models=["llr"], methods=["saliency"], n_samples=400, n_explain=10, epochs=3, patience=3)
    drawn = run_benchmark(**dict(small, seed=np.random.default_rng(7)))
    assert drawn.settings["seed"] == "generator"  # featurelens._random.seed_record
    used = drawn.settings["seed_root"]
    assert isinstance(used, int) and used >= 0
    again = run_benchmark(**dict(small, seed=used))
    for a, b in zip(again.rows, drawn.rows):  # the recorded int repeats the run exactly
        assert (a["precision_mean"], a["iou_mean"], a["emd_mean"]) == (b["precision_mean"], b["iou_mean"], b["emd_mean"])
    with pytest.raises(TypeError, match="seed"):
        run_benchmark(**dict(small, seed="0"))
    with pytest.raises(ValueError, match="seed"):
        run_benchmark(**dict(small, seed=-1))
