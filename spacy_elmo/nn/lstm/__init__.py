"""ELMo's two LSTM stacks: their parameters (:mod:`.run` for now) and their time loops."""
from .run import LstmStack, ProjectedLstmLayer, active_rows, layer_input_masks, run_stacks, run_time_major
