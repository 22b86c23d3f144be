"""The project's tools: the CLI, config, the demo, evals, the benchmarks, the docs and the
layers."""
