"""Korean particles chosen by the word before them: 은/는, 이/가, 을/를, 과/와, 으로/로.

The choice depends on whether the last syllable, as read aloud, ends in a consonant (batchim). For a Hangul
syllable that is arithmetic on its code point; a number is read by its last non-zero place (10 십, 100 백, 1000 천,
10,000 만) or its last digit. A Latin name (a server, a flag) has no reliable reading, so the post never puts a
particle right after one: it writes a Korean noun between (``vllm`` 서버는). :func:`josa` refuses such a word
rather than guess.

The maintained packages on PyPI (hangeul, korean-josa, pyjosa, tjosa) cover the Hangul case only and would add a
dependency for three lines of arithmetic; the number reading is ours either way."""

from __future__ import annotations

PAIRS = {"은": ("은", "는"), "는": ("은", "는"), "이": ("이", "가"), "가": ("이", "가"), "을": ("을", "를"),
         "를": ("을", "를"), "과": ("과", "와"), "와": ("과", "와"), "으로": ("으로", "로"), "로": ("으로", "로")}
# the digit's Sino-Korean reading ends in a consonant: 0 영, 1 일, 3 삼, 6 육, 7 칠, 8 팔 (2 이, 4 사, 5 오, 9 구 do not)
DIGIT_BATCHIM = {"0": True, "1": True, "2": False, "3": True, "4": False, "5": False, "6": True, "7": True,
                 "8": True, "9": False}
RIEUL_DIGITS = {"1", "7", "8"}  # 일, 칠, 팔 end in ㄹ: 으로 becomes 로


def _final(word: str) -> tuple[bool, bool]:
    """(ends in a consonant, that consonant is ㄹ) of a word's last syllable as read."""
    text = word.rstrip(" `*)\"'’”")
    if not text:
        raise ValueError("no word before the particle")
    last = text[-1]
    if "가" <= last <= "힣":
        final = (ord(last) - 0xAC00) % 28
        return final != 0, final == 8
    if last.isdigit():
        digits = text.replace(",", "").split(".")[-1] if "." in text else text.replace(",", "")
        digits = "".join(ch for ch in digits if ch.isdigit())
        stripped = digits.rstrip("0")
        zeros = len(digits) - len(stripped)
        if not stripped:  # 0 영
            return True, False
        if zeros:  # 10 십, 100 백, 1000 천, 10000 만: each read with its place, all end in a consonant
            return True, False
        return DIGIT_BATCHIM[stripped[-1]], stripped[-1] in RIEUL_DIGITS
    raise ValueError(f"no reading known for {word!r}: put a Korean noun between it and the particle")


def josa(word: str, particle: str) -> str:
    """``word`` followed by the form of ``particle`` its last syllable takes (``josa("서버", "은")`` -> 서버는)."""
    consonant, rieul = _final(str(word))
    with_consonant, without = PAIRS[particle]
    if with_consonant == "으로":
        return f"{word}{'로' if not consonant or rieul else '으로'}"
    return f"{word}{with_consonant if consonant else without}"
