"""One builder per section of summary.json, each reading the attempt's capture files only (:mod:`embedswap.pipeline.build`
assembles them and computes the decisions)."""
