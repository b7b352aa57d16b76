#!/usr/bin/env bash
# The docs' links: every relative link and anchor in README.md and docs/ (the book's chapters and
# the files they include) resolves — the file exists, and an anchor names a heading of it (as
# mdBook and forges make them: lower case, punctuation dropped, spaces to hyphens) — and every
# `{{#include}}` names a file. Links to the web are not fetched (CI has no network). Plain Python,
# no mdBook needed: `mdbook build docs` renders the same files.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - README.md $(find docs -name '*.md' -not -path 'docs/book/*' | sort) <<'PY'
import os, re, sys

def slug(heading):
    h = re.sub(r'<[^>]+>', '', heading).strip().lower()
    h = re.sub(r'[^\w\- ]', '', h)
    return h.replace(' ', '-')

def prose(path):
    """The file's lines outside code blocks, with inline code removed."""
    fence = None
    for n, line in enumerate(open(path, encoding='utf-8'), 1):
        m = re.match(r'^\s*(```+|~~~+)', line)
        if m:
            fence = None if fence and m.group(1).startswith(fence) else (fence or m.group(1))
            continue
        if fence is None:
            yield n, re.sub(r'`[^`]*`', '', line)

def heading_lines(path):
    # Headings with their inline code kept, for slugs such as "host-patterns-and---limit".
    fence = None
    for line in open(path, encoding='utf-8'):
        m = re.match(r'^\s*(```+|~~~+)', line)
        if m:
            fence = None if fence and m.group(1).startswith(fence) else (fence or m.group(1))
            continue
        if fence is None:
            m = re.match(r'^(#{1,6})\s+(.*?)\s*#*\s*$', line.rstrip('\n'))
            if m:
                yield m.group(2)

def anchors_of(path, _cache={}):
    if path not in _cache:
        seen, out = {}, set()
        for h in heading_lines(path):
            s = slug(h.replace('`', ''))
            k = seen.get(s, 0)
            seen[s] = k + 1
            out.add(s if k == 0 else f'{s}-{k}')
        _cache[path] = out
    return _cache[path]

link = re.compile(r'!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
include = re.compile(r'\{\{#include\s+([^}\s:]+)')
bad = 0
checked = 0
for path in sys.argv[1:]:
    base = os.path.dirname(path)
    # Includes count in code blocks too (the example env.yaml is included in one).
    for n, line in enumerate(open(path, encoding='utf-8'), 1):
        for m in include.finditer(line):
            if not os.path.isfile(os.path.join(base, m.group(1))):
                print(f'{path}:{n}: {{{{#include}}}} of a missing file: {m.group(1)}')
                bad += 1
    for n, line in prose(path):
        for t in (m.group(1) for m in link.finditer(line)):
            if re.match(r'^[a-z][a-z0-9+.-]*:', t):      # http:, https:, mailto:
                continue
            checked += 1
            file, _, anchor = t.partition('#')
            target = os.path.normpath(os.path.join(base, file)) if file else path
            if not os.path.exists(target):
                print(f'{path}:{n}: link to a missing file: {t}')
                bad += 1
                continue
            if anchor and (not target.endswith('.md') or anchor not in anchors_of(target)):
                print(f'{path}:{n}: link to a missing anchor: {t}')
                bad += 1
print(f'docs: {checked} relative links in {len(sys.argv) - 1} files, {bad} broken')
sys.exit(1 if bad else 0)
PY
