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


# ------------------------------------------------------------------------------------------------
# TorchScript is code: refused without --trust-model-file / trust=True


def _script_that_writes(tmp_path):
    """A TorchScript file whose ``__setstate__`` (run by torch.jit.load) and whose forward each
    write a marker file through ``torch.from_file(..., shared=True)``; returns (path, load marker,
    forward marker)."""
    torch = pytest.importorskip("torch")
    from typing import Tuple

    marker = str(tmp_path / "marker")

    class Writer(torch.nn.Module):
        def __init__(self, marker: str):
            super().__init__()
            self.w = torch.ones(3, 2)
            self.marker = marker

        def forward(self, x):
            t = torch.from_file(self.marker + ".forward", shared=True, size=4, dtype=torch.uint8)
            t.fill_(70)
            return x @ self.w + t.sum().to(x.dtype) * 0.0

        @torch.jit.export
        def __getstate__(self) -> Tuple[torch.Tensor, str, bool]:
            return (self.w, self.marker, self.training)

        @torch.jit.export
        def __setstate__(self, state: Tuple[torch.Tensor, str, bool]):
            self.w = state[0]
            self.marker = state[1]
            self.training = state[2]
            t = torch.from_file(self.marker + ".load", shared=True, size=4, dtype=torch.uint8)
            t.fill_(76)
            self.w = self.w + t.sum().to(self.w.dtype) * 0.0

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        path = tmp_path / "f.pt"
        torch.jit.script(Writer(marker)).save(str(path))
    return path, tmp_path / "marker.load", tmp_path / "marker.forward"


def test_crafted_torchscript_really_writes_files_when_loaded(tmp_path):
    # The premise of the refusal: torch.jit.load runs the file's own code, which writes a file.
    torch = pytest.importorskip("torch")
    import warnings

    path, at_load, in_forward = _script_that_writes(tmp_path)
    assert not at_load.exists() and not in_forward.exists()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = torch.jit.load(str(path))
    assert at_load.read_bytes() == b"LLLL"
    module(torch.ones(1, 3))
    assert in_forward.read_bytes() == b"FFFF"


def test_torchscript_needs_trust_in_the_loader(tmp_path):
    from featurelens._loading import load_model

    path, at_load, _ = _script_that_writes(tmp_path)
    with pytest.raises(LoadError, match=r"TorchScript archives contain code that runs at load") as info:
        load_model(path)
    assert info.value.exit_code == 2 and "--trust-model-file" in str(info.value)
    with pytest.raises(LoadError, match="TorchScript"):  # a --trust-type never unlocks it
        load_model(path, trusted_types=("builtins.object", "torch.jit.ScriptModule"))
    assert not at_load.exists()
    model, what = load_model(path, trust=True)
    assert "TorchScript" in what and at_load.exists()


@pytest.mark.parametrize("command", ["explain", "audit"])
def test_cli_refuses_torchscript_without_the_trust_flag(tmp_path, capsys, command):
    from featurelens.cli import main

    path, at_load, in_forward = _script_that_writes(tmp_path)
    np.save(tmp_path / "X.npy", np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32))
    args = [command, "--model", str(path), "--data", str(tmp_path / "X.npy"), "--out", str(tmp_path / "r")]
    extra = ["--method", "saliency", "--rows", "2"] if command == "explain" else [
        "--methods", "saliency", "--n-explain", "2", "--no-progress", "--metrics", "sparseness"]
    rc = main(args + extra + (["--trust-type", "torch.jit.ScriptModule"] if command == "explain" else []))
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "refusing to load" in err and "TorchScript archives contain code that runs at load" in err
    assert "--trust-model-file" in err
    assert not at_load.exists() and not in_forward.exists() and not (tmp_path / "r").exists()
    rc = main(args + extra + ["--trust-model-file"])
    assert rc == 0, capsys.readouterr().err
    assert at_load.exists() and (tmp_path / "r" / "index.html").exists()


# ------------------------------------------------------------------------------------------------
# paths that are not regular files are named as what they are, and never opened


def test_folder_device_and_fifo_are_named_not_missing(tmp_path, capsys):
    import os
    import threading

    from featurelens._loading import load_model
    from featurelens.cli import main

    (tmp_path / "folder.pt").mkdir()
    with pytest.raises(LoadError, match=r"model file .*folder.pt is a directory") as info:
        load_model(tmp_path / "folder.pt")
    assert info.value.exit_code == 2
    with pytest.raises(LoadError, match=r"data file .*folder.pt is a directory"):
        load_data(tmp_path / "folder.pt")
    if os.path.exists("/dev/zero"):
        with pytest.raises(LoadError, match=r"/dev/zero is not a regular file \(it is a device\)"):
            load_model("/dev/zero")
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe.npy"
        os.mkfifo(fifo)
        result = {}

        def attempt():  # opening a FIFO for reading blocks until a writer comes: never open it
            try:
                load_data(fifo)
            except LoadError as err:
                result["err"] = str(err)

        worker = threading.Thread(target=attempt, daemon=True)
        worker.start()
        worker.join(10)
        if worker.is_alive():  # unblock the reader before failing
            with open(fifo, "wb"):
                pass
            pytest.fail("load_data blocked reading a FIFO")
        assert "is not a regular file (it is a FIFO" in result["err"]
    np.save(tmp_path / "X.npy", np.zeros((3, 2), dtype=np.float32))
    rc = main(["explain", "--model", str(tmp_path / "folder.pt"), "--data", str(tmp_path / "X.npy"),
               "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == 2 and "is a directory" in err and "does not exist" not in err
