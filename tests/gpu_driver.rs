//! copctl's nvidia-smi parsing and the read-only GPU checks against a real NVIDIA driver, on the
//! machine the test runs on (scripts/gpu-driver-check.sh). Without COPCTL_REAL_GPU=1 the test
//! says it is skipped: CI's machines have no GPU, and the parsing has unit tests
//! (src/gpu/smi.rs) on nvidia-smi's documented output.

mod common;

use std::process::Command;

use common::*;

fn smi(args: &[&str]) -> String {
    let o = Command::new("nvidia-smi").args(args).output().expect("nvidia-smi runs");
    assert!(o.status.success(), "nvidia-smi {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn a_real_driver_is_read_as_copctl_reads_it() {
    if std::env::var_os("COPCTL_REAL_GPU").is_none() {
        eprintln!("skipped: COPCTL_REAL_GPU is not set (scripts/gpu-driver-check.sh sets it on a GPU machine)");
        return;
    }
    // `gpu check` reads what a pod sees with nvidia-smi -L: every GPU (or its MIG partitions)
    // with its UUID.
    let listed = copctl::gpu::smi::list(&smi(&["-L"])).expect("nvidia-smi -L is read");
    println!("nvidia-smi -L, as copctl reads it:");
    for l in &listed {
        println!("  {} {} {:?} {:?}", l.uuid, l.name, l.mig_profile, l.parent_uuid);
    }
    assert!(!listed.is_empty(), "the driver lists no device");
    // The same GPUs as the query interface names them.
    let fields = ["uuid", "name", "driver_version", "memory.total", "mig.mode.current"];
    let rows = copctl::gpu::smi::query(
        &fields,
        &smi(&["--query-gpu=uuid,name,driver_version,memory.total,mig.mode.current", "--format=csv,noheader"]),
    )
    .expect("the query rows are read");
    println!("nvidia-smi --query-gpu, as copctl reads it: {rows:?}");
    for row in &rows {
        let uuid = &row[0].1;
        let mig = row[4].1 == "Enabled";
        let whole = listed.iter().any(|l| &l.uuid == uuid);
        let parts = listed.iter().filter(|l| l.parent_uuid.as_ref() == Some(uuid)).count();
        assert!(
            whole != (mig && parts > 0),
            "{uuid}: listed whole {whole}, {parts} MIG partition(s), MIG mode {}",
            row[4].1
        );
        // gpu-install and gpu-driver-upgrade compare this with gpu_driver_version.
        let v = &row[2].1;
        assert!(v.split('.').all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())), "driver version {v:?}");
    }
    // The playbooks' own read of the driver version, through copctl's local transport.
    let s = Site::new();
    s.write("inventory.ini", "");
    let ran = s
        .test()
        .args(["exec", "localhost", "--", "nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1"])
        .run();
    assert!(ran.stdout.contains(&rows[0][2].1), "{}", ran.stdout);
    println!("{}", ran.stdout);
}
