"""The Markdown the docs tests read, read as GitHub reads it: which files,
their fenced code blocks, their headings and anchors, and their links."""

import glob
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FENCE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"`[^`]*`")
# [text](target) and ![alt](target); the text may run over lines.
LINK = re.compile(r"!?\[(?:[^\[\]]|\n)*\]\(\s*([^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def guide_files(root=REPO):
    """The front door and the guide: where commands are shown."""
    return ["README.md"] + sorted(
        os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))


def linked_files(root=REPO):
    """Every file whose links are checked."""
    others = ["results/README.md", "sbatch/README.md"] + sorted(
        os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "crates", "*", "README.md")))
    return guide_files(root) + [f for f in others if os.path.exists(os.path.join(root, f))]


def code_blocks(text):
    """Fenced code blocks as (first line number, info string, lines)."""
    blocks, current = [], None
    for number, line in enumerate(text.split("\n"), 1):
        fence = FENCE.match(line)
        if current is None and fence:
            current = (number + 1, line.strip()[3:].strip(), [], fence.group(1))
        elif current is not None and fence and fence.group(1) == current[3] \
                and line.strip() == current[3]:
            blocks.append(current[:3])
            current = None
        elif current is not None:
            current[2].append(line)
    return blocks


def outside_fences(text):
    """The text with its fenced code blocks blanked (newlines kept, so
    offsets still give line numbers)."""
    out, fenced = [], None
    for line in text.split("\n"):
        fence = FENCE.match(line)
        if fenced is None and fence:
            fenced = fence.group(1)
            out.append("")
        elif fenced is not None:
            if fence and line.strip() == fenced:
                fenced = None
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def prose(text):
    """The text outside code blocks and inline code (blanked, newlines kept)."""
    return INLINE_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), outside_fences(text))


def slug(heading):
    """GitHub's anchor for a heading: links reduced to their text, lower
    case, every character but letters, digits, '_', '-' and spaces dropped,
    spaces made '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(text):
    """Every heading's anchor; a repeated one gets -1, -2, … as on GitHub."""
    seen, result = {}, set()
    for line in outside_fences(text).split("\n"):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else "%s-%d" % (base, count))
    return result


def links(text):
    """Every link of the prose as (line number, target)."""
    body = prose(text)
    return [(body.count("\n", 0, m.start()) + 1, m.group(1)) for m in LINK.finditer(body)]


def link_problems(root, files):
    """One line per relative link that names no file, or an anchor that
    names no heading of its Markdown file."""
    problems, cache = [], {}

    def anchors_of(path):
        if path not in cache:
            with open(path, encoding="utf-8") as f:
                cache[path] = anchors(f.read())
        return cache[path]

    for name in files:
        source = os.path.join(root, name)
        with open(source, encoding="utf-8") as f:
            text = f.read()
        for line, target in links(text):
            if SCHEME.match(target):
                continue
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(source), path)) \
                if path else source
            where = "%s:%d: %s" % (name, line, target)
            if os.path.relpath(resolved, root).split(os.sep)[0] == "..":
                problems.append(where + ": leaves the repository")
            elif not os.path.exists(resolved):
                problems.append(where + ": no such file")
            elif anchor and resolved.endswith(".md") and anchor not in anchors_of(resolved):
                problems.append(where + ": no heading with anchor #" + anchor)
    return problems
