//! `collbench-analyze generate`: the man pages and shell completions, used
//! as a shell and `man` use them: bash completes each subcommand's flags,
//! and every page the binary's page points at is generated and renders.
use std::process::Command;

use crate::util::{run, scratch};

#[test]
fn generate_writes_the_man_page_and_completions() {
    let man = run(&["generate", "man"]).ok().to_string();
    assert!(man.contains(".TH collbench-analyze 1"), "{man}");
    for shell in ["complete-bash", "complete-zsh", "complete-fish"] {
        let text = run(&["generate", shell]).ok().to_string();
        for word in ["table", "pipeline", "memory-limit"] {
            assert!(text.contains(word), "{shell}: no {word}");
        }
    }
    let error = run(&["generate", "tcsh"]).fails().to_string();
    assert!(error.contains("'tcsh'"), "{error}");
    // It writes no file, so --force has nothing to apply to.
    let error = run(&["--force", "generate", "man"]).fails().to_string();
    assert!(error.contains("--force"), "{error}");
    let error = run(&["generate", "man", "tabel"]).fails().to_string();
    assert!(
        error.contains("\"tabel\"") && error.contains("accepted: import, table"),
        "{error}"
    );
    let error = run(&["generate", "complete-bash", "table"])
        .fails()
        .to_string();
    assert!(error.contains("only `generate man SUBCOMMAND`"), "{error}");
}

/// What bash offers after `words` (the last one being completed).
fn bash_completes(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let text = std::fs::read_to_string(script).unwrap();
    // The function the script registers for the binary.
    let function = text
        .lines()
        .find_map(|l| l.split("complete -F ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("a `complete -F` line")
        .to_string();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let program = format!(
        "source '{}'\nCOMP_WORDS=({})\nCOMP_CWORD={cword}\nCOMP_LINE='{}'\nCOMP_POINT=${{#COMP_LINE}}\n{function} collbench-analyze '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script.display(),
        quoted.join(" "),
        words.join(" "),
        words[cword],
        words[cword.saturating_sub(1)],
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completion_offers_a_subcommands_flags() {
    let dir = scratch("generate-bash");
    let script = dir.join("collbench-analyze.bash");
    std::fs::write(&script, run(&["generate", "complete-bash"]).ok()).unwrap();
    let top = bash_completes(&script, &["collbench-analyze", ""]);
    assert!(top.contains(&"report".to_string()), "{top:?}");
    for (subcommand, flags) in [
        ("table", &["--stat", "--link-gbps", "--markdown"][..]),
        ("report", &["--out", "--link-gbps", "--stat"]),
        ("pipeline", &["--memory-limit", "--microbatches"]),
    ] {
        let offered = bash_completes(&script, &["collbench-analyze", subcommand, "--"]);
        for flag in flags {
            assert!(
                offered.iter().any(|o| o == flag),
                "{subcommand} --<TAB> offers no {flag}: {offered:?}"
            );
        }
        // Not the top level's words.
        assert!(!offered.iter().any(|o| o == "import"), "{offered:?}");
    }
}

/// `man`, or `None` (with a note) where it is not installed outside CI.
fn man() -> Option<&'static str> {
    let found = Command::new("man")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some("man");
    }
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("no `man` on the PATH, but CI is: CI must render the man pages (apt-get install man-db groff-base; scripts/test.sh installs them)");
    }
    eprintln!("\n*** SKIPPED: rendering the man pages: no `man` (apt-get install man-db groff-base) ***\n");
    None
}

#[test]
fn man_renders_the_binarys_page_and_each_page_it_points_at() {
    let dir = scratch("generate-man");
    let pages = run(&["generate", "man-pages"]).ok().to_string();
    let subcommands: Vec<&str> = pages.lines().collect();
    assert!(subcommands.contains(&"report") && subcommands.contains(&"pipeline"));
    assert!(
        !subcommands.contains(&"help"),
        "help has no page: {subcommands:?}"
    );
    // The binary's page points at exactly these pages.
    let top = run(&["generate", "man"]).ok().to_string();
    for sub in &subcommands {
        assert!(
            top.contains(&format!(
                "collbench\\-analyze\\-{}(1)",
                sub.replace('-', "\\-")
            )),
            "the page does not point at {sub}"
        );
    }
    assert_eq!(
        top.matches("collbench\\-analyze\\-").count(),
        subcommands.len(),
        "{top}"
    );
    let Some(man) = man() else {
        return;
    };
    let mut files = vec![("collbench-analyze".to_string(), top)];
    for sub in &subcommands {
        let page = run(&["generate", "man", sub]).ok().to_string();
        assert!(
            page.contains(&format!(".TH collbench-analyze-{sub} 1")),
            "{page}"
        );
        files.push((format!("collbench-analyze-{sub}"), page));
    }
    for (name, page) in files {
        let path = dir.join(format!("{name}.1"));
        std::fs::write(&path, &page).unwrap();
        let out = Command::new(man)
            .args(["-l", path.to_str().unwrap()])
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .expect("man runs");
        let text = without_overstrike(&String::from_utf8_lossy(&out.stdout));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "man -l {name}: {stderr}");
        assert!(!stderr.contains("warning"), "man -l {name}: {stderr}");
        assert!(
            text.contains("NAME") && text.contains("OPTIONS"),
            "{name}: {text}"
        );
        // A subcommand's page documents its own flags.
        let flags: &[&str] = match name.as_str() {
            "collbench-analyze-report" => &["--out", "--link-gbps"],
            "collbench-analyze-table" => &["--stat", "--markdown"],
            "collbench-analyze-pipeline" => &["--microbatches"],
            _ => &[],
        };
        let plain: String = text.replace(['\u{2010}', '\u{2212}'], "-");
        for flag in flags {
            assert!(plain.contains(flag), "{name} documents no {flag}: {plain}");
        }
    }
}

/// Text as `man` prints it to a pipe, less the bold and underline it draws
/// by overstriking (`X\u{8}X`, `_\u{8}X`).
fn without_overstrike(text: &str) -> String {
    let mut out: Vec<char> = Vec::with_capacity(text.len());
    for c in text.chars() {
        if c == '\u{8}' {
            out.pop();
        } else {
            out.push(c);
        }
    }
    out.into_iter().collect()
}
