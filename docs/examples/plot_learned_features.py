"""
Learned features: a Recursive Feature Machine, and CKA across layers
=====================================================================

A Recursive Feature Machine (Radhakrishnan et al., Science 2024) alternates kernel ridge
regression with a Mahalanobis kernel and ``M <- AGOP`` of the fitted predictor: the average
gradient outer product ``M = (1/n) sum_i grad f(x_i) grad f(x_i)^T``. On a target that depends on
a few coordinates, ``M`` concentrates on them: the machine learns which features matter. CKA
(Kornblith et al. 2019) then compares representations: here, the layers of a small MLP.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

import featurelens as fl

rng = np.random.default_rng(0)
X = rng.normal(size=(600, 10))
y = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2])          # only features 0, 1 and 2 matter

rfm = fl.learning.RFMRegressor(kernel="laplace", bandwidth=10.0, reg=1e-3, iters=5).fit(X, y)
diag = np.diag(rfm.M_)
print("diag(M), largest first:", np.argsort(diag)[::-1][:4], " best iterate:", rfm.best_iter_)

fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
axes[0].imshow(rfm.M_, cmap="viridis")
axes[0].set_title("the learned feature matrix M")
axes[1].bar(range(10), diag / diag.max())
axes[1].set_xlabel("feature")
axes[1].set_title("diag(M) / max")
plt.tight_layout()

# %%
# CKA between the layers of a small network
# -----------------------------------------
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
Xt, yt = torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)[:, None]
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
for _ in range(300):
    opt.zero_grad()
    nn.functional.mse_loss(net(Xt), yt).backward()
    opt.step()

with torch.no_grad():
    reps = [Xt]
    for layer in net:
        reps.append(layer(reps[-1]))
reps = [reps[i].numpy() for i in (0, 2, 4, 5)]      # input, after each ReLU, output
names = ["input", "relu 1", "relu 2", "output"]
C = np.array([[fl.learning.cka(a, b) for b in reps] for a in reps])
print(np.round(C, 2))
fig, ax = plt.subplots(figsize=(3.6, 3.2))
ax.imshow(C, vmin=0, vmax=1, cmap="magma")
ax.set_xticks(range(4), names, rotation=45)
ax.set_yticks(range(4), names)
ax.set_title("debiased linear CKA")
plt.tight_layout()
