"""`featurelens audit`: safe model loading, data loading with clear errors, exit codes."""

import numpy as np
import pytest
import torch

from featurelens import _loading
from featurelens._loading import LoadError, check_model_data, load_data, load_model
from featurelens.groundtruth.models import build_model
from featurelens.cli import main

# The fixture writes a TorchScript file; torch 2.13 deprecates torch.jit.script but still runs it.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import joblib
    from sklearn.linear_model import LogisticRegression

    d = tmp_path_factory.mktemp("files")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5)).astype(np.float32)
    y = (X[:, 0] - X[:, 1] > 0).astype(np.int64)
    clf = LogisticRegression().fit(X, y)
    joblib.dump(clf, d / "clf.joblib")
    np.save(d / "X.npy", X)
    np.save(d / "y.npy", y)
    llr = build_model("llr", 8, seed=3)
    torch.save(llr.state_dict(), d / "llr_state.pt")
    torch.jit.script(llr).save(str(d / "llr_script.pt"))
    torch.save(llr, d / "llr_whole.pt")
    images = rng.normal(size=(12, 1, 8, 8)).astype(np.float32)
    np.save(d / "images.npy", images)
    return {"dir": d, "X": X, "y": y, "clf": clf, "llr": llr, "images": images}


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


# ------------------------------------------------------------------------------------------------
# models


def test_pickle_is_refused_without_the_flag(files, capsys):
    d = files["dir"]
    rc = main(["audit", "--model", str(d / "clf.joblib"), "--data", str(d / "X.npy"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "refusing to load" in err and "unpickling runs" in err and "--trust-model-file" in err
    with pytest.raises(LoadError, match="holds pickled Python objects") as info:
        load_model(d / "llr_whole.pt")
    assert info.value.exit_code == 2


@pytest.mark.slow
def test_joblib_model_with_the_flag_runs_the_audit(files, capsys, tmp_path):
    d = files["dir"]
    rc = main(["audit", "--model", str(d / "clf.joblib"), "--data", str(d / "X.npy"), "--labels",
               str(d / "y.npy"), "--trust-model-file", "--methods", "exact_shapley,random", "--n-explain", "6",
               "--out", str(tmp_path / "rep"), "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "exact_shapley" in out and (tmp_path / "rep" / "index.html").is_file()
    model, _ = load_model(d / "clf.joblib", trust=True)
    np.testing.assert_allclose(model.predict_proba(files["X"]), files["clf"].predict_proba(files["X"]))


def test_torchscript_and_state_dict_load_the_same_network(files):
    d = files["dir"]
    x = torch.as_tensor(files["images"])
    expected = files["llr"](x).detach()
    script, what = load_model(d / "llr_script.pt", trust=True)  # TorchScript is code
    assert "TorchScript" in what
    torch.testing.assert_close(script(x), expected)
    net, what = load_model(d / "llr_state.pt", architecture="llr")
    assert "llr (8x8)" in what
    torch.testing.assert_close(net(x), expected)
    with pytest.raises(LoadError, match="--architecture") as info:
        load_model(d / "llr_state.pt")
    assert info.value.exit_code == 2
    with pytest.raises(LoadError, match="do not fit architecture 'cnn'"):
        load_model(d / "llr_state.pt", architecture="cnn")
    trusted, _ = load_model(d / "llr_whole.pt", trust=True)
    torch.testing.assert_close(trusted(x), expected)


@pytest.mark.slow
def test_torchscript_cli_end_to_end(files, capsys, tmp_path):
    d = files["dir"]
    # llr is linear in its input: input x gradient is its exact decomposition (faithfulness
    # correlation 1), so it must rank above the random map (saliency, |w|, need not: it ties
    # with random on a linear model, and which one wins on 4 rows is chance)
    rc = main(["audit", "--model", str(d / "llr_script.pt"), "--trust-model-file", "--data", str(d / "images.npy"), "--methods",
               "input_x_gradient,random", "--n-explain", "4", "--out", str(tmp_path / "r"), "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
    lines = [line for line in out.splitlines() if line.strip().startswith(("1 ", "2 "))]
    assert "input_x_gradient" in lines[0] and "random" in lines[1]
    assert "1.000" in lines[0]  # faithfulness correlation of an exact decomposition


def test_state_dict_cli_with_architecture_and_input_shape(files, capsys, tmp_path):
    d = files["dir"]
    flat = files["images"].reshape(12, 64)
    np.save(tmp_path / "flat.npy", flat)
    rc = main(["audit", "--model", str(d / "llr_state.pt"), "--architecture", "llr", "--data",
               str(tmp_path / "flat.npy"), "--input-shape", "1,8,8", "--methods", "input_x_gradient,random",
               "--n-explain", "4", "--out", str(tmp_path / "r"), "--no-progress", "--target", "1"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "state dict llr_state.pt in architecture llr" in captured.out
    rc = main(["audit", "--model", str(d / "llr_state.pt"), "--data", str(d / "images.npy")])
    assert rc == 2 and "--architecture" in capsys.readouterr().err
    rc = main(["audit", "--model", str(d / "llr_script.pt"), "--trust-model-file", "--data", str(d / "images.npy"), "--target", "7"])
    assert rc == 2 and "out of range: the model has 2 output(s)" in capsys.readouterr().err


@pytest.mark.slow
def test_skops_loads_without_running_code(files, tmp_path):
    sio = pytest.importorskip("skops.io")
    sio.dump(files["clf"], tmp_path / "clf.skops")
    model, _ = load_model(tmp_path / "clf.skops")
    np.testing.assert_allclose(model.predict_proba(files["X"]), files["clf"].predict_proba(files["X"]))


def test_unknown_model_format(tmp_path):
    path = write(tmp_path / "model.bin", "not a model")
    with pytest.raises(LoadError, match="cannot tell the format") as info:
        load_model(path)
    assert info.value.exit_code == 2
    with pytest.raises(LoadError, match="does not exist"):
        load_model(tmp_path / "missing.pt")


# ------------------------------------------------------------------------------------------------
# data


def test_csv_npz_and_labels(files, tmp_path):
    pytest.importorskip("pandas")  # CSV and parquet are read with pandas
    X = files["X"]
    header = ",".join(f"f{i}" for i in range(5)) + ",label\n"
    body = "".join(",".join(f"{v:.6f}" for v in row) + f",{lab}\n" for row, lab in zip(X, files["y"]))
    path = write(tmp_path / "d.csv", header + body)
    Xc, yc, names = load_data(path, labels="label")
    np.testing.assert_allclose(Xc, X, atol=1e-5)
    np.testing.assert_array_equal(yc, files["y"])
    assert names == [f"f{i}" for i in range(5)]
    np.savez(tmp_path / "d.npz", X=X, y=files["y"])
    Xz, yz, _ = load_data(tmp_path / "d.npz", labels="y")
    np.testing.assert_array_equal(Xz, X)
    np.testing.assert_array_equal(yz, files["y"])
    Xi, _, _ = load_data(files["dir"] / "images.npy", input_shape=(64,))
    assert Xi.shape == (12, 64)


@pytest.mark.parametrize(
    "name, content, match",
    [
        ("bad.npy", b"\x93NUMPY garbage that is not an array", "cannot read .* .npy"),
        ("bad.npz", b"PK\x03\x04 truncated zip", "cannot read .* .npz"),
        ("empty.csv", b"", "is empty"),
        ("header.csv", b"a,b\n", "is empty"),
        ("text.csv", b"a,b,city\n1,2,Paris\n3,4,Rome\n", "non-numeric column\\(s\\) 'city'"),
        ("nan.csv", b"a,b\n1,2\n3,\n", "1 NaN or inf value"),
    ],
)
def test_corrupt_data_files_get_clear_errors(tmp_path, name, content, match):
    pytest.importorskip("pandas")  # CSV and parquet are read with pandas
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(LoadError, match=match) as info:
        load_data(path)
    assert info.value.exit_code == 1


def test_object_arrays_and_unsupported_types(tmp_path):
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(LoadError, match="Python objects"):
        load_data(tmp_path / "obj.npy")
    with pytest.raises(LoadError, match="unsupported data file type '.txt'") as info:
        load_data(write(tmp_path / "d.txt", "1 2 3"))
    assert info.value.exit_code == 2
    np.save(tmp_path / "vec.npy", np.arange(5.0))
    with pytest.raises(LoadError, match="1-D array"):
        load_data(tmp_path / "vec.npy")


def test_parquet_needs_an_engine(files, tmp_path):
    pd = pytest.importorskip("pandas")
    path = tmp_path / "d.parquet"
    try:
        pd.DataFrame(files["X"]).set_axis([f"f{i}" for i in range(5)], axis=1).to_parquet(path)
    except ImportError:
        path.write_bytes(b"PAR1 not really")
        with pytest.raises(LoadError, match="pip install pyarrow"):
            load_data(path)
    else:
        Xp, _, _ = load_data(path)
        np.testing.assert_array_equal(Xp, files["X"])


def test_mismatched_data(files, capsys, tmp_path):
    np.save(tmp_path / "four.npy", files["X"][:, :4])
    with pytest.raises(LoadError, match=r"expects 5 features per row \(n_features_in_\), but .* has 4"):
        check_model_data(files["clf"], files["X"][:, :4], "four.npy")
    with pytest.raises(LoadError, match="the model cannot take the rows"):
        check_model_data(files["llr"], files["X"], "X.npy")
    d = files["dir"]
    rc = main(["audit", "--model", str(d / "llr_script.pt"), "--trust-model-file", "--data", str(d / "X.npy")])
    err = capsys.readouterr().err
    assert rc == 1 and "cannot take the rows" in err and err.startswith("featurelens audit: error:")
    rc = main(["audit", "--model", str(d / "clf.joblib"), "--trust-model-file", "--data", str(tmp_path / "four.npy")])
    assert rc == 1 and "expects 5 features" in capsys.readouterr().err


def test_labels_errors(files, capsys, tmp_path):
    with pytest.raises(LoadError, match="neither a file nor a column"):
        load_data(files["dir"] / "X.npy", labels="nope")
    np.save(tmp_path / "short.npy", np.zeros(3, dtype=np.int64))
    with pytest.raises(LoadError, match=r"one per row .* \(40\)"):
        load_data(files["dir"] / "X.npy", labels=str(tmp_path / "short.npy"))
    rc = main(["audit", "--model", str(files["dir"] / "llr_script.pt"), "--trust-model-file", "--data",
               str(files["dir"] / "images.npy"), "--target", "labels"])
    assert rc == 2 and "--target labels needs --labels" in capsys.readouterr().err


def test_usage_errors_of_the_parser(capsys):
    assert main(["audit", "--data", "x.npy"]) == 2
    assert "--model" in capsys.readouterr().err
    assert main(["audit", "--model", "m.pt", "--data", "x.npy", "--input-shape", "1,a"]) == 2
    assert main(["audit", "--model", "m.pt", "--data", "x.npy", "--methods", "nope"]) == 2
    assert "unknown value 'nope'" in capsys.readouterr().err
    assert main(["audit", "--model", "missing.pt", "--data", "x.npy"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_module_docstring_names_the_refused_formats():
    assert "trust=True" in _loading.__doc__ and "weights_only=True" in _loading.__doc__


class ScaledSum:
    """A tiny estimator type that skops does not trust by default."""

    def __init__(self, scale=2.0):
        self.scale = scale

    def predict(self, X):
        return self.scale * np.asarray(X).sum(1)


def test_skops_with_untrusted_types_needs_the_flag(tmp_path):
    sio = pytest.importorskip("skops.io")
    sio.dump(ScaledSum(3.0), tmp_path / "custom.skops")
    with pytest.raises(LoadError, match=r"types that skops does not trust .*ScaledSum.*--trust-model-file") as info:
        load_model(tmp_path / "custom.skops")
    assert info.value.exit_code == 2
    model, _ = load_model(tmp_path / "custom.skops", trust=True)
    np.testing.assert_allclose(model.predict(np.ones((2, 4))), [12.0, 12.0])


def test_fractional_labels_are_refused_not_truncated(files, capsys, tmp_path):
    d = files["dir"]
    # float labels holding whole numbers (a CSV column of 0.0/1.0) are class indices ...
    np.save(tmp_path / "y_whole.npy", np.array([0.0, 1.0] * 6))
    rc = main(["audit", "--model", str(d / "llr_script.pt"), "--trust-model-file", "--data", str(d / "images.npy"), "--labels",
               str(tmp_path / "y_whole.npy"), "--methods", "saliency,random", "--n-explain", "4",
               "--out", str(tmp_path / "r"), "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    capsys.readouterr()
    # ... but 1.5 is not: it used to be truncated silently to class 1.
    np.save(tmp_path / "y_frac.npy", np.array([0.0, 1.5] * 6))
    rc = main(["audit", "--model", str(d / "llr_script.pt"), "--trust-model-file", "--data", str(d / "images.npy"), "--labels",
               str(tmp_path / "y_frac.npy"), "--n-explain", "4", "--out", str(tmp_path / "r2"), "--no-progress"])
    assert rc == 1 and "integer class indices" in capsys.readouterr().err

def test_forgotten_labels_column_gets_the_hint(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    import joblib
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    y = (X[:, 0] > 0).astype(np.int64)
    joblib.dump(LogisticRegression().fit(X, y), tmp_path / "clf.joblib")
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["diagnosis"] = y
    frame.to_csv(tmp_path / "data.csv", index=False)
    args = ["audit", "--model", str(tmp_path / "clf.joblib"), "--data", str(tmp_path / "data.csv"),
            "--trust-model-file", "--no-progress", "--out", str(tmp_path / "report")]
    rc = main(args)
    err = capsys.readouterr().err
    assert rc == 1
    assert "expects 4 features" in err and "has 5" in err
    assert "if one column is the label, pass --labels NAME" in err
    assert "'diagnosis' looks like labels" in err
    # Two columns too many: no label hint (one label column cannot explain it).
    frame["extra"] = 1.5
    frame.to_csv(tmp_path / "data2.csv", index=False)
    rc = main(args[:4] + [str(tmp_path / "data2.csv")] + args[5:])
    err = capsys.readouterr().err
    assert rc == 1 and "has 6" in err and "--labels" not in err
