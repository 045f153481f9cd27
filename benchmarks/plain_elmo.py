"""The plain reference ELMo the benchmark compares against, written the way AllenNLP's is.

- batches of 64 sentences in input order (``allennlp elmo``'s default), no length sorting;
- the char-CNN runs on every position of the padded batch (embedding, Conv1d per width,
  max-pool, highway, projection), as AllenNLP's character encoder does;
- each direction and each layer runs its own time loop; every step copies out the state of
  the rows still running, computes the input matmul and the recurrent matmul (bias on the
  latter) for them, adds each gate's two halves apart, and copies the new state back into
  full-batch tensors, as AllenNLP's ``LstmCellWithProjection`` does (its ``ElmoLstm`` also
  sorts the rows by length; its char encoder runs on every padded position).

Left out, as costing little: AllenNLP's stateful bookkeeping between batches (it carries each
row's final state into the next batch, which changes the values, not the work) and its
index arithmetic for the backward direction (here: the rows are reversed).

It reads the weights of a :class:`spacy_elmo.nn.BiLM`, so both compute the same function.
"""

from __future__ import annotations

from typing import Sequence

import numpy
import torch
from torch.nn import functional as F

from spacy_elmo.nn import BiLM
from spacy_elmo.nn.words.char_ids import encode_sentences


def plain_embed_layers(model: BiLM, sentences: Sequence[Sequence[str]], batch_size: int = 64) -> list[numpy.ndarray]:
    """Same output as ``spacy_elmo.embed_layers(model, sentences)``, computed the plain way."""
    results = []
    with torch.no_grad():
        for start in range(0, len(sentences), batch_size):
            batch = list(sentences[start : start + batch_size])
            results.extend(_embed_batch(model, batch))
    return results


def _embed_batch(model: BiLM, batch: list[Sequence[str]]) -> list[numpy.ndarray]:
    ids, lengths = encode_sentences(batch, add_boundaries=True)
    ids_t = torch.from_numpy(ids).to(model.device)
    token_vectors = _char_cnn(model, ids_t)  # (batch, time, P), padding included
    lengths_t = torch.from_numpy(lengths)
    order = torch.argsort(lengths_t, descending=True, stable=True)
    sorted_vectors, sorted_lengths = token_vectors[order], lengths_t[order]
    forward = _run_stack(model.forward_lstm, sorted_vectors, sorted_lengths)
    backward_in = _reverse(sorted_vectors, sorted_lengths)
    backward = [_reverse(out, sorted_lengths) for out in _run_stack(model.backward_lstm, backward_in, sorted_lengths)]
    restore = torch.argsort(order)
    layers = [torch.cat([token_vectors, token_vectors], -1)]
    layers += [torch.cat([f, b], -1)[restore] for f, b in zip(forward, backward)]
    stacked = torch.stack(layers).cpu().numpy()
    return [numpy.ascontiguousarray(stacked[:, row, 1 : len(s) + 1]) for row, s in enumerate(batch)]


def _char_cnn(model: BiLM, ids: torch.Tensor) -> torch.Tensor:
    encoder = model.char_encoder
    batch, steps, chars = ids.shape
    embedded = F.embedding(ids.view(-1, chars), encoder.char_embedding.weight).transpose(1, 2)
    pooled = [F.conv1d(embedded, conv.weight, conv.bias).amax(-1) for conv in encoder.convolutions]
    x = encoder.activation(torch.cat(pooled, -1))
    dim = x.shape[1]
    for layer in encoder.highway.layers:
        transform = torch.relu(F.linear(x, layer.weight[:dim], layer.bias[:dim]))
        gate = torch.sigmoid(F.linear(x, layer.weight[dim:], layer.bias[dim:]))
        x = gate * transform + (1 - gate) * x
    return F.linear(x, encoder.projection.weight, encoder.projection.bias).view(batch, steps, -1)


def _reverse(values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    out = values.clone()
    for row, n in enumerate(lengths.tolist()):
        out[row, :n] = values[row, :n].flip(0)
    return out


def _run_stack(stack, inputs: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
    outputs = []
    x = inputs
    for index, layer in enumerate(stack.layers):
        out = _run_layer(stack, layer, x, lengths)
        if index > 0 and stack.use_skip_connections:
            out = out + x
        outputs.append(out)
        x = out
    return outputs


def _gate(projected_input: torch.Tensor, projected_state: torch.Tensor, k: int, cell_dim: int) -> torch.Tensor:
    """Gate ``k``'s pre-activation: its slice of the input product plus its slice of the state product."""
    return projected_input[:, k * cell_dim : (k + 1) * cell_dim] + projected_state[:, k * cell_dim : (k + 1) * cell_dim]


def _run_layer(stack, layer, inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    batch, steps, _ = inputs.shape
    cell_dim, proj_dim = layer.cell_dim, layer.projection_dim
    bias = layer.gate_bias(stack.forget_bias)
    output = inputs.new_zeros(batch, steps, proj_dim)
    memory = inputs.new_zeros(batch, cell_dim)
    state = inputs.new_zeros(batch, proj_dim)
    lengths_list = lengths.tolist()
    for t in range(steps):
        n = sum(1 for length in lengths_list if length > t)
        # As AllenNLP's LstmCellWithProjection: the running rows' state copied out, both
        # products per step, and each gate's two halves added on their own.
        previous_memory, previous_state = memory[:n].clone(), state[:n].clone()
        projected_input = F.linear(inputs[:n, t], layer.input_weight)
        projected_state = F.linear(previous_state, layer.recurrent_weight, bias)
        gates = [_gate(projected_input, projected_state, k, cell_dim) for k in range(4)]
        i, j, f, o = torch.sigmoid(gates[0]), torch.tanh(gates[1]), torch.sigmoid(gates[2]), torch.sigmoid(gates[3])
        new_memory = i * j + f * previous_memory
        if stack.cell_clip:
            new_memory = torch.clamp(new_memory, -stack.cell_clip, stack.cell_clip)
        new_state = F.linear(o * torch.tanh(new_memory), layer.projection_weight)
        if stack.proj_clip:
            new_state = torch.clamp(new_state, -stack.proj_clip, stack.proj_clip)
        memory = memory.clone()
        memory[:n] = new_memory
        state = state.clone()
        state[:n] = new_state
        output[:n, t] = new_state
    return output
