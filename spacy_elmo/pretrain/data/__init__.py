"""The training text as pretraining reads it: records to sentences to batches to tensors."""
