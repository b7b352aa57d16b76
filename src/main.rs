use std::io::IsTerminal;

use clap::Parser;

fn main() {
    let tty = std::io::stderr().is_terminal();
    let _ = miette::set_hook(Box::new(move |_| {
        Box::new(
            miette::MietteHandlerOpts::new()
                .terminal_links(false)
                .unicode(tty)
                .color(tty && std::env::var_os("NO_COLOR").is_none())
                .build(),
        )
    }));
    let cli = copctl::cli::Cli::parse();
    match copctl::cli::run(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("{:?}", miette::Report::new(e));
            std::process::exit(1);
        }
    }
}
