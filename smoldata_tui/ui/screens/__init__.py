"""Screens of the replay app: the episode, the trace picker, help and the filter dialog."""
