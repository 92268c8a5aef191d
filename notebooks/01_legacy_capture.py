# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
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
experiment_dir = ""  # experiment folder holding experiment.yaml ("" = the newest one under experiments/)
attempt = ""  # attempt folder name: "" = latest (created if none), "new" = a fresh attempt

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
