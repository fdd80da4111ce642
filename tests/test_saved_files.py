"""Loading saved explanations and interactions checks the schema: a corpus of corrupted and tampered
files, each made here, must raise a ValueError that names the file and the field and never
suggests loading with ``allow_pickle``."""

import json
import os
import zipfile

import numpy as np
import pytest

import featurelens as fl
from featurelens._serialization import SavedFileError, to_jsonable
from featurelens.interactions import Interactions, load_interactions


def _explanation():
    rng = np.random.default_rng(0)
    return fl.Explanation(
        rng.normal(size=(3, 4)), "kernel_shap", params={"budget": 64, "seed": np.int64(2), "gap": np.float32(0.5)},
        target=np.array([0, 1, 1]), model_calls=7, seconds=0.25, extra={"coef": rng.normal(size=(3, 2))},
    )


def _interactions():
    return Interactions({(): 1.0, (0,): 0.5, (1, 2): -0.25, (0, 1, 3): 2.0}, "mobius", 4, queries=16,
                        params={"method": "exact"})


def _arrays(path):
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def _rewrite(path, arrays, meta_edit=None, **np_kwargs):
    arrays = dict(arrays)
    if meta_edit is not None:
        meta = json.loads(str(arrays["meta"]))
        meta_edit(meta)
        arrays["meta"] = np.array(json.dumps(meta))
    np.savez(path, **arrays, **np_kwargs)
    return path


def _good_file(tmp_path, which):
    return (_explanation() if which == "explanation" else _interactions()).save(tmp_path / f"good-{which}")


def _loader(which):
    return fl.load_explanation if which == "explanation" else load_interactions


# -- the corpus: (name, which, builder(tmp_path, good_path) -> path, expected words in the message)


def _truncated(tmp_path, good):
    data = open(good, "rb").read()
    bad = tmp_path / "truncated.npz"
    bad.write_bytes(data[: len(data) // 2])
    return bad


def _random_bytes(tmp_path, good):
    bad = tmp_path / "random.npz"
    bad.write_bytes(np.random.default_rng(1).bytes(300))
    return bad


def _pickled(tmp_path, good):
    bad = tmp_path / "pickled.npz"
    bad.write_bytes(b"\x80\x04\x95" + b"\x00" * 40)  # a pickle stream, not a zip archive
    return bad


def _flipped(tmp_path, good):
    # A corrupt member: the zip directory is intact but the compressed bytes are not.
    data = bytearray(open(good, "rb").read())
    with zipfile.ZipFile(good) as z:
        info = z.getinfo("values.npy")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra) + 5
    for i in range(start, start + 20):
        data[i] ^= 0xFF
    bad = tmp_path / "flipped.npz"
    bad.write_bytes(bytes(data))
    return bad


def _meta_edit(edit):
    def build(tmp_path, good):
        return _rewrite(tmp_path / "edited.npz", _arrays(good), edit)

    return build


def _array_edit(edit):
    def build(tmp_path, good):
        arrays = _arrays(good)
        edit(arrays)
        return _rewrite(tmp_path / "edited.npz", arrays)

    return build


def _object_array(name):
    def build(tmp_path, good):
        arrays = _arrays(good)
        arrays[name] = np.array([{"a": 1}, None], dtype=object)
        return _rewrite(tmp_path / "objects.npz", arrays, allow_pickle=True)

    return build


def _meta_text(text):
    def edit(arrays):
        arrays["meta"] = np.array(text)

    return _array_edit(edit)


def _set(key, value):
    return _meta_edit(lambda meta: meta.__setitem__(key, value))


def _drop(key):
    return _meta_edit(lambda meta: meta.pop(key))


DEEP = "[" * 100_000 + "]" * 100_000
DEEP_PARAMS = json.dumps({"format": "x", "params": json.loads("[" * 200 + "]" * 200)})

COMMON = [
    ("truncated zip", _truncated, "corrupt or truncated"),
    ("random bytes", _random_bytes, "not a .npz"),
    ("pickle stream", _pickled, "not a .npz"),
    ("corrupt member", _flipped, "corrupt"),
    ("broken JSON", _meta_text("{not json"), "invalid JSON"),
    ("JSON list", _meta_text("[1, 2]"), "expected an object"),
    ("deep nesting", _meta_text(DEEP), "nested"),
    ("deep params", _meta_text(DEEP_PARAMS), "nested"),
    ("meta as bytes", _array_edit(lambda a: a.__setitem__("meta", np.array(b"{}"))), "'meta'"),
    ("meta object array", _object_array("meta"), "Python objects"),
    ("values object array", _object_array("values"), "Python objects"),
    ("wrong format", _set("format", "featurelens.other/9"), "'format'"),
    ("missing key", _drop("params"), "missing field(s) 'params'"),
    ("extra key", _set("shellcode", 1), "unknown field(s) 'shellcode'"),
    ("extra array", _array_edit(lambda a: a.__setitem__("surprise", np.zeros(2))), "unknown array(s) 'surprise'"),
    ("missing array", _array_edit(lambda a: a.pop("values")), "lacks the array(s) 'values'"),
    ("string values", _array_edit(lambda a: a.__setitem__("values", np.array(["1", "2", "3", "4"]))), "'values'"),
    ("params a list", _set("params", [1, 2]), "'params'"),
]

EXPLANATION = [
    ("method=5", _set("method", 5), "'method'"),
    ("empty method", _set("method", ""), "'method'"),
    ("negative model_calls", _set("model_calls", -1), "'model_calls'"),
    ("model_calls a float", _set("model_calls", 2.5), "'model_calls'"),
    ("seconds a string", _set("seconds", "fast"), "'seconds'"),
    ("target wrong length", _array_edit(lambda a: a.__setitem__("target", np.array([0, 1]))), "'target'"),
    ("target floats", _array_edit(lambda a: a.__setitem__("target", np.array([0.0, 1.0, 1.0]))), "'target'"),
    ("target strings", _array_edit(lambda a: a.__setitem__("target", np.array(["a", "b", "c"]))), "'target'"),
    ("extra strings", _array_edit(lambda a: a.__setitem__("extra/coef", np.array(["x"]))), "'extra/coef'"),
]

INTERACTIONS = [
    ("short values", _array_edit(lambda a: a.__setitem__("values", a["values"][:2])), "'values'"),
    ("long values", _array_edit(lambda a: a.__setitem__("values", np.append(a["values"], 9.0))), "'values'"),
    ("short lengths", _array_edit(lambda a: a.__setitem__("lengths", a["lengths"][:1])), "'lengths'"),
    ("length too large", _array_edit(lambda a: a["lengths"].__setitem__(0, 7)), "'lengths'"),
    ("bad padding", _array_edit(lambda a: a["players"].__setitem__((0, 2), 1)), "padding"),
    ("duplicate term", _array_edit(lambda a: a["players"].__setitem__(slice(None), a["players"][[1, 1, 2, 3]])
                                   or a["lengths"].__setitem__(slice(None), a["lengths"][[1, 1, 2, 3]])), "twice"),
    ("player out of range", _array_edit(lambda a: a["players"].__setitem__((3, 2), 9)), "players"),
    ("players floats", _array_edit(lambda a: a.__setitem__("players", a["players"].astype(float))), "'players'"),
    ("nan value", _array_edit(lambda a: a["values"].__setitem__(0, np.nan)), "finite"),
    ("unknown index", _set("index", "magic"), "'index'"),
    ("n_players=0", _set("n_players", 0), "'n_players'"),
    ("n_players a string", _set("n_players", "4"), "'n_players'"),
    ("max_order negative", _set("max_order", -2), "'max_order'"),
    ("queries a bool", _set("queries", True), "'queries'"),
]

CASES = (
    [pytest.param("explanation", b, w, id=f"explanation-{n}") for n, b, w in COMMON + EXPLANATION]
    + [pytest.param("interactions", b, w, id=f"interactions-{n}") for n, b, w in COMMON + INTERACTIONS]
)


@pytest.mark.parametrize("which, build, words", CASES)
def test_corrupt_files_raise_a_clear_value_error(tmp_path, which, build, words):
    good = _good_file(tmp_path, which)
    bad = os.fspath(build(tmp_path, good))
    with pytest.raises(ValueError) as info:
        _loader(which)(bad)
    message = str(info.value)
    assert isinstance(info.value, SavedFileError)
    assert bad in message and words in message
    assert "allow_pickle" not in message and "unsafely" not in message
    # No raw numpy/zip/json error hides in the chain either (its text would show in a traceback).
    err = info.value
    cause = err.__cause__ or (None if err.__suppress_context__ else err.__context__)
    assert cause is None or "allow_pickle" not in str(cause)


def test_short_values_no_longer_drop_terms_silently(tmp_path):
    good = _interactions().save(tmp_path / "i")
    arrays = _arrays(good)
    arrays["values"] = arrays["values"][:2]
    _rewrite(tmp_path / "short.npz", arrays)
    with pytest.raises(ValueError, match="found 2 entries for 4 terms"):
        load_interactions(tmp_path / "short.npz")


def test_missing_file_is_file_not_found_and_a_folder_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        fl.load_explanation(tmp_path / "nothing.npz")
    (tmp_path / "folder.npz").mkdir()
    with pytest.raises(SavedFileError, match="it is a folder"):
        load_interactions(tmp_path / "folder.npz")


@pytest.mark.parametrize("which", ["explanation", "interactions"])
def test_good_files_still_round_trip(tmp_path, which):
    if which == "explanation":
        e = _explanation()
        back = fl.load_explanation(e.save(tmp_path / "e"))
        np.testing.assert_array_equal(back.values, e.values)
        np.testing.assert_array_equal(back.target, e.target)
        np.testing.assert_array_equal(back.extra["coef"], e.extra["coef"])
        assert back.params == {"budget": 64, "seed": 2, "gap": 0.5}
        assert (back.model_calls, back.seconds, back.method) == (7, 0.25, "kernel_shap")
    else:
        inter = _interactions()
        back = load_interactions(inter.save(tmp_path / "i"))
        assert back.terms == inter.terms and back.queries == 16 and back.index == "mobius"


def test_explanation_with_several_targets_per_sample_round_trips(tmp_path):
    values = np.arange(24.0).reshape(2, 3, 4)
    e = fl.Explanation(values, "saliency", target=np.array([[0, 1, 2], [2, 1, 0]]))
    back = fl.load_explanation(e.save(tmp_path / "multi"))
    np.testing.assert_array_equal(back.target, e.target)


def test_save_writes_strict_json_and_no_partial_file(tmp_path):
    e = fl.Explanation(np.zeros((1, 2)), "demo", params={"gap": float("nan"), "w": np.arange(3), "big": np.zeros(500)})
    path = e.save(tmp_path / "strict")
    text = str(_arrays(path)["meta"])
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    back = fl.load_explanation(path)
    assert back.params == {"gap": None, "w": [0, 1, 2], "big": {"array_shape": [500], "dtype": "float64"}}
    assert os.listdir(tmp_path) == ["strict.npz"]  # the temporary file was moved into place


def test_to_jsonable_converts_numpy_and_torch():
    torch = pytest.importorskip("torch")
    out = to_jsonable({1: np.float32(1.5), "b": np.bool_(True), "t": (np.int8(3), torch.tensor([1.0, 2.0])),
                       "inf": np.inf, "obj": object})
    assert out == {"1": 1.5, "b": True, "t": [3, [1.0, 2.0]], "inf": None, "obj": repr(object)}
    assert json.loads(json.dumps(out)) == out


# -- the user's own files: sizes checked before decompression, fields checked against the values


def _bomb(path, n_bytes):
    """A .npz whose one member, zeros, inflates to ``n_bytes`` (compressed about a thousand times)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("values.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False,
                                                     "shape": (n_bytes // 8,)})
            chunk = bytes(1 << 20)
            for _ in range(n_bytes // len(chunk)):
                f.write(chunk)
    return path


def test_an_npz_that_inflates_past_the_bound_is_refused_before_decompression(tmp_path, monkeypatch):
    from featurelens import _serialization
    from featurelens._loading import LoadError, load_data

    bomb = _bomb(tmp_path / "bomb.npz", 64 << 20)  # 64 MiB of zeros (plus the 128-byte header) in about 64 KiB
    assert os.path.getsize(bomb) < 200_000
    monkeypatch.setenv("FEATURELENS_MAX_NPZ_BYTES", str(16 << 20))
    calls = []
    real_load = np.load
    monkeypatch.setattr(np, "load", lambda *a, **k: calls.append(a) or real_load(*a, **k))
    with pytest.raises(SavedFileError, match=r"67,108,992 bytes once decompressed.*16,777,216") as info:
        fl.load_explanation(bomb)
    assert "FEATURELENS_MAX_NPZ_BYTES" in str(info.value) and "np.load" in str(info.value)
    with pytest.raises(LoadError, match=r"refusing to read .*bomb.npz.*67,108,992 bytes"):
        load_data(bomb)
    assert calls == []  # refused from the zip directory and the header: numpy never opened it
    # the bound is the documented default without the variable, and max_bytes= overrides both
    monkeypatch.delenv("FEATURELENS_MAX_NPZ_BYTES")
    assert _serialization.npz_limit() == _serialization.MAX_NPZ_BYTES == 2**30
    with pytest.raises(SavedFileError, match="more than the bound of 1,000 bytes"):
        fl.load_explanation(_explanation().save(tmp_path / "small"), max_bytes=1000)


def test_a_header_that_claims_a_huge_array_is_refused_before_allocation(tmp_path):
    from featurelens._loading import LoadError, load_data

    path = tmp_path / "liar.npz"
    with zipfile.ZipFile(path, "w") as z:  # a tiny member whose header announces 8 TB
        with z.open("X.npy", "w") as f:
            np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False,
                                                     "shape": (10**6, 10**6)})
            f.write(bytes(64))
    assert os.path.getsize(path) < 1000
    with pytest.raises(LoadError, match=r"8,000,000,000,000 bytes once decompressed"):
        load_data(path)


def test_zero_d_values_and_wrong_length_feature_names_are_refused(tmp_path):
    good = _explanation().save(tmp_path / "good")
    arrays = _arrays(good)
    scalar = dict(arrays, values=np.array(1.5))
    scalar.pop("target")
    scalar.pop("extra/coef")
    _rewrite(tmp_path / "scalar.npz", scalar)
    with pytest.raises(SavedFileError, match=r"scalar.npz.*array 'values': found a 0-d array"):
        fl.load_explanation(tmp_path / "scalar.npz")

    def names(meta):
        meta["feature_names"] = ["a", "b", "c"]  # values have 4 features per row, and no data array

    _rewrite(tmp_path / "names.npz", arrays, names)
    with pytest.raises(SavedFileError, match=r"names.npz.*meta field 'feature_names': found 3 names for values "
                                             r"of shape \(3, 4\)"):
        fl.load_explanation(tmp_path / "names.npz")
    _rewrite(tmp_path / "names4.npz", arrays, lambda m: m.update(feature_names=list("abcd")))
    assert fl.load_explanation(tmp_path / "names4.npz").feature_names == list("abcd")


def test_save_into_a_missing_folder_names_the_folder(tmp_path):
    missing = tmp_path / "no" / "such"
    with pytest.raises(FileNotFoundError) as info:
        _explanation().save(missing / "e.npz")
    message = str(info.value)
    assert f"the folder {missing} does not exist" in message and ".tmp-" not in message
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        _explanation().save(tmp_path / "file" / "e.npz")
