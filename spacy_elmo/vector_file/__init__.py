"""``spacy-elmo embed``'s job: a whole corpus into one HDF5 file of ELMo vectors, crash-safe (imports h5py)."""
