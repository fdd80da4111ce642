"""
What a network learned while it trained: a monitor, the Neural Feature Ansatz, neural collapse and a sparse autoencoder
=======================================================================================================================

A small MLP learns scikit-learn's handwritten digits (8x8 images, bundled with scikit-learn) while
a :class:`featurelens.learning.Monitor` watches it: per layer the AGOP, the Neural Feature Ansatz
correlation, the effective rank and the neural-collapse metrics, and the spectrum of the recent
weight updates (its eigengap detector is the one that announces grokking on modular addition:
``featurelens diagnose``). After training we read the same quantities directly, and fit a sparse
autoencoder on the last hidden layer's activations.

Everything here runs on data that ships with scikit-learn, in a few seconds on 2 CPU cores.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

import featurelens as fl

torch.manual_seed(0)
X, y = load_digits(return_X_y=True)
X = (X / 16.0).astype(np.float32)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
Xt, yt = torch.from_numpy(X_train), torch.from_numpy(y_train)

model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
opt = torch.optim.Adam(model.parameters(), lr=0.01)

# %%
# Train with a monitor
# --------------------
# ``Monitor(model, X_probe, y_probe)`` measures the layers on a fixed probe set every ``every``
# steps; ``mon.step()`` goes after the optimiser step of any training loop.

mon = fl.learning.Monitor(model, X_test[:128], y_test[:128], every=5, window=5)
for step in range(60):
    model.train()
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(Xt), yt)
    loss.backward()
    opt.step()
    mon.step()
model.eval()
with torch.no_grad():
    accuracy = (model(torch.from_numpy(X_test)).argmax(1).numpy() == y_test).mean()
print(f"test accuracy {accuracy:.3f}; {len(mon.history)} monitor records")

# ``mon.plot()`` returns a figure of its own (not a pyplot one); given ``fig=`` it draws there.
mon.plot(fig=plt.figure(figsize=(12, 11)))

# %%
# The Neural Feature Ansatz
# -------------------------
# Radhakrishnan et al. (Science 2024): a trained layer's Gram matrix ``W^T W`` is proportional to
# the square root of the AGOP of the network with respect to that layer's input. ``nfa`` returns
# the correlation per Linear layer (1 means the two matrices are proportional).

corr = fl.learning.nfa(model, X_test)
fresh = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
corr_init = fl.learning.nfa(fresh, X_test)
print({k: round(v, 3) for k, v in corr.items()})

fig, ax = plt.subplots(figsize=(5, 3))
names = list(corr)
ax.bar(np.arange(len(names)) - 0.2, [corr_init[k] for k in names], 0.4, label="at initialisation")
ax.bar(np.arange(len(names)) + 0.2, [corr[k] for k in names], 0.4, label="trained")
ax.set_xticks(np.arange(len(names)), names)
ax.set_ylabel("corr(W^T W, AGOP^1/2)")
ax.set_title("Neural Feature Ansatz per layer")
ax.legend()
plt.tight_layout()

# %%
# Neural collapse across the layers
# ---------------------------------
# Papyan, Han & Donoho (2020): with training, the features of each class gather around their class
# mean (NC1, within- over between-class variability, falls). Here per hidden layer, on the test
# images.

with torch.no_grad():
    h1 = model[:2](torch.from_numpy(X_test)).numpy()
    h2 = model[:4](torch.from_numpy(X_test)).numpy()
layers = {"input": X_test, "hidden 1": h1, "hidden 2": h2}
nc1 = {k: fl.learning.neural_collapse(h, y_test)["nc1"] for k, h in layers.items()}
print({k: round(float(v), 3) for k, v in nc1.items()})

fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(list(nc1), list(nc1.values()), "o-")

ax.set_ylabel("NC1 (lower: more collapsed)")
ax.set_title("Within-class variability falls with depth")
plt.tight_layout()

# %%
# A sparse autoencoder on the activations
# ---------------------------------------
# Dictionary learning on the 32 activations of the last hidden layer: 64 latents, top-k sparsity
# (k = 4), the encoder scored by the cosine (invariant to the activation's norm), decoding with the
# magnitude kept (``magnitude="norm"``). The fraction of variance left unexplained and how often
# each latent fires:

sae = fl.learning.SparseAutoencoder(64, score="cosine", sparsity="topk", k=4, magnitude="norm",
                                    epochs=20, seed=0).fit(h2)
codes = sae.transform(h2)
recon = sae.reconstruct(h2)
fvu = float(((h2 - recon) ** 2).sum() / ((h2 - h2.mean(0)) ** 2).sum())
print(f"fraction of variance unexplained {fvu:.3f}; dead latents: {fl.learning.dead_latents(sae, h2)}")

fig, ax = plt.subplots(figsize=(5, 3))
ax.bar(np.arange(codes.shape[1]), np.sort((codes > 0).mean(0))[::-1])
ax.set_xlabel("latent (sorted)")
ax.set_ylabel("share of images it fires on")
ax.set_title(f"SAE on hidden layer 2 (FVU {fvu:.2f})")
plt.tight_layout()
