"""``load_explanation`` (and every loader of saved files, :func:`featurelens._serialization.read_npz`)
on a path that is not a regular file (issue 33, item 8): ``/dev/zero`` and a FIFO were "does not
exist"; now a SavedFileError says what the path is, without opening it (opening a FIFO for reading
blocks until a writer comes, so the test fails rather than hangs if it is opened)."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import featurelens as fl
from featurelens._serialization import SavedFileError


def _load_in_thread(path, seconds=10.0):
    """``load_explanation(path)`` in a thread: its exception, or a failure when it blocks."""
    result = {}

    def attempt():
        try:
            fl.load_explanation(path)
        except BaseException as err:  # noqa: BLE001 - handed back to the test
            result["err"] = err

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        if os.path.exists(path) and not os.path.isfile(path):
            with open(path, "wb"):  # unblock a reader stuck on the FIFO before failing
                pass
        pytest.fail(f"load_explanation({str(path)!r}) blocked")
    return result.get("err")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_is_named_a_device_not_missing():
    err = _load_in_thread("/dev/zero")
    assert isinstance(err, SavedFileError), repr(err)
    text = str(err)
    assert "'/dev/zero' is not a saved featurelens explanation" in text
    assert "it is not a regular file (it is a device)" in text and "expected a .npz file" in text
    assert "does not exist" not in text


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("name", ["pipe.npz", "pipe"])
def test_a_fifo_is_named_and_never_opened(tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    err = _load_in_thread(fifo)
    assert isinstance(err, SavedFileError), repr(err)
    assert "it is not a regular file (it is a FIFO (named pipe))" in str(err)
    assert "does not exist" not in str(err)


def test_missing_and_folder_and_a_real_file_still_load_as_before(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        fl.load_explanation(tmp_path / "nothing.npz")
    (tmp_path / "dir.npz").mkdir()
    with pytest.raises(SavedFileError, match="it is a folder"):
        fl.load_explanation(tmp_path / "dir.npz")
    e = fl.Explanation(values=np.arange(6.0).reshape(2, 3), method="m")
    path = e.save(tmp_path / "e")  # ".npz" appended, and found again from the bare name
    np.testing.assert_array_equal(fl.load_explanation(tmp_path / "e").values, e.values)
    link = tmp_path / "link.npz"
    os.symlink(path, link)  # a link to a regular file is a regular file
    np.testing.assert_array_equal(fl.load_explanation(link).values, e.values)
