"""Keep the index or re-embed it: the searches of the compatibility grid on a real vector store (``searches``),
the Procrustes adapter (``adapter``) and the re-embed cost (``cost``). The summary section
(:mod:`embedswap.summary.sections.index`) scores the captured searches; :mod:`embedswap.analysis.index_decision`
decides per candidate."""
