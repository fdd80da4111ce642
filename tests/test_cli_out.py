"""The command line: --out checked before any work, --overwrite, help without torch, and the
names --help shows equal to their homes."""

import inspect
import os
import subprocess
import sys
import time

import pytest

from featurelens.cli import HELP_NAMES, main


def _bad_outs(tmp_path):
    f = tmp_path / "existing.txt"
    f.write_text("x")
    return {"file": str(f), "empty": "", "under a file": str(f / "report"), "unwritable": "/proc/featurelens-out"}


@pytest.mark.parametrize("kind", ["file", "empty", "under a file", "unwritable"])
@pytest.mark.parametrize("command", [["benchmark", "--quick"], ["diagnose"],
                                     ["audit", "--model", "m.pt", "--data", "x.npy"]])
def test_a_bad_out_fails_fast_before_any_work(command, kind, tmp_path, capsys, monkeypatch):
    import featurelens._training as training

    def no_training(*a, **k):
        raise AssertionError("trained before checking --out")

    monkeypatch.setattr(training, "train_model", no_training)
    out = _bad_outs(tmp_path)[kind]
    if kind == "unwritable" and not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc")
    start = time.perf_counter()
    code = main(command + ["--out", out])
    assert time.perf_counter() - start < 20.0  # refused before work (the work takes hours), not a speed check
    assert code == 2
    err = capsys.readouterr().err
    assert "error" in err and "--out" in err or "out" in err
    assert "Traceback" not in err


def test_a_folder_that_is_not_a_report_is_refused_until_overwrite(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "index.html").write_text("my page")
    assert main(["diagnose", "--out", str(mine)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert (mine / "index.html").read_text() == "my page"


def test_select_refuses_to_replace_a_foreign_file(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("a,b,y\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(20)))
    theirs = tmp_path / "theirs.csv"
    theirs.write_text("precious\n")
    args = [str(data), "--target", "y", "--method", "agop", "--out", str(theirs)]
    assert main(["select"] + args) == 2
    assert "--overwrite" in capsys.readouterr().err and theirs.read_text() == "precious\n"
    assert main(["select", str(data), "--target", "y", "--method", "agop", "--out", ""]) == 2


@pytest.mark.slow
def test_help_does_not_import_torch():
    code = ("import sys\nfrom featurelens.cli import main\n"
            "for argv in (['--help'], ['benchmark', '--help'], ['audit', '--help'], ['diagnose', '--help'],"
            " ['select', '--help']):\n    main(argv)\n"
            "heavy = [m for m in ('torch', 'featurelens.explainers', 'featurelens.learning') if m in sys.modules]\n"
            "sys.exit(1 if heavy else 0)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr


@pytest.mark.slow
def test_import_featurelens_is_lazy_and_public_names_still_work():
    code = ("import sys, featurelens as fl\nassert 'torch' not in sys.modules\n"
            "from featurelens import audit\nassert callable(audit) and fl.audit is audit\n"
            "assert 'saliency' in fl.list_explainers() and fl.__version__\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_help_names_equal_their_homes():
    from featurelens import datasets
    from featurelens.learning._grokking import DEFAULTS

    assert HELP_NAMES["scenarios"] == tuple(datasets.SCENARIOS)
    assert HELP_NAMES["backgrounds"] == tuple(datasets.BACKGROUNDS)
    assert HELP_NAMES["grokking"] == DEFAULTS


def test_select_methods_name_selectors_of_the_package():
    from featurelens import selection
    from featurelens.cli.select import METHODS

    for name, (cls_name, _, _) in METHODS.items():
        assert isinstance(getattr(selection, cls_name), type), name


def test_declared_harness_options_match_the_constructors():
    """Explainer.accepts is what the harness reads; it must name exactly the options the
    constructor takes (checked here once, instead of inspecting signatures at run time)."""
    import featurelens as fl
    from featurelens._harness import OPTIONS
    from featurelens.explainers import explainer_class

    for name in fl.list_explainers():
        cls = explainer_class(name)
        params = set(inspect.signature(cls.__init__).parameters)
        assert set(cls.accepts) == params & set(OPTIONS), name
