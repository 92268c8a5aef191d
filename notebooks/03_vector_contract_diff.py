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
# # 03 · Vector and contract diff
# Reads the captures of steps 01-02: dimensions, norms, token totals and per-document cosine between the legacy
# server and each candidate, and which known cause (pooling, Dense, Normalize, end token, prompt, truncation,
# dtype) reproduces a server's vectors that differ from the model's; then the contract probes, each classified
# (same, silent-divergence, loud-failure, retry-hazard, format-difference).

# %% tags=["parameters"]
experiment_dir: str = ""  # experiment folder holding experiment.yaml; empty: the newest one under experiments/
attempt: str = ""  # attempt folder name; empty: the latest

# %%
from embedswap import steps
from embedswap.diagnosis import step as diagnosis_step
from embedswap.steps import index as index_step

ctx = steps.open_step(experiment_dir, attempt)
steps.require_captures(ctx)
plan = steps.decide_plan(ctx)  # per candidate: the same model or another, what each comparison reads it against
diagnosis = diagnosis_step.start_diagnosis(ctx)  # why vectors differ from the model's, run beside the index part
index_step.capture_index(ctx)  # the index rebuilt in a real vector store, kept or re-embedded (captures/index/)
diagnosis_step.finish_diagnosis(ctx, diagnosis)  # waits for the diagnosis and writes it (captures/diagnosis/)
summary = ctx.summary()

# %% [markdown]
# ## The plan
# Per candidate, decided before any comparison: the same model as the legacy server or another (and the evidence),
# what its probes are read against, and the ranking question (equivalence, or non-inferiority for another model).

# %%
steps.plan_table(plan)

# %% [markdown]
# ## Vectors

# %%
steps.vector_table(summary)

# %% [markdown]
# ## Why the vectors differ
# Each server's vectors recomputed from the model under every known cause; the one that reproduces them, with the fix.

# %%
diagnosis_step.diagnosis_table(summary)

# %% [markdown]
# ## Cosine per language (candidate vs legacy)

# %%
from embedswap.report import figures

figures.cosine_by_language(summary)

# %% [markdown]
# ## Contract probes

# %%
steps.contract_table(summary)

# %% [markdown]
# ## The query instruction, three ways
# The legacy server's answer to the query in the model card's format is the reference: `applied` matches it,
# `ignored` matches the server's own answer without instruction (200, another vector).

# %%
steps.instruction_table(summary)

# %% [markdown]
# ## An input longer than the model takes
# One varied document of about three times the model's limit: each server refused it, cut it to its first tokens,
# or averaged pieces of it. Each hypothesis' vector is built from the same server's answers to the pieces; the one
# whose cosine to the answer reaches the text gate names the handling (`same as legacy`: the candidate does what
# the legacy server does).

# %%
steps.long_input_table(summary)

# %% [markdown]
# ## What happens to your index
# The index rebuilt in PostgreSQL with pgvector (HNSW with `index.distance`, beside exact search): the candidate's
# queries on the legacy index, a mixed index at each re-embedded share, the Procrustes adapter and the decision.

# %%
index_step.index_table(summary)

# %%
figures.index_shares(summary)
