"""The command line: featurelens benchmark and --version."""

import os
import subprocess
import sys

import pytest

from featurelens import __version__
from featurelens.cli import main

SMALL = ["--scenarios", "linear", "--backgrounds", "white", "--models", "llr", "--methods", "saliency",
         "random", "--n-samples", "400", "--epochs", "20", "--no-progress", "--jobs", "1"]


@pytest.mark.slow
def test_benchmark_quick_prints_the_table_and_writes_the_report(tmp_path, capsys):
    out = tmp_path / "rep"
    code = main(["benchmark", "--quick", "--out", str(out)] + SMALL)
    assert code == 0
    printed = capsys.readouterr().out
    assert "precision" in printed and "IoU" in printed and "EMD" in printed
    lines = [line for line in printed.splitlines() if line.startswith(("saliency", "random"))]
    assert len(lines) == 6  # two methods x three metric tables
    assert "LIN" in printed
    assert "test accuracy" in printed
    assert str(out / "index.html") in printed
    assert (out / "index.html").is_file() and (out / "results.csv").is_file()


def test_default_out_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["benchmark", "--quick", "--n-explain", "5", "--epochs", "2"] + SMALL) == 0
    assert (tmp_path / "featurelens-report" / "index.html").is_file()


@pytest.mark.parametrize(
    "args,option,value",
    [
        (["--methods", "saliency", "nope"], "--methods", "nope"),
        (["--methods", "saliency,nope"], "--methods", "nope"),
        (["--scenarios", "lin"], "--scenarios", "lin"),
        (["--models", "resnet"], "--models", "resnet"),
        (["--backgrounds", "pink"], "--backgrounds", "pink"),
    ],
)
def test_unknown_names_exit_2_with_the_choices(args, option, value, capsys):
    assert main(["benchmark", "--quick"] + args) == 2
    err = capsys.readouterr().err
    assert option in err and repr(value) in err
    assert "valid choices" in err
    valid = {"--methods": "integrated_gradients", "--scenarios": "translations_rotations",
             "--models": "cnn", "--backgrounds": "correlated"}[option]
    assert valid in err


def test_invalid_numbers_exit_2(capsys):
    assert main(["benchmark", "--n-samples", "zero"]) == 2
    assert "--n-samples" in capsys.readouterr().err
    # Divisibility by 4 is checked by the runner; still a usage error.
    assert main(["benchmark", "--n-samples", "402", "--no-progress"] + SMALL[:2]) == 2
    assert "divisible by 4" in capsys.readouterr().err


def test_version_and_no_command(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"featurelens {__version__}"
    assert main([]) == 2
    assert "benchmark" in capsys.readouterr().out


@pytest.mark.slow
def test_python_dash_m():
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "src"))
    done = subprocess.run([sys.executable, "-m", "featurelens", "--version"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0
    assert done.stdout.strip() == f"featurelens {__version__}"
