#!/usr/bin/env python3
"""ncu_hot.py: the SASS instructions where a kernel's warps stall most, from
Nsight Compute's source page as CSV (`ncu --import R --page source --csv
--print-source sass > F`; bench/profile_matmul.sh writes one per variant).

    python3 bench/ncu_hot.py F [N]

Prints each of the N (default 8) instructions with the most stall samples,
its share of all samples, and the three instructions before it (a sample
lands on the instruction a warp waits to issue: what it waits for is often
just above).  Only the standard library."""
import csv
import sys


def number(text):
    try:
        return float(text.replace(',', ''))
    except ValueError:
        return 0.0


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = list(csv.reader(open(sys.argv[1], newline='')))
    at = next((i for i, r in enumerate(rows) if 'Address' in r and 'Source' in r), None)
    if at is None:
        sys.exit('%s: no "Address" and "Source" columns (not ncu\'s source page as CSV?)' % sys.argv[1])
    head, body = rows[at], [r for r in rows[at + 1:] if len(r) == len(rows[at])]
    col = next((c for c in ('Warp Stall Sampling (All Samples)', 'Warp Stall Sampling (All Cycles)') if c in head), None)
    if col is None or not body:
        sys.exit('%s: no stall samples' % sys.argv[1])
    addr, src, samples = head.index('Address'), head.index('Source'), head.index(col)
    base = min(int(r[addr], 16) for r in body)
    total = sum(number(r[samples]) for r in body) or 1.0
    top = sorted(range(len(body)), key=lambda i: -number(body[i][samples]))[:int(sys.argv[2]) if len(sys.argv) > 2 else 8]
    print('    %d instructions, %d stall samples; the hottest:' % (len(body), total))
    for i in top:
        print('    %5.1f%%  %05x  %s' % (100 * number(body[i][samples]) / total, int(body[i][addr], 16) - base,
                                       body[i][src].strip()))
        for r in body[max(0, i - 3):i]:
            print('                  %05x  %s' % (int(r[addr], 16) - base, r[src].strip()))


if __name__ == '__main__':
    main()
