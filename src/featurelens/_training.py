"""The one training loop, for the benchmark's reference models and for ``fit_sop``: Adam on
CrossEntropyLoss over logits, early stopping on the validation loss with the best weights
restored, seeded end to end.

The data are small (8x8 or 64x64 images, thousands of samples), so batches are cut from tensors
already in memory instead of going through a DataLoader, whose per-batch overhead would dominate.
XAI-TRIS (Clark et al. 2024, arXiv 2306.12816) trains with Adam (lr 5e-4, batch 512) for at most
500 epochs with patience 400; the defaults here keep the 500 epochs but stop after 50 epochs
without a better validation loss (:data:`DEFAULT_EPOCHS`, :data:`DEFAULT_PATIENCE`). The benchmark
runner uses a larger learning rate (``featurelens.groundtruth.runner.DEFAULT_SETTINGS``) so that its
models converge within that budget.
"""

from __future__ import annotations

import contextlib
import copy
import sys
import time

import numpy as np
from featurelens._optional import is_tensor, torch
from torch import nn

from ._budgets import available_cores
from ._random import parse_seed, root_seed, torch_generator, torch_seeded
from ._validation import check_float, check_int

__all__ = ["train_model", "evaluate", "as_tensors", "available_cores", "limited_threads",
           "DEFAULT_EPOCHS", "DEFAULT_PATIENCE", "SMALL_MODEL_PARAMETERS"]

DEFAULT_EPOCHS = 500
DEFAULT_PATIENCE = 50
SMALL_MODEL_PARAMETERS = 100_000
_EVAL_CHUNK = 4096


@contextlib.contextmanager
def limited_threads(n: int | None = None):
    """Run with ``torch.set_num_threads(min(current, n or available cores))``; restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, min(before, n or available_cores())))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def as_tensors(data, name: str = "data") -> tuple[torch.Tensor, torch.Tensor]:
    """``(X, y)`` float32 / int64 tensors from a dataset with ``.X`` and ``.y`` or a pair."""
    if hasattr(data, "X") and hasattr(data, "y"):
        X, y = data.X, data.y
    elif isinstance(data, (tuple, list)) and len(data) == 2:
        X, y = data
    else:
        raise TypeError(
            f"{name} must be a dataset with .X and .y attributes or a pair (X, y); got {type(data).__name__}"
        )
    X = torch.as_tensor(np.asarray(X) if not is_tensor(X) else X).float().contiguous()
    y = torch.as_tensor(np.asarray(y) if not is_tensor(y) else y).long().reshape(-1)
    if X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise ValueError(
            f"{name} must hold as many labels as samples (n >= 1); got X of shape {tuple(X.shape)} "
            f"and y of shape {tuple(y.shape)}"
        )
    if not bool(torch.isfinite(X).all()):
        raise ValueError(f"{name}.X contains NaN or inf values; expected finite numbers")
    return X, y


@torch.no_grad()
def evaluate(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """Mean cross-entropy and accuracy of ``model`` (put in eval mode) on ``(X, y)``."""
    model.eval()
    loss_sum = 0.0
    correct = 0
    for start in range(0, X.shape[0], _EVAL_CHUNK):
        logits = model(X[start : start + _EVAL_CHUNK])
        yy = y[start : start + _EVAL_CHUNK]
        loss_sum += float(nn.functional.cross_entropy(logits, yy, reduction="sum").double())
        correct += int((logits.argmax(1) == yy).sum())
    return loss_sum / X.shape[0], correct / X.shape[0]


def train_model(
    model: nn.Module,
    train,
    val,
    test=None,
    *,
    epochs: int = DEFAULT_EPOCHS,
    lr: float = 5e-4,
    batch_size: int = 512,
    patience: int = DEFAULT_PATIENCE,
    seed: int = 0,
    progress: bool | None = None,
    description: str = "training",
    threads: int | None = None,
):
    """Train ``model`` on logits with Adam and CrossEntropyLoss; stop early on the validation loss.

    After every epoch the mean validation cross-entropy is computed in eval mode; the weights of
    the epoch with the lowest one are kept and restored at the end, and training stops once
    ``patience`` epochs in a row brought no improvement (or after ``epochs`` epochs).

    Parameters
    ----------
    model
        A ``torch.nn.Module`` mapping a batch to logits ``(n, classes)``; trained in place.
    train, val, test
        Datasets with ``.X`` and ``.y`` (for example :meth:`XAITrisDataset.split` parts) or pairs
        ``(X, y)``; ``test`` (optional) only adds the test accuracy to the history.
    epochs, patience
        Most epochs, and epochs without a better validation loss before stopping.
    lr, batch_size
        Adam learning rate and mini-batch size (XAI-TRIS: 5e-4 and 512).
    seed
        Seeds the shuffling (a ``torch.Generator``) and dropout; the global random state of the
        caller is left as it was.
    progress
        Show a tqdm bar over epochs; None: only when stderr is a terminal.
    threads
        torch threads while training (never more than the current setting or the available
        cores). None: one thread for models under :data:`SMALL_MODEL_PARAMETERS` parameters, whose
        per-operation work is too small to share (two threads measured several times slower for
        the 8x8 models on a 2-core machine), else every available core.

    Returns
    -------
    ``(model, history)``: the model in eval mode with the best-validation weights, and a dict with
    ``epochs`` (run), ``best_epoch`` (1-based), ``best_val_loss``, ``train_loss`` and ``val_loss``
    (per epoch), ``train_accuracy``, ``val_accuracy``, ``test_accuracy`` (None without ``test``),
    ``stopped_early`` and ``seconds``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    epochs = check_int(epochs, "epochs", low=1)
    patience = check_int(patience, "patience", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1)
    lr = check_float(lr, "lr", low=0.0, low_inclusive=False)
    parse_seed(seed)
    Xtr, ytr = as_tensors(train, "train")
    Xva, yva = as_tensors(val, "val")
    if progress is None:
        progress = sys.stderr.isatty()
    if threads is None:
        n_params = sum(p.numel() for p in model.parameters())
        threads = 1 if n_params < SMALL_MODEL_PARAMETERS else available_cores()
    threads = check_int(threads, "threads", low=1)

    from tqdm.auto import tqdm

    start = time.perf_counter()
    root = root_seed(seed)  # one int for the minibatch order and torch's global generator
    gen = torch_generator(root)
    optimiser = torch.optim.Adam(model.parameters(), lr=float(lr))
    loss_fn = nn.CrossEntropyLoss()
    n = Xtr.shape[0]
    best_loss, best_epoch, best_state, waited = float("inf"), 0, None, 0
    history: dict = {"train_loss": [], "val_loss": []}
    bar = tqdm(range(1, epochs + 1), desc=description, disable=not progress, leave=False, unit="epoch")
    # fork_rng: dropout draws from the global generator; seed it here without disturbing the caller.
    with limited_threads(threads), torch_seeded(root):
        for epoch in bar:
            model.train()
            order = torch.randperm(n, generator=gen)
            total = 0.0
            for s in range(0, n, batch_size):
                idx = order[s : s + batch_size]
                optimiser.zero_grad(set_to_none=True)
                loss = loss_fn(model(Xtr[idx]), ytr[idx])
                loss.backward()
                optimiser.step()
                total += float(loss.detach()) * idx.shape[0]
            val_loss, _ = evaluate(model, Xva, yva)
            history["train_loss"].append(total / n)
            history["val_loss"].append(val_loss)
            if val_loss < best_loss:
                best_loss, best_epoch, waited = val_loss, epoch, 0
                best_state = copy.deepcopy(model.state_dict())
            else:
                waited += 1
            bar.set_postfix(val_loss=f"{val_loss:.4f}", best=f"{best_loss:.4f}", refresh=False)
            if waited >= patience:
                break
        bar.close()
        if best_state is not None:
            model.load_state_dict(best_state)
        model.eval()
        _, train_acc = evaluate(model, Xtr, ytr)
        final_val_loss, val_acc = evaluate(model, Xva, yva)
        test_acc = None
        if test is not None:
            _, test_acc = evaluate(model, *as_tensors(test, "test"))
    history.update(
        epochs=len(history["val_loss"]),
        best_epoch=best_epoch,
        best_val_loss=best_loss,
        final_val_loss=final_val_loss,
        train_accuracy=train_acc,
        val_accuracy=val_acc,
        test_accuracy=test_acc,
        stopped_early=len(history["val_loss"]) < epochs,
        seconds=time.perf_counter() - start,
    )
    return model, history
