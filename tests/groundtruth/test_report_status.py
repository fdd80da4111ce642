"""Every cell of the benchmark report has scores or says why not (in index.html and results.json),
methods that need reference rows get them, and the example maps are a readable grid in a browser."""

import json
import math
import re
import shutil
import subprocess
import warnings
from html.parser import HTMLParser

import numpy as np
import pytest
import torch

from featurelens import _harness
from featurelens.groundtruth import run_benchmark
from featurelens.groundtruth import runner as bench_runner
from featurelens.groundtruth.models import build_model
from featurelens.groundtruth.methods import BACKGROUND_ROWS, STATUSES, background_rows, method_kwargs, pooled_status

METHODS = ["saliency", "gradcam", "deconvolution", "guided_backprop", "deeplift_shap", "gradient_shap",
           "layer_conductance", "sop", "input_x_gradient", "random"]
SMALL = dict(scenarios=["linear", "xor"], backgrounds=["white"], models=["llr", "mlp", "cnn"], methods=METHODS,
             n_samples=800, n_explain=12, epochs=25, patience=10, seed=0, progress=False, n_jobs=1)
FORCED = "RuntimeError: planted failure of input_x_gradient on the mlp"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A small run (seconds) whose input_x_gradient fails on the MLP (a planted error), written out."""
    real = bench_runner._harness.run_method

    def run_method(name, model, x, target, kwargs, executor=None):
        if name == "input_x_gradient" and not any(isinstance(m, torch.nn.Conv2d) for m in model.modules()) \
                and any(isinstance(m, torch.nn.ReLU) for m in model.modules()):
            return _harness.MethodRun(name, "failed", FORCED)
        return real(name, model, x, target, kwargs, executor)

    out = tmp_path_factory.mktemp("bench") / "report"
    mp = pytest.MonkeyPatch()
    mp.setattr(bench_runner._harness, "run_method", run_method)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = run_benchmark(**SMALL, out=str(out))
    finally:
        mp.undo()
    return result, out, [str(w.message) for w in caught]


class _Cells(HTMLParser):
    """The text of every table cell (td) of a page, with its class."""

    def __init__(self):
        super().__init__()
        self.cells, self._open = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "td":
            self._open = [dict(attrs).get("class", ""), ""]

    def handle_endtag(self, tag):
        if tag == "td" and self._open is not None:
            self.cells.append((self._open[0], self._open[1].strip()))
            self._open = None

    def handle_data(self, data):
        if self._open is not None:
            self._open[1] += data


def test_every_row_has_scores_or_a_status_and_reason(report):
    result, _, _ = report
    assert len(result.rows) == len(METHODS) * (3 + 2)  # linear: llr, mlp, cnn; xor: mlp, cnn
    for r in result.rows:
        assert r["status"] in STATUSES
        if r["status"] == "ok":
            assert r["reason"] == "" and r["n"] > 0 and math.isfinite(r["precision_mean"])
        else:
            assert r["reason"] and r["n"] == 0 and math.isnan(r["precision_mean"])
    row = result.row
    assert row("linear", "white", "mlp", "gradcam")["status"] == "not applicable"
    assert "convolutional" in row("linear", "white", "mlp", "gradcam")["reason"]
    assert row("xor", "white", "cnn", "layer_conductance")["status"] == "not applicable"
    assert row("linear", "white", "llr", "sop")["status"] == "not applicable"
    failed = row("xor", "white", "mlp", "input_x_gradient")
    assert (failed["status"], failed["reason"]) == ("failed", FORCED)


def test_deeplift_shap_and_gradient_shap_get_a_background_and_produce_values(report):
    result, _, _ = report
    for model in ("llr", "mlp", "cnn"):
        for method in ("deeplift_shap", "gradient_shap"):
            r = result.row("linear", "white", model, method)
            assert r["status"] == "ok", r
            assert 0.0 <= r["precision_mean"] <= 1.0 and r["n"] == result.models[0]["n_explained"]


def test_deeplift_shap_on_the_llr_is_its_weights_times_the_distance_to_the_background_mean():
    # For a linear model without bias DeepLift to one reference b is w * (x - b) exactly, so the
    # average over the background rows is w * (x - mean(B)): an analytic reference.
    rng = np.random.default_rng(3)
    train_X = rng.normal(size=(200, 1, 8, 8)).astype(np.float32)
    x = rng.normal(size=(5, 1, 8, 8)).astype(np.float32)
    y = np.array([0, 1, 1, 0, 1])
    model = build_model("llr", 8, seed=1)
    kwargs = method_kwargs("deeplift_shap", 0, train_X)
    bg = kwargs["background"]
    assert bg.shape == (BACKGROUND_ROWS, 1, 8, 8)
    np.testing.assert_array_equal(bg, background_rows(train_X, 0))  # a function of the seed
    assert not np.array_equal(bg, background_rows(train_X, 1))
    run = _harness.run_method("deeplift_shap", model, x, y, kwargs)
    assert run.status == "ok", run.error
    w = model.linear.weight.detach().numpy().reshape(2, 1, 8, 8)
    expected = w[y] * (x - bg.mean(axis=0, keepdims=True))
    np.testing.assert_allclose(run.values, expected, rtol=1e-4, atol=1e-6)


def test_relu_rule_methods_are_not_applicable_without_a_relu_and_print_no_warning(report):
    result, _, caught = report
    for method in ("deconvolution", "guided_backprop"):
        r = result.row("linear", "white", "llr", method)
        assert r["status"] == "not applicable" and "ReLU" in r["reason"]
        assert result.row("linear", "white", "cnn", method)["status"] == "ok"
    assert not [m for m in caught if "ReLU" in m], caught


def test_summary_pools_statuses():
    ok = {"status": "ok", "reason": "", "model": "cnn", "background": "white"}
    na = {"status": "not applicable", "reason": "needs a convolutional layer", "model": "mlp", "background": "white"}
    bad = {"status": "failed", "reason": "ValueError: x", "model": "mlp", "background": "correlated"}
    assert pooled_status([ok, na]) == ("ok", "", "not applicable for mlp/white: needs a convolutional layer")
    assert pooled_status([na, bad]) == ("failed", "ValueError: x", "")
    assert pooled_status([na, dict(na, model="llr")]) == ("not applicable", "needs a convolutional layer", "")
    per_model = [dict(na, reason="needs X; the model is a LLR"), dict(na, reason="needs X; the model is a MLP")]
    assert pooled_status(per_model)[1] == "needs X; the model is a LLR / the model is a MLP"


def test_no_cell_of_the_page_or_the_json_is_a_bare_na(report):
    result, out, _ = report
    page = (out / "index.html").read_text(encoding="utf-8")
    cells = _Cells()
    cells.feed(page)
    texts = [t for _, t in cells.cells]
    assert texts and not [t for t in texts if t.lower() in ("n/a", "na")]
    status_cells = [t for cls, t in cells.cells if "status" in cls.split()]
    assert status_cells
    for t in status_cells:
        assert re.match(r"^(not applicable|failed): \S", t), t
    assert any(t == f"failed: {FORCED}" for t in status_cells)
    assert any(t.startswith("not applicable: needs a convolutional layer") for t in status_cells)

    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert len(data["rows"]) == len(result.rows)
    for r in data["rows"] + data["summary"]:
        assert r["status"] in STATUSES and isinstance(r["reason"], str)
        assert (r["status"] == "ok") == (r["reason"] == "")
        assert (r["status"] == "ok") == (r["precision_mean"] is not None)
    summary = {(r["method"], r["scenario"]): r for r in data["summary"]}
    assert summary[("layer_conductance", "xor")]["status"] == "not applicable"
    assert summary[("gradcam", "linear")]["status"] == "ok"  # the CNN's, with the others' reasons noted
    assert "not applicable for llr/white, mlp/white" in summary[("gradcam", "linear")]["note"]
    assert summary[("deeplift_shap", "xor")]["status"] == "ok"
    header = (out / "results.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert "status" in header and "reason" in header


def test_the_text_table_names_the_cells_without_scores(report):
    result, _, _ = report
    text = result.format_table()
    assert " n/a" not in text
    assert "cells without scores:" in text
    assert "layer_conductance: not applicable: needs a named layer" in text


def test_example_grid_lists_what_it_leaves_out(report):
    result, out, _ = report
    page = (out / "index.html").read_text(encoding="utf-8")
    grid = page[page.index('<table class="maps">'):]
    grid = grid[:grid.index("</table>")]
    rows = re.findall(r'<th class="row">([^<]+)</th>', grid)
    assert rows[:2] == ["input", "ground truth"]
    # layer_conductance and sop have no map anywhere: not a row of blanks, listed with the reason.
    assert "layer_conductance" not in rows and "sop" not in rows
    assert "deeplift_shap" in rows and "saliency" in rows
    after = page[page.index("Not shown (no map"):]
    assert "layer_conductance: not applicable: needs a named layer" in after
    assert (out / "example_maps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

_PROBE = (
    "<script>window.addEventListener('load', function () {"
    "var t = document.querySelector('table.maps');"
    "var imgs = t.querySelectorAll('img'), w = [], blank = 0;"
    "for (var i = 0; i < imgs.length; i++) { var r = imgs[i].getBoundingClientRect();"
    " w.push(Math.round(r.width) + 'x' + Math.round(r.height) + ':' + imgs[i].naturalWidth); }"
    "var cells = t.querySelectorAll('tbody td');"
    "for (var j = 0; j < cells.length; j++) { if (!cells[j].querySelector('img') &&"
    " !/^(not applicable|failed|not run): /.test(cells[j].textContent.trim())) blank++; }"
    "var scroll = 0, boxes = document.querySelectorAll('div.scroll');"
    "for (var k = 0; k < boxes.length; k++) { scroll = Math.max(scroll, boxes[k].getBoundingClientRect().right); }"
    "document.body.setAttribute('data-panels', w.join(','));"
    "document.body.setAttribute('data-rows', t.querySelectorAll('tbody tr').length);"
    "document.body.setAttribute('data-cols', t.querySelectorAll('thead th').length - 1);"
    "document.body.setAttribute('data-blank', blank);"
    "document.body.setAttribute('data-right', Math.round(scroll));"
    "document.body.setAttribute('data-page', document.documentElement.scrollWidth);});</script>"
)


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed")
def test_example_maps_are_a_grid_of_panels_at_least_120px_wide_in_chromium(report, tmp_path):
    result, out, _ = report
    check = tmp_path / "check.html"
    check.write_text((out / "index.html").read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"),
                     encoding="utf-8")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,3000", "--virtual-time-budget=3000",
           "--dump-dom", check.as_uri()]
    try:
        dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False).stdout
    except (subprocess.TimeoutExpired, OSError) as err:
        pytest.skip(f"Chromium did not run: {err}")
    found = {k: re.search(rf'data-{k}="([^"]*)"', dom) for k in ("panels", "rows", "cols", "blank", "right", "page")}
    assert all(found.values()), dom[:500]
    shown = [ex for ex in result.examples if ex["x"] is not None]
    n_cols, n_rows = int(found["cols"].group(1)), int(found["rows"].group(1))
    assert n_cols == len(shown) >= 2  # one column per data set
    assert n_rows >= 2 + 5  # input, ground truth and the methods with a map
    panels = [p.split(":") for p in found["panels"].group(1).split(",")]
    assert len(panels) >= n_cols * 2
    for size, natural in panels:
        width, height = map(int, size.split("x"))
        assert width >= 120 and height >= 120, panels
        assert int(natural) >= 120  # the PNG itself has the pixels: not a 45 px strip blown up
    assert int(found["blank"].group(1)) == 0  # every cell of the grid is a map or says why not
    # The page does not scroll sideways at 1400 px: wide tables scroll in their own boxes.
    assert int(found["page"].group(1)) <= 1400 and int(found["right"].group(1)) <= 1400
