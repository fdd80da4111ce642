"""torchvision's model architectures, importable beside the CPU build of torch.

The only torchvision on the package index for torch 2.13 (0.28.0) is built against CUDA torch:
its compiled operators (``torchvision::nms``, ``roi_align``, ...) do not load beside the CPU
torch that our machines and CI pin, and ``import torchvision`` then fails in
``torchvision._meta_registrations``, which registers fake kernels for those operators
("operator torchvision::nms does not exist"). The model definitions (``torchvision.models``)
are plain Python and need none of them. ``make setup`` installs that torchvision outside
site-packages (``.venv/torchvision-models``; transformers imports any torchvision it finds and
would fail on it), and :func:`import_torchvision` imports it from there, with
``_meta_registrations`` stubbed out when the compiled ops do not load, so the
benchmarks and tests build ResNet, DenseNet and ViT exactly as torchvision ships them (random
weights: nothing is downloaded). Detection ops stay unusable in that case; nothing here uses them.

Used by ``bench_scale.py`` and by ``tests/explainers/test_reused_modules.py``.
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

_META = "torchvision._meta_registrations"


def vendored_folder() -> Path:
    """Where ``make setup`` installs torchvision outside site-packages: ``<venv>/torchvision-models``."""
    return Path(sys.prefix) / "torchvision-models"


def import_torchvision():
    """``torchvision``, or raise ImportError saying why it cannot be used here.

    A torchvision in site-packages that imports is used as it is. Otherwise the copy ``make setup``
    installs in :func:`vendored_folder` is imported (with its compiled ops' fake registrations
    stubbed out when they do not load), and that folder stays on ``sys.path``.

    Returns
    -------
    module
        The imported ``torchvision`` package; ``torchvision.models.resnet18(weights=None)`` and
        the other architectures work on the CPU.

    Examples
    --------
    >>> tv = import_torchvision()  # doctest: +SKIP
    >>> net = tv.models.resnet18(weights=None).eval()  # doctest: +SKIP
    """
    if "torchvision" in sys.modules and hasattr(sys.modules["torchvision"], "models"):
        return sys.modules["torchvision"]
    try:
        return importlib.import_module("torchvision")
    except ModuleNotFoundError:
        folder = vendored_folder()
        if not (folder / "torchvision").is_dir():
            raise ImportError(f"torchvision is not installed (neither in site-packages nor in {folder}; "
                              "`make setup` puts it there)") from None
        sys.path.append(str(folder))
    except RuntimeError as err:
        if "torchvision::" not in str(err):
            raise ImportError(f"torchvision does not import here: {err}") from err
    _drop_partial_import()
    try:
        return importlib.import_module("torchvision")
    except RuntimeError as err:
        if "torchvision::" not in str(err):
            raise ImportError(f"torchvision does not import here: {err}") from err
    # The compiled ops did not load: stub the fake kernel registrations (they only describe those
    # ops for torch.compile) and import the plain-Python package again.
    _drop_partial_import()
    sys.modules[_META] = types.ModuleType(_META)
    try:
        return importlib.import_module("torchvision")
    except Exception as err:  # noqa: BLE001 - any failure means: not usable here
        raise ImportError(f"torchvision does not import here, even without its compiled ops: {err}") from err


def _drop_partial_import() -> None:
    """A failed import leaves the half-imported package in sys.modules: remove it."""
    for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
        del sys.modules[name]
