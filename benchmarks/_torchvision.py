"""torchvision's model architectures, importable beside the CPU build of torch.

The only torchvision on the package index for torch 2.13 (0.28.0) is built against CUDA torch:
its compiled operators (``torchvision::nms``, ``roi_align``, ...) do not load beside the CPU
torch that our machines and CI pin, and ``import torchvision`` then fails in
``torchvision._meta_registrations``, which registers fake kernels for those operators
("operator torchvision::nms does not exist"). The model definitions (``torchvision.models``)
are plain Python and need none of them. :func:`import_torchvision` imports torchvision normally
and, only when that fails this way, again with ``_meta_registrations`` stubbed out, so the
benchmarks and tests build ResNet, DenseNet and ViT exactly as torchvision ships them (random
weights: nothing is downloaded). Detection ops stay unusable in that case; nothing here uses them.

Used by ``bench_scale.py`` and by ``tests/explainers/test_reused_modules.py``.
"""

from __future__ import annotations

import importlib
import sys
import types

_META = "torchvision._meta_registrations"


def import_torchvision():
    """``torchvision``, or raise ImportError saying why it cannot be used here.

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
    try:
        return importlib.import_module("torchvision")
    except ModuleNotFoundError:
        raise
    except RuntimeError as err:
        if "torchvision::" not in str(err):
            raise ImportError(f"torchvision does not import here: {err}") from err
    # A half-imported package stays in sys.modules after the failure: drop it, stub the fake
    # kernel registrations (they only describe the compiled ops for torch.compile) and retry.
    for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
        del sys.modules[name]
    sys.modules[_META] = types.ModuleType(_META)
    try:
        return importlib.import_module("torchvision")
    except Exception as err:  # noqa: BLE001 - any failure means: not usable here
        raise ImportError(f"torchvision does not import here, even without its compiled ops: {err}") from err
