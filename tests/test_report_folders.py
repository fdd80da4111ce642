"""Safe report folders (featurelens.report): built aside and moved into place, foreign folders
refused without overwrite, bad destinations refused before any work."""

import json
import os
import stat

import numpy as np
import pytest

from featurelens.report import MARKER, write_json, OutError, check_out, check_out_file, replace_file, report_folder


def _write(folder, files):
    for name, text in files.items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)


def _read(folder):
    return {n: open(os.path.join(folder, n)).read() for n in sorted(os.listdir(folder)) if n != MARKER}


def test_a_new_report_lands_with_its_marker(tmp_path):
    out = tmp_path / "report"
    with report_folder(out, "audit") as tmp:
        assert os.path.dirname(tmp) == str(tmp_path)  # beside the target: the final move is a rename
        _write(tmp, {"index.html": "new", "results.json": "{}"})
    assert _read(out) == {"index.html": "new", "results.json": "{}"}
    marker = json.load(open(out / MARKER))
    assert marker == {"command": "audit", "files": ["index.html", "results.json"]}
    assert sorted(os.listdir(tmp_path)) == ["report"]  # no temporary folder left behind


def test_an_interrupted_rerun_leaves_the_old_report_intact(tmp_path):
    out = tmp_path / "report"
    with report_folder(out, "benchmark") as tmp:
        _write(tmp, {"index.html": "old page", "results.json": "old", "a.png": "old figure"})
    before = _read(out)
    with pytest.raises(KeyboardInterrupt):
        with report_folder(out, "benchmark") as tmp:
            _write(tmp, {"results.json": "new"})  # half of the new report written ...
            raise KeyboardInterrupt  # ... when the run is interrupted
    assert _read(out) == before
    assert sorted(os.listdir(tmp_path)) == ["report"]


def test_a_rerun_replaces_the_old_report_whole(tmp_path):
    out = tmp_path / "report"
    with report_folder(out, "benchmark") as tmp:
        _write(tmp, {"index.html": "old", "old_figure.png": "x"})
    with report_folder(out, "benchmark") as tmp:
        _write(tmp, {"index.html": "new"})
    assert _read(out) == {"index.html": "new"}  # no stale figure of the old run beside the new page


def test_an_empty_folder_is_written_into(tmp_path):
    out = tmp_path / "report"
    out.mkdir()
    with report_folder(out, "diagnose") as tmp:
        _write(tmp, {"index.html": "new"})
    assert _read(out) == {"index.html": "new"}


def test_a_folder_that_is_not_a_report_is_refused_without_overwrite(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    _write(out, {"index.html": "my own page", "notes.txt": "keep me"})
    with pytest.raises(OutError, match="not a featurelens report.*--overwrite"):
        check_out(out, "audit")
    with pytest.raises(OutError):
        with report_folder(out, "audit") as tmp:  # refused before the body runs
            raise AssertionError("the body must not run")
    assert _read(out) == {"index.html": "my own page", "notes.txt": "keep me"}
    with report_folder(out, "audit", overwrite=True) as tmp:
        _write(tmp, {"index.html": "report"})
    assert _read(out) == {"index.html": "report", "notes.txt": "keep me"}  # theirs kept, ours written


def test_a_report_of_another_command_or_with_extra_files_is_refused(tmp_path):
    out = tmp_path / "report"
    with report_folder(out, "benchmark") as tmp:
        _write(tmp, {"index.html": "bench"})
    with pytest.raises(OutError, match="benchmark report, not a audit report"):
        check_out(out, "audit")
    _write(out, {"my_notes.txt": "mine"})
    with pytest.raises(OutError, match="my_notes.txt"):
        check_out(out, "benchmark")


@pytest.mark.parametrize("bad, match", [("", "empty"), ("   ", "empty"), (5, "must be a path")])
def test_empty_or_non_path_out_is_refused(bad, match):
    with pytest.raises(OutError, match=match):
        check_out(bad, "audit")


def test_an_existing_file_or_a_path_under_a_file_is_refused(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(OutError, match="existing file"):
        check_out(f, "audit")
    with pytest.raises(OutError, match="which is a file"):
        check_out(f / "report", "audit")


def test_an_unwritable_place_is_refused(tmp_path):
    # /proc refuses new folders even to root, where os.access would say yes.
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc")
    with pytest.raises(OutError, match="cannot write"):
        check_out("/proc/featurelens-report", "audit")


def test_select_output_file_rules(tmp_path):
    theirs = tmp_path / "theirs.csv"
    theirs.write_text("a,b\n1,2\n")
    with pytest.raises(OutError, match="did not write"):
        check_out_file(theirs, ("column,score,rank",))
    check_out_file(theirs, ("column,score,rank",), overwrite=True)
    ours = tmp_path / "ours.csv"
    replace_file(ours, "column,score,rank\nx,1,1\n")
    check_out_file(ours, ("column,score,rank",))  # an earlier selection is written over
    with pytest.raises(OutError, match="is a folder"):
        check_out_file(tmp_path, ("column,score,rank",))
    with pytest.raises(OutError, match="does not exist"):
        check_out_file(tmp_path / "nope" / "x.csv", ("column,score,rank",))


def test_report_json_is_strict_json(tmp_path):
    doc = {1: np.float32(0.5), "nan": float("nan"), "inf": np.inf, "i": np.int64(3), "b": np.bool_(True),
           "small": np.arange(3), "big": np.zeros((10, 10)), "t": (1, 2), "obj": object}
    write_json(tmp_path / "r.json", doc)
    out = json.loads((tmp_path / "r.json").read_text())
    assert out["1"] == 0.5 and out["nan"] is None and out["inf"] is None and out["i"] == 3 and out["b"] is True
    assert out["small"] == [0, 1, 2] and out["big"] == {"array_shape": [10, 10], "dtype": "float64"} and out["t"] == [1, 2]


def test_reports_and_replaced_files_get_the_usual_permissions(tmp_path):
    # tempfile makes owner-only (0700/0600) folders and files; what lands in place must be as
    # readable as a plain mkdir/open would make it (0777/0666 less the umask).
    umask = os.umask(0o022)
    try:
        with report_folder(tmp_path / "report", "benchmark") as tmp:
            with open(os.path.join(tmp, "index.html"), "w") as f:
                f.write("<html></html>")
        assert stat.S_IMODE(os.stat(tmp_path / "report").st_mode) == 0o755
        assert stat.S_IMODE(os.stat(tmp_path / "report" / "index.html").st_mode) == 0o644
        replace_file(tmp_path / "selected.csv", "column,score,rank\n")
        assert stat.S_IMODE(os.stat(tmp_path / "selected.csv").st_mode) == 0o644
    finally:
        os.umask(umask)


def test_saved_explanations_get_the_usual_permissions(tmp_path):
    import featurelens as fl

    umask = os.umask(0o022)
    try:
        e = fl.Explanation(values=np.zeros((2, 3)), method="saliency")
        e.save(tmp_path / "e.npz")
        assert stat.S_IMODE(os.stat(tmp_path / "e.npz").st_mode) == 0o644
    finally:
        os.umask(umask)
