#!/usr/bin/python3
"""Keeps the code in a Markdown document true to the compiler.

Every fenced block tagged ```tile is a complete program: it must compile
(`tilec FILE --emit=ir`, every kernel with its default constants).  Every
block tagged ```tile-error must be rejected with a located diagnostic
(`file:line:col: error: ...`, exit status 1); when the next block is a
```text block of diagnostics (its first line is `NAME:line:col: error: ...`),
it must be exactly what tilec prints, the file called NAME.  Blocks tagged
otherwise (```text, fragments) are not checked.

    check_docs.py --tilec PATH --work DIR DOC.md
Exit status: 0 all blocks behave, 1 otherwise.
"""
import argparse
import os
import re
import subprocess
import sys

LOCATED_ERROR = re.compile(r"^[^:\n]+:\d+:\d+: error: ", re.M)


def blocks(text):
    """Yields (tag, first line number, code) of each fenced block."""
    tag, start, lines = None, 0, []
    for number, line in enumerate(text.splitlines(), 1):
        fence = line.strip().startswith("```")
        if tag is None and fence:
            tag, start, lines = line.strip()[3:].strip(), number + 1, []
        elif tag is not None and fence:
            yield tag, start, "\n".join(lines) + "\n"
            tag = None
        elif tag is not None:
            lines.append(line)


def same_diagnostics(following, stderr, path):
    """Whether a ```text block right after a tile-error block, if it shows
    diagnostics, matches tilec's output with the file renamed."""
    if not following or following[0][0] != "text":
        return True
    shown = following[0][2]
    match = LOCATED_ERROR.match(shown)
    if not match:
        return True
    name = shown.split(":", 1)[0]
    return stderr.replace(path, name).rstrip() == shown.rstrip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("doc")
    opts = ap.parse_args()
    os.makedirs(opts.work, exist_ok=True)
    with open(opts.doc, encoding="utf-8") as f:
        text = f.read()
    failures = checked = 0
    all_blocks = list(blocks(text))
    for number, (tag, line, code) in enumerate(all_blocks):
        if tag not in ("tile", "tile-error"):
            continue
        checked += 1
        path = os.path.join(opts.work, "doc_line%d.tile" % line)
        with open(path, "w", encoding="utf-8") as f:
            f.write(code)
        proc = subprocess.run([opts.tilec, path, "--emit=ir"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        where = "%s:%d" % (opts.doc, line)
        if tag == "tile" and proc.returncode != 0:
            print("FAIL %s: the program does not compile (exit %d):\n%s" % (
                where, proc.returncode, proc.stderr.rstrip()))
            failures += 1
        elif tag == "tile-error" and (proc.returncode != 1 or not LOCATED_ERROR.search(proc.stderr)):
            print("FAIL %s: expected a located error and exit 1, got exit %d:\n%s" % (
                where, proc.returncode, proc.stderr.rstrip()))
            failures += 1
        elif tag == "tile-error" and not same_diagnostics(all_blocks[number + 1:], proc.stderr, path):
            print("FAIL %s: the diagnostics shown after the program differ from tilec's:\n%s" % (
                where, proc.stderr.rstrip()))
            failures += 1
        else:
            print("ok %s (%s)" % (where, tag))
    if checked == 0:
        print("FAIL %s: no ```tile blocks found" % opts.doc)
        return 1
    print("%d of %d blocks ok" % (checked - failures, checked))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
