"""Faust agents of the stream: feedback (rollouts -> feedback) and reshape (feedback -> advantages).

The agents are thin: they decode, call a pure module (``processor``, ``grouping``,
``monitoring``), encode and send. The reshape agent's logic is ``reshape_agent.ReshapeAgent``,
which reaches Kafka only through the ports it is given, so it runs in a unit test as it runs
in Faust. ``install_feedback`` and ``install_reshape`` declare each agent next to the topics
and tables it owns.
"""
