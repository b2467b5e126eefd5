"""Reading model checkpoints as one vLLM release builds them (selection core: no torch).

* :mod:`.releases`: the release a checkpoint is read for and the facts that differ between releases;
* :mod:`.families`: per-family engine rules (layout, module names, hard-coded routing);
* :mod:`.aliases`: MoE fields across the spellings families use;
* :mod:`.layout`: every decoder layer and its kind, MTP draft layers included;
* :mod:`.matching`: exclusion and target matching as the engine matches;
* :mod:`.quant_formats`: the quantization document, the method, and the scheme per experts module;
* :mod:`.model`: the whole checkpoint (:func:`read_checkpoint`).
"""

from .model import Checkpoint, CheckpointLayer, read_checkpoint
from .quant_formats import SUPPORTED_METHODS, ExpertsQuant, QuantFormat

__all__ = ["SUPPORTED_METHODS", "Checkpoint", "CheckpointLayer", "ExpertsQuant", "QuantFormat", "read_checkpoint"]
