"""``spacy-elmo init-config``'s templates: the training config (:mod:`.training_config`) and each
component's block (:mod:`.task_blocks`)."""
