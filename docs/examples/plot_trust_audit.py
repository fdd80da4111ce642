"""
Can I trust this explanation? The audit and the metric families
================================================================

Without a planted truth, a map is judged by what the model does when you act on it: remove the
features it ranks first (deletion: the output should drop fast), put them back (insertion), check
it against random subsets (faithfulness correlation), perturb the input (robustness), randomise the
weights (the map should change). ``fl.audit`` runs every applicable explainer, scores each on those
metrics and ranks them; the seeded ``random`` map is the floor every method must beat.
"""

import matplotlib.pyplot as plt
import torch
from torch import nn

import featurelens as fl

torch.manual_seed(0)
ds = fl.datasets.xai_tris("linear", "white", image_size=8, n_samples=600, seed=0)
X, y = torch.from_numpy(ds.X), torch.from_numpy(ds.y).long()
model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(150):
    opt.zero_grad()
    nn.functional.cross_entropy(model(X), y).backward()
    opt.step()
model.eval()

# %%
# The metric families
# -------------------
# Every metric has a spec: its family, whether higher or lower is better, and Quantus's name for it.
for family in fl.metrics.FAMILIES:
    names = [s.name for s in fl.metrics.list_metrics(family)]
    print(f"{family:14s} {len(names):2d}: {', '.join(names[:6])}{' ...' if len(names) > 6 else ''}")
road = fl.metrics.spec("road")
print(road.family, road.direction, sorted(road.requires), road.quantus)

# %%
# The audit
# ---------
# A few methods and the default metrics on 16 images; ``ground_truth=`` adds the localisation
# metrics against the planted patterns.
table = fl.audit(model, ds.X[:64], ds.y[:64], methods=["saliency", "integrated_gradients", "smoothgrad", "random"],
                 ground_truth=ds.ground_truth[:64], n_explain=16, seed=0, progress=False)
print(table.attrs["verdict"])
print(table[["rank", "method", "insertion_minus_deletion", "faithfulness_correlation", "avg_sensitivity",
             "randomization_similarity", "precision_at_k"]].round(3).to_string())

# %%
# Insertion minus deletion per method: the faithfulness the ranking starts from
score = table.set_index("method")["insertion_minus_deletion"]
fig, ax = plt.subplots(figsize=(6, 2.5))
ax.barh(score.index, score.values, color=["tab:grey" if m == "random" else "tab:blue" for m in score.index])
ax.set_xlabel("insertion AUC - deletion AUC (logits; higher is more faithful)")
plt.tight_layout()
