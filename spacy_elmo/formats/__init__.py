"""Reading and writing biLM weights: AllenNLP/bilm-tf files and our own model directory."""
