"""The ground every service stands on: the local Kafka broker, topics as code, typed Kafka I/O
and environment settings.

May import: `schemas` only (the contracts the I/O encodes). Never a service package.
"""
