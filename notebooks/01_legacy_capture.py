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
# # 01 · Legacy capture
# Starts the legacy server of the experiment, sends the fixed workload (documents in batches, repeated), the
# queries, the contract probes and the latency runs, writes everything as raw captures of the attempt, and
# stops the server. Nothing here is typed by hand: every table below is read back from the capture files.

# %% tags=["parameters"]
experiment_dir: str = ""  # experiment folder holding experiment.yaml; empty: the newest one under experiments/
attempt: str = ""  # attempt folder name; empty: the latest (created if none); new: a fresh attempt

# %%
from embedswap import steps

ctx = steps.open_step(experiment_dir, attempt, create=True)
print(f"experiment {ctx.experiment_dir.name}, attempt {ctx.attempt.name}")
legacy = steps.capture_legacy(ctx)

# %% [markdown]
# ## What ran

# %%
steps.targets_table(ctx)

# %% [markdown]
# ## The legacy server's vectors

# %%
steps.vector_table(ctx.summary())
