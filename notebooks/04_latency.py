# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: embedswap
#     language: python
#     name: embedswap
# ---

# %% [markdown]
# # 04 · Latency
# The latency runs captured while each server was up (steps 01-02): sequential requests and requests at a fixed
# concurrency, each a batch of documents, repeated; medians of the per-repeat p50/p99 and docs/s.

# %% tags=["parameters"]
experiment_dir: str = ""  # experiment folder holding experiment.yaml; empty: the newest one under experiments/
attempt: str = ""  # attempt folder name; empty: the latest

# %%
from embedswap import steps

ctx = steps.open_step(experiment_dir, attempt)
steps.require_captures(ctx)
summary = ctx.summary()
steps.latency_table(summary)

# %%
from embedswap.report import figures

figures.latency_points(summary)

# %% [markdown]
# ## Concurrency sweep

# %%
figures.latency_sweep(summary)

# %% [markdown]
# ## Capacity at a latency target (open loop)
# `latency.open_loop`: the largest request rate each server keeps the p99 target at, with its interval over
# repeats, and the replicas `latency.traffic` needs; empty when the sweep is not configured.

# %%
from embedswap.steps.capacity_table import capacity_table

capacity_table(summary)

# %%
figures.capacity_curve(summary)

# %% [markdown]
# ## Ablation: the legacy server with and without its global lock
# The article explained the gap at concurrency 4 by the legacy server's global lock, without measuring it (추정).

# %%
steps.latency_table(summary, "ablation")
