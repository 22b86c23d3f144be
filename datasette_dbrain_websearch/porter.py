"""Martin Porter's stemmer as SQLite's FTS5 applies it (pure functions).

A port of the reference C implementation (tartarus.org ``porter.c``), which SQLite's
``fts5_porter.c`` follows, with its two departures from the 1980 paper: step 2 maps "bli" to
"ble" (not only "abli" to "able") and "logi" to "log". Snowball's ``porter`` stemmer keeps the
paper's rules and also undoubles fewer final consonants, so it parts from FTS5 on about one word
in 500 ("analogy", "audibly", "trekking"); ``tests/research/test_stemming.py`` holds this
port against FTS5's own tokens for an English dictionary.

Works on lowercase ASCII; ``stemming.stem`` hands other tokens to SQLite itself.
"""

from __future__ import annotations

_STEP2 = {
    "a": (("ational", "ate"), ("tional", "tion")),
    "c": (("enci", "ence"), ("anci", "ance")),
    "e": (("izer", "ize"),),
    "l": (("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous")),
    "o": (("ization", "ize"), ("ation", "ate"), ("ator", "ate")),
    "s": (("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous")),
    "t": (("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")),
    "g": (("logi", "log"),),
}
_STEP3 = {
    "e": (("icate", "ic"), ("ative", ""), ("alize", "al")),
    "i": (("iciti", "ic"),),
    "l": (("ical", "ic"), ("ful", "")),
    "s": (("ness", ""),),
}
_STEP4 = {
    "a": ("al",),
    "c": ("ance", "ence"),
    "e": ("er",),
    "i": ("ic",),
    "l": ("able", "ible"),
    "n": ("ant", "ement", "ment", "ent"),
    "o": ("ion", "ou"),
    "s": ("ism",),
    "t": ("ate", "iti"),
    "u": ("ous",),
    "v": ("ive",),
    "z": ("ize",),
}


class _Word:
    """The word being stemmed, ``b[0..k]``, and ``j``, the end of the stem an ending leaves."""

    def __init__(self, word: str) -> None:
        self.b = list(word)
        self.k = len(word) - 1
        self.j = 0

    def cons(self, i: int) -> bool:
        ch = self.b[i]
        if ch in "aeiou":
            return False
        if ch == "y":
            return i == 0 or not self.cons(i - 1)
        return True

    def m(self) -> int:
        """The number of vowel-consonant sequences in ``b[0..j]``."""
        n = i = 0
        while True:
            if i > self.j:
                return n
            if not self.cons(i):
                break
            i += 1
        i += 1
        while True:
            while True:
                if i > self.j:
                    return n
                if self.cons(i):
                    break
                i += 1
            i += 1
            n += 1
            while True:
                if i > self.j:
                    return n
                if not self.cons(i):
                    break
                i += 1
            i += 1

    def vowel_in_stem(self) -> bool:
        return any(not self.cons(i) for i in range(self.j + 1))

    def double_c(self, j: int) -> bool:
        return j >= 1 and self.b[j] == self.b[j - 1] and self.cons(j)

    def cvc(self, i: int) -> bool:
        if i < 2 or not self.cons(i) or self.cons(i - 1) or not self.cons(i - 2):
            return False
        return self.b[i] not in "wxy"

    def ends(self, s: str) -> bool:
        n = len(s)
        if n > self.k + 1 or "".join(self.b[self.k - n + 1 : self.k + 1]) != s:
            return False
        self.j = self.k - n
        return True

    def set_to(self, s: str) -> None:
        self.b[self.j + 1 : self.k + 1] = list(s)
        self.k = self.j + len(s)

    def r(self, s: str) -> None:
        if self.m() > 0:
            self.set_to(s)

    def step1ab(self) -> None:
        if self.b[self.k] == "s":
            if self.ends("sses"):
                self.k -= 2
            elif self.ends("ies"):
                self.set_to("i")
            elif self.b[self.k - 1] != "s":
                self.k -= 1
        if self.ends("eed"):
            if self.m() > 0:
                self.k -= 1
        elif (self.ends("ed") or self.ends("ing")) and self.vowel_in_stem():
            self.k = self.j
            if self.ends("at"):
                self.set_to("ate")
            elif self.ends("bl"):
                self.set_to("ble")
            elif self.ends("iz"):
                self.set_to("ize")
            elif self.double_c(self.k):
                self.k -= 1
                if self.b[self.k] in "lsz":
                    self.k += 1
            else:
                self.j = self.k
                if self.m() == 1 and self.cvc(self.k):
                    self.set_to("e")

    def step1c(self) -> None:
        if self.ends("y") and self.vowel_in_stem():
            self.b[self.k] = "i"

    def step2(self) -> None:
        for ending, replacement in _STEP2.get(self.b[self.k - 1], ()):
            if self.ends(ending):
                self.r(replacement)
                return

    def step3(self) -> None:
        for ending, replacement in _STEP3.get(self.b[self.k], ()):
            if self.ends(ending):
                self.r(replacement)
                return

    def step4(self) -> None:
        for ending in _STEP4.get(self.b[self.k - 1], ()):
            if self.ends(ending):
                if ending == "ion" and not (self.j >= 0 and self.b[self.j] in "st"):
                    continue
                break
        else:
            return
        if self.m() > 1:
            self.k = self.j

    def step5(self) -> None:
        self.j = self.k
        if self.b[self.k] == "e":
            a = self.m()
            if a > 1 or (a == 1 and not self.cvc(self.k - 1)):
                self.k -= 1
        if self.b[self.k] == "l" and self.double_c(self.k) and self.m() > 1:
            self.k -= 1


def porter_stem(word: str) -> str:
    """The porter stem of a lowercase ASCII word (words of one or two letters unchanged)."""
    if len(word) <= 2:
        return word
    w = _Word(word)
    w.step1ab()
    if w.k > 0:
        w.step1c()
        w.step2()
        w.step3()
        w.step4()
        w.step5()
    return "".join(w.b[: w.k + 1])
