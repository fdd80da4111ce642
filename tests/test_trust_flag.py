"""The loader's trust flag is True or False, never a string read by its truth value (issue 33,
item 1): before, ``load_model(path, trust="false")`` ran the payload of a pickle or TorchScript
file, since ``if not trust`` reads any non-empty string as true.

Every loader entry point that takes a trust flag is called with the strings and values a user or a
config file may pass for "no" (``"false"``, ``"no"``, ``"0"``, ``""``, None, 0); each must be a
TypeError naming ``trust``, and the hostile file's payload (it writes a marker file) must never
run. ``trust=True`` on the same files runs the payload, so the files are really hostile."""

from __future__ import annotations

import os
import pickle
import warnings

import pytest

from featurelens import _loading, _model_files
from featurelens._loading import LoadError, load_model
from featurelens._validation import check_bool

NOT_TRUE = ["false", "False", "no", "0", "", None, 0]


class _OpensAFile:
    """Pickles as ``open(marker, "w")``: unpickling it creates the marker file."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


class SkopsPayload:
    """A type skops does not trust by default; building it at load (``__setstate__``) writes the
    marker file named in its state."""

    def __init__(self, marker: str):
        self.marker = marker

    def __setstate__(self, state):
        with open(state["marker"], "w") as f:
            f.write("ran")
        self.__dict__.update(state)


def _torchscript_that_writes(folder) -> tuple[str, str]:
    """A TorchScript archive whose ``__setstate__`` (run by ``torch.jit.load``) writes a marker
    through ``torch.from_file(..., shared=True)``; returns (path, marker)."""
    torch = pytest.importorskip("torch")
    from typing import Tuple

    marker = os.path.join(folder, "script.ran")

    class Writer(torch.nn.Module):
        def __init__(self, marker: str):
            super().__init__()
            self.w = torch.ones(3, 2)
            self.marker = marker

        def forward(self, x):
            return x @ self.w

        @torch.jit.export
        def __getstate__(self) -> Tuple[torch.Tensor, str, bool]:
            return (self.w, self.marker, self.training)

        @torch.jit.export
        def __setstate__(self, state: Tuple[torch.Tensor, str, bool]):
            self.w = state[0]
            self.marker = state[1]
            self.training = state[2]
            t = torch.from_file(self.marker, shared=True, size=4, dtype=torch.uint8)
            t.fill_(76)
            self.w = self.w + t.sum().to(self.w.dtype) * 0.0

    path = os.path.join(folder, "script.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.script(Writer(marker)).save(path)
    return path, marker


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """``{kind: (path, marker)}``: hostile model files of every format that needs trust."""
    folder = str(tmp_path_factory.mktemp("hostile"))
    files = {}
    for kind, name in (("pickle", "model.pkl"), ("joblib", "model.joblib"), ("bare pickle", "model.bin")):
        marker = os.path.join(folder, name + ".ran")
        path = os.path.join(folder, name)
        with open(path, "wb") as f:
            pickle.dump(_OpensAFile(marker), f, protocol=4)
        files[kind] = (path, marker)
    torch = pytest.importorskip("torch")
    marker = os.path.join(folder, "module.pt.ran")
    path = os.path.join(folder, "module.pt")
    torch.save(_OpensAFile(marker), path)  # a "whole module" torch.save: a pickle in a torch zip
    files["torch pickle"] = (path, marker)
    files["torchscript"] = _torchscript_that_writes(folder)
    sio = pytest.importorskip("skops.io")
    marker = os.path.join(folder, "model.skops.ran")
    path = os.path.join(folder, "model.skops")
    sio.dump(SkopsPayload(marker), path)
    if os.path.exists(marker):
        os.remove(marker)
    files["skops"] = (path, marker)
    return files


def _clean(marker):
    if os.path.exists(marker):
        os.remove(marker)


def _entry_points(kind, path):
    """Every loader function that takes the trust flag and can read this kind of file: a call of
    ``trust`` for each."""
    calls = {"load_model": lambda trust: load_model(path, trust=trust)}
    if kind in ("pickle", "joblib", "bare pickle"):
        calls["load_pickle"] = lambda trust: _model_files.load_pickle(path, trust)
        calls["_loading.load_pickle"] = lambda trust: _loading.load_pickle(path, trust)
    elif kind in ("torch pickle", "torchscript"):
        names = _model_files.zip_names(path)
        calls["load_torch"] = lambda trust: _model_files.load_torch(path, names, None, None, trust)
        calls["_loading.load_torch"] = lambda trust: _loading.load_torch(path, names, None, None, trust)
    elif kind == "skops":
        calls["load_skops"] = lambda trust: _model_files.load_skops(path, trust)
        calls["load_skops(trusted_types)"] = lambda trust: _model_files.load_skops(path, trust, ["x.Y"])
    return calls


KINDS = ["pickle", "joblib", "bare pickle", "torch pickle", "torchscript", "skops"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("value", NOT_TRUE, ids=repr)
def test_a_flag_that_is_not_a_bool_is_refused_and_the_payload_never_runs(hostile, kind, value):
    path, marker = hostile[kind]
    _clean(marker)
    for name, call in _entry_points(kind, path).items():
        with pytest.raises(TypeError) as info:
            call(value)
        text = str(info.value)
        assert text.startswith(f"trust must be True or False; got {value!r} ({type(value).__name__})"), (name, text)
        if isinstance(value, str):
            assert "a string is not a flag" in text and "trust=False" in text, text
        assert not os.path.exists(marker), f"{name}(trust={value!r}) ran the payload of the {kind} file"


@pytest.mark.parametrize("kind", KINDS)
def test_false_refuses_and_true_runs_the_payload(hostile, kind):
    """The control: ``trust=False`` refuses with the loader's own message and runs nothing;
    ``trust=True`` loads the file, which runs the payload (the files are really hostile)."""
    path, marker = hostile[kind]
    _clean(marker)
    for name, call in _entry_points(kind, path).items():
        with pytest.raises(LoadError, match="refusing to load"):
            call(False)
        assert not os.path.exists(marker), name
    try:
        load_model(path, trust=True)
    except LoadError as err:  # the payload is not a model; what matters is that it ran
        assert "not a model" in str(err)
    assert os.path.exists(marker), f"the {kind} file's payload did not run with trust=True"
    _clean(marker)


def test_a_numpy_bool_is_a_bool():
    import numpy as np

    assert check_bool(np.bool_(False), "trust") is False and check_bool(np.True_, "trust") is True


def test_trusted_types_is_a_list_not_a_string(hostile):
    path, marker = hostile["skops"]
    _clean(marker)
    with pytest.raises(TypeError, match=r"trusted_types must be a list of type names.*got 'test_trust_flag"):
        _model_files.load_skops(path, False, "test_trust_flag.SkopsPayload")
    assert not os.path.exists(marker)
