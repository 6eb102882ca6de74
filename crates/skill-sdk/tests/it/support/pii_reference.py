"""The personal-data guard's patterns as the platform defines them, on Python's backtracking `re`.

Used by the tests (the Rust guard must give the same text and counts on every corpus string) and by
the guard benchmark (the peer in the same run).

Usage:
  python pii_reference.py redact     < JSON list of strings   -> JSON list of [text, {kind: n}]
  python pii_reference.py bench FILE                          -> seconds to redact FILE's text
"""
import json
import re
import sys
import time

NAME = r"[А-ЯЁ][а-яё]+(?:-[А-ЯЁ][а-яё]+)?"
PATRONYMIC = r"[А-ЯЁ][а-яё]+(?:ович|евич|ич|овна|евна|ична|инична)|[А-ЯЁ][а-яё]+\s(?:оглы|кызы)"
PATTERNS = [
    ("снилс", re.compile(r"(?<!\d)\d{3}-\d{3}-\d{3}[ -]\d{2}(?!\d)")),
    ("паспорт", re.compile(r"(?:паспорт\w*|серия)[^\n\d]{0,20}\d{2}\s?\d{2}[^\n\d]{0,12}\d{6}(?!\d)", re.IGNORECASE)),
    ("телефон", re.compile(r"(?<![\d.])(?:\+7|8)[\s(-]*\d{3}[\s)-]*\d{3}[\s-]*\d{2}[\s-]*\d{2}(?![\d.])")),
    ("email", re.compile(r"\b[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}\b", re.IGNORECASE)),
    ("фио", re.compile(rf"\b{NAME}\s{NAME}\s(?:{PATRONYMIC})\b")),
    ("фио", re.compile(rf"\b(?:{NAME}\s)?(?:{PATRONYMIC})\s{NAME}\b")),
    ("фио", re.compile(rf"\b{NAME}\s(?:{PATRONYMIC})\b")),
    ("фио", re.compile(rf"\b{NAME}\s[А-ЯЁ]\.\s?[А-ЯЁ]\.")),
    ("фио", re.compile(rf"(?<![А-ЯЁа-яё])[А-ЯЁ]\.\s?[А-ЯЁ]\.\s?{NAME}\b")),
]


def redact(text):
    found = {}
    for kind, pattern in PATTERNS:
        text, n = pattern.subn(f"[ПДн:{kind}]", text)
        if n:
            found[kind] = found.get(kind, 0) + n
    return text, dict(sorted(found.items()))


if __name__ == "__main__":
    if sys.argv[1] == "redact":
        texts = json.loads(sys.stdin.read())
        json.dump([list(redact(t)) for t in texts], sys.stdout, ensure_ascii=False)
    elif sys.argv[1] == "bench":
        text = open(sys.argv[2], encoding="utf-8").read()
        started = time.perf_counter()
        redact(text)
        print(time.perf_counter() - started)
