"""bench_scale.py's composition and its vision section on a tiny ResNet-like net (an in-place ReLU
module called several times, a residual add, a max-pool stem, like torchvision's ResNet) at 16x16:
the rows' schema, featurelens' values equal to Captum's within the row's tolerance, the floor,
the table. No timing is asserted."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("captum")

SCHEMA = {"section", "model", "method", "peer", "fl_s", "peer_s", "ratio", "fl_peak_mb", "peer_peak_mb",
          "max_abs_diff", "tolerance", "within_tolerance", "floor_s", "floor", "fl_over_floor", "note"}


class Block(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, c, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(c)
        self.relu = torch.nn.ReLU(inplace=True)  # called twice, as in torchvision's BasicBlock

    def forward(self, x):
        out = self.relu(self.bn(self.conv(x)))
        out = out + x
        return self.relu(out)


class TinyResNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.relu = torch.nn.ReLU(inplace=True)
        self.pool = torch.nn.MaxPool2d(2)
        self.layer4 = Block(4)
        self.head = torch.nn.Linear(4, 3)

    def forward(self, x):
        x = self.pool(self.relu(self.stem(x)))
        return self.head(self.layer4(x).mean((2, 3)))


@pytest.fixture(scope="module")
def modules(benchmark_script):
    return benchmark_script("_scale_vision"), benchmark_script("bench_scale")


@pytest.fixture(scope="module")
def rows(modules):
    sv, _ = modules
    torch.manual_seed(0)
    net = TinyResNet().eval()
    with torch.no_grad():  # BatchNorm statistics away from the identity
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    settings = sv.Settings(ig_steps=4, sg_samples=3, grid=4, window=8, stride=4, patch=4, ks_budget=40, cheap_repeats=1,
                           ks_images=1, ks_ppe=8, repeats=1)
    case = sv.Case("tiny (2 x 3x16x16)", net, x, layer="layer4")
    return sv.bench_case(case, settings, log=lambda *a, **k: None)


def test_every_method_gives_one_row_with_the_schema(rows, modules):
    sv, _ = modules
    assert [r["method"] for r in rows] == list(sv.ALL_METHODS)
    for r in rows:
        assert SCHEMA <= set(r), SCHEMA - set(r)
        assert r["section"] == "vision" and r["peer"] == "Captum"
        assert r["fl_s"] > 0 and r["peer_s"] > 0 and r["floor_s"] > 0
        assert r["ratio"] == pytest.approx(r["fl_s"] / r["peer_s"], rel=0.1, abs=1e-3)  # both rounded
        assert r["fl_peak_mb"] >= 0 and r["peer_peak_mb"] >= 0
        assert r["settings"]


def test_values_agree_with_captum_within_tolerance(rows):
    for r in rows:
        assert r["tolerance"] > 0
        assert r["within_tolerance"], (r["method"], r["max_abs_diff"], r["tolerance"])
        assert r["max_abs_diff"] <= r["tolerance"]
    ks = next(r for r in rows if r["method"] == "kernel_shap")
    assert ks["peer_efficiency_gap"] >= 0 and "efficiency" in ks["diff_against"]


def test_floor_counts_the_passes(rows):
    by = {r["method"]: r for r in rows}
    assert by["integrated_gradients"]["floor_s"] == pytest.approx(4 * by["saliency"]["floor_s"], rel=0.01, abs=5e-4)
    assert by["smoothgrad"]["floor_s"] == pytest.approx(3 * by["saliency"]["floor_s"], rel=0.01, abs=5e-4)
    assert by["feature_ablation"]["floor"].startswith("17 x fwd")      # 16 segments + the unperturbed pass
    assert by["occlusion"]["floor"].startswith("10 x fwd")             # 3 x 3 positions of 8 px, stride 4
    assert by["kernel_shap"]["floor"].startswith("40 x fwd of 1 image")


def test_groups(modules):
    sv, _ = modules
    grid = sv.grid_groups((3, 224, 224), 8)
    assert grid.shape == (3, 224, 224) and np.unique(grid).tolist() == list(range(64))
    assert (np.bincount(grid[0].ravel()) == 28 * 28).all() and (grid[0] == grid[2]).all()
    patches = sv.patch_groups((3, 224, 224), 16)
    assert np.unique(patches).size == 196 and (np.bincount(patches[1].ravel()) == 256).all()
    assert patches[0, 0, 16] == 1 and patches[0, 16, 0] == 14


def test_distinct_relus_copy_computes_the_same(modules):
    sv, _ = modules
    net = TinyResNet().eval()
    copy = sv.distinct_relus(net)
    called = [n.target for n in copy.graph.nodes if n.op == "call_module"
              and isinstance(copy.get_submodule(n.target), torch.nn.ReLU)]
    assert len(called) == 3 == len(set(called))
    assert not any(copy.get_submodule(t).inplace for t in called)
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        assert torch.equal(copy(x), net(x))


def test_table_and_sections(modules, rows):
    _, bs = modules
    got, status = bs.run_sections(["vision_absent_section_name"], quick=True, log=lambda *a, **k: None)
    assert got == [] and status["vision_absent_section_name"].startswith("skipped")
    flagged = [dict(r, ratio=1.5, note="why") if i == 0 else r for i, r in enumerate(rows)]
    env = {"torch": "t", "featurelens": "f", "python": "p", "peers": {"captum": "c"}, "threads": 2, "cpu": "cpu",
           "logical_cpus": 2}
    meta = {"load_before": [1.0], "load_after": [1.0], "seconds": 1.0, "sections": {"vision": "ran"}}
    table = bs.markdown(flagged, env, meta)
    lines = [line for line in table.splitlines() if line.startswith("| vision")]
    assert len(lines) == len(rows)
    assert [line.endswith("| **yes** |") for line in lines] == [r["ratio"] > 1.0 for r in flagged]
    assert "- tiny (2 x 3x16x16) / saliency: why" in table


def test_an_interrupted_run_resumes_from_its_saved_rows(modules, tmp_path, monkeypatch):
    """Rows are saved as they are measured; a resumed run hands them to the section as done."""
    import sys
    import types

    _, bs = modules
    calls = []

    def run(quick, done=None, save=None):
        calls.append(dict(done or {}))
        out = []
        for method in ("a", "b"):
            if done and ("m", method) in done:
                out.append(done[("m", method)])
                continue
            r = {"section": "fakesec", "model": "m", "method": method, "ratio": 0.5}
            save(r)
            out.append(r)
        return out

    monkeypatch.setitem(sys.modules, "_scale_fakesec", types.SimpleNamespace(run=run))
    partial = tmp_path / "partial.jsonl"
    first, _ = bs.run_sections(["fakesec"], quick=False, log=lambda *a, **k: None, partial=partial)
    assert [r["method"] for r in first] == ["a", "b"] and len(partial.read_text().splitlines()) == 2
    partial.write_text(partial.read_text().splitlines()[0] + "\n")  # interrupted after row "a"
    second, status = bs.run_sections(["fakesec"], quick=False, log=lambda *a, **k: None, partial=partial)
    assert list(calls[1]) == [("m", "a")] and [r["method"] for r in second] == ["a", "b"]
    assert status["fakesec"].startswith("ran")


def test_rows_are_ordered_by_section_model_and_method(modules):
    _, bs = modules
    rows = [{"section": "trees", "model": "t", "method": "x"},
            {"section": "vision", "model": "R18", "method": "integrated_gradients"},
            {"section": "vision", "model": "R50", "method": "saliency"},
            {"section": "vision", "model": "R18", "method": "saliency"}]
    got = [(r["section"], r["model"], r["method"]) for r in bs.ordered(rows)]
    assert got == [("vision", "R18", "saliency"), ("vision", "R18", "integrated_gradients"),
                   ("vision", "R50", "saliency"), ("trees", "t", "x")]
