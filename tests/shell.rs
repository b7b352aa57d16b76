//! Shell conventions (issue 13 item 6): completion through a real bash, with the site's playbook,
//! host and group names; a man page made from the same definitions as `--help`; and help text on
//! every option and argument a user can type.

mod common;

use std::process::Command;

use clap::CommandFactory;
use common::*;

/// What bash offers after `line` (the last word being completed), with copctl's completion
/// script sourced as the README says.
fn bash_completes(site: &Site, words: &[&str]) -> Vec<String> {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_copctl")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let script = format!(
        "source <(copctl completions bash)\nCOMP_WORDS=({})\nCOMP_CWORD={}\nCOMP_TYPE=9\n\
         _clap_complete_copctl copctl '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        quoted.join(" "),
        words.len() - 1,
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let o = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(site.dir())
        .env("PATH", path)
        .env("COPCTL_INVENTORY", site.path("inventory.ini"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().lines().map(|l| l.trim_end().to_string()).filter(|l| !l.is_empty()).collect()
}

#[test]
fn bash_completes_the_sites_playbooks_hosts_and_groups() {
    let site = Site::new();
    site.write("inventory.ini", "[web]\nweb1\nweb2\n[db]\ndb1\n")
        .write("playbooks/webserver-setup.yaml", "plays: []\n");
    assert_eq!(bash_completes(&site, &["copctl", "run", "rol"]), ["rolling-reboot", "rolling-restart"]);
    assert_eq!(bash_completes(&site, &["copctl", "plan", "webs"]), ["webserver-setup"]);
    assert_eq!(bash_completes(&site, &["copctl", "run", "system-setup", "--limit", "we"]), ["web", "web1", "web2"]);
    assert_eq!(bash_completes(&site, &["copctl", "hosts", "web,!w"]), ["web,!web", "web,!web1", "web,!web2"]);
    assert_eq!(bash_completes(&site, &["copctl", "node", "add", "d"]), ["db", "db1"]);
    assert_eq!(bash_completes(&site, &["copctl", "comp"]), ["completions"]);
}

#[test]
fn the_man_page_is_made_from_the_command_line_definitions() {
    let ran = Test::new().arg("man").stderr("").run();
    assert!(ran.stdout.contains(".TH copctl 1  \"copctl "), "{}", &ran.stdout[..200.min(ran.stdout.len())]);
    let cmd = copctl::cli::args::Cli::command();
    for sub in cmd.get_subcommands() {
        let name = sub.get_name().replace('-', "\\-");
        assert!(ran.stdout.contains(&name), "the man page does not name `copctl {}`", sub.get_name());
    }
    for arg in cmd.get_arguments() {
        if let Some(long) = arg.get_long() {
            assert!(
                ran.stdout.contains(&format!("\\-\\-{}", long.replace('-', "\\-"))),
                "--{long} is not in the man page"
            );
        }
    }
}

#[test]
fn every_option_and_argument_says_what_it_does() {
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                missing.push(format!("{path} {id}"));
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }
    let mut missing = Vec::new();
    walk(&copctl::cli::args::Cli::command(), "copctl", &mut missing);
    assert_eq!(missing, Vec::<String>::new(), "options without help text");
}
