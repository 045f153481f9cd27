"""Pretraining a biLM on raw text, cut by concern:

- :mod:`.train`: :func:`pretrain`, one run (what ``spacy-elmo pretrain`` runs): set up or resume,
  train, save;
- :mod:`.settings`: the config, read (:func:`load_config`) and checked
  (:func:`settings_from_config`) into typed settings;
- :mod:`.setup`: a run made ready to train (output folder, vocabulary, model, objective,
  optimizer, data); :mod:`.initialization`: its starting weights (fresh or ``--init-from``);
- :mod:`.data`: the text as whole passes, sentences, the endless sharded stream of batches,
  and each step's input tensors;
- :mod:`.vocab`: the output vocabulary; :mod:`.softmax`: the full and sampled softmax;
  :mod:`.language_model_objective`: the two directions' loss; :mod:`.optim`: the optimizer and
  its schedule;
- :mod:`.loop`: the training loop; :mod:`.evaluate`: dev perplexity during training;
  :mod:`.distributed`: torchrun; :mod:`.stop_signals`: stopping cleanly on a signal;
- :mod:`.checkpoint`: what a checkpoint holds and its file; :mod:`.resume`: ``--resume`` and
  ``--auto-resume`` (settings and text checks, restoring); :mod:`.output_folder`: what a run
  writes in ``OUTPUT_DIR`` (file names, ``metrics.jsonl``, ``run.json``);
- :mod:`.perplexity` and :mod:`.plot`: a saved run scored and drawn afterwards;
- :mod:`.errors`: :class:`PretrainError` and the one hierarchy under it.
"""

from .errors import PretrainError
from .settings import PretrainSettings, load_config, settings_from_config
from .train import RunResult, pretrain

__all__ = ["PretrainError", "PretrainSettings", "RunResult", "load_config", "pretrain", "settings_from_config"]
