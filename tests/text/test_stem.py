"""The Porter stemmer against the algorithm paper's and reference implementation's examples."""

from __future__ import annotations

import pytest

from memctx.text.stem import porter_stem, stem_tokens

# (word, stem) pairs from Porter (1980) and the reference implementation's vocabulary.
PAIRS = """
caresses caress ponies poni ties ti caress caress cats cat feed feed agreed agre
plastered plaster bled bled motoring motor sing sing conflated conflat troubled troubl
sized size hopping hop tanned tan falling fall hissing hiss fizzed fizz failing fail
filing file happy happi sky sky relational relat conditional condit rational ration
valenci valenc hesitanci hesit digitizer digit radicalli radic differentli differ
vileli vile analogousli analog vietnamization vietnam predication predic operator oper
feudalism feudal decisiveness decis hopefulness hope callousness callous formaliti formal
sensitiviti sensit sensibiliti sensibl triplicate triplic formative form formalize formal
electriciti electr electrical electr hopeful hope goodness good revival reviv
allowance allow inference infer airliner airlin gyroscopic gyroscop adjustable adjust
defensible defens irritant irrit replacement replac adjustment adjust dependent depend
adoption adopt homologou homolog communism commun activate activ angulariti angular
homologous homolog effective effect bowdlerize bowdler probate probat rate rate
cease ceas controll control roll roll generalization gener oscillators oscil
""".split()


@pytest.mark.parametrize(("word", "stem"), list(zip(PAIRS[::2], PAIRS[1::2], strict=True)))
def test_reference_examples(word: str, stem: str) -> None:
    assert porter_stem(word) == stem


def test_inflections_meet() -> None:
    assert {porter_stem(w) for w in ("camp", "camped", "camping", "camps")} == {"camp"}
    assert porter_stem("paintings") == porter_stem("painting") == porter_stem("paint")
    assert porter_stem("activities") == porter_stem("activity")


def test_only_plain_words_are_stemmed() -> None:
    tokens = ["running", "8080", "v2", "max_history", "webhook.ts", "猫が", "is", "Running"]
    assert stem_tokens(tokens) == [
        "run",
        "8080",
        "v2",
        "max_history",
        "webhook.ts",
        "猫が",
        "is",
        "Running",
    ]
    assert porter_stem("as") == "as"  # one or two letters: unchanged
