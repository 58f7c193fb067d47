"""The command-line verbs: each module turns one verb's arguments into work and an exit code."""
