//! `package`: packages present, absent or at their repositories' latest version through the
//! host's own manager (apt, dnf or zypper, detected on the host). `from: DIR` installs package
//! files already on the host (air-gapped sites) instead of asking a repository. `latest`
//! installs what is missing and upgrades what the manager's lists offer a newer version of
//! (apt-cache policy's candidate, `dnf list --upgrades`, `zypper list-updates`), as Ansible's
//! package modules decide it. `update_cache` refreshes the lists first (`apt-get update` unless
//! they are younger than `cache_valid_time`, as Ansible's apt module decides it from the lists'
//! time stamp; `dnf makecache`; `zypper refresh`); with no package named that is the whole step,
//! changed where apt's time stamp moved (never for dnf, as Ansible's dnf module reports it).

use serde::{Deserialize, Serialize};

use super::{Flag, Guards, Kind, Number, OneOrMany, Outcome, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PackageArgs {
    /// Required unless `update_cache` is all the step does.
    #[serde(default = "no_names")]
    pub name: OneOrMany<String>,
    #[serde(default)]
    pub state: PackageState,
    /// A directory on the host holding package files, for air-gapped installs.
    pub from: Option<String>,
    /// Refresh the package lists before anything else.
    #[serde(default = "no", skip_serializing_if = "is_no")]
    pub update_cache: Flag,
    /// apt: lists younger than this many seconds are not refreshed (set: `update_cache` too).
    pub cache_valid_time: Option<Number>,
    /// apt: tries of `apt-get update` (5), waiting 1, 2, 4, ... seconds between them, at most
    /// `update_cache_retry_max_delay` (12).
    pub update_cache_retries: Option<Number>,
    pub update_cache_retry_max_delay: Option<Number>,
}

fn no() -> Flag {
    Flag::Value(false)
}

fn is_no(f: &Flag) -> bool {
    *f == Flag::Value(false)
}

fn no_names() -> OneOrMany<String> {
    OneOrMany::Many(Vec::new())
}

/// A whole number argument, or its default.
fn number(n: &Option<Number>, name: &str, default: u64) -> Result<u64, String> {
    match n {
        None => Ok(default),
        Some(n) => n.get().map_err(|e| format!("package: {name}: {e}")),
    }
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
        let (valid, tries, max_delay) = match (
            number(&a.cache_valid_time, "cache_valid_time", 0),
            number(&a.update_cache_retries, "update_cache_retries", 5),
            number(&a.update_cache_retry_max_delay, "update_cache_retry_max_delay", 12),
        ) {
            (Ok(v), Ok(t), Ok(m)) => (v, t.max(1), m),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return Outcome::failed(e),
        };
        let update = a.update_cache.get() || valid > 0;
        if names.is_empty() && !update {
            return Outcome::failed("package: name is required (or update_cache)");
        }
        let list = names.iter().map(|n| shell_quote(n)).collect::<Vec<_>>().join(" ");
        let from = a.from.as_deref().map(shell_quote).unwrap_or_default();
        let want_present = a.state != PackageState::Absent;
        let latest = a.state == PackageState::Latest;
        let s = format!(
            "CHECK={check}; WANT={want}; LATEST={latest}; FROM={from}; UPD={update}; VALID={valid}; TRIES={tries}; MAXD={max_delay}\n\
             if command -v apt-get >/dev/null; then is_in() {{ dpkg-query -W -f='${{Status}}' \"$1\" 2>/dev/null | grep -q 'install ok installed'; }}\n\
               stamp() {{ for f in /var/lib/apt/periodic/update-success-stamp /var/lib/apt/lists; do [ -e \"$f\" ] && {{ stat -c %Y \"$f\"; return; }}; done; echo 0; }}\n\
               upd_() {{ b=$(stamp); [ $((b + VALID)) -ge \"$(date +%s)\" ] && {{ echo \"CACHE 0 $b\"; return 0; }}\n\
                 i=0; while [ $CHECK = 0 ]; do err=$(LC_ALL=C apt-get update -q 2>&1 >/dev/null); r=$?\n\
                   case \"$err\" in *'Failed to fetch'*|*'failed to download'*) r=1;; esac; [ $r = 0 ] && break; i=$((i + 1))\n\
                   [ $i -ge $TRIES ] && {{ echo \"Failed to update apt cache after $TRIES retries: $err\" >&2; return 1; }}\n\
                   d=$((1 << (i - 1))); [ $d -gt $MAXD ] && d=$MAXD; sleep $d; done\n\
                 a=$(stamp); if [ $CHECK = 1 ] || [ \"$a\" != \"$b\" ]; then echo \"CACHE 1 $a\"; else echo \"CACHE 0 $a\"; fi; }}\n\
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
               upd_() {{ [ $CHECK = 1 ] || [ $WANT = 0 ] || $m makecache -q >/dev/null || return 1; }}\n\
             elif command -v zypper >/dev/null; then is_in() {{ rpm -q \"$1\" >/dev/null 2>&1; }}\n\
               inst() {{ if [ -n \"$FROM\" ]; then for p in \"$@\"; do set -- \"$@\" \"$FROM\"/\"$p\"-[0-9]*.rpm; shift; done; fi; zypper -n install \"$@\"; }}\n\
               rm_() {{ zypper -n remove \"$@\"; }}\n\
               old() {{ zypper -n -q list-updates 2>/dev/null | awk -F'|' -v p=\"$1\" '{{gsub(/ /, \"\", $3)}} $3 == p {{f=1}} END{{exit !f}}'; }}\n\
               up() {{ zypper -n update \"$@\"; }}\n\
               upd_() {{ [ $CHECK = 1 ] || [ $WANT = 0 ] || zypper -n -q refresh >/dev/null || return 1; }}\n\
             else echo 'no apt, dnf or zypper on this host' >&2; exit 3; fi\n\
             if [ $UPD = 1 ]; then upd_ || exit 1; fi; [ -z {list_q} ] && exit 0\n\
             todo=''; upg=''; for p in {list}; do if is_in \"$p\"; then [ $WANT = 1 ] || todo=\"$todo $p\"; \
               if [ $LATEST = 1 ] && old \"$p\"; then upg=\"$upg $p\"; fi; else [ $WANT = 0 ] || todo=\"$todo $p\"; fi; done\n\
             [ -z \"$todo$upg\" ] && exit 0; echo \"CHANGED$todo$upg\"; [ $CHECK = 1 ] && exit 0\n\
             if [ -n \"$upg\" ]; then up $upg || exit 1; fi\n\
             [ -z \"$todo\" ] && exit 0\n\
             if [ $WANT = 1 ]; then inst $todo; else rm_ $todo; fi",
            check = cx.check as u8,
            want = want_present as u8,
            latest = latest as u8,
            update = update as u8,
            list_q = shell_quote(&list),
        );
        let out = match cx.sh(&s, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let changed = text.lines().find_map(|l| l.strip_prefix("CHANGED")).map(|s| s.trim().to_string());
        // apt's `cache_updated` and `cache_update_time` (the lists' time stamp), as Ansible's
        // apt module returns them.
        let cache = text.lines().find_map(|l| l.strip_prefix("CACHE ")).and_then(|l| {
            let (u, t) = l.split_once(' ')?;
            Some((u == "1", t.trim().parse::<u64>().unwrap_or(0)))
        });
        if !out.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Outcome::failed(
                err.trim().lines().rev().take(3).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n"),
            )
            .with_output(&out);
        }
        let mut o = match (changed, cache) {
            (None, Some((true, _))) if names.is_empty() => Outcome::changed("package lists updated"),
            (None, _) => Outcome::ok(""),
            (Some(p), _) => Outcome::changed(format!(
                "{} {p}",
                match a.state {
                    PackageState::Present => "installed",
                    PackageState::Latest => "installed or upgraded",
                    PackageState::Absent => "removed",
                }
            )),
        };
        if let Some((updated, time)) = cache {
            o.result.insert("cache_updated".into(), serde_json::json!(updated));
            o.result.insert("cache_update_time".into(), serde_json::json!(time));
        }
        o
    }
}
