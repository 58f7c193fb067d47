"""Running an episode: staging the task in a sandbox, starting OpenCode against a model endpoint,
following its stream, grading, and batches of episodes. No Textual here.

What an episode leaves behind is written and read by ``store``; OpenCode's install and config live
in ``opencode``, the replay model in ``replay``, training's capture in ``training``.
"""
