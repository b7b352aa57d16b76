//! `copy` compares a host's file with its source without bringing it back (issue 16): a file of
//! another size differs unread, one of the same size is hashed on the host; the source is read
//! once per run and streamed. What must hold, on lab hosts: changed and ok are told right when
//! only the content, only the mode or only the size differs, for a small source (kept in memory,
//! sent inside a script), a streamed one and one hashed with OpenSSL; a source edited between
//! runs is copied again; through the script path (owner names asked); and a secret source is
//! never printed. A large file seen unchanged is known from its identity on the host the next
//! time (`.copctl/content`), and any write to it, size and mtime kept, is still seen.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use common::*;

/// Source sizes: inline text (under 64 KiB), streamed (over 64 KiB), hashed by OpenSSL first
/// (over 2 MiB).
const SIZES: [(&str, usize); 3] = [("small", 1000), ("medium", 300 << 10), ("large", 3 << 20)];

/// Bytes of `len` that differ with `seed`; printable, so a small one is text.
fn bytes(len: usize, seed: u8) -> Vec<u8> {
    let mut x: u32 = 0x1234_5678 ^ u32::from(seed);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            b'a' + (x % 26) as u8
        })
        .collect()
}

const PLAYBOOK: &str = r#"description: copies of every size
plays:
  - name: copies
    hosts: lab
    steps:
      - name: small
        copy: { src: files/small, dest: /opt/small, mode: "0644" }
      - name: medium
        copy: { src: files/medium, dest: /opt/medium, mode: "0644" }
      - name: large
        copy: { src: files/large, dest: /opt/large, mode: "0644" }
"#;

const OWNED: &str = r#"description: copies with an owner (stat by script)
plays:
  - name: owned
    hosts: lab
    steps:
      - name: small
        copy: { src: files/small, dest: /opt/small, mode: "0640", owner: root, group: root }
      - name: large
        copy: { src: files/large, dest: /opt/large, mode: "0640", owner: root }
"#;

/// A site on `n` hosts with the three sources and the playbook.
fn site(n: usize) -> Site {
    let site = Site::hosts(n);
    for (i, (name, len)) in SIZES.iter().enumerate() {
        site.write(&format!("files/{name}"), bytes(*len, i as u8));
    }
    site.write("playbooks/copies.yaml", PLAYBOOK);
    site.write("playbooks/owned.yaml", OWNED);
    site
}

/// The source `files/NAME` as it is now.
fn source(site: &Site, name: &str) -> Vec<u8> {
    std::fs::read(site.path(&format!("files/{name}"))).unwrap()
}

/// host → step → status, from a JSON run.
fn statuses(ran: &Ran) -> Vec<(String, String, String)> {
    ran.events()
        .iter()
        .filter(|e| e["event"] == "task_end")
        .map(|e| {
            (e["host"].as_str().unwrap().to_string(), e["step"].as_str().unwrap().to_string(), e["status"].to_string())
        })
        .collect()
}

fn status_of(ran: &Ran, host: &str, step: &str) -> String {
    statuses(ran)
        .into_iter()
        .find(|(h, s, _)| h == host && s == step)
        .unwrap_or_else(|| panic!("no task_end for {host} {step}: {:?}", statuses(ran)))
        .2
        .trim_matches('"')
        .to_string()
}

fn all_ok(ran: &Ran) {
    for (h, s, st) in statuses(ran) {
        assert_eq!(st, "\"ok\"", "{h} {s} should be ok");
    }
}

#[test]
fn only_content_only_mode_only_size_each_detected_for_every_source_size() {
    let site = site(2);
    let lab = site.lab();
    let ran = site.run_json(&["copies"], 0);
    for (h, s, st) in statuses(&ran) {
        assert_eq!(st, "\"changed\"", "{h} {s} is new");
    }
    for (name, _) in SIZES {
        assert_eq!(std::fs::read(lab.path(0, &format!("/opt/{name}"))).unwrap(), source(&site, name));
    }
    all_ok(&site.run_json(&["copies"], 0));

    // On host 1 (lab-1): small's content (same size), medium's mode, large's size. Host 2 untouched.
    let small = lab.path(0, "/opt/small");
    let mut b = std::fs::read(&small).unwrap();
    b[500] = if b[500] == b'z' { b'y' } else { b'z' };
    std::fs::write(&small, &b).unwrap();
    let medium = lab.path(0, "/opt/medium");
    std::fs::set_permissions(&medium, std::fs::Permissions::from_mode(0o600)).unwrap();
    let medium_ino = std::fs::metadata(&medium).unwrap().ino();
    let large = lab.path(0, "/opt/large");
    let mut b = std::fs::read(&large).unwrap();
    b.push(b'\n');
    std::fs::write(&large, &b).unwrap();

    let ran = site.run_json(&["copies"], 0);
    for step in ["small", "medium", "large"] {
        assert_eq!(status_of(&ran, "lab-1", step), "changed", "lab-1 {step}");
        assert_eq!(status_of(&ran, "lab-2", step), "ok", "lab-2 {step}");
    }
    for (name, _) in SIZES {
        let p = lab.path(0, &format!("/opt/{name}"));
        assert_eq!(std::fs::read(&p).unwrap(), source(&site, name), "{name} restored");
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777, 0o644, "{name} mode");
    }
    // A mode-only difference is a chmod, not a new copy of the file.
    assert_eq!(std::fs::metadata(&medium).unwrap().ino(), medium_ino, "medium was rewritten for its mode");
    all_ok(&site.run_json(&["copies"], 0));
}

#[test]
fn a_source_edited_between_runs_is_copied_again() {
    let site = site(1);
    let lab = site.lab();
    site.run_json(&["copies"], 0);
    // Same sizes, new content: only a hash can tell.
    for (i, (name, len)) in SIZES.iter().enumerate() {
        site.write(&format!("files/{name}"), bytes(*len, 10 + i as u8));
    }
    let ran = site.run_json(&["copies"], 0);
    for (name, _) in SIZES {
        assert_eq!(status_of(&ran, "lab-1", name), "changed", "{name}");
        assert_eq!(
            std::fs::read(lab.path(0, &format!("/opt/{name}"))).unwrap(),
            source(&site, name),
            "{name} has the new content"
        );
    }
    all_ok(&site.run_json(&["copies"], 0));
}

#[test]
fn the_script_path_with_owner_names_compares_the_same_way() {
    let site = site(1);
    let lab = site.lab();
    let ran = site.run_json(&["owned"], 0);
    assert_eq!(status_of(&ran, "lab-1", "small"), "changed");
    assert_eq!(status_of(&ran, "lab-1", "large"), "changed");
    all_ok(&site.run_json(&["owned"], 0));
    // Content only (same size) on one, size only on the other.
    lab.sh(0, "printf X | dd of=/opt/small bs=1 seek=10 conv=notrunc status=none; echo >> /opt/large");
    let ran = site.run_json(&["owned"], 0);
    assert_eq!(status_of(&ran, "lab-1", "small"), "changed");
    assert_eq!(status_of(&ran, "lab-1", "large"), "changed");
    assert_eq!(std::fs::read(lab.path(0, "/opt/small")).unwrap(), source(&site, "small"));
    assert_eq!(std::fs::read(lab.path(0, "/opt/large")).unwrap(), source(&site, "large"));
    all_ok(&site.run_json(&["owned"], 0));
}

#[test]
fn the_sftp_hash_agrees_with_the_shell_hash() {
    let site = site(1);
    site.run_json(&["copies"], 0);
    let ran = site.test().args(["run", "copies", "--output", "json"]).env_var("COPCTL_REMOTE_HASH", "sftp").run();
    all_ok(&ran);
}

#[test]
fn a_secret_source_is_never_printed() {
    let site = Site::hosts(1);
    let lab = site.lab();
    let secret = "pw=Tr0ub4dor-and-3";
    site.write("files/credentials", format!("user=admin\n{secret}\n"));
    std::fs::set_permissions(site.path("files/credentials"), std::fs::Permissions::from_mode(0o600)).unwrap();
    site.write("env.yaml", format!("db_password: \"{secret}\"\n"));
    site.write(
        "playbooks/secret-copy.yaml",
        r#"description: a private source, and content from a secret variable, both to readable files
plays:
  - name: secret
    hosts: lab
    steps:
      - name: private source
        copy: { src: files/credentials, dest: /opt/credentials, mode: "0644" }
      - name: secret content
        copy: { content: "{{ db_password }}\n", dest: /opt/db.conf, mode: "0644" }
"#,
    );
    let check = |args: &[&str]| {
        let o = site.test().args(["run", "secret-copy", "-v"]).args(args.iter().copied()).run();
        assert!(
            !o.stdout.contains(secret) && !o.stderr.contains(secret),
            "{args:?} printed the secret:\n{}{}",
            o.stdout,
            o.stderr
        );
        let json = site.test().args(["run", "secret-copy", "--output", "json"]).args(args.iter().copied()).run();
        assert!(!json.stdout.contains(secret), "{args:?} put the secret in an event");
    };
    check(&["--diff", "--check"]);
    check(&["--diff"]);
    assert!(std::fs::read_to_string(lab.path(0, "/opt/credentials")).unwrap().contains(secret));
    // Changed again (same size, on the host), then shown with --diff: still a notice.
    lab.sh(0, "sed -i s/admin/nimda/ /opt/credentials /opt/db.conf; echo x > /opt/db.conf");
    check(&["--diff"]);
    for (path, text) in files_under(&site.path(".copctl")) {
        assert!(!text.contains(secret), "secret in {}", path.display());
    }
}

/// The record of what a host's large files hold (`.copctl/content/<host>`): path → sha1.
fn recorded(site: &Site, host: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(site.path(&format!(".copctl/content/{host}"))).unwrap_or_default();
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.splitn(3, ' ').collect();
            (f[2].to_string(), f[0].to_string())
        })
        .collect()
}

/// Writes `X` into the 11th byte of `path` on host 0 and puts its mtime back: same size, same
/// mtime, new content (what rsync's quick check would miss; the ctime still moves).
fn rewrite_in_place(lab: &lab::Lab, path: &str) {
    lab.sh(
        0,
        &format!(
            "m=$(stat -c %.9Y {path}); printf X | dd of={path} bs=1 seek=10 conv=notrunc status=none; \
             touch -m -d \"@$m\" {path}; [ \"$(stat -c %.9Y {path})\" = \"$m\" ]"
        ),
    );
}

fn the_run_after_a_settled_one_knows_large_files_from_the_record(playbook: &str) {
    let site = site(1);
    let lab = site.lab();
    site.run_json(&[playbook], 0);
    // A file's identity stands for its content once its times are 3 s behind the host's clock
    // (and copctl takes it once the file is over 3 s old by the bastion's whole seconds).
    std::thread::sleep(std::time::Duration::from_millis(4200));
    all_ok(&site.run_json(&[playbook], 0));
    let sha1 = |name: &str| {
        use sha1::Digest;
        hex::encode(sha1::Sha1::digest(source(&site, name)))
    };
    let mut want = vec![("/opt/large".to_string(), sha1("large"))];
    if playbook == "copies" {
        want.insert(1, ("/opt/medium".to_string(), sha1("medium")));
    }
    assert_eq!(recorded(&site, "lab-1"), want, "large files are recorded, small ones (hashed over SFTP) not");

    // The next run takes the record's word for content whose identity did not move: a record
    // that says other content makes the run write the file again.
    let record = site.path(".copctl/content/lab-1");
    let text = std::fs::read_to_string(&record).unwrap();
    std::fs::write(&record, text.replace(&sha1("large"), &"0".repeat(40))).unwrap();
    let ran = site.run_json(&[playbook], 0);
    assert_eq!(status_of(&ran, "lab-1", "large"), "changed", "the record was read");
    assert_eq!(status_of(&ran, "lab-1", "small"), "ok");

    // Any write changes the file's identity (its ctime), size and mtime kept or not.
    std::thread::sleep(std::time::Duration::from_millis(4200));
    all_ok(&site.run_json(&[playbook], 0));
    rewrite_in_place(lab, "/opt/large");
    let ran = site.run_json(&[playbook], 0);
    assert_eq!(status_of(&ran, "lab-1", "large"), "changed", "a same-size, same-mtime write is seen");
    assert_eq!(std::fs::read(lab.path(0, "/opt/large")).unwrap(), source(&site, "large"));
    all_ok(&site.run_json(&[playbook], 0));
}

#[test]
fn a_large_file_seen_unchanged_is_known_from_the_record_until_anything_writes_it() {
    the_run_after_a_settled_one_knows_large_files_from_the_record("copies");
}

#[test]
fn the_script_path_keeps_and_checks_the_record_the_same_way() {
    // Owner names make the comparison one script (as with become), not SFTP and a hash.
    the_run_after_a_settled_one_knows_large_files_from_the_record("owned");
}

/// Sizes around 32 KiB, where a read over SFTP stops asking once `lstat`'s size came back in one
/// short read (below it) or reads on to the end (from it).
const AROUND_32K: [usize; 5] = [1, 32767, 32768, 32769, 100_000];

#[test]
fn files_read_over_sftp_come_back_whole_on_both_sides_of_32k() {
    let site = Site::hosts(1);
    let lab = site.lab();
    let mut steps = String::new();
    for n in AROUND_32K {
        // One line of n - 1 bytes and its newline; the copy's content differs in its last byte only.
        lab.sh(0, &format!("head -c {} /dev/zero | tr '\\0' a > /opt/r{n}; echo >> /opt/r{n}", n - 1));
        site.write(&format!("files/c{n}"), format!("{}b", "a".repeat(n - 1)));
        steps.push_str(&format!(
            "      - name: line {n}\n        line: {{ path: /opt/r{n}, line: added }}\n\
             \x20     - name: read {n}\n        slurp: {{ path: /opt/r{n} }}\n        register: r{n}\n\
             \x20     - name: whole {n}\n        assert: {{ that: [\"(r{n}.content | length) == {}\"] }}\n\
             \x20     - name: copy {n}\n        copy: {{ src: files/c{n}, dest: /opt/c{n} }}\n",
            n + "added\n".len()
        ));
    }
    site.write(
        "playbooks/reads.yaml",
        format!("description: reads of every size\nplays:\n  - name: reads\n    hosts: lab\n    steps:\n{steps}"),
    );
    for n in AROUND_32K {
        lab.sh(0, &format!("cp /opt/r{n} /opt/c{n}"));
    }
    let ran = site.run_json(&["reads"], 0);
    for n in AROUND_32K {
        let want = format!("{}\nadded\n", "a".repeat(n - 1));
        assert_eq!(std::fs::read_to_string(lab.path(0, &format!("/opt/r{n}"))).unwrap(), want, "line kept all of r{n}");
        assert_eq!(status_of(&ran, "lab-1", &format!("whole {n}")), "ok", "slurp read all of r{n}");
        // Same size, last byte other: only a hash of the whole file tells.
        assert_eq!(status_of(&ran, "lab-1", &format!("copy {n}")), "changed", "c{n} differs in its last byte");
        assert_eq!(std::fs::read(lab.path(0, &format!("/opt/c{n}"))).unwrap(), source(&site, &format!("c{n}")));
    }
    all_ok(&site.run_json(&["reads"], 0));
}
