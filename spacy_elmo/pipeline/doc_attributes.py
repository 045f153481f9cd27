"""What the ``elmo`` component puts on Docs and the vector hooks (docs/component.md): stored on the
Doc, so that they survive ``Doc.to_bytes`` and ``nlp.pipe(n_process=...)``; the hooks do not."""

from __future__ import annotations

import warnings
from typing import Optional, Union

from spacy.tokens import Doc, Span, Token
from thinc.api import get_array_module
from thinc.types import Floats1d

# spaCy's W109 ("Unable to save user hooks") would come with every saved Doc, and from each
# n_process worker: the hooks it means are these, and set_vector_hooks puts them back.
warnings.filterwarnings("ignore", message=r"\[W109\]")


def install_extensions() -> None:
    """Register the extension attributes once per process (safe to call again)."""
    for name in ("elmo_layers", "elmo_vectors"):
        if not Doc.has_extension(name):
            Doc.set_extension(name, default=None)
    if not Doc.has_extension("elmo"):
        Doc.set_extension("elmo", getter=span_vector)
    if not Span.has_extension("elmo"):
        Span.set_extension("elmo", getter=span_vector)
    if not Token.has_extension("elmo"):
        Token.set_extension("elmo", getter=token_vector)


def token_vector(token: Token) -> Optional[Floats1d]:
    vectors = token.doc._.elmo_vectors
    return None if vectors is None else vectors[token.i]


def span_vector(span: Union[Span, Doc]) -> Optional[Floats1d]:
    """The mean of the tokens' mixed vectors (zeros for an empty span)."""
    doc = span if isinstance(span, Doc) else span.doc
    vectors = doc._.elmo_vectors
    if vectors is None:
        return None
    start, end = (0, len(doc)) if isinstance(span, Doc) else (span.start, span.end)
    if end <= start:
        return get_array_module(vectors).zeros(vectors.shape[1], dtype=vectors.dtype)
    return vectors[start:end].mean(axis=0)


def set_vector_hooks(doc: Doc) -> None:
    """Route ``.vector``, ``.has_vector`` and ``.similarity`` of the Doc, its Spans and Tokens
    to the ELMo vectors. Docs from ``nlp.pipe(n_process>1)`` lose their hooks: call it again."""
    for hooks, vector in (
        (doc.user_hooks, span_vector),
        (doc.user_span_hooks, span_vector),
        (doc.user_token_hooks, token_vector),
    ):
        hooks["vector"] = vector
        hooks["has_vector"] = _has_vector
        hooks["similarity"] = cosine_similarity


def _has_vector(obj: Union[Doc, Span, Token]) -> bool:
    return (obj if isinstance(obj, Doc) else obj.doc)._.elmo_vectors is not None


def cosine_similarity(a: Union[Doc, Span, Token], b: Union[Doc, Span, Token]) -> float:
    """Cosine of the two objects' ELMo vectors (0.0 if either is all zeros), read from the Docs:
    a hooked object compared with an unhooked one still compares ELMo vectors."""
    u, v = _elmo_vector(a), _elmo_vector(b)
    if u.shape != v.shape:
        raise ValueError(
            f"similarity compares ELMo vectors, and these have different widths ({u.shape[0]} and "
            f"{v.shape[0]}): process both Docs with the same elmo component"
        )
    xp = get_array_module(u)
    norms = float(xp.linalg.norm(u)) * float(xp.linalg.norm(v))
    return 0.0 if norms == 0.0 else float(xp.dot(u, v)) / norms


def _elmo_vector(obj: object) -> Floats1d:
    doc = obj if isinstance(obj, Doc) else getattr(obj, "doc", None)
    vector = None
    if isinstance(doc, Doc) and doc._.elmo_vectors is not None:
        vector = token_vector(obj) if isinstance(obj, Token) else span_vector(obj)  # type: ignore[arg-type]
    if vector is None:
        raise ValueError(
            f"similarity compares ELMo vectors, and {type(obj).__name__} {str(obj)[:40]!r} has none: "
            "process its Doc with the pipeline that has the elmo component"
        )
    return vector
