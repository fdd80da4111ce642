"""GPU check for issue 12 (Acceptance 4): a CUDA model game through ``RayExecutor(num_gpus=1)``.

Run on a machine with an NVIDIA GPU (the device tool's H200; nothing is downloaded)::

    python benchmarks/gpu_ray_check.py            # prints a JSON line; exit 1 on a mismatch

It starts a local Ray with the machine's CPUs and one GPU, builds a MaskedModel game over a CUDA MLP
(the model travels as ``fl.Model.from_factory``, so the actor builds it on its own GPU once), and
evaluates the same coalitions serially on the GPU and through one GPU actor. It reports whether
the actor saw CUDA, whether the values agree (to 1e-12 in float64: the same device kind, the same
chunks), and the time of each path. Without CUDA it says so and exits 0 (nothing to check).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import torch

import featurelens as fl
from featurelens.games import MaskedModel


def build_cuda_mlp():
    """The model factory: an MLP on the GPU, in float64 (module-level, so workers import it)."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(256, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 2048),
                              torch.nn.GELU(), torch.nn.Linear(2048, 10))
    return net.double().cuda().eval()


def main() -> int:
    if not torch.cuda.is_available():
        print(json.dumps({"cuda": False, "note": "no CUDA device: nothing to check"}))
        return 0
    import ray

    from featurelens.parallel import RayExecutor

    rng = np.random.default_rng(0)
    x = rng.normal(size=256)
    background = rng.normal(size=(32, 256))
    masks = rng.integers(0, 2, size=(4096, 256)).astype(bool)

    model = fl.Model.from_factory(build_cuda_mlp, key="gpu-mlp", device="cuda")
    serial = MaskedModel(model, x, background=background, batch_size=32 * 256)
    serial(masks[:64])  # warm up CUDA
    torch.cuda.synchronize()
    start = time.perf_counter()
    expected = serial(masks)
    torch.cuda.synchronize()
    serial_s = time.perf_counter() - start

    ray.init(include_dashboard=False, log_to_driver=False, num_gpus=1)
    try:
        with RayExecutor(num_workers=1, num_cpus=1, num_gpus=1) as ex:
            seen = ex.map(lambda shared, item: (torch.cuda.is_available(), torch.cuda.device_count()), [0])[0]
            game = MaskedModel(model, x, background=background, batch_size=32 * 256, executor=ex)
            game(masks[:64])  # the actor builds the model once
            start = time.perf_counter()
            values = game(masks)
            ray_s = time.perf_counter() - start
    finally:
        ray.shutdown()
    diff = float(np.abs(values - expected).max())
    report = {"cuda": True, "device": torch.cuda.get_device_name(0), "actor_sees_cuda": bool(seen[0]),
              "actor_gpus": int(seen[1]), "coalitions": int(masks.shape[0]), "max_abs_diff": diff,
              "serial_gpu_s": round(serial_s, 3), "ray_one_gpu_actor_s": round(ray_s, 3),
              "model_calls": int(game.model_calls)}
    print(json.dumps(report))
    return 0 if diff <= 1e-12 and seen[0] and seen[1] == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
