"""fl.audit's report folder (built aside, refused when foreign) and its seeds."""

import os

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens._audit import report as audit_report
from featurelens.report import MARKER


def _run(out, **kw):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 2))
    X = np.random.default_rng(0).normal(size=(12, 4)).astype(np.float32)
    args = dict(methods=["saliency", "random"], n_explain=4, progress=False, robustness_samples=0,
                randomization=False, n_subsets=5, steps=4, as_frame=False, out=out)
    args.update(kw)
    return fl.audit(model, X, **args)


def _snapshot(folder):
    return {n: open(os.path.join(folder, n), "rb").read() for n in sorted(os.listdir(folder))}


def test_an_interrupted_audit_leaves_the_old_report(tmp_path, monkeypatch):
    out = tmp_path / "audit"
    table = _run(out)
    assert table.report == str(out / "index.html") and os.path.isfile(table.report)
    before = _snapshot(out)

    def broken(curves):  # the run dies after results.csv/json are written, before the page
        raise KeyboardInterrupt

    monkeypatch.setattr(audit_report, "_curves_figure", broken)
    with pytest.raises(KeyboardInterrupt):
        _run(out, seed=1)
    assert _snapshot(out) == before
    assert sorted(os.listdir(tmp_path)) == ["audit"]


def test_the_audit_refuses_a_foreign_folder_before_any_work(tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "index.html").write_text("my page")
    import featurelens._harness as harness

    def never(*a, **k):
        raise AssertionError("an explainer ran before the folder was checked")

    monkeypatch.setattr(harness, "run_method", never)
    with pytest.raises(ValueError, match="not a featurelens report"):
        _run(mine)
    monkeypatch.undo()
    table = _run(mine, overwrite=True)
    assert (mine / "index.html").read_text() != "my page" and os.path.isfile(mine / MARKER)
    assert table.report is not None


def test_the_audit_seed_takes_an_int_or_a_generator():
    a = _run(None, seed=3, methods=["saliency"])
    b = _run(None, seed=np.random.default_rng(3), methods=["saliency"])
    c = _run(None, seed=np.random.default_rng(3), methods=["saliency"])
    # the audited subset is drawn from the seed: same Generator state, same subset and scores
    assert a[0]["status"] == b[0]["status"] == "ok"
    assert b[0]["insertion_minus_deletion"] == c[0]["insertion_minus_deletion"]
    # the seeded metrics draw from the Generator itself (they failed on its record "generator")
    full = dict(methods=["saliency"], robustness_samples=3, randomization=True)
    b = _run(None, seed=np.random.default_rng(3), **full)
    c = _run(None, seed=np.random.default_rng(3), **full)
    for key in ("faithfulness_correlation", "avg_sensitivity", "max_sensitivity", "randomization_similarity"):
        assert np.isfinite(b[0][key]) and b[0][key] == c[0][key], key
    with pytest.raises(ValueError, match="seed must be None, a non-negative int"):
        _run(None, seed=-1)
    with pytest.raises(TypeError, match="seed must be None, a non-negative int"):
        _run(None, seed=1.5)
