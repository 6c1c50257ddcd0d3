"""Local infrastructure, in two layers.

- `infra.platform`: the ground. Broker, topics as code, typed Kafka I/O, settings. It
  imports `schemas` and nothing else of the project; every service package may import it.
- `infra.compose`: the top. The `reshaper` CLI, `reshaper run` (orchestrator, run config,
  report, corpus feed) and the experiment. It wires the services together, so it may import
  every package; nothing in the project imports it.
"""
