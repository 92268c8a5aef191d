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
# # 02 · Swap deploy
# The legacy server is down (step 01 stopped it): each candidate starts in turn on the same host, gets the same
# workload, queries, probes and latency runs, and is stopped. Start time, memory and version are recorded.

# %% tags=["parameters"]
experiment_dir: str = ""  # experiment folder holding experiment.yaml; empty: the newest one under experiments/
attempt: str = ""  # attempt folder name; empty: the latest (created if none); new: a fresh attempt

# %%
from embedswap import steps

ctx = steps.open_step(experiment_dir, attempt, create=True)
print(f"experiment {ctx.experiment_dir.name}, attempt {ctx.attempt.name}")
results = steps.swap_deploy(ctx)

# %% [markdown]
# ## Targets: start time, memory, status

# %%
steps.targets_table(ctx)
