"""Reproductions of the papers' experiments, figures and tables (one module per paper that has
them): they drive the methods and the bench, never the other way round, so a method package
holds its algorithm only. Run them as ``python -m benchmarks.papers.<module> ...``."""
