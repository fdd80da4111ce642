"""LightGBM and XGBoost model files read as data: the files ``booster.save_model`` writes (LightGBM
text; XGBoost JSON or UBJSON) hold trees, thresholds, leaf values and settings, and the libraries
parse them without running anything from the file.

Both parsers trust the file's layout, though: LightGBM reads its trees by the byte sizes the file
lists and XGBoost's UBJSON reader allocates what the file's counts say, so a file cut short or
edited can abort the process, crash it (a segmentation fault) or make it allocate until the
machine kills it. The layout is checked here first (:func:`lightgbm_text_problem`,
:func:`ubjson_problem`), so such a file is refused with a message instead.
"""

from __future__ import annotations

import os

__all__ = ["read_lightgbm", "read_xgboost", "lightgbm_text_problem", "ubjson_problem"]


class BoosterFileError(ValueError):
    """A file that is not a usable LightGBM / XGBoost model (the message says why)."""


def _library(package: str, path: str):
    try:
        return __import__(package)
    except ImportError as err:
        wheel = "lightgbm" if package == "lightgbm" else "xgboost (or xgboost-cpu)"
        raise ImportError(f"reading {path} needs {package}, which is not installed: pip install {wheel}") from err


def read_lightgbm(path: str):
    """A LightGBM text model (``booster.save_model("model.txt")``) as a Booster.

    Parameters
    ----------
    path : str
        The file.

    Returns
    -------
    lightgbm.Booster

    Raises
    ------
    BoosterFileError
        The file is not a LightGBM text model, is cut short or corrupt, or holds no trees.
    ImportError
        lightgbm is not installed (the message says what to install).
    """
    with open(path, "rb") as f:
        text = f.read()
    if not text.startswith(b"tree") or b"version=" not in text[:64]:
        raise BoosterFileError(f"{path} is not a LightGBM model file: a text model saved by "
                               "booster.save_model starts with 'tree' and 'version=' lines")
    problem = lightgbm_text_problem(text)
    if problem is not None:
        raise BoosterFileError(f"cannot read {path} as a LightGBM model file (corrupt or cut short): {problem}")
    lgb = _library("lightgbm", path)
    try:
        booster = lgb.Booster(model_file=path)
    except Exception as err:  # lightgbm.basic.LightGBMError, a JSON error in its last line
        raise BoosterFileError(f"cannot read {path} as a LightGBM model file (corrupt or cut short): "
                               f"{type(err).__name__}: {err}") from err
    if booster.num_trees() == 0:
        raise BoosterFileError(f"{path} holds a LightGBM model without trees; nothing to explain")
    return booster


def read_xgboost(path: str):
    """An XGBoost model (``booster.save_model("model.json")`` or ``"model.ubj"``) as a Booster.

    Parameters
    ----------
    path : str
        The file; UBJSON when its name ends in ``.ubj``, else JSON.

    Returns
    -------
    xgboost.Booster

    Raises
    ------
    BoosterFileError
        The file is not an XGBoost model, or is cut short or corrupt.
    ImportError
        xgboost is not installed (the message says what to install).
    """
    with open(path, "rb") as f:
        data = f.read()
    if b"learner" not in data[:64]:
        raise BoosterFileError(f"{path} is not an XGBoost model file: a model saved by booster.save_model "
                               "to .json or .ubj holds a 'learner' document")
    if path.lower().endswith(".ubj"):
        problem = ubjson_problem(data)
        if problem is not None:
            raise BoosterFileError(f"cannot read {path} as an XGBoost UBJSON model file (corrupt or cut "
                                   f"short): {problem}")
    xgb = _library("xgboost", path)
    booster = xgb.Booster()
    try:
        booster.load_model(bytearray(data))
    except Exception as err:  # xgboost.core.XGBoostError
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise BoosterFileError(f"cannot read {path} as an XGBoost model file (corrupt or cut short): "
                               f"{first}") from err
    return booster


def lightgbm_text_problem(text: bytes) -> str | None:
    """What is wrong with a LightGBM text model's layout, or None.

    The file lists the byte size of each tree (``tree_sizes=``); the trees ``Tree=0``, ``Tree=1``,
    ... follow, each exactly that long, then ``end of trees``; a ``parameters:`` section ends with
    ``end of parameters``. LightGBM reads the blocks by those sizes without checking them.

    Parameters
    ----------
    text : bytes
        The file's content.

    Returns
    -------
    str or None
    """
    start = text.find(b"\ntree_sizes=")
    if start < 0:
        return "no 'tree_sizes=' line"
    end = text.find(b"\n", start + 1)
    try:
        sizes = [int(v) for v in text[start + len(b"\ntree_sizes=") : end].split()] if end > 0 else []
    except ValueError:
        return "the 'tree_sizes=' line is not a list of sizes"
    at = text.find(b"Tree=0", start)
    if not sizes or at < 0:
        return "no trees after 'tree_sizes='"
    for k, size in enumerate(sizes):
        if size <= 0 or at + size > len(text) or not text[at : at + size].startswith(b"Tree=%d\n" % k):
            return f"tree {k} is not where 'tree_sizes=' says ({len(sizes)} trees listed)"
        at += size
    if not text[at:].lstrip().startswith(b"end of trees"):
        return "no 'end of trees' after the listed trees"
    params = text.find(b"\nparameters:", at)
    if params >= 0 and text.find(b"\nend of parameters", params) < 0:
        return "a 'parameters:' section without 'end of parameters'"
    return None


#: UBJSON value types of a fixed size (bytes), and the integer types a length or count is written in.
_FIXED = {ord("i"): 1, ord("U"): 1, ord("I"): 2, ord("l"): 4, ord("L"): 8, ord("d"): 4, ord("D"): 8,
          ord("C"): 1, ord("Z"): 0, ord("N"): 0, ord("T"): 0, ord("F"): 0}
_INTS = {ord("i"): (1, True), ord("U"): (1, False), ord("I"): (2, True), ord("l"): (4, True), ord("L"): (8, True)}


class _Stop(Exception):
    pass


class _Reader:
    """A walk over a UBJSON document that checks every length against the bytes left."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise _Stop("the document ends inside a value")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise _Stop(f"a value of {n} bytes at byte {self.pos} runs past the end ({len(self.data)} bytes)")
        self.pos += n

    def length(self) -> int:
        marker = self.byte()
        if marker not in _INTS:
            raise _Stop(f"a length at byte {self.pos - 1} has type {chr(marker)!r}, not an integer")
        size, signed = _INTS[marker]
        start = self.pos
        self.skip(size)
        value = int.from_bytes(self.data[start : start + size], "big", signed=signed)
        if value < 0:
            raise _Stop(f"a negative length at byte {start}")
        return value

    def value(self, marker: int, depth: int) -> None:
        if marker in _FIXED:
            self.skip(_FIXED[marker])
        elif marker in (ord("S"), ord("H")):
            self.skip(self.length())
        elif marker in (ord("["), ord("{")):
            self.container(marker == ord("{"), depth + 1)
        else:
            raise _Stop(f"an unknown type {chr(marker)!r} at byte {self.pos - 1}")

    def container(self, is_object: bool, depth: int) -> None:
        if depth > 64:
            raise _Stop("containers nested more than 64 deep")
        kind = count = None
        if self.pos < len(self.data) and self.data[self.pos] == ord("$"):
            self.pos += 1
            kind = self.byte()
            if self.pos >= len(self.data) or self.data[self.pos] != ord("#"):
                raise _Stop(f"a typed container without a count at byte {self.pos}")
        if self.pos < len(self.data) and self.data[self.pos] == ord("#"):
            self.pos += 1
            count = self.length()
        if count is None:
            close = ord("}") if is_object else ord("]")
            while True:
                if self.pos >= len(self.data):
                    raise _Stop("the document ends inside a container")
                if self.data[self.pos] == close:
                    self.pos += 1
                    return
                if is_object:
                    self.skip(self.length())
                self.value(self.byte(), depth)
        if kind is not None and kind in _FIXED and not is_object:
            self.skip(count * _FIXED[kind])  # a typed array: its bytes follow
            return
        if count > len(self.data) - self.pos:  # every element takes at least one byte
            raise _Stop(f"a container of {count} elements at byte {self.pos} is longer than the document")
        for _ in range(count):
            if is_object:
                self.skip(self.length())
            self.value(self.byte() if kind is None else kind, depth)


def ubjson_problem(data: bytes) -> str | None:
    """What is wrong with a UBJSON document's layout (a container left open, a length past the
    end, an unknown type), or None.

    Parameters
    ----------
    data : bytes
        The document.

    Returns
    -------
    str or None
    """
    reader = _Reader(data)
    try:
        if not data or data[0] != ord("{"):
            return "the document does not start with an object"
        reader.pos = 1
        reader.container(True, 1)
    except _Stop as stop:
        return str(stop)
    if reader.pos != len(data):
        return f"{len(data) - reader.pos} bytes after the document"
    return None


def describe(path: str, library: str) -> str:
    """How the command line names a booster file it read."""
    kind = "text" if library == "lightgbm" else ("UBJSON" if path.lower().endswith(".ubj") else "JSON")
    name = "LightGBM" if library == "lightgbm" else "XGBoost"
    return f"{name} model {os.path.basename(path)} ({kind}, read as data)"
