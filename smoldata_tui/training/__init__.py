"""What training sees of an episode: the capture proxy between OpenCode and the model
(:mod:`capture`), the saved ``run.training.json`` (:mod:`trace_file`), the requests that reached
the model (:mod:`requests`) and the configuration findings computed from them (:mod:`config_findings`).

No Textual; openenv is imported inside functions only (it takes seconds to import).
"""

from smoldata_tui.training.trace_file import TrainingFile, load_training_trace, training_path_for

__all__ = ["TrainingFile", "load_training_trace", "training_path_for"]
