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
# # 02 · Swap deploy
# The legacy server is down (step 01 stopped it): each candidate starts in turn on the same host, gets the same
# workload, queries, probes and latency runs, and is stopped. Start time, memory and version are recorded.

# %% tags=["parameters"]
experiment_dir = ""  # experiment folder holding experiment.yaml ("" = the newest one under experiments/)
attempt = ""  # attempt folder name: "" = latest (the one step 01 wrote), "new" = a fresh attempt

# %%
from embedswap import steps

ctx = steps.open_step(experiment_dir, attempt, create=True)
print(f"experiment {ctx.experiment_dir.name}, attempt {ctx.attempt.name}")
results = steps.swap_deploy(ctx)

# %% [markdown]
# ## Targets: start time, memory, status

# %%
steps.targets_table(ctx)
