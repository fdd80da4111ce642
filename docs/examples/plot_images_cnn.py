"""
Images: a small CNN on XAI-TRIS, gradients, Captum's families, Grad-CAM and WAM
=================================================================================

XAI-TRIS (Clark, Wilming & Haufe 2024) plants a tetromino in each 8x8 image; the class says which
one, so the pixels that *should* matter are known. We train a small CNN for a few seconds, explain
its predictions with gradient methods, Captum's families (DeepLift, guided backprop, LRP),
Grad-CAM and WAM (in the wavelet domain), and score each map against the planted pattern with
``precision_at_k``.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

import featurelens as fl
from featurelens.explainers.wavelet import plot_wam_scales

torch.manual_seed(0)
ds = fl.datasets.xai_tris("linear", "white", image_size=8, n_samples=1000, seed=0)
X, y = torch.from_numpy(ds.X), torch.from_numpy(ds.y).long()

cnn = nn.Sequential(
    nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
    nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
    nn.Flatten(), nn.Linear(8 * 8 * 8, 2),
)
opt = torch.optim.Adam(cnn.parameters(), lr=1e-2)
for epoch in range(15):
    for i in range(0, 800, 100):
        opt.zero_grad()
        nn.functional.cross_entropy(cnn(X[i:i + 100]), y[i:i + 100]).backward()
        opt.step()
cnn.eval()
with torch.no_grad():
    print("held-out accuracy:", (cnn(X[800:]).argmax(1) == y[800:]).float().mean().item())

# %%
# One call per method
# -------------------
# ``fl.explainer(name, model, ...)`` builds any registered method; ``.explain(x, target=y)``
# returns an :class:`~featurelens.Explanation` whose ``values`` are shaped like ``x``
# (Grad-CAM's are upsampled to the input). Grad-CAM reads the last convolution by default.
x, target, truth = ds.X[800:816], ds.y[800:816], ds.ground_truth[800:816]
methods = ["saliency", "integrated_gradients", "deeplift", "guided_backprop", "lrp", "gradcam"]
maps = {m: fl.explainer(m, cnn).explain(x, target=target) for m in methods}
for m, e in maps.items():
    score = fl.metrics.precision_at_k(e, truth).mean()
    print(f"{m:22s} precision@k vs the planted pattern: {score:.2f}")

# %%
# The maps of one image, beside the planted pattern
fig, axes = plt.subplots(1, len(methods) + 2, figsize=(2 * (len(methods) + 2), 2.3))
axes[0].imshow(x[0, 0], cmap="gray")
axes[0].set_title(f"input (class {target[0]})")
axes[1].imshow(truth[0], cmap="Greens")
axes[1].set_title("planted")
for ax, m in zip(axes[2:], methods):
    a = np.asarray(maps[m].values[0]).reshape(8, 8)
    lim = np.abs(a).max() or 1.0
    ax.imshow(a, cmap="RdBu_r", vmin=-lim, vmax=lim)
    ax.set_title(m, fontsize=8)
for ax in axes:
    ax.set_axis_off()
plt.tight_layout()

# %%
# Integrated gradients is complete: each map sums to ``f(x) - f(baseline)``, and the explanation
# records the largest relative gap of the quadrature.
print("IG max relative completeness gap:", maps["integrated_gradients"].params["max_relative_gap"])
maps["integrated_gradients"].plot(inputs=x, max_samples=4)

# %%
# WAM: attributions in the wavelet domain
# ---------------------------------------
# WAM (Kasmi et al. 2025) takes the gradient with respect to the wavelet coefficients of the image
# instead of its pixels: ``extra["scales"]`` holds one map per scale (finest detail first, the
# coarse approximation last), and ``values`` their sum back in pixel space. On 8x8 images two Haar
# levels leave a 2x2 approximation. ``wam_smoothgrad`` and ``wam_ig`` average the same gradient over
# noise or along a path.
w = fl.explainer("wam", cnn, wavelet="haar", levels=2).explain(x, target=target)
print("values:", w.values.shape, " scales:", w.extra["scales"].shape)
print(f"WAM precision@k vs the planted pattern: {fl.metrics.precision_at_k(w, truth).mean():.2f}")

# %%
# The maps of the coarser scales are constant over 2x2 and 4x4 blocks of pixels, so their sum is
# blurrier than a pixel gradient and scores lower on pixel-level precision; what WAM adds is *at
# which scale* the model looks, panel by panel:
plot_wam_scales(w, index=0, inputs=x)
