"""Every `collbench` and `collbench-analyze` command shown in README.md and
docs/*.md, checked against the binaries built from this checkout, so that
none goes stale.

The convention, for whoever writes a command into the docs:

- A command is a line of a fenced code block (a trailing `\\` joins the
  next line) with a word that names `collbench` or `collbench-analyze`, by
  any path (`target/release/collbench`, after `mpirun -n 2`, `srun …` or
  `VAR=value`). A `$ ` prompt is dropped; `# …` is a comment.
- Every command's subcommand must be one its binary's `--help` lists, and
  every flag one that `--help` of the subcommand (or of the binary, for
  collbench-analyze's global `--force`) lists.
- Every command is also run, and must exit 0, unless it is one of:
  - a form, not a command: it holds a placeholder, a word in capitals of
    two letters or more (`FILE`, `OUT.json`, `PROFILE.csv`), an ellipsis
    (`…`, `...`) or an optional part in brackets (`[--json]`,
    `[--csv|--json]`);
  - a GPU command: a collective of collbench without `--backend mpi`, or
    `host-broadcast`;
  - a Slurm command: launched by `srun` or `sbatch`.
  Only the flags of those are checked.
- The commands of one file run in the order shown, in one scratch folder
  that sees the checkout's files (`results/`, `crates/`, …) and an empty
  `docs/` tree; `target/release/` there holds the binaries under test, and
  so does `$PATH`; `$HOME` is a folder of its own. So a command may read
  what one before it wrote, must name committed inputs by their path from
  the root, and writes nothing into the checkout (checked with git).
- A file a command writes under `docs/` that the checkout holds too (the
  README's picture) must come out byte for byte as committed.

The binaries are built here with cargo (a no-op after `cargo test`, which
scripts/test.sh runs first). The runs take a few seconds.
"""

import filecmp
import glob
import json
import os
import re
import shlex
import subprocess
import tempfile
import unittest

import markdown_docs as md

PROGRAMS = ("collbench", "collbench-analyze")
# Runs anywhere; every other subcommand of collbench measures a collective.
COLLBENCH_WITHOUT_GPU = {"info", "generate", "help"}
PLACEHOLDER = re.compile(r"(?<![A-Za-z0-9])[A-Z][A-Z0-9_]+(?![a-z])|…|\.\.\.")
SHELL_LANGUAGES = {"", "sh", "bash", "shell", "console"}
RUN_TIMEOUT_S = 300


class Command:
    """One command of the docs, parsed."""

    def __init__(self, source, line, text):
        self.source, self.line, self.text = source, line, text
        self.brackets = "[" in text
        # Optional parts are checked like the rest: brackets go, and the
        # alternatives inside them become words of their own.
        plain = re.sub(r"\[([^\]]*)\]", lambda m: " " + m.group(1).replace("|", " ") + " ", text)
        lexer = shlex.shlex(plain, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
        at = next(i for i, w in enumerate(words) if os.path.basename(w) in PROGRAMS)
        self.program = os.path.basename(words[at])
        self.launcher = words[:at]
        self.args = []
        for word in words[at + 1:]:
            if word and all(c in "();<>|&" for c in word):
                break
            self.args.append(word)
        self.subcommand = next((a for a in self.args if not a.startswith("-")), None)

    def flags(self):
        return [a.split("=")[0] for a in self.args if re.match(r"^--?[A-Za-z]", a)]

    def why_not_run(self):
        """None when the command is to be run, else why not."""
        if self.brackets or any(PLACEHOLDER.search(a) for a in self.args):
            return "a form with placeholders"
        if any(os.path.basename(w) in ("srun", "sbatch") for w in self.launcher):
            return "needs Slurm"
        if self.program == "collbench" and self.subcommand not in COLLBENCH_WITHOUT_GPU:
            mpi = any(a == "--backend=mpi" for a in self.args) or any(
                a == "--backend" and b == "mpi" for a, b in zip(self.args, self.args[1:]))
            if self.subcommand == "host-broadcast" or not mpi:
                return "needs a GPU"
        return None

    def where(self):
        return "%s:%d: %s" % (self.source, self.line, self.text)


def commands_in(source, text):
    """Every command of the fenced shell blocks of one Markdown text."""
    found = []
    for first, info, lines in md.code_blocks(text):
        if (info.split() or [""])[0] not in SHELL_LANGUAGES:
            continue
        joined, start = "", None
        for number, line in enumerate(lines, first):
            if start is None:
                start = number
                line = line[2:] if line.startswith("$ ") else line
            if line.rstrip().endswith("\\"):
                joined += line.rstrip()[:-1] + " "
                continue
            joined += line
            text_line = joined.strip()
            joined, begun = "", start
            start = None
            if any(os.path.basename(w) in PROGRAMS for w in _words(text_line)):
                found.append(Command(source, begun, text_line))
    return found


def _words(line):
    try:
        return shlex.split(line, comments=True)
    except ValueError:
        return line.split()


def build_binaries():
    """Builds both binaries (dev profile, as `cargo test` does) and returns
    {program: path}."""
    out = subprocess.run(
        ["cargo", "build", "--quiet", "--message-format=json", "-p", "collbench", "-p", "analysis"],
        cwd=md.REPO, capture_output=True, text=True, timeout=1800, check=False)
    if out.returncode != 0:
        raise AssertionError("cargo build failed:\n" + out.stderr[-4000:])
    found = {}
    for line in out.stdout.splitlines():
        message = json.loads(line)
        if message.get("reason") == "compiler-artifact" and message.get("executable") \
                and message["target"]["name"] in PROGRAMS:
            found[message["target"]["name"]] = message["executable"]
    missing = set(PROGRAMS) - set(found)
    if missing:
        raise AssertionError("cargo built no %s" % ", ".join(sorted(missing)))
    return found


class Cli:
    """The subcommands and flags the binaries' --help lists."""

    def __init__(self, binaries):
        self.binaries, self.cache = binaries, {}

    def help(self, program, *subcommand):
        key = (program,) + subcommand
        if key not in self.cache:
            out = subprocess.run([self.binaries[program], *subcommand, "--help"],
                                 capture_output=True, text=True, timeout=60, check=False)
            self.cache[key] = out.stdout if out.returncode == 0 else None
        return self.cache[key]

    def subcommands(self, program):
        text = self.help(program).split("Commands:", 1)[1].split("\n\n", 1)[0]
        return set(re.findall(r"^ {2}([a-z][\w-]*)", text, re.MULTILINE))

    @staticmethod
    def flags_in(help_text):
        flags = set()
        for line in help_text.splitlines():
            match = re.match(r"^\s+((?:-[A-Za-z0-9],\s+)?--?[A-Za-z0-9][\w-]*)", line)
            if match:
                flags.update(f.strip() for f in match.group(1).split(","))
            for aliases in re.findall(r"\[(?:short )?alias(?:es)?: ([^\]]+)\]", line):
                flags.update(a.strip() for a in aliases.split(","))
        return flags

    def problems(self, command):
        """What in the command its binary does not know, as lines."""
        if command.subcommand is None:
            return ["%s: no subcommand" % command.where()]
        if command.subcommand not in self.subcommands(command.program):
            return ["%s: %s has no subcommand %r" % (command.where(), command.program,
                                                     command.subcommand)]
        known = self.flags_in(self.help(command.program)) | self.flags_in(
            self.help(command.program, command.subcommand))
        return ["%s: %s %s has no flag %s" % (command.where(), command.program,
                                              command.subcommand, flag)
                for flag in command.flags() if flag not in known]


def scratch_folder(root, binaries):
    """A folder that sees the checkout's files, an empty docs/ tree, the
    binaries under target/release/ and a home of its own."""
    for name in os.listdir(md.REPO):
        if name not in (".git", "target", "docs"):
            os.symlink(os.path.join(md.REPO, name), os.path.join(root, name))
    for folder, _, _ in os.walk(os.path.join(md.REPO, "docs")):
        os.makedirs(os.path.join(root, os.path.relpath(folder, md.REPO)), exist_ok=True)
    bin_dir = os.path.join(root, "target", "release")
    os.makedirs(bin_dir)
    for program, path in binaries.items():
        os.symlink(path, os.path.join(bin_dir, program))
    home = os.path.join(root, "home")
    os.mkdir(home)
    env = dict(os.environ, HOME=home, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    return env


def make_redirect_folders(command, root, home):
    """Makes the folders of `> FILE` targets, as a reader's shell would have
    them (the guide's `mkdir -p` lines are not commands)."""
    words = _words(command.text)
    for op, target in zip(words, words[1:]):
        if op in (">", ">>"):
            path = os.path.join(home, target[2:]) if target.startswith("~/") else \
                os.path.join(root, target)
            os.makedirs(os.path.dirname(path), exist_ok=True)


def checkout_status():
    """git's view of the checkout, to see that the runs wrote nothing there."""
    if not os.path.isdir(os.path.join(md.REPO, ".git")) and not os.path.isfile(
            os.path.join(md.REPO, ".git")):
        return None
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                         cwd=md.REPO, capture_output=True, text=True, timeout=60, check=False)
    return out.stdout if out.returncode == 0 else None


def all_commands():
    found = []
    for name in md.guide_files():
        with open(os.path.join(md.REPO, name), encoding="utf-8") as f:
            found += commands_in(name, f.read())
    return found


class ConventionTest(unittest.TestCase):
    """The parsing and the classification, on lines made up for it."""

    def test_commands_are_found_and_classified(self):
        text = ("```sh\n$ target/release/collbench info   # ranks\n"
                "mpirun -n 8 target/release/collbench all-reduce -b 8 -e 8G --out ar.json\n"
                "mpirun -n 2 collbench broadcast --backend mpi -e 1M\n"
                "collbench-analyze --force plot a.json \\\n    -o docs/x.svg | head\n"
                "collbench-analyze table FILE [--markdown|--csv]\n"
                "srun -N 2 collbench info\ncargo build --release\n```\n"
                "```text\ncollbench info\n```\n")
        commands = commands_in("x.md", text)
        self.assertEqual([(c.line, c.program, c.subcommand, c.why_not_run()) for c in commands], [
            (2, "collbench", "info", None),
            (3, "collbench", "all-reduce", "needs a GPU"),
            (4, "collbench", "broadcast", None),
            (5, "collbench-analyze", "plot", None),
            (7, "collbench-analyze", "table", "a form with placeholders"),
            (8, "collbench", "info", "needs Slurm")])
        self.assertEqual(commands[3].flags(), ["--force", "-o"])
        self.assertEqual(commands[4].flags(), ["--markdown", "--csv"])


class DocsCommandTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.binaries = build_binaries()
        cls.cli = Cli(cls.binaries)
        cls.commands = all_commands()

    def test_a_wrong_subcommand_or_flag_is_found(self):
        made_up = commands_in("made-up.md", "```sh\ncollbench all-reduce --min-byte 8 -b 8\n"
                              "collbench-analyze tabel x.json\n"
                              "collbench-analyze --force table x.json --stat median -Z\n```\n")
        self.assertEqual([p.split(": ", 1)[1].split(": ", 1)[1] for c in made_up
                          for p in self.cli.problems(c)], [
            "collbench all-reduce has no flag --min-byte",
            "collbench-analyze has no subcommand 'tabel'",
            "collbench-analyze table has no flag -Z"])

    def test_every_command_names_real_subcommands_and_flags(self):
        kinds = {c.why_not_run() for c in self.commands}
        self.assertTrue({None, "needs a GPU", "a form with placeholders"} <= kinds, kinds)
        problems = [p for c in self.commands for p in self.cli.problems(c)]
        self.assertEqual(problems, [], "\n".join(problems))

    def test_every_command_without_a_gpu_runs(self):
        before = checkout_status()
        failures = []
        for name in md.guide_files():
            runnable = [c for c in self.commands if c.source == name and c.why_not_run() is None]
            if runnable:
                failures += self.run_in_scratch(runnable)
        self.assertEqual(failures, [], "\n\n".join(failures))
        self.assertEqual(checkout_status(), before, "the commands wrote into the checkout")

    def run_in_scratch(self, commands):
        failures = []
        with tempfile.TemporaryDirectory() as root:
            env = scratch_folder(root, self.binaries)
            for command in commands:
                make_redirect_folders(command, root, env["HOME"])
                try:
                    out = subprocess.run(["bash", "-c", command.text], cwd=root, env=env,
                                         capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                                         check=False)
                except subprocess.TimeoutExpired:
                    failures.append("%s\n  ran past %d s" % (command.where(), RUN_TIMEOUT_S))
                    continue
                if out.returncode != 0:
                    failures.append("%s\n  exit %d\n%s" % (command.where(), out.returncode,
                                                           (out.stdout + out.stderr)[-2000:]))
            for made in glob.glob(os.path.join(root, "docs", "**", "*"), recursive=True):
                committed = os.path.join(md.REPO, os.path.relpath(made, root))
                if os.path.isfile(made) and os.path.isfile(committed) \
                        and not filecmp.cmp(made, committed, shallow=False):
                    failures.append("%s: the command shown makes a different file; "
                                    "run it again from the root" % os.path.relpath(made, root))
        return failures


if __name__ == "__main__":
    unittest.main()
