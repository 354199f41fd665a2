"""The README, the guide (docs/) and the other READMEs: every relative link
names a file that exists and every #anchor a heading of it, by GitHub's
anchor rules; the README fits on a screen; the guide's contents list every
chapter."""

import os
import tempfile
import unittest

import markdown_docs as md

README_MAX_LINES = 200


class LinkTest(unittest.TestCase):
    def test_every_link_and_anchor_resolves(self):
        files = md.linked_files()
        self.assertIn("docs/README.md", files)
        self.assertIn("crates/analysis/README.md", files)
        problems = md.link_problems(md.REPO, files)
        self.assertEqual(problems, [], "broken links:\n" + "\n".join(problems))

    def test_a_broken_link_or_anchor_is_found(self):
        with tempfile.TemporaryDirectory() as root:
            os.mkdir(os.path.join(root, "docs"))
            with open(os.path.join(root, "README.md"), "w", encoding="utf-8") as f:
                f.write("# Top\n\nSee [the guide](docs/guide.md#the-part), [gone](docs/gone.md),\n"
                        "[a wrong part](docs/guide.md#no-such-part), [here](#top),\n"
                        "[outside](../elsewhere.md) and [the web](https://example.org/x.md).\n"
                        "`[not a link](nowhere.md)`\n\n```\n[nor this](nowhere.md)\n```\n")
            with open(os.path.join(root, "docs", "guide.md"), "w", encoding="utf-8") as f:
                f.write("# Guide\n\n## The part\n")
            problems = md.link_problems(root, ["README.md", "docs/guide.md"])
        self.assertEqual(problems, [
            "README.md:3: docs/gone.md: no such file",
            "README.md:4: docs/guide.md#no-such-part: no heading with anchor #no-such-part",
            "README.md:5: ../elsewhere.md: leaves the repository",
        ])

    def test_anchors_follow_githubs_rules(self):
        text = ("# Iterations that fit the size: `-n auto`\n## Does it predict? `--holdout`\n"
                "## The α–β fit\n## [Linked](x.md) heading\n## Data safety\n## Data safety\n"
                "```\n# not a heading\n```\n")
        self.assertEqual(md.anchors(text), {
            "iterations-that-fit-the-size--n-auto", "does-it-predict---holdout",
            "the-αβ-fit", "linked-heading", "data-safety", "data-safety-1"})

    def test_the_readme_fits_on_a_screen(self):
        with open(os.path.join(md.REPO, "README.md"), encoding="utf-8") as f:
            lines = f.read().count("\n")
        self.assertLessEqual(lines, README_MAX_LINES,
                             "README.md has %d lines: move the detail into docs/" % lines)

    def test_the_guides_contents_list_every_chapter(self):
        with open(os.path.join(md.REPO, "docs", "README.md"), encoding="utf-8") as f:
            listed = {target.partition("#")[0] for _, target in md.links(f.read())}
        chapters = {os.path.basename(f) for f in md.guide_files() if f.startswith("docs/")}
        self.assertEqual(sorted(chapters - listed - {"README.md"}), [])


if __name__ == "__main__":
    unittest.main()
