//! Lab hosts that look like another operating system (Rocky/RHEL, Ubuntu, Debian): the family's
//! test doubles put on the host and `lab-os` run there, which writes /etc/os-release and leaves
//! what a fresh install of it has (tests/doubles/lab-os). The lab's own hosts are Debian 12.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::Lab;

/// The doubles of the RHEL family's tools (and Ubuntu's ufw), besides the common ones.
pub const OS_DOUBLES: &[&str] = &["dnf", "rpm", "firewall-cmd", "getenforce", "dracut", "ufw", "lab-os"];

impl Lab {
    /// Makes host `i` look like `id` (os-release's ID: rocky, rhel, ubuntu, debian, anything)
    /// at `version` (VERSION_ID). Run after `install_doubles`: lab-os removes the tools the
    /// family does not have.
    pub fn set_os(&self, i: usize, id: &str, version: &str) {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/doubles");
        let dir = self.path(i, "/usr/local/sbin");
        fs::create_dir_all(&dir).unwrap();
        for n in OS_DOUBLES {
            let to = dir.join(n);
            fs::copy(src.join(n), &to).unwrap();
            fs::set_permissions(&to, fs::Permissions::from_mode(0o755)).unwrap();
        }
        self.sh(i, &format!("/usr/local/sbin/lab-os '{id}' '{version}'"));
    }
}
