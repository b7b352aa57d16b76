//! Transport benchmark on a lab host (needs root): copctl's upload of a 1 GiB file against
//! `scp`, and 1000 sequential `true` commands against `ssh` with ControlMaster. Prints the
//! figures and the ratios; `cargo bench --bench transport [-- --quick]`.

#[path = "../tests/lab/mod.rs"]
mod lab;

use std::process::Command;
use std::time::{Duration, Instant};

use copctl::transport::*;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (size_mib, runs, commands) = if quick { (64u64, 1, 100) } else { (1024u64, 5, 1000) };
    let lab = lab::Lab::start(1, lab::LabOptions::default());
    let host = lab.hosts[0].addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("payload.bin");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&src).unwrap();
        let mut x: u64 = 0x2545F4914F6CDD1D;
        let mut buf = vec![0u8; 1 << 20];
        for _ in 0..size_mib {
            for c in buf.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                c.copy_from_slice(&x.to_le_bytes());
            }
            f.write_all(&buf).unwrap();
        }
    }
    let ssh_opts = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec![
            "-F".into(),
            "/dev/null".into(),
            "-i".into(),
            lab.client_key.display().to_string(),
            "-o".into(),
            format!("UserKnownHostsFile={}", lab.known_hosts.display()),
            "-o".into(),
            "BatchMode=yes".into(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let inv = copctl::inventory::Inventory::load(&lab.inventory).unwrap();
    let spec = HostSpec::from_inventory(&inv, "lab-1", &SshConfigFile::default());
    let pool =
        Pool::new(vec![spec], SshOptions::new(KnownHosts::new(lab.known_hosts.clone(), HostKeyPolicy::Strict)), 4);
    let rt = copctl::runtime().unwrap();
    let conn = rt.block_on(pool.get("lab-1")).unwrap();

    // Upload: copctl (stream + sha256 verify + atomic rename) vs scp (plain copy).
    let mut ours = vec![];
    let mut theirs = vec![];
    // Each run starts from the same state: no earlier copy to replace, no dirty pages of the
    // previous run still being written back.
    let settle = || {
        let _ = std::fs::remove_file(lab.path(0, "/var/tmp/copctl.bin"));
        let _ = std::fs::remove_file(lab.path(0, "/var/tmp/scp.bin"));
        let _ = Command::new("sync").status();
    };
    // One untimed round each: the first write on a fresh host pays for cold caches.
    rt.block_on(conn.put(PutSource::File(src.clone()), "/var/tmp/copctl.bin", 0o644)).unwrap();
    let _ = Command::new("scp").args(ssh_opts(&["-q"])).arg(&src).arg(format!("root@{host}:/var/tmp/scp.bin")).status();
    for _ in 0..runs {
        settle();
        let t = Instant::now();
        rt.block_on(conn.put(PutSource::File(src.clone()), "/var/tmp/copctl.bin", 0o644)).unwrap();
        ours.push(t.elapsed());
        settle();
        let t = Instant::now();
        let st = Command::new("scp")
            .args(ssh_opts(&["-q"]))
            .arg(&src)
            .arg(format!("root@{host}:/var/tmp/scp.bin"))
            .status()
            .unwrap();
        assert!(st.success());
        theirs.push(t.elapsed());
    }
    let fmt = |v: &[Duration]| v.iter().map(|d| format!("{:.2}", d.as_secs_f64())).collect::<Vec<_>>().join(" ");
    println!("upload runs (s): copctl [{}], scp [{}]", fmt(&ours), fmt(&theirs));
    let (o, s) = (median(ours), median(theirs));
    let mib = size_mib as f64;
    println!(
        "upload {size_mib} MiB: copctl {:.2}s ({:.0} MiB/s), scp {:.2}s ({:.0} MiB/s); throughput ratio copctl/scp = {:.2}",
        o.as_secs_f64(),
        mib / o.as_secs_f64(),
        s.as_secs_f64(),
        mib / s.as_secs_f64(),
        s.as_secs_f64() / o.as_secs_f64()
    );

    // Exec latency: N sequential `true` on one connection vs ssh with a ControlMaster.
    let t = Instant::now();
    rt.block_on(async {
        for _ in 0..commands {
            let out = conn
                .exec(ExecRequest { command: "true", stdin: None, timeout: Duration::from_secs(30) })
                .await
                .unwrap();
            assert!(out.success());
        }
    });
    let ours = t.elapsed();
    let ctl = dir.path().join("ctl");
    let master = ssh_opts(&[
        "-o",
        "ControlMaster=auto",
        "-o",
        &format!("ControlPath={}", ctl.display()),
        "-o",
        "ControlPersist=60",
    ]);
    let st = Command::new("ssh").args(&master).arg(format!("root@{host}")).arg("true").status().unwrap();
    assert!(st.success());
    let t = Instant::now();
    for _ in 0..commands {
        let st = Command::new("ssh").args(&master).arg(format!("root@{host}")).arg("true").status().unwrap();
        assert!(st.success());
    }
    let theirs = t.elapsed();
    let _ = Command::new("ssh").args(&master).args(["-O", "exit"]).arg(format!("root@{host}")).output();
    println!(
        "exec {commands}x true: copctl {:.2}s ({:.2} ms each), ssh+ControlMaster {:.2}s ({:.2} ms each); speed ratio = {:.2}",
        ours.as_secs_f64(),
        ours.as_secs_f64() * 1000.0 / commands as f64,
        theirs.as_secs_f64(),
        theirs.as_secs_f64() * 1000.0 / commands as f64,
        theirs.as_secs_f64() / ours.as_secs_f64()
    );
    rt.block_on(pool.close());
}
