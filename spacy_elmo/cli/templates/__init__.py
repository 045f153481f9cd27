"""``spacy-elmo init-config``'s templates: the training config it writes, and each component's block.

- :mod:`.training_config`: the whole config: the ``elmo`` component, the corpus and training
  settings, each task's block, checked against spaCy before it is written;
- :mod:`.task_blocks`: the model block of every trainable component that reads ELMo.
"""
