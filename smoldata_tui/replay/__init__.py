"""The replay model: an OpenAI-compatible endpoint that answers from a recorded episode, the
divergences it notes, and forks that continue a recording from a chosen step. No Textual here."""
