//! Shell completions and man pages for the project's binaries, from clap's own generators (`collbench generate …`, `collbench-analyze generate …`).
#![forbid(unsafe_code)]

/// What `generate` writes to stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// A man page (roff), for `man -l` or a `man1` folder: the binary's,
    /// or with SUBCOMMAND that subcommand's, with its flags.
    Man,
    /// The subcommands that have a man page of their own, one per line.
    ManPages,
    /// Completions for bash.
    CompleteBash,
    /// Completions for zsh.
    CompleteZsh,
    /// Completions for fish.
    CompleteFish,
}

/// `generate`'s arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct GenerateArgs {
    /// man, man-pages, complete-bash, complete-zsh or complete-fish
    #[arg(value_enum)]
    pub kind: Kind,
    /// With man: the subcommand whose page to print (`<binary>-<subcommand>(1)`,
    /// as the binary's page names it); `man-pages` lists them
    #[arg(value_name = "SUBCOMMAND")]
    pub subcommand: Option<String>,
}

/// What `args` asks for, for the binary whose command line is `command`,
/// as bytes for stdout; the error is one line naming what is wrong.
pub fn run(args: &GenerateArgs, command: clap::Command) -> Result<Vec<u8>, String> {
    match (args.kind, args.subcommand.as_deref()) {
        (Kind::Man, Some(name)) => man_page(command, Some(name)),
        (kind, Some(name)) => Err(format!(
            "generate {}: takes no subcommand ({name:?}); only `generate man SUBCOMMAND` does",
            kind_name(kind)
        )),
        (kind, None) => Ok(generate(kind, command)),
    }
}

fn kind_name(kind: Kind) -> String {
    use clap::ValueEnum;
    kind.to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}

/// `kind` for the binary whose command line is `command`, as bytes for
/// stdout (`man` is the binary's own page).
pub fn generate(kind: Kind, mut command: clap::Command) -> Vec<u8> {
    let name = command.get_name().to_string();
    let shell = match kind {
        // A known page always renders: the error is for unknown names only.
        Kind::Man => return man_page(command, None).unwrap_or_default(),
        Kind::ManPages => {
            return page_commands(command)
                .iter()
                .map(|c| format!("{}\n", c.get_name()))
                .collect::<String>()
                .into_bytes()
        }
        Kind::CompleteBash => clap_complete::Shell::Bash,
        Kind::CompleteZsh => clap_complete::Shell::Zsh,
        Kind::CompleteFish => clap_complete::Shell::Fish,
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, name.clone(), &mut out);
    if shell == clap_complete::Shell::Bash {
        out = bash_names_agree(&String::from_utf8_lossy(&out), &name).into_bytes();
    }
    out
}

/// The command as its pages show it: built, without the `help`
/// subcommand (it has no page; `--help` is on every page).
fn built(command: clap::Command) -> clap::Command {
    let mut command = command.disable_help_subcommand(true);
    command.build();
    command
}

/// The subcommands with a page of their own.
fn page_commands(command: clap::Command) -> Vec<clap::Command> {
    built(command)
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect()
}

/// The binary's page, or its subcommand `name`'s (`<binary>-<name>`, the
/// page the binary's own page points at).
fn man_page(command: clap::Command, name: Option<&str>) -> Result<Vec<u8>, String> {
    let command = built(command);
    let page = match name {
        None => command,
        Some(name) => {
            let binary = command.get_name().to_string();
            let found = command
                .get_subcommands()
                .filter(|s| !s.is_hide_set())
                .find(|s| s.get_name() == name)
                .cloned();
            found.ok_or_else(|| {
                let names: Vec<&str> = command
                    .get_subcommands()
                    .filter(|s| !s.is_hide_set())
                    .map(|s| s.get_name())
                    .collect();
                format!(
                    "generate man {name:?}: {binary} has no such subcommand (accepted: {})",
                    names.join(", ")
                )
            })?
        }
    };
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = clap_mangen::Man::new(page).render(&mut out);
    Ok(out)
}

/// clap_complete's bash script for a binary named with `-` names each
/// subcommand's case two ways (`bin__name__subcmd__x` where it is chosen,
/// `bin__subcmd__name__subcmd__x` where its flags are listed), so no
/// subcommand's flags complete: the second spelling is made the first.
fn bash_names_agree(script: &str, binary: &str) -> String {
    const SEP: &str = "__subcmd__";
    let chosen = format!("{}{SEP}", binary.replace('-', "__"));
    let listed = format!("{}{SEP}", binary.replace('-', SEP));
    if chosen == listed {
        return script.to_string();
    }
    script.replace(&listed, &chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> clap::Command {
        clap::Command::new("my-tool")
            .about("A tool")
            .subcommand(clap::Command::new("run").arg(clap::Arg::new("fast").long("fast")))
    }

    #[test]
    fn each_kind_names_the_tool_and_its_subcommands() {
        let man = String::from_utf8(generate(Kind::Man, command())).unwrap();
        assert!(man.starts_with(".ie"), "{man}");
        assert!(man.contains("my\\-tool\\-run(1)"), "{man}");
        for kind in [Kind::CompleteBash, Kind::CompleteZsh, Kind::CompleteFish] {
            let text = String::from_utf8(generate(kind, command())).unwrap();
            assert!(text.contains("my-tool"), "{kind:?}: {text}");
            assert!(text.contains("run"), "{kind:?}: {text}");
            assert!(text.contains("fast"), "{kind:?}: {text}");
        }
    }

    #[test]
    fn each_subcommand_has_the_page_the_tools_page_names() {
        let pages = String::from_utf8(generate(Kind::ManPages, command())).unwrap();
        assert_eq!(pages, "run\n");
        let args = GenerateArgs {
            kind: Kind::Man,
            subcommand: Some("run".into()),
        };
        let page = String::from_utf8(run(&args, command()).unwrap()).unwrap();
        assert!(page.contains(".TH my-tool-run 1"), "{page}");
        assert!(page.contains("\\-\\-fast"), "{page}");
        let wrong = GenerateArgs {
            kind: Kind::Man,
            subcommand: Some("walk".into()),
        };
        let error = run(&wrong, command()).unwrap_err();
        assert!(
            error.contains("\"walk\"") && error.contains("accepted: run"),
            "{error}"
        );
    }

    #[test]
    fn bash_names_each_subcommand_one_way() {
        let script = String::from_utf8(generate(Kind::CompleteBash, command())).unwrap();
        assert!(script.contains("my__tool__subcmd__run)"), "{script}");
        assert!(!script.contains("my__subcmd__tool"), "{script}");
    }
}
