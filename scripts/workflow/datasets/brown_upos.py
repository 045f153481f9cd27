"""Brown corpus tagset -> Universal POS (UPOS, Universal Dependencies v2).

The mapping has two layers.

1. A context-free table, ``BASE_UPOS``, from the ~85 *base* Brown tags to
   UPOS. ``brown_to_upos(tag)`` reduces any tag that occurs in the corpus to
   a base tag with these rules, applied in order:

   * ``fw-`` prefix (foreign word) is dropped: the word gets the UPOS of the
     tag it carries (``fw-nn`` -> NOUN, ``fw-in`` -> ADP).
   * suffixes ``-tl`` (title), ``-hl`` (headline), ``-nc`` (citation) are
     dropped, repeatedly (``nn-tl-hl`` -> ``nn``). Two truncated variants that
     occur as corpus typos (``in+at-t``, ``ppss+ber-n``) are dropped too.
   * compound tags of contracted words (``pps+bez`` "he's", ``ppss+md``
     "I'll", ``vb+ppo`` "let's", ``wdt+ber+pp`` ...) take the UPOS of their
     FIRST component: the token is a contraction whose first part carries
     the word's syntactic role. The exceptions are an article glued to a
     noun (``at+nn``, ``at+np``, foreign "l'Etat"), which take the noun's
     UPOS. One misspelt component (``pp`` in ``wdt+ber+pp`` "whaddya") is
     read as ``ppss``; other components must be known tags.
   * a trailing ``*`` (negation glued on: ``didn't``/``dod*``) is dropped;
     the bare tag ``*`` (``not``, ``n't``) is PART.
   * a trailing ``$`` (genitive: ``nn$``, ``np$``) is dropped, except for the
     possessive pronoun tags ``pp$``, ``pp$$`` and ``wp$``, which are in the
     table (PRON).
   * ``nil`` (untagged tokens in the original corpus) is X.

2. ``sentence_upos(tags)`` refines the table in context, for two distinctions
   UPOS makes and the Brown tagset does not:

   * *have* / *do* (``hv*``, ``do*`` tags): AUX when the next verbal token,
     looking at most 3 tokens ahead and skipping only adverbs, negation and
     pronouns / proper nouns (questions: "did he go", "has it been"), is a
     past participle (for *have*) or a base form (for *do*); VERB otherwise.
     Negated forms (``don't``, ``hasn't``: tag ending in ``*``) are always
     AUX. Forms of *be* and modals are always AUX.
   * determiners ``dt``/``dti``/``dts``/``dtx``/``wdt`` ("this", "that",
     "which", "what", "either"): DET when the next token is nominal or
     adjectival (NOUN, PROPN, ADJ, NUM), PRON otherwise ("which had",
     "that's", "this is"). Compounds such as ``dt+bez`` are always PRON.

Every tag in the Brown corpus maps to one of the 17 UPOS tags;
``brown_to_upos`` raises ``KeyError`` on a tag it cannot reduce to the table.
"""

from __future__ import annotations

from typing import Iterable, List, Optional

UPOS_TAGS = frozenset("ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split())

# Base Brown tag -> UPOS (context-free default).
BASE_UPOS = {
    # punctuation
    ".": "PUNCT",
    ",": "PUNCT",
    ":": "PUNCT",
    "(": "PUNCT",
    ")": "PUNCT",
    "--": "PUNCT",
    "``": "PUNCT",
    "''": "PUNCT",
    "'": "PUNCT",
    # negation "not", "n't"
    "*": "PART",
    # pre-qualifier (quite, rather, such), pre-quantifier (all, half, many),
    # pre-quantifier (both): predeterminers
    "abl": "DET",
    "abn": "DET",
    "abx": "DET",
    # post-determiner (many, other, next, more, last, several, few): UD ADJ
    "ap": "ADJ",
    "at": "DET",
    # be
    "be": "AUX",
    "bed": "AUX",
    "bedz": "AUX",
    "beg": "AUX",
    "bem": "AUX",
    "ben": "AUX",
    "ber": "AUX",
    "bez": "AUX",
    "cc": "CCONJ",
    "cd": "NUM",
    "cs": "SCONJ",
    # do (refined in context: AUX / VERB)
    "do": "VERB",
    "dod": "VERB",
    "doz": "VERB",
    # determiners (refined in context: DET / PRON)
    "dt": "DET",
    "dti": "DET",
    "dts": "DET",
    "dtx": "DET",
    "ex": "PRON",  # existential "there"
    # have (refined in context: AUX / VERB)
    "hv": "VERB",
    "hvd": "VERB",
    "hvg": "VERB",
    "hvn": "VERB",
    "hvz": "VERB",
    "in": "ADP",
    "jj": "ADJ",
    "jjr": "ADJ",
    "jjs": "ADJ",
    "jjt": "ADJ",
    "md": "AUX",
    "nil": "X",
    "nn": "NOUN",
    "nns": "NOUN",
    "np": "PROPN",
    "nps": "PROPN",
    # adverbial noun (home, today, west, Friday)
    "nr": "NOUN",
    "nrs": "NOUN",
    "od": "ADJ",  # ordinal numeral: UD ADJ
    # pronouns
    "pn": "PRON",
    "pp$": "PRON",
    "pp$$": "PRON",
    "ppl": "PRON",
    "ppls": "PRON",
    "ppo": "PRON",
    "pps": "PRON",
    "ppss": "PRON",
    # qualifiers (very, too, enough, indeed)
    "ql": "ADV",
    "qlp": "ADV",
    "rb": "ADV",
    "rbr": "ADV",
    "rbt": "ADV",
    "rn": "ADV",  # nominal adverb (here, then)
    "rp": "ADP",  # particle (up, out): UD ADP
    "to": "PART",
    "uh": "INTJ",
    "vb": "VERB",
    "vbd": "VERB",
    "vbg": "VERB",
    "vbn": "VERB",
    "vbz": "VERB",
    "wdt": "DET",
    "wp$": "PRON",
    "wpo": "PRON",
    "wps": "PRON",
    "wql": "ADV",  # "how" as qualifier
    "wrb": "ADV",
}

# Compounds whose UPOS is not the one of their first component.
COMPOUND_OVERRIDES = {"at+nn": "NOUN", "at+np": "PROPN"}

_AFFIXES = ("-tl", "-hl", "-nc")
# truncated affixes that occur as typos in the corpus (in+at-t, ppss+ber-n)
_TRUNCATED_AFFIXES = ("-t", "-n")
_KEEP_DOLLAR = frozenset({"pp$", "pp$$", "wp$"})
# compound components misspelt in the corpus ("whaddya" wdt+ber+pp)
_COMPONENT_ALIASES = {"pp": "ppss"}

HAVE_TAGS = frozenset({"hv", "hvd", "hvg", "hvn", "hvz"})
DO_TAGS = frozenset({"do", "dod", "doz"})
DET_TAGS = frozenset({"dt", "dti", "dts", "dtx", "wdt"})
_PARTICIPLES = frozenset({"vbn", "ben", "hvn"})
_BASE_FORMS = frozenset({"vb", "be", "hv", "do"})
_SKIPPABLE = frozenset({"ADV", "PART", "PRON", "PROPN"})
_NOMINAL = frozenset({"NOUN", "PROPN", "ADJ", "NUM"})


def strip_affixes(tag: str) -> str:
    """Drop ``fw-`` and the ``-tl``/``-hl``/``-nc`` affixes (lower-cases)."""
    tag = tag.strip().lower()
    if tag.startswith("fw-") and len(tag) > 3:
        tag = tag[3:]
    changed = True
    while changed:
        changed = False
        for affix in _AFFIXES:
            if tag.endswith(affix) and len(tag) > len(affix):
                tag = tag[: -len(affix)]
                changed = True
    if "+" in tag:
        for affix in _TRUNCATED_AFFIXES:
            if tag.endswith(affix):
                tag = tag[: -len(affix)]
    return tag


def _component_base(part: str) -> str:
    """Reduce one component of a (possibly compound) tag to a table key."""
    if part != "*" and part.endswith("*"):
        part = part.rstrip("*")
    if part not in BASE_UPOS and part.endswith("$") and part not in _KEEP_DOLLAR:
        part = part.rstrip("$")
    return _COMPONENT_ALIASES.get(part, part)


def base_tag(tag: str) -> str:
    """The base tag (table key) a corpus tag reduces to.

    For a compound tag this is the base of its first component.
    """
    stripped = strip_affixes(tag)
    first = stripped.split("+", 1)[0] if stripped != "+" else stripped
    return _component_base(first)


def brown_to_upos(tag: str) -> str:
    """Context-free UPOS of a Brown tag. Raises KeyError if unmappable."""
    stripped = strip_affixes(tag)
    if "+" in stripped:
        parts = [_component_base(p) for p in stripped.split("+")]
        key = "+".join(parts[:2])
        if key in COMPOUND_OVERRIDES:
            return COMPOUND_OVERRIDES[key]
        for part in parts:  # every component must be a known tag
            if part not in BASE_UPOS:
                raise KeyError(f"Unmapped Brown tag {tag!r} (component {part!r})")
        if parts[0] in DET_TAGS:
            return "PRON"  # "that's", "what're": the determiner stands alone
        return BASE_UPOS[parts[0]]
    key = _component_base(stripped)
    if key not in BASE_UPOS:
        raise KeyError(f"Unmapped Brown tag {tag!r} (base {key!r})")
    if _is_negated(tag) and (key in HAVE_TAGS or key in DO_TAGS):
        return "AUX"  # don't, hasn't: always auxiliaries
    return BASE_UPOS[key]


def is_mappable(tag: str) -> bool:
    try:
        brown_to_upos(tag)
    except KeyError:
        return False
    return True


def _is_negated(tag: str) -> bool:
    first = strip_affixes(tag).split("+", 1)[0]
    return first != "*" and first.endswith("*")


def _next_verbal(tags: List[str], upos: List[str], i: int, window: int = 3) -> Optional[str]:
    """Base tag of the first verbal token after position i, or None.

    Only adverbs, negation and pronouns may be skipped on the way.
    """
    for j in range(i + 1, min(len(tags), i + 1 + window)):
        if upos[j] in ("VERB", "AUX"):
            return base_tag(tags[j])
        if upos[j] not in _SKIPPABLE:
            return None
    return None


def sentence_upos(tags: Iterable[str]) -> List[str]:
    """UPOS for a sentence of Brown tags, with the context refinements."""
    tags = list(tags)
    upos = [brown_to_upos(t) for t in tags]
    result = list(upos)
    for i, tag in enumerate(tags):
        stripped = strip_affixes(tag)
        compound = "+" in stripped
        base = base_tag(tag)
        if base in HAVE_TAGS or base in DO_TAGS:
            if compound:
                # "hafta" (hv+to) is the main verb "have to"; "d'you",
                # "what'd" ... are auxiliaries
                result[i] = "VERB" if stripped.startswith("hv+to") else "AUX"
                continue
            if _is_negated(tag):
                result[i] = "AUX"
                continue
            nxt = _next_verbal(tags, upos, i)
            wanted = _PARTICIPLES if base in HAVE_TAGS else _BASE_FORMS
            result[i] = "AUX" if nxt in wanted else "VERB"
        elif base in DET_TAGS:
            if compound:
                result[i] = "PRON"
            elif i + 1 < len(tags) and upos[i + 1] in _NOMINAL:
                result[i] = "DET"
            else:
                result[i] = "PRON"
    return result
