"""The composition root: the `reshaper` command line, `reshaper run` (orchestrator, run config,
corpus feed, report) and the raw-vs-reshaped experiment.

May import: every project package. Imported by: nothing in the project (only tests and the
`reshaper` entry point).
"""
