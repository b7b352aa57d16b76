//! Help as users expect it (issue 40, items 5 and 6): options grouped, an `Examples:` section on
//! every command, the options several commands share accepted before the command too, one name
//! for the output format, a man page per command with EXIT STATUS, ENVIRONMENT, FILES and
//! EXAMPLES, ansible.cfg's log_path as the log, and the JSON events' schema version.

mod common;

use clap::CommandFactory;
use common::*;

/// Every command a user can type, as its path (`copctl node add`), copctl's own first.
fn command_paths() -> Vec<String> {
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        out.push(path.to_string());
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            walk(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }
    let mut out = Vec::new();
    walk(&copctl::cli::args::Cli::command(), "copctl", &mut out);
    out
}

#[test]
fn every_command_has_examples_in_its_help_and_its_man_page() {
    let paths = command_paths();
    assert!(paths.len() >= 30, "{paths:?}");
    for path in paths {
        let words: Vec<&str> = path.split(' ').skip(1).collect();
        let help = Test::new().args(words.iter().copied().chain(["--help"])).stderr("").run().stdout;
        let examples =
            help.split("\nExamples:\n").nth(1).unwrap_or_else(|| panic!("`{path} --help` has no Examples:\n{help}"));
        let first = examples.lines().next().unwrap();
        assert!(first.starts_with("  ") && first.contains("  # "), "`{path} --help`: {first}");
        let page = Test::new().arg("man").args(words.iter().copied()).stderr("").run().stdout;
        for section in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH FILES", ".SH EXAMPLES"] {
            assert!(page.contains(section), "`copctl man {}` has no {section}", words.join(" "));
        }
        let title = format!(".TH {} 1", path.replace(' ', "-"));
        assert!(page.contains(&title), "`copctl man {}`: no {title}", words.join(" "));
    }
}

#[test]
fn the_global_options_come_in_groups() {
    let help = Test::new().args(["run", "--help"]).stderr("").run().stdout;
    let at = |heading: &str| help.find(&format!("\n{heading}:\n")).unwrap_or_else(|| panic!("no {heading}:\n{help}"));
    let groups = [
        ("Options", "--check"),
        ("Site", "--inventory"),
        ("General", "--forks"),
        ("Connection", "--private-key"),
        ("Privilege escalation", "--become-user"),
        ("Vault", "--vault-id"),
        ("Examples", "copctl run"),
    ];
    for pair in groups.windows(2) {
        let ((a, first), (b, _)) = (pair[0], pair[1]);
        assert!(at(a) < at(b), "{a} before {b}:\n{help}");
        let option = help[at(a)..].find(first).map(|i| i + at(a)).unwrap();
        assert!(option < at(b), "{first} is under {a}:\n{help}");
    }
}

#[test]
fn the_options_commands_share_are_taken_before_the_command_too() {
    let after =
        Test::repo().args(["plan", "rke2-install", "--limit", "cop-worker-3", "-e", "x=1", "--output", "json"]).run();
    let before =
        Test::repo().args(["-e", "x=1", "--limit", "cop-worker-3", "--output", "json", "plan", "rke2-install"]).run();
    assert_eq!(before.stdout, after.stdout);
    assert!(after.json()["tasks"].as_array().is_some_and(|t| !t.is_empty()), "{}", after.stdout);
    // `--format` is the same as `--output`, before or after.
    let alias = Test::repo().args(["plan", "rke2-install", "--limit", "cop-worker-3", "--format", "json"]).run();
    assert_eq!(alias.stdout, after.stdout);
    // -e before the command comes first, so the command's own wins, as two -e after it do.
    let site = Site::new();
    site.write("inventory.ini", "[local]\nhere ansible_connection=local\n").write(
        "playbooks/p.yaml",
        "plays:\n  - name: p\n    hosts: all\n    steps:\n      - name: say\n        debug: { msg: \"x={{ x }}\" }\n",
    );
    let ran = Test::on(&site).args(["-e", "x=before", "run", "p", "-e", "x=after", "--output", "json"]).run();
    let ends: Vec<_> = ran.events().into_iter().filter(|e| e["event"] == "task_end").collect();
    assert_eq!(ends[0]["msg"], "x=after", "{}", ran.stdout);
}

#[test]
fn an_option_before_a_command_that_does_not_take_it_is_refused() {
    Test::repo()
        .args(["-e", "x=1", "vault", "view", "f.yml"])
        .status(1)
        .stdout("")
        .stderr(
            "  x -e/--extra-vars is given before `copctl vault view`, which takes no -e/--extra-vars\n  help: leave it out (`copctl vault view --help` lists what it takes)\n\n",
        )
        .run();
    Test::repo()
        .args(["--limit", "cop-worker-3", "playbooks"])
        .status(1)
        .stdout("")
        .stderr(
            "  x --limit is given before `copctl playbooks`, which takes no --limit\n  help: leave it out (`copctl playbooks --help` lists what it takes)\n\n",
        )
        .run();
    Test::repo()
        .args(["--check", "node", "drain", "cop-worker-1"])
        .status(1)
        .stdout("")
        .stderr(
            "  x --check is given before `copctl node drain`, which takes no --check\n  help: leave it out (`copctl node drain --help` lists what it takes)\n\n",
        )
        .run();
    Test::repo()
        .args(["--output", "yaml", "plan", "system-setup"])
        .status(1)
        .stdout("")
        .stderr("  x invalid value 'yaml' for --output before `copctl plan`\n  help: one of: text, dot, json\n\n")
        .run();
    Test::repo()
        .args(["--output", "json", "plan", "system-setup", "--output", "text"])
        .status(1)
        .stdout("")
        .stderr(
            "  x --output is given twice, 'json' before `copctl plan` and 'text' after it\n  help: give --output once\n\n",
        )
        .run();
    Test::repo()
        .args(["--limit", "cop-worker-1", "plan", "system-setup", "--limit", "cop-worker-2"])
        .status(1)
        .stdout("")
        .stderr(
            "  x --limit is given twice, 'cop-worker-1' before `copctl plan` and 'cop-worker-2' after it\n  help: give --limit once\n\n",
        )
        .run();
}

#[test]
fn man_writes_every_commands_page_and_names_a_command_it_does_not_have() {
    let site = Site::new();
    let ran = Test::on(&site).args(["man", "--dir", "man1"]).stderr("").run();
    let n = command_paths().len();
    assert_eq!(ran.stdout, format!("{n} man pages written to man1\n"));
    for path in command_paths() {
        let file = site.path(&format!("man1/{}.1", path.replace(' ', "-")));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(text.contains(".SH NAME"), "{}", file.display());
    }
    Test::new()
        .args(["man", "node", "ad"])
        .status(1)
        .stdout("")
        .stderr("  x `copctl node` has no command named 'ad'\n  help: did you mean add?\n\n")
        .run();
}

#[test]
fn ansible_cfg_log_path_is_the_log_and_the_events_carry_their_schema() {
    let site = Site::new();
    site.write("inventory.ini", "[local]\nhere ansible_connection=local\n")
        .write("ansible.cfg", "[defaults]\nlog_path = logs/copctl.log\n")
        .write(
            "playbooks/p.yaml",
            "plays:\n  - name: p\n    hosts: all\n    steps:\n      - name: say\n        debug: { msg: hello }\n",
        );
    std::fs::create_dir_all(site.path("logs")).unwrap();
    let ran = Test::on(&site).args(["run", "p", "--output", "json"]).run();
    let log = std::fs::read_to_string(site.path("logs/copctl.log")).expect("log_path is written");
    assert!(!log.is_empty(), "the log is empty");
    let first = &ran.events()[0];
    assert_eq!((first["event"].as_str(), first["schema"].as_u64()), (Some("run_start"), Some(1)), "{first}");
    // --log-file wins over log_path.
    Test::on(&site).args(["run", "p", "--log-file", "mine.log"]).run();
    assert!(std::fs::metadata(site.path("mine.log")).is_ok_and(|m| m.len() > 0));
}
