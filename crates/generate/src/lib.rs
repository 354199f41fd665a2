//! Shell completions and man pages for the project's binaries, from clap's own generators (`collbench generate …`, `collbench-analyze generate …`).
#![forbid(unsafe_code)]

/// What `generate` writes to stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// The man page (roff), for `man -l` or a `man1` folder.
    Man,
    /// Completions for bash.
    CompleteBash,
    /// Completions for zsh.
    CompleteZsh,
    /// Completions for fish.
    CompleteFish,
}

/// `generate`'s argument.
#[derive(Clone, Debug, clap::Args)]
pub struct GenerateArgs {
    /// man, complete-bash, complete-zsh or complete-fish
    #[arg(value_enum)]
    pub kind: Kind,
}

/// `kind` for the binary whose command line is `command`, as bytes for
/// stdout.
pub fn generate(kind: Kind, mut command: clap::Command) -> Vec<u8> {
    let mut out = Vec::new();
    let name = command.get_name().to_string();
    let shell = match kind {
        Kind::Man => {
            // Writing into a Vec cannot fail.
            let _ = clap_mangen::Man::new(command).render(&mut out);
            return out;
        }
        Kind::CompleteBash => clap_complete::Shell::Bash,
        Kind::CompleteZsh => clap_complete::Shell::Zsh,
        Kind::CompleteFish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut command, name, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> clap::Command {
        clap::Command::new("tool")
            .about("A tool")
            .subcommand(clap::Command::new("run").arg(clap::Arg::new("fast").long("fast")))
    }

    #[test]
    fn each_kind_names_the_tool_and_its_subcommands() {
        let man = String::from_utf8(generate(Kind::Man, command())).unwrap();
        assert!(man.starts_with(".ie"), "{man}");
        assert!(man.contains("tool") && man.contains("run"), "{man}");
        for kind in [Kind::CompleteBash, Kind::CompleteZsh, Kind::CompleteFish] {
            let text = String::from_utf8(generate(kind, command())).unwrap();
            assert!(text.contains("tool"), "{kind:?}: {text}");
            assert!(text.contains("run"), "{kind:?}: {text}");
            assert!(text.contains("fast"), "{kind:?}: {text}");
        }
    }
}
