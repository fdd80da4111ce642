"""``featurelens audit`` data files: corrupt or pickled .npy/.npz files give a LoadError that never
advises loading them unsafely (numpy's own message suggests ``allow_pickle``)."""

import zipfile

import numpy as np
import pytest

from featurelens._loading import LoadError, load_data, load_labels


def _corrupt_member(tmp_path):
    good = tmp_path / "good.npz"
    np.savez_compressed(good, X=np.random.default_rng(0).normal(size=(50, 4)))
    data = bytearray(good.read_bytes())
    with zipfile.ZipFile(good) as z:
        info = z.getinfo("X.npy")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra) + 5
    for i in range(start, start + 20):
        data[i] ^= 0xFF
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(data))
    return bad


@pytest.mark.parametrize(
    "name, make, match",
    [
        ("pickle.npy", lambda p: p.write_bytes(b"\x80\x04\x95" + b"\x00" * 30), "not a .npy or .npz file"),
        ("random.npz", lambda p: p.write_bytes(np.random.default_rng(1).bytes(200)), "not a .npy or .npz file"),
        ("objects.npz", lambda p: np.savez(p, X=np.array([{"a": 1}], dtype=object)), "Python objects"),
        ("objects.npy", lambda p: np.save(p, np.array([None, 1], dtype=object), allow_pickle=True), "Python objects"),
    ],
)
def test_bad_array_files_never_suggest_allow_pickle(tmp_path, name, make, match):
    path = tmp_path / name
    make(path)
    with pytest.raises(LoadError, match=match) as info:
        load_data(path)
    assert "allow_pickle" not in str(info.value) and "unsafely" not in str(info.value)
    assert info.value.exit_code == 1


def test_corrupt_npz_member_is_a_load_error(tmp_path):
    # Regression: a zlib.error from a damaged member escaped as a raw traceback.
    with pytest.raises(LoadError, match="corrupt or truncated"):
        load_data(_corrupt_member(tmp_path))


def test_pickled_labels_file(tmp_path):
    np.save(tmp_path / "X.npy", np.zeros((3, 2)))
    (tmp_path / "y.npy").write_bytes(b"\x80\x04\x95" + b"\x00" * 30)
    with pytest.raises(LoadError, match="not a .npy or .npz file") as info:
        load_labels(str(tmp_path / "y.npy"), "X.npy")
    assert "allow_pickle" not in str(info.value)
