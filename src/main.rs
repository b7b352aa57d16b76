use std::io::IsTerminal;

use clap::Parser;

fn main() {
    let tty = std::io::stderr().is_terminal();
    let _ = miette::set_hook(Box::new(move |_| {
        // Off a terminal (logs, CI, tests) lines are not wrapped, so each message stays greppable.
        let opts = miette::MietteHandlerOpts::new().terminal_links(false);
        let opts = if tty { opts } else { opts.wrap_lines(false) };
        Box::new(opts.unicode(tty).color(tty && std::env::var_os("NO_COLOR").is_none()).build())
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
