//! `collbench-analyze generate`: the man page and shell completions.
use crate::util::run;

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
}
