"""`featurelens diagnose` end to end with tiny settings: files written, the summary consistent with
the history it saved, usage errors."""

import json

import numpy as np
import pytest

from featurelens.cli import main


@pytest.mark.slow
def test_diagnose_writes_the_report_folder(tmp_path, capsys):
    out = tmp_path / "diag"
    code = main(["diagnose", "--out", str(out), "--steps", "40", "--p", "7", "--width", "16",
                 "--probe-every", "20", "--seed", "1", "--no-progress"])
    assert code == 0
    for name in ("curves.png", "gram_agop.png", "monitor.png", "results.json", "index.html", "history.csv"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((out / "results.json").read_text())
    assert summary["p"] == 7 and summary["width"] == 16 and summary["seed"] == 1
    assert summary["steps_run"] == 40 and summary["budget"] == 40
    # the summary agrees with the saved history
    import csv

    rows = list(csv.DictReader(open(out / "history.csv")))
    test_acc = [(int(r["step"]), float(r["value"])) for r in rows if r["metric"] == "test_accuracy"]
    assert test_acc[-1][1] == pytest.approx(summary["final_test_accuracy"])
    expected_grok = next((s for s, a in test_acc if a >= 0.9), None)
    assert summary["grok_step"] == expected_grok
    nfa0 = [float(r["value"]) for r in rows if r["metric"] == "nfa" and r["layer"] == "0"]
    assert len(nfa0) == 2 and summary["final_nfa"]["0"] == pytest.approx(nfa0[-1])
    assert -1.0 <= summary["final_nfa_first_layer_train"] <= 1.0
    assert summary["final_nfa_first_layer_train"] == pytest.approx(nfa0[-1], abs=1e-9)  # probe = training rows
    gap = [float(r["value"]) for r in rows if r["metric"] == "update_gap" and r["layer"] == "0"]
    assert len(gap) == 40 - 20 + 1 and np.all(np.asarray(gap) >= 1.0)  # sigma_1 >= sigma_2
    html = (out / "index.html").read_text()
    assert "grokking modular addition" in html and html.count("<img") == 3
    printed = capsys.readouterr().out
    assert "eigengap detector fired at step" in printed and str(out / "index.html") in printed


@pytest.mark.parametrize(
    "args, message",
    [
        (["--steps", "0"], "expected a positive integer"),
        (["--train-fraction", "1.5"], "expected a number in (0, 1)"),
        (["--weight-decay", "-1"], "expected a non-negative"),
        (["--p", "x"], "expected a positive integer"),
        (["--seed", "-1"], "argument --seed: expected a non-negative integer, got '-1'"),
    ],
)
def test_diagnose_usage_errors(tmp_path, capsys, args, message):
    assert main(["diagnose", "--out", str(tmp_path), *args]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_diagnose_writes_history_csv_without_pandas(tmp_path, monkeypatch):
    # results.json lists history.csv; without pandas (an optional dependency) it was not written.
    import builtins
    import csv
    import json

    from featurelens.cli.diagnose import diagnose

    real_import = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("no pandas here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    out = tmp_path / "diag"
    summary = diagnose(out=str(out), steps=20, p=5, width=8, probe_every=10, progress=False)
    monkeypatch.setattr(builtins, "__import__", real_import)
    assert json.load(open(out / "results.json"))["files"]["history"] == "history.csv"
    rows = list(csv.DictReader(open(out / "history.csv")))
    acc = [float(r["value"]) for r in rows if r["metric"] == "test_accuracy"]
    assert acc and acc[-1] == pytest.approx(summary["final_test_accuracy"])
