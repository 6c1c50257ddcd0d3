"""A local web page over a run's ClickHouse history: live charts, a sample browser with the
reward broken down, and people's verdicts on samples published to the ``reviews`` topic."""
