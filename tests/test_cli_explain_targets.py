"""``featurelens explain``'s default ``--target predicted`` on a classifier: each row explains its
predicted class, so the rows are drawn in one beeswarm per class present (titled with the class
label from ``classes_``), never mixed in one plot; one target gives one beeswarm, titled too."""

import numpy as np
import pytest

from featurelens.cli import main

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import joblib
    from sklearn.ensemble import GradientBoostingClassifier

    folder = tmp_path_factory.mktemp("explain_targets")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 3)), columns=["u", "v", "w"])
    y = np.where(X["u"] + 0.5 * X["v"] > 0, "spam", "ham")  # classes_ = ['ham', 'spam']
    model = GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0).fit(X.to_numpy(), y)
    X.to_csv(folder / "data.csv", index=False)
    joblib.dump(model, folder / "model.joblib")
    return {"csv": str(folder / "data.csv"), "model_file": str(folder / "model.joblib"), "model": model,
            "X": X.to_numpy()}


def _spy(monkeypatch):
    from featurelens import plots

    calls = []
    original = plots.beeswarm

    def spy(values, *args, **kwargs):
        ax = original(values, *args, **kwargs)
        calls.append({"values": np.array(values), "ax": ax})
        return ax

    monkeypatch.setattr(plots, "beeswarm", spy)
    return calls


def _run(files, out, *extra):
    return main(["explain", "--model", files["model_file"], "--trust-model-file", "--data", files["csv"],
                 "--method", "tree_shap", "--rows", "12", "--out", str(out), *extra])


def test_predicted_targets_get_one_beeswarm_per_class(files, tmp_path, capsys, monkeypatch):
    calls = _spy(monkeypatch)
    out = tmp_path / "rep"
    assert _run(files, out) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    values = pd.read_csv(out / "values.csv")
    predicted = files["model"].predict_proba(files["X"][:12]).argmax(axis=1)
    np.testing.assert_array_equal(values["target"], predicted)
    assert set(predicted) == {0, 1}  # both classes among the rows: the case under test
    assert not (out / "beeswarm.png").exists()
    page = (out / "index.html").read_text(encoding="utf-8")
    names = ["u", "v", "w"]
    # class 0's values are the negated log-odds of class 1: the rows must not share a plot
    margin = files["model"].decision_function(files["X"][:12])
    total = values["base_value"].to_numpy() + values[names].to_numpy().sum(axis=1)
    np.testing.assert_allclose(total, np.where(predicted == 1, margin, -margin), rtol=0, atol=1e-9)
    assert len(calls) == 2
    for call, (t, label) in zip(calls, [(0, "ham"), (1, "spam")]):
        rows = values[values["target"] == t][names].to_numpy()
        np.testing.assert_allclose(call["values"], rows, rtol=0, atol=1e-12)  # only that class's rows
        title = f"class {label} (output {t}): {len(rows)} rows"
        assert call["ax"].get_title() == title
        assert (out / f"beeswarm_target_{t}.png").read_bytes()[:4] == b"\x89PNG"
        assert f'href="beeswarm_target_{t}.png"' in page and f"class {label}: the {len(rows)} explained row(s)" in page
        assert title in printed
    n0, n1 = int((predicted == 0).sum()), int((predicted == 1).sum())
    assert f"predicted class (class ham: {n0} rows, class spam: {n1} rows)" in page.replace("&#x27;", "'")


def test_one_target_gives_one_titled_beeswarm(files, tmp_path, capsys, monkeypatch):
    calls = _spy(monkeypatch)
    out = tmp_path / "rep"
    assert _run(files, out, "--target", "1") == 0, capsys.readouterr().err
    assert (out / "beeswarm.png").exists() and not list(out.glob("beeswarm_target_*.png"))
    assert len(calls) == 1 and calls[0]["ax"].get_title() == "class spam (output 1)"
    assert calls[0]["values"].shape == (12, 3)
    assert "one beeswarm per class" not in capsys.readouterr().out
