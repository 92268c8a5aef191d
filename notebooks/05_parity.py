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
# # 05 · Parity
# A golden reference (the model in fp32 on the CPU through sentence-transformers) against every server's
# document vectors: cosine per document, pass at the experiment's threshold (0.999 for text by default).

# %% tags=["parameters"]
experiment_dir: str = ""  # experiment folder holding experiment.yaml; empty: the newest one under experiments/
attempt: str = ""  # attempt folder name; empty: the latest

# %%
from embedswap import steps

ctx = steps.open_step(experiment_dir, attempt)
parity = steps.run_parity(ctx)
summary = ctx.summary()
steps.parity_table(summary)

# %%
from embedswap.report import figures

figures.parity_backends(summary)

# %%
# article 003's parity matrix (long context, chunked prefill, batch invariance per dtype, TP, cold start)
from embedswap.parity.matrix import matrix_table

matrix_table(summary)

# %%
print("parity gate:", "not run: " + str(parity.get("why")) if parity["pass"] is None else "PASS" if parity["pass"] else "FAIL")
