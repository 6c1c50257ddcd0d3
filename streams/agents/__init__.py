"""Faust agents of the stream: feedback (rollouts -> feedback) and reshape (feedback -> advantages).

The agents are thin: they decode, call a pure module (``processor``, ``grouping``,
``monitoring``), encode and send. ``install_feedback`` and ``install_reshape`` declare each
agent next to the topics and tables it owns.
"""
