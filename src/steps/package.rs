//! `package`: packages present, absent or at their repositories' latest version through the
//! host's own manager (apt, dnf or zypper, detected on the host). `from: DIR` installs package
//! files already on the host (air-gapped sites) instead of asking a repository. `latest`
//! installs what is missing and upgrades what the manager's lists offer a newer version of
//! (apt-cache policy's candidate, `dnf list --upgrades`, `zypper list-updates`), as Ansible's
//! package modules decide it; it does not refresh the lists.

use serde::{Deserialize, Serialize};

use super::{Guards, Kind, OneOrMany, Outcome, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PackageArgs {
    pub name: OneOrMany<String>,
    #[serde(default)]
    pub state: PackageState,
    /// A directory on the host holding package files, for air-gapped installs.
    pub from: Option<String>,
}

/// `state:` of packages.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Default)]
#[serde(rename_all = "lowercase")]
pub enum PackageState {
    #[default]
    Present,
    Absent,
    Latest,
}

impl Kind for PackageArgs {
    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        let names: Vec<String> = a.name.to_vec();
        let list = names.iter().map(|n| shell_quote(n)).collect::<Vec<_>>().join(" ");
        let from = a.from.as_deref().map(shell_quote).unwrap_or_default();
        let want_present = a.state != PackageState::Absent;
        let latest = a.state == PackageState::Latest;
        let s = format!(
            "CHECK={check}; WANT={want}; LATEST={latest}; FROM={from}\n\
             if command -v apt-get >/dev/null; then is_in() {{ dpkg-query -W -f='${{Status}}' \"$1\" 2>/dev/null | grep -q 'install ok installed'; }}\n\
               inst() {{ if [ -n \"$FROM\" ]; then for p in \"$@\"; do set -- \"$@\" \"$FROM\"/\"$p\"_*.deb; shift; done; dpkg -i \"$@\"; \
                         else DEBIAN_FRONTEND=noninteractive apt-get install -y -q \"$@\"; fi; }}\n\
               rm_() {{ DEBIAN_FRONTEND=noninteractive apt-get remove -y -q \"$@\"; }}\n\
               old() {{ LC_ALL=C apt-cache policy \"$1\" 2>/dev/null | awk '/Installed:/{{i=$2}} /Candidate:/{{c=$2}} END{{exit !(i != \"\" && i != \"(none)\" && c != \"\" && c != \"(none)\" && i != c)}}'; }}\n\
               up() {{ DEBIAN_FRONTEND=noninteractive apt-get install -y -q \"$@\"; }}\n\
             elif command -v dnf >/dev/null || command -v yum >/dev/null; then m=$(command -v dnf || command -v yum); is_in() {{ rpm -q \"$1\" >/dev/null 2>&1; }}\n\
               inst() {{ if [ -n \"$FROM\" ]; then for p in \"$@\"; do set -- \"$@\" \"$FROM\"/\"$p\"-[0-9]*.rpm; shift; done; $m install -y --disablerepo='*' \"$@\"; \
                         else $m install -y \"$@\"; fi; }}\n\
               rm_() {{ $m remove -y \"$@\"; }}\n\
               old() {{ $m -q list --upgrades \"$1\" >/dev/null 2>&1; }}\n\
               up() {{ $m upgrade -y \"$@\"; }}\n\
             elif command -v zypper >/dev/null; then is_in() {{ rpm -q \"$1\" >/dev/null 2>&1; }}\n\
               inst() {{ if [ -n \"$FROM\" ]; then for p in \"$@\"; do set -- \"$@\" \"$FROM\"/\"$p\"-[0-9]*.rpm; shift; done; fi; zypper -n install \"$@\"; }}\n\
               rm_() {{ zypper -n remove \"$@\"; }}\n\
               old() {{ zypper -n -q list-updates 2>/dev/null | awk -F'|' -v p=\"$1\" '{{gsub(/ /, \"\", $3)}} $3 == p {{f=1}} END{{exit !f}}'; }}\n\
               up() {{ zypper -n update \"$@\"; }}\n\
             else echo 'no apt, dnf or zypper on this host' >&2; exit 3; fi\n\
             todo=''; upg=''; for p in {list}; do if is_in \"$p\"; then [ $WANT = 1 ] || todo=\"$todo $p\"; \
               if [ $LATEST = 1 ] && old \"$p\"; then upg=\"$upg $p\"; fi; else [ $WANT = 0 ] || todo=\"$todo $p\"; fi; done\n\
             [ -z \"$todo$upg\" ] && exit 0; echo \"CHANGED$todo$upg\"; [ $CHECK = 1 ] && exit 0\n\
             if [ -n \"$upg\" ]; then up $upg || exit 1; fi\n\
             [ -z \"$todo\" ] && exit 0\n\
             if [ $WANT = 1 ]; then inst $todo; else rm_ $todo; fi",
            check = cx.check as u8,
            want = want_present as u8,
            latest = latest as u8,
        );
        let out = match cx.sh(&s, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let changed = text.lines().find_map(|l| l.strip_prefix("CHANGED")).map(|s| s.trim().to_string());
        if !out.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Outcome::failed(
                err.trim().lines().rev().take(3).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n"),
            )
            .with_output(&out);
        }
        match changed {
            None => Outcome::ok(""),
            Some(p) => Outcome::changed(format!(
                "{} {p}",
                match a.state {
                    PackageState::Present => "installed",
                    PackageState::Latest => "installed or upgraded",
                    PackageState::Absent => "removed",
                }
            )),
        }
    }
}
