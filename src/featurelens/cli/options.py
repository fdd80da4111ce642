"""What the commands' parsers share: the argparse value types (each raises
``argparse.ArgumentTypeError`` with a message saying what was expected and what was given), the
:class:`Choices` action, the ``--overwrite`` flag and the explainer names. Nothing here imports
torch (``featurelens --help`` stays instant)."""

from __future__ import annotations

import argparse

__all__ = ["positive_int", "non_negative_int", "non_negative_float", "fraction", "Choices", "shape", "output_target",
           "add_overwrite", "add_model_and_data", "explainer_names"]


def _number(parse, expected: str, ok):
    """An argparse type: ``parse(text)`` (int or float), refused unless ``ok(value)``, with one
    message saying what was ``expected`` and what was given."""

    def convert(text: str):
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return convert


positive_int = _number(int, "a positive integer", lambda v: v >= 1)
non_negative_int = _number(int, "a non-negative integer", lambda v: v >= 0)
non_negative_float = _number(float, "a non-negative finite number", lambda v: 0 <= v < float("inf"))
fraction = _number(float, "a number in (0, 1)", lambda v: 0 < v < 1)


class Choices(argparse.Action):
    """``nargs="+"`` names, also accepted comma-separated (``--methods saliency,random``), each
    checked against ``valid`` with a message naming the option, the value and the valid choices.

    ``valid`` is a sequence, or a callable returning one: a callable is only called when the option
    is given, so that listing heavy registries (the explainers import torch) never slows ``--help``.
    """

    def __init__(self, option_strings, dest, valid=(), **kwargs):
        self.valid = valid
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        valid = tuple(self.valid() if callable(self.valid) else self.valid)
        names = [v for value in values for v in value.split(",") if v]
        for name in names:
            if name not in valid:
                parser.error(f"argument {option_string}: unknown value {name!r}; valid choices: {', '.join(valid)}")
        setattr(namespace, self.dest, list(dict.fromkeys(names)))


def shape(text: str) -> tuple[int, ...]:
    """A one-sample shape such as ``1,8,8`` or ``1x8x8``."""
    parts = [p for p in text.replace("x", ",").split(",") if p.strip()]
    try:
        value = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a shape such as 1,8,8; got {text!r}") from None
    if not value or any(s < 1 for s in value):
        raise argparse.ArgumentTypeError(f"expected a shape of positive ints such as 1,8,8; got {text!r}")
    return value


def output_target(text: str):
    """An output index (int >= 0), ``predicted`` or ``labels``."""
    if text in ("predicted", "labels"):
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an output index (int >= 0), 'predicted' or 'labels'; got {text!r}"
        ) from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an output index >= 0; got {text!r}")
    return value


def add_overwrite(parser, what: str) -> None:
    """``--overwrite``: write into ``--out`` even when it holds other files (``what`` says which
    earlier report is always replaced)."""
    parser.add_argument("--overwrite", action="store_true",
                        help=f"write into --out even when it holds other files ({what}); without it such a "
                             "place is refused before any work")


def add_model_and_data(parser, *, state_dicts: bool, skops_trust: bool) -> None:
    """The model and data options of ``audit`` and ``explain``: ``--model``, ``--data``,
    ``--labels`` and ``--trust-model-file`` (``featurelens._loading`` reads them).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser.
    state_dicts : bool
        Whether the command also reads a torch state dict with ``--architecture`` (audit).
    skops_trust : bool
        Whether ``--trust-model-file`` also trusts every type of a skops file (explain, which has
        ``--trust-type`` for single types).

    Returns
    -------
    None

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_model_and_data(p, state_dicts=False, skops_trust=False)
    >>> p.parse_args(["--model", "m.skops", "--data", "x.csv"]).labels is None
    True
    """
    files = ("skops (.skops), a LightGBM (.txt) or XGBoost (.json, .ubj) booster file (read as data), or "
             "TorchScript (.pt) or joblib/pickle (.joblib, .pkl), which need --trust-model-file")
    parser.add_argument("--model", required=True, metavar="FILE",
                        help=("torch state dict (.pt, with --architecture), " if state_dicts else "") + files)
    parser.add_argument("--data", required=True, metavar="FILE", help="inputs: .npy, .npz, .csv or .parquet (rows = samples)")
    parser.add_argument("--labels", default=None, metavar="FILE|COLUMN",
                        help="labels: a column of the CSV/parquet data (left out of the features), an array "
                             "name in the .npz, or a .npy/.csv file")
    parser.add_argument("--trust-model-file", action="store_true",
                        help="allow a TorchScript or pickle/joblib model file (both run code from the file at "
                             "load: only for files you trust)"
                             + ("; for a skops file, trust every type in it" if skops_trust else ""))


def explainer_names():
    """The registered explainer names (imports the explainers, hence torch: pass the function
    itself to :class:`Choices`, which calls it only when the option is given)."""
    from ..explainers import list_explainers

    return list_explainers()
