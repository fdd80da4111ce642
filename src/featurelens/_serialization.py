"""The one home of featurelens's saved formats: JSON conversion and schema-checked ``.npz`` files.

Saved results (:class:`featurelens.Explanation`, :class:`featurelens.interactions.Interactions`) are
one ``.npz`` archive each: plain numeric arrays plus an array ``meta`` holding a JSON document.
Nothing is ever unpickled (``allow_pickle=False``), and a file is read against a schema: every
problem (not a zip archive, a truncated or corrupt member, an array holding Python objects, broken
or deeply nested JSON, a missing, unknown or mistyped field, inconsistent lengths) raises
:class:`SavedFileError`, a ``ValueError`` whose message names the file, the field, what was found
and what was expected.

:func:`to_jsonable` is the one conversion of parameters, diagnostics and results to JSON (numpy
scalars to Python numbers, small arrays to lists, non-finite floats to null); report writers use it
too.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import stat
import tempfile
import zipfile
from typing import Any, Iterable

import numpy as np

__all__ = [
    "SavedFileError",
    "MAX_NPZ_BYTES",
    "npz_limit",
    "npz_size_problem",
    "describe_load_error",
    "to_jsonable",
    "dumps",
    "npz_path",
    "write_npz",
    "read_npz",
    "special_file_kind",
    "read_meta",
    "check_keys",
    "meta_field",
    "array_field",
    "names_field",
]

#: Arrays of at most this many elements become JSON lists; larger ones a shape/dtype summary.
MAX_LIST = 64
#: The deepest nesting of lists/dicts accepted in a saved JSON document.
MAX_DEPTH = 64


class SavedFileError(ValueError):
    """A saved featurelens file that does not match its schema.

    ``path`` is the file, ``field`` the array or JSON field at fault (None for the file as a
    whole); the message says what was found and what was expected.
    """

    def __init__(self, path: str, kind: str, field: str | None, problem: str):
        self.path = path
        self.field = field
        where = "" if field is None else f"{field}: "
        article = "a " if not kind.endswith("s") else ""
        super().__init__(f"{path!r} is not {article}saved featurelens {kind}: {where}{problem}")


# --------------------------------------------------------------------------------------------------
# JSON


def to_jsonable(value: Any, *, max_list: int = MAX_LIST) -> Any:
    """``value`` as plain JSON data (dict, list, str, int, float, bool, None).

    Dict keys become strings, tuples lists; numpy and torch scalars become Python numbers (bools
    stay bools); arrays and tensors with at most ``max_list`` elements become nested lists, larger
    ones ``{"array_shape": [...], "dtype": "..."}``; NaN and inf become ``None`` (JSON has no
    non-finite numbers); any other object becomes its ``repr``.
    """
    if isinstance(value, dict):
        return {str(k): to_jsonable(v, max_list=max_list) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, max_list=max_list) for v in value]
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        return value if math.isfinite(value) else None
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biufU" and value.size <= max_list:
            return to_jsonable(value.tolist(), max_list=max_list)
        return {"array_shape": [int(s) for s in value.shape], "dtype": str(value.dtype)}
    return repr(value)


def dumps(value: Any, **kwargs) -> str:
    """Strict JSON text of :func:`to_jsonable` ``(value)`` (never ``NaN``/``Infinity`` tokens)."""
    return json.dumps(to_jsonable(value), allow_nan=False, **kwargs)


def _depth(value) -> int:
    """Nesting depth of parsed JSON, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            return level
        stack.extend((child, level + 1) for child in children)
    return deepest


# --------------------------------------------------------------------------------------------------
# writing


def npz_path(path: str | os.PathLike) -> str:
    """``path`` as a string with ``.npz`` appended when missing."""
    path = os.fspath(path)
    return path if path.endswith(".npz") else path + ".npz"


def write_npz(path: str | os.PathLike, arrays: dict, meta: dict) -> str:
    """Write ``arrays`` and the JSON document ``meta`` (strict JSON, see :func:`dumps`) to a
    compressed ``.npz`` file; returns the path (``.npz`` appended when missing).

    The archive is written to a temporary file beside ``path`` and moved into place, so an
    interrupted save never leaves a truncated file under the name. A folder that does not exist
    raises ``FileNotFoundError`` naming it.
    """
    path = npz_path(path)
    payload = {name: np.asarray(a) for name, a in arrays.items()}
    for name, a in payload.items():
        if a.dtype.kind == "O":
            raise TypeError(f"array {name!r} holds Python objects (dtype object); only numeric arrays are saved")
    payload["meta"] = np.array(dumps(meta))
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        # mkstemp's own error would name its temporary file, not the folder that is missing
        problem = "is not a folder" if os.path.exists(folder) else "does not exist"
        raise FileNotFoundError(f"cannot save {path}: the folder {folder} {problem}; create it first or "
                                "choose a path in an existing folder")
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez_compressed(f, **payload)
        usual_permissions(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return path


def usual_permissions(path: str) -> None:
    """Give a file or folder made by ``tempfile.mkstemp``/``mkdtemp`` (owner-only, 0600/0700) the
    permissions a plain ``open``/``mkdir`` would have given it (0666/0777 less the umask), before it
    is renamed into place: a saved explanation or a report must be as readable as any other file."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, (0o777 if os.path.isdir(path) else 0o666) & ~umask)


# --------------------------------------------------------------------------------------------------
# reading


def describe_load_error(err: Exception) -> str:
    """What a failure of ``np.load(..., allow_pickle=False)`` means, without numpy's advice to
    load the file unsafely."""
    text = str(err)
    if "pickle" in text.lower():
        # numpy's own message suggests loading it unsafely; a saved featurelens file never needs that.
        return "it holds Python objects (pickled data), which are never loaded because unpickling can run code"
    return f"it is corrupt or truncated ({type(err).__name__}: {text})"


#: The most bytes an ``.npz`` archive may inflate to before it is read (1 GiB); raise it with the
#: environment variable ``FEATURELENS_MAX_NPZ_BYTES`` or a loader's ``max_bytes=``.
MAX_NPZ_BYTES = 2**30
MAX_NPZ_ENV = "FEATURELENS_MAX_NPZ_BYTES"


def npz_limit(max_bytes=None) -> int:
    """The bound of :func:`npz_size_problem`: ``max_bytes`` when given, else the environment
    variable ``FEATURELENS_MAX_NPZ_BYTES``, else :data:`MAX_NPZ_BYTES`."""
    if max_bytes is None:
        text = os.environ.get(MAX_NPZ_ENV)
        if text is None or not text.strip():
            return MAX_NPZ_BYTES
        try:
            max_bytes = int(float(text))
        except ValueError:
            raise ValueError(f"the environment variable {MAX_NPZ_ENV} must be a number of bytes; got {text!r}") from None
        name = MAX_NPZ_ENV
    else:
        name = "max_bytes"
    from ._validation import check_int

    return check_int(max_bytes, name, low=1)


def npz_size_problem(path: str, max_bytes=None) -> str | None:
    """Why the ``.npz`` (zip) archive ``path`` is too large to read, or None; nothing is
    decompressed but each member's ``.npy`` header. Each member counts for the larger of its
    uncompressed size in the zip directory (``ZipInfo.file_size``) and the array its header
    announces (shape times item size), so neither a small compressed file that inflates to
    gigabytes (a "zip bomb") nor a header claiming a huge shape gets read or allocated."""
    limit = npz_limit(max_bytes)
    total = 0
    biggest = ("", 0)
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            size = int(info.file_size)
            if info.filename.endswith(".npy"):
                try:
                    with z.open(info) as f:
                        version = np.lib.format.read_magic(f)
                        reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                  else np.lib.format.read_array_header_2_0)
                        shape, _, dtype = reader(f)
                    size = max(size, int(np.prod(shape, dtype=object)) * dtype.itemsize)
                except Exception:  # a broken header: the full read reports it
                    pass
            total += size
            if size > biggest[1]:
                biggest = (info.filename, size)
    if total <= limit:
        return None
    return (f"it would take {total:,} bytes once decompressed (the largest member, {biggest[0]!r}, "
            f"{biggest[1]:,}), more than the bound of {limit:,} bytes; it is refused before anything is "
            f"decompressed. If you trust the file, raise the bound (environment variable {MAX_NPZ_ENV}, "
            "or max_bytes=) or read it with numpy yourself (np.load(path, allow_pickle=False))")


def special_file_kind(mode: int) -> str:
    """What a path that is not a regular file or a folder is, from its ``st_mode``: ``"a FIFO
    (named pipe)"``, ``"a device"`` (``/dev/zero``), ``"a socket"``, else ``"not a regular file"``."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_npz(path: str | os.PathLike, kind: str, required: Iterable[str], optional: Iterable[str] = (),
             prefixes: Iterable[str] = (), max_bytes=None) -> tuple[str, dict]:
    """Read every array of the ``.npz`` file ``path`` (``.npz`` appended when the bare name does not
    exist); returns ``(path, {name: array})``.

    ``required`` arrays must be present; ``optional`` ones and names starting with one of
    ``prefixes`` may be; any other name is refused. A missing file raises ``FileNotFoundError``;
    every other problem :class:`SavedFileError`, a path that is not a regular file (a FIFO, a device
    such as ``/dev/zero``, a socket) included, which is never opened (reading it could block or
    run forever). Object arrays are never loaded, and an archive
    that would decompress to more than :func:`npz_limit` ``(max_bytes)`` bytes (1 GiB by default)
    is refused before anything is decompressed (:func:`npz_size_problem`).
    """
    path = os.fspath(path)
    if not os.path.lexists(path) and os.path.exists(path + ".npz"):
        path += ".npz"
    # stat first, never open: opening a FIFO for reading blocks until a writer comes, and a device
    # such as /dev/zero reads forever.
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"saved featurelens {kind} {path!r} does not exist") from None
    except OSError as err:
        raise SavedFileError(path, kind, None, f"it cannot be read ({err.strerror or err}); expected a .npz file "
                             "written by featurelens's save()") from None
    if stat.S_ISDIR(mode):
        raise SavedFileError(path, kind, None, "it is a folder; expected a .npz file written by featurelens's save()")
    if not stat.S_ISREG(mode):
        raise SavedFileError(path, kind, None, f"it is not a regular file (it is {special_file_kind(mode)}), so it "
                             "was not opened; expected a .npz file written by featurelens's save()")
    if not zipfile.is_zipfile(path):
        with open(path, "rb") as f:
            head = f.read(8)
        if head.startswith(b"PK"):
            problem = "it is corrupt or truncated (a zip archive without its central directory)"
        else:
            problem = f"the file is not a .npz (zip) archive (it starts with {head!r})"
        raise SavedFileError(path, kind, None, f"{problem}; expected a file written by featurelens's save()")
    required, optional, prefixes = tuple(required), tuple(optional), tuple(prefixes)
    arrays = {}
    try:
        too_big = npz_size_problem(path, max_bytes)
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        raise SavedFileError(path, kind, None, describe_load_error(err)) from None
    if too_big is not None:
        raise SavedFileError(path, kind, None, too_big)
    try:
        data = np.load(path, allow_pickle=False)
    except Exception as err:  # zipfile, zlib and numpy raise a zoo of types for broken archives
        raise SavedFileError(path, kind, None, describe_load_error(err)) from None
    with data:
        names = list(data.files)
        missing = [n for n in required if n not in names]
        if missing:
            raise SavedFileError(
                path, kind, None,
                f"the archive lacks the array(s) {', '.join(map(repr, missing))}; found {names}, expected "
                f"{list(required)}{' and optionally ' + str(list(optional)) if optional else ''}",
            )
        unknown = [n for n in names if n not in required and n not in optional and not n.startswith(prefixes)]
        if unknown:
            raise SavedFileError(
                path, kind, None,
                f"unknown array(s) {', '.join(map(repr, unknown))}; expected only {list(required + optional)}"
                + (f" and names starting with {', '.join(map(repr, prefixes))}" if prefixes else ""),
            )
        for name in names:
            try:
                value = data[name]
            except Exception as err:
                raise SavedFileError(path, kind, f"array {name!r}", describe_load_error(err)) from None
            if not isinstance(value, np.ndarray):
                raise SavedFileError(path, kind, f"array {name!r}", "the member is not a .npy array")
            if value.dtype.kind in "OV":
                raise SavedFileError(path, kind, f"array {name!r}",
                                     f"found dtype {value.dtype}; expected a plain numeric array")
            arrays[name] = value
    return path, arrays


def read_meta(path: str, kind: str, array: np.ndarray, fmt: str) -> dict:
    """Parse the JSON document in the 0-d string array ``meta`` and check its ``format`` field."""
    if array.ndim != 0 or array.dtype.kind != "U":
        raise SavedFileError(path, kind, "array 'meta'",
                             f"found dtype {array.dtype} and shape {array.shape}; expected one JSON string")
    try:
        meta = json.loads(str(array))
    except RecursionError:
        raise SavedFileError(path, kind, "array 'meta'", f"the JSON is nested too deeply; expected at most "
                             f"{MAX_DEPTH} levels") from None
    except ValueError as err:  # JSONDecodeError
        raise SavedFileError(path, kind, "array 'meta'", f"invalid JSON ({err})") from None
    if not isinstance(meta, dict):
        raise SavedFileError(path, kind, "array 'meta'", f"found a JSON {type(meta).__name__}; expected an object")
    if _depth(meta) > MAX_DEPTH:
        raise SavedFileError(path, kind, "array 'meta'", f"the JSON is nested more than {MAX_DEPTH} levels deep")
    if meta.get("format") != fmt:
        raise SavedFileError(path, kind, "meta field 'format'", f"found {meta.get('format')!r}; expected {fmt!r}")
    return meta


def check_keys(path: str, kind: str, meta: dict, required: Iterable[str], optional: Iterable[str] = ()) -> None:
    """Refuse a JSON document with missing or unknown fields."""
    required, optional = tuple(required), tuple(optional)
    missing = [k for k in required if k not in meta]
    if missing:
        raise SavedFileError(path, kind, "array 'meta'",
                             f"missing field(s) {', '.join(map(repr, missing))}; expected {list(required)}")
    unknown = [k for k in meta if k not in required and k not in optional]
    if unknown:
        raise SavedFileError(path, kind, "array 'meta'",
                             f"unknown field(s) {', '.join(map(repr, unknown))}; expected only {list(required + optional)}")


def meta_field(path: str, kind: str, meta: dict, key: str, check, *args, **kwargs):
    """``check(meta[key], name, *args, **kwargs)`` with a :mod:`featurelens._validation` check;
    its TypeError/ValueError becomes a :class:`SavedFileError` naming the file and the field."""
    try:
        return check(meta[key], f"meta field {key!r}", *args, **kwargs)
    except (TypeError, ValueError) as err:
        raise SavedFileError(path, kind, None, str(err)) from None


def array_field(path: str, kind: str, arrays: dict, name: str, kinds: str, ndim: Iterable[int] | None = None):
    """The array ``name``, refused unless its dtype kind is in ``kinds`` (numpy kind letters) and
    its number of dimensions in ``ndim`` (any when None)."""
    a = arrays[name]
    names = {"b": "bool", "i": "int", "u": "unsigned int", "f": "float"}
    if a.dtype.kind not in kinds:
        expected = " or ".join(names.get(k, k) for k in kinds)
        raise SavedFileError(path, kind, f"array {name!r}", f"found dtype {a.dtype}; expected {expected} values")
    if ndim is not None and a.ndim not in tuple(ndim):
        raise SavedFileError(path, kind, f"array {name!r}",
                             f"found {a.ndim} dimension(s) (shape {a.shape}); expected {' or '.join(map(str, ndim))}")
    return a


def names_field(path: str, kind: str, meta: dict, key: str, ints: bool = False) -> list | None:
    """The optional JSON field ``key``: None when absent or null, else a list of distinct names,
    all strings (or, with ``ints``, all strings or all ints); anything else is refused."""
    value = meta.get(key)
    if value is None:
        return None
    allowed = "strings or all ints" if ints else "strings"
    if not isinstance(value, list):
        raise SavedFileError(path, kind, f"meta field {key!r}",
                             f"found a {type(value).__name__}; expected null or a list of distinct {allowed}")
    types = {type(v) for v in value}
    if not (types <= {str} or (ints and types <= {int})):
        first = type(value[0]) if ints and type(value[0]) in (str, int) else str
        bad = next(v for v in value if type(v) is not first)
        raise SavedFileError(path, kind, f"meta field {key!r}",
                             f"found {bad!r} ({type(bad).__name__}) among {len(value)} names; expected all {allowed}")
    if len(set(value)) != len(value):
        raise SavedFileError(path, kind, f"meta field {key!r}", "found a name twice; expected distinct names")
    return list(value)
