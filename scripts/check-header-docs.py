#!/usr/bin/env python3
"""Checks that include/sparsejit/sparsejit.h documents every sj_* function: for each declaration,
its documentation (the comment above it, back to the previous declaration, plus any note earlier
in the same section that says it applies to the functions "below") must name every parameter and
say something about ownership, errors and thread safety. The header's opening conventions
(statuses, out-parameters, handle ownership, thread safety) hold for every function, so a
function passes an aspect that they settle only when the script is run with --allow-conventions;
CI runs it without, so each function states all four itself (directly or through such a note).

Usage: scripts/check-header-docs.py [--allow-conventions] [--verbose] [HEADER]
Exit status 0 when every function passes, 1 otherwise (each gap is printed)."""
import re
import sys
from pathlib import Path

ASPECTS = {
    # what a reader must learn, and words that say it
    "ownership": r"owned|owns|caller'?s?\b|borrow|copied|copies|valid until|valid for|stays? valid|"
                 r"destroy|release|static|never NULL|allowed and does nothing|NULL is allowed|"
                 r"nothing is (allocated|computed)",
    "errors": r"Errors?\b|SJ_ERR_|SJ_OK|never fails|never NULL",
    "thread safety": r"thread-safe|many threads|threads at once|thread at a time|\brace\b|concurren|"
                     r"(this|each|calling|any|another) thread",
}


def declarations(text):
    """(name, params, start, end) of every `SJ_API ... sj_name(...);` declaration."""
    for m in re.finditer(r"SJ_API\s+[^;(]*?\b(sj_\w+)\s*\(([^)]*)\)\s*;", text, re.S):
        params = []
        for p in m.group(2).split(","):
            p = p.strip()
            if p in ("", "void"):
                continue
            name = re.findall(r"(\w+)\s*(\[[^\]]*\])?$", p)
            if name:
                params.append(name[-1][0])
        yield m.group(1), params, m.start(), m.end()


def comments(chunk):
    return " ".join(re.findall(r"/\*(.*?)\*/", chunk, re.S))


def main(argv):
    allow = "--allow-conventions" in argv
    verbose = "--verbose" in argv
    rest = [a for a in argv if not a.startswith("--")]
    header = Path(rest[0]) if rest else Path(__file__).resolve().parent.parent / "include/sparsejit/sparsejit.h"
    text = header.read_text()
    first = text.find("#ifndef")
    conventions = comments(text[:first])
    section_re = re.compile(r"/\* -{20,}")
    decls = list(declarations(text))
    failures = 0
    prev_end = first
    for name, params, start, end in decls:
        own = comments(text[prev_end:start])
        # Notes earlier in this section that apply to everything "below".
        sec = max((m.start() for m in section_re.finditer(text, 0, start)), default=0)
        notes = " ".join(c for c in re.findall(r"/\*(.*?)\*/", text[sec:start], re.S)
                         if re.search(r"\bbelow\b", c) and not c.strip().startswith("-"))
        # The per-level structs' fields are documented where they are declared (typedef struct
        # comments between declarations count as part of `own`).
        doc = own + " " + notes
        gaps = []
        if not own.strip():
            gaps.append("no comment of its own")
        for p in params:
            if not re.search(r"\b" + re.escape(p) + r"\b", doc):
                gaps.append(f"parameter `{p}` not mentioned")
        for aspect, words in ASPECTS.items():
            if re.search(words, doc, re.I):
                continue
            if allow and re.search(words, conventions, re.I):
                continue
            gaps.append(f"says nothing about {aspect}")
        if gaps:
            failures += 1
            print(f"{header.name}: {name}: " + "; ".join(gaps))
        elif verbose:
            print(f"{name}: ok ({len(params)} parameters)")
        prev_end = end
    print(f"check-header-docs: {len(decls)} functions, {failures} with gaps")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
