"""Reading model files for :func:`featurelens._loading.load_model`, one reader per format: a torch
state dict (``weights_only=True``, into a built-in architecture) or a TorchScript archive
(:func:`load_torch`), a skops file (:func:`load_skops`) and a joblib/pickle file
(:func:`load_pickle`). Formats that run code from the file at load (pickle, joblib, TorchScript)
need ``trust=True``; the reasons are :data:`WHY_PICKLE` and :data:`WHY_TORCHSCRIPT`. See
:mod:`featurelens._loading` for the whole policy.
"""

from __future__ import annotations

import os
import pickle
import warnings
import zipfile

from ._loading_errors import LoadError
from ._validation import check_bool

__all__ = ["zip_names", "is_torchscript", "is_torch_save", "state_dict_of", "build_architecture", "load_torch",
           "load_skops", "load_pickle", "load_lightgbm", "load_xgboost", "WHY_PICKLE", "WHY_TORCHSCRIPT"]

WHY_PICKLE = (
    "unpickling runs whatever code the file names, so a model file from an untrusted source can "
    "take over this machine"
)
WHY_TORCHSCRIPT = (
    "TorchScript archives contain code that runs at load (a module's __setstate__) and in every "
    "forward pass, and that code can write any file, so a model file from an untrusted source can "
    "take over this machine"
)


def zip_names(path: str) -> list[str] | None:
    if not zipfile.is_zipfile(path):
        return None
    try:
        with zipfile.ZipFile(path) as z:
            return z.namelist()
    except (zipfile.BadZipFile, OSError):
        return None


def is_torchscript(names: list[str] | None) -> bool:
    # torch.jit.save writes <archive>/code/... and <archive>/constants.pkl; torch.save does not.
    return bool(names) and any("/code/" in n or n.endswith("constants.pkl") for n in names)


def is_torch_save(names: list[str] | None) -> bool:
    return bool(names) and any(n.endswith("data.pkl") for n in names)


def state_dict_of(obj):
    """The state dict inside a loaded checkpoint (a dict of tensors, possibly under a key), or None."""
    import torch

    if isinstance(obj, dict) and obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
        return obj
    if isinstance(obj, dict):
        for key in ("state_dict", "model_state_dict", "model"):
            inner = obj.get(key)
            if isinstance(inner, dict) and inner and all(isinstance(v, torch.Tensor) for v in inner.values()):
                return inner
    return None


def build_architecture(path: str, state: dict, architecture: str, image_size: int | None):
    from .groundtruth.models import IMAGE_SIZES, MODELS, build_model

    name = architecture.lower()
    if name not in MODELS:
        raise LoadError(
            f"--architecture {architecture!r} is not a built-in architecture; expected one of "
            f"{', '.join(MODELS)}",
            exit_code=2,
        )
    sizes = IMAGE_SIZES if image_size is None else (image_size,)
    errors = []
    for size in sizes:
        try:
            model = build_model(name, image_size=size, seed=0)
        except ValueError as err:
            raise LoadError(str(err), exit_code=2) from err
        try:
            model.load_state_dict(state, strict=True)
        except RuntimeError as err:
            errors.append(f"{size}x{size}: {str(err).splitlines()[0]} {' '.join(str(err).split()[-12:])}")
            continue
        model.eval()
        return model, f"state dict {os.path.basename(path)} in architecture {name} ({size}x{size})"
    raise LoadError(
        f"the weights in {path} do not fit architecture {name!r} "
        f"({' or '.join(f'{s}x{s}' for s in sizes)}): " + "; ".join(errors)
    )


def load_torch(path: str, names, architecture, image_size, trust: bool):
    """Load a torch file: a state dict (``weights_only=True``) into the built-in ``architecture``;
    a TorchScript archive or a pickled module only with ``trust=True`` (True or False only: a
    string such as ``"false"`` is a TypeError, never read as true)."""
    trust = check_bool(trust, "trust")
    import torch

    if is_torchscript(names):
        if not trust:
            raise LoadError(
                f"refusing to load {path}: it is a TorchScript archive, and {WHY_TORCHSCRIPT}. Pass "
                "--trust-model-file (trust=True) only if you trust where the file came from, or save "
                "the weights as a state dict (torch.save(model.state_dict(), FILE)) and load them into "
                "a built-in network with --architecture, which loads with weights_only=True and runs "
                "no code from the file.",
                exit_code=2,
            )
        try:
            with warnings.catch_warnings():
                # torch 2.13 deprecates TorchScript in favour of torch.export, but still loads it.
                warnings.simplefilter("ignore", DeprecationWarning)
                model = torch.jit.load(path, map_location="cpu")
        except Exception as err:  # torch raises RuntimeError and friends for broken archives
            raise LoadError(f"cannot read {path} as a TorchScript file: {err}") from err
        model.eval()
        return model, f"TorchScript {os.path.basename(path)} (trusted)"
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        # weights_only refuses anything but tensors and plain containers: this file holds Python
        # objects (e.g. a whole module saved with torch.save(model)).
        if not trust:
            raise LoadError(
                f"refusing to load {path}: it holds pickled Python objects (e.g. a whole module "
                f"saved with torch.save(model)), not just weights, and {WHY_PICKLE}. Save the "
                "model as a state dict (torch.save(model.state_dict(), FILE)) with --architecture, or "
                "pass "
                "--trust-model-file if you trust where the file came from.",
                exit_code=2,
            ) from err
        try:
            obj = torch.load(path, map_location="cpu", weights_only=False)
        except Exception as err2:
            raise LoadError(f"cannot read {path} as a torch file: {err2}") from err2
    except Exception as err:
        raise LoadError(f"cannot read {path} as a torch file (corrupt or not a torch.save file): {err}") from err
    if isinstance(obj, torch.nn.Module):
        obj.eval()
        return obj, f"torch module {os.path.basename(path)} (trusted pickle)"
    state = state_dict_of(obj)
    if state is None:
        raise LoadError(
            f"{path} holds a {type(obj).__name__}, not a model: expected a state dict (a dict of "
            "tensors) or, with --trust-model-file, a TorchScript file or a pickled module"
        )
    if architecture is None:
        raise LoadError(
            f"{path} holds a state dict (weights only, {len(state)} tensors); name the network they "
            "belong to with --architecture (one of the built-in llr, mlp, cnn)",
            exit_code=2,
        )
    return build_architecture(path, state, architecture, image_size)


def load_skops(path: str, trust: bool, trusted_types=()):
    """Load a skops file with skops' default trusted types plus ``trusted_types`` (type names as
    ``skops.io.get_untrusted_types`` prints them, from ``--trust-type NAME``); ``trust=True``
    trusts every type in the file. A file holding other types is refused with the exact
    ``--trust-type`` flags that would load it. ``trust`` is True or False only (a string such as
    ``"false"`` is a TypeError), and ``trusted_types`` a list of type names (a single string, whose
    characters would be read as names, is refused)."""
    trust = check_bool(trust, "trust")
    if isinstance(trusted_types, (str, bytes)) or not hasattr(trusted_types or (), "__iter__"):
        raise TypeError(f"trusted_types must be a list of type names, e.g. [{'sklearn.tree._tree.Tree'!r}]; "
                        f"got {trusted_types!r} ({type(trusted_types).__name__})")
    try:
        import skops.io as sio
    except ImportError as err:
        raise LoadError(f"reading {path} needs skops: pip install skops") from err

    try:
        untrusted = sio.get_untrusted_types(file=path)
    except Exception as err:
        raise LoadError(f"cannot read {path} as a skops file (corrupt or not skops.io.dump output): {err}") from err
    extra = [str(t) for t in (trusted_types or ())]
    missing = [t for t in untrusted if t not in extra]
    if missing and not trust:
        flags = " ".join(f"--trust-type {t}" for t in untrusted)
        still = f" (still untrusted: {', '.join(missing)})" if extra else ""
        raise LoadError(
            f"refusing to load {path}: it holds types that skops does not trust by default "
            f"({', '.join(untrusted)}){still}; loading them could run their code. Check that they are "
            f"what you expect, then pass {flags} (featurelens explain), or --trust-model-file to trust "
            "every type in the file.",
            exit_code=2,
        )
    # skops.io.load(trusted=[...]) trusts the listed types on top of its default trusted types
    trusted = sorted(set(untrusted) | set(extra)) if trust else [t for t in untrusted if t in extra]
    try:
        model = sio.load(path, trusted=trusted or None)
    except Exception as err:
        raise LoadError(f"cannot load {path} with skops: {err}") from err
    return model, f"skops {os.path.basename(path)}"


def load_pickle(path: str, trust: bool):
    """Load a joblib/pickle file, only with ``trust=True`` (unpickling runs code from the file);
    ``trust`` is True or False only: a string such as ``"false"`` is a TypeError, never read as
    true."""
    trust = check_bool(trust, "trust")
    if not trust:
        raise LoadError(
            f"refusing to load {path}: it is a pickle/joblib file, and {WHY_PICKLE}. Pass "
            "--trust-model-file only if you trust where the file came from, or save a "
            "scikit-learn model with skops (skops.io.dump(model, 'model.skops')) and a torch model "
            "as a state dict (with --architecture), which load without running code.",
            exit_code=2,
        )
    import joblib

    try:
        model = joblib.load(path)  # joblib also reads plain pickle files
    except Exception as err:
        raise LoadError(f"cannot unpickle {path} (corrupt or not a joblib/pickle file): {err}") from err
    return model, f"joblib/pickle {os.path.basename(path)} (trusted)"


def _load_booster(path: str, library: str):
    """A LightGBM / XGBoost model file read as data
    (:mod:`featurelens.explainers.tree.booster_files`), as a scikit-learn-style estimator
    (:func:`featurelens.explainers.tree.booster_estimator`), and its description."""
    from .explainers.tree import booster_files
    from .explainers.tree.raw_boosters import booster_estimator

    read = booster_files.read_lightgbm if library == "lightgbm" else booster_files.read_xgboost
    try:
        booster = read(path)
    except ImportError as err:
        raise LoadError(str(err)) from err
    except booster_files.BoosterFileError as err:
        raise LoadError(str(err)) from err
    try:
        model = booster_estimator(booster)
    except Exception as err:  # a model whose objective or dump cannot be read
        raise LoadError(f"cannot use the model in {path}: {err}") from err
    return model, booster_files.describe(path, library)


def load_lightgbm(path: str):
    """A LightGBM text model file (``booster.save_model``), read as data: nothing in it runs."""
    return _load_booster(path, "lightgbm")


def load_xgboost(path: str):
    """An XGBoost model file (``booster.save_model`` to .json or .ubj), read as data: nothing in
    it runs."""
    return _load_booster(path, "xgboost")
