//! Each command's examples, one table for both places a user reads them: the `Examples:` at the
//! end of `--help` and the EXAMPLES section of the command's man page.

/// `(command path, examples)`: each example a command line and what it does.
const EXAMPLES: &[(&str, &[(&str, &str)])] = &[
    (
        "copctl",
        &[
            ("copctl validate", "check the site (inventory, env.yaml, playbooks, templates); run nothing"),
            ("copctl install --check --diff", "what the first install would change"),
            ("copctl run rke2-install --limit cop-worker-3", "one playbook on one host"),
            ("copctl node add cop-worker-3", "the manual's node add, end to end"),
            ("copctl runs show", "what the last run did"),
        ],
    ),
    (
        "copctl inventory",
        &[("copctl inventory graph", "the group tree"), ("copctl inventory host cop-master-1", "one host's variables")],
    ),
    ("copctl inventory list", &[("copctl inventory list", "every group and host, as ansible-inventory --list")]),
    ("copctl inventory graph", &[("copctl inventory graph workers", "the tree under one group")]),
    ("copctl inventory host", &[("copctl inventory host cop-worker-1", "one host's variables, merged")]),
    (
        "copctl hosts",
        &[
            ("copctl hosts 'masters:&gpu'", "the servers that are also GPU nodes"),
            ("copctl hosts all --limit 'workers:!cop-worker-3'", "what a --limit leaves"),
        ],
    ),
    (
        "copctl plan",
        &[
            ("copctl plan rke2-install --limit cop-worker-3", "the tasks a run would execute"),
            ("copctl plan system-setup --output dot | dot -Tsvg > plan.svg", "the task graph as a picture"),
        ],
    ),
    (
        "copctl run",
        &[
            ("copctl run system-setup system-dns", "two playbooks, in order"),
            ("copctl run rke2-install --limit cop-worker-3", "one host (Ansible's --limit)"),
            ("copctl run rke2-upgrade --check --diff", "what would change, changing nothing"),
            ("copctl run system-setup --limit @.copctl/last-failed", "again, on the hosts that failed"),
            ("copctl run rolling-restart --output json > events.jsonl", "JSON events, one per line"),
        ],
    ),
    (
        "copctl node",
        &[("copctl node add cop-worker-3", "add a node"), ("copctl node drain cop-worker-1", "maintenance")],
    ),
    (
        "copctl node add",
        &[
            ("copctl node add cop-worker-3 --check", "what adding the node would change"),
            ("copctl node add cop-worker-3", "add it (re-run to resume after a failure)"),
        ],
    ),
    (
        "copctl node remove",
        &[
            ("copctl node remove cop-worker-3", "remove a node (asks first)"),
            ("copctl node remove cop-worker-3 --yes", "without asking"),
        ],
    ),
    (
        "copctl node drain",
        &[
            ("copctl node drain cop-worker-1", "cordon and drain for maintenance"),
            ("copctl node drain cop-worker-1 -e drain_timeout=900", "with a longer drain timeout"),
        ],
    ),
    ("copctl node cordon", &[("copctl node cordon cop-worker-1", "no new pods on the node; its pods stay")]),
    ("copctl node uncordon", &[("copctl node uncordon cop-worker-1", "schedulable again after maintenance")]),
    (
        "copctl gpu",
        &[
            ("copctl gpu lint manifests/", "check GPU workload manifests offline"),
            ("copctl gpu status", "the cluster's GPUs: devices, claims, what holds what"),
            ("copctl gpu check", "prove a claim is allocated and shared, on every GPU node"),
        ],
    ),
    (
        "copctl gpu status",
        &[
            ("copctl gpu status", "device classes, each node's devices, claims and their consumers"),
            ("copctl gpu status --output json", "the same, for tools"),
        ],
    ),
    (
        "copctl gpu check",
        &[
            ("copctl gpu check", "after an install or a driver upgrade, on every GPU node"),
            ("copctl gpu check --limit cop-gpu-3", "on one node (node add)"),
            ("copctl gpu check -e gpu_check_image=registry.example.com/cuda:12.9-base --timeout 120", "another image"),
        ],
    ),
    (
        "copctl gpu lint",
        &[
            ("copctl gpu lint manifests/", "every *.yaml and *.yml below the directory"),
            ("kubectl get pods -o yaml | copctl gpu lint -", "manifests from standard input"),
            ("copctl gpu lint job.yaml --device-class a100.nvidia.com", "with a device class of the cluster's"),
        ],
    ),
    (
        "copctl install",
        &[
            ("copctl install --check --diff", "what the first install would change"),
            ("copctl install", "the first install"),
            ("copctl install --from rke2-install", "resume from the playbook that failed"),
        ],
    ),
    (
        "copctl runs",
        &[("copctl runs", "the last ten runs"), ("copctl runs --prune 20", "keep the newest twenty records")],
    ),
    (
        "copctl runs show",
        &[
            ("copctl runs show", "what the last run did, failures first"),
            (
                "copctl runs show 20261207-0930 --host cop-worker-3 --failed",
                "one host's failures in the run that began then",
            ),
        ],
    ),
    ("copctl runs report", &[("copctl runs report -o last-run.html", "the last run as one HTML file")]),
    (
        "copctl validate",
        &[
            ("copctl validate", "every playbook, on the whole site"),
            ("copctl validate rke2-install --limit cop-worker-3", "one playbook, for one host"),
        ],
    ),
    ("copctl playbooks", &[("copctl playbooks", "the built-in playbooks and the site's own")]),
    (
        "copctl exec",
        &[
            ("copctl exec all -- uptime", "one command on every host"),
            ("copctl exec gpu -b -- nvidia-smi -L", "as root, on the GPU nodes"),
        ],
    ),
    (
        "copctl ssh-copy-id",
        &[
            ("copctl ssh-copy-id cop-worker-3", "install this machine's key on one host"),
            ("copctl ssh-copy-id --all", "on every host the key cannot reach yet"),
        ],
    ),
    ("copctl completions", &[("source <(copctl completions bash)", "complete copctl in this bash")]),
    (
        "copctl man",
        &[
            ("copctl man | man -l -", "this page"),
            ("copctl man run | man -l -", "one command's page"),
            ("copctl man --dir /usr/local/share/man/man1", "every page, as files"),
        ],
    ),
    (
        "copctl config",
        &[("copctl config", "each Ansible setting and its origin"), ("copctl config --only-changed", "what is set")],
    ),
    ("copctl vault", &[("copctl vault encrypt group_vars/all/vault.yml", "encrypt a file in place, as ansible-vault")]),
    ("copctl vault encrypt", &[("copctl vault encrypt group_vars/all/vault.yml", "encrypt in place")]),
    ("copctl vault decrypt", &[("copctl vault decrypt vault.yml --output -", "decrypted, to standard output")]),
    ("copctl vault view", &[("copctl vault view group_vars/all/vault.yml", "show it decrypted")]),
    (
        "copctl vault encrypt_string",
        &[("copctl vault encrypt_string --name registry_password", "a !vault value for env.yaml (from stdin)")],
    ),
];

/// The examples of the command at `path` ("copctl node add"); every command has some
/// (tests/shell.rs walks them all).
pub fn of(path: &str) -> &'static [(&'static str, &'static str)] {
    EXAMPLES.iter().find(|(p, _)| *p == path).map_or(&[], |(_, e)| e)
}

/// The `Examples:` section of `--help`, commands aligned and their comments after them.
pub fn help(path: &str) -> String {
    let examples = of(path);
    let width = examples.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    let mut s = String::from("Examples:");
    for (c, what) in examples {
        s.push_str(&format!("\n  {c:width$}  # {what}"));
    }
    s
}
