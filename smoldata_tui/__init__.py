"""smoldata-tui: see what an OpenCode agent did in a SmolDataEnvs episode, and what training makes of it."""

__version__ = "0.1.0"
