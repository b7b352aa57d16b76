//! `setup`: gathers the facts Ansible playbooks read most (distribution, os_family, hostname,
//! addresses, architecture, kernel, memory, CPUs, service and package manager, virtualization)
//! in one remote
//! command, and sets them as `ansible_facts.X` and `ansible_X`, with the values Ansible's own
//! setup module reports on the same host. What the Ansible front-end puts first in a play that
//! gathers facts; a native step may use it too.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Guards, Kind, Outcome, StepCtx};

/// The setup module's arguments as Ansible's are given (read as ansible-core's argument spec
/// reads them when the step runs, so that a bad one fails the task as Ansible's module does):
/// `gather_subset` (a list, or a comma-separated text; default `all`), `filter` (fnmatch
/// patterns over the facts' names), `gather_timeout` (an integer; copctl gathers none of the
/// facts Ansible bounds by it). `setup: {}` gathers everything copctl gathers.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct SetupArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gather_subset: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gather_timeout: Option<Value>,
}

/// ansible-core's Linux fact collectors: each one's name, the fact ids that also name it in
/// `gather_subset`, and the collectors it needs (their facts come with it), as its
/// `default_collectors` declare them.
const COLLECTORS: &[(&str, &[&str], &[&str])] = &[
    ("apparmor", &[], &[]),
    ("caps", &["system_capabilities", "system_capabilities_enforced"], &[]),
    ("chroot", &["is_chroot"], &[]),
    ("cmdline", &[], &[]),
    ("date_time", &[], &[]),
    ("distribution", &["distribution_major_version", "distribution_release", "distribution_version", "os_family"], &[]),
    ("dns", &[], &[]),
    ("env", &[], &[]),
    ("facter", &["facter"], &[]),
    ("fibre_channel_wwn", &[], &[]),
    ("fips", &[], &[]),
    ("hardware", &["devices", "mounts", "processor", "processor_cores", "processor_count"], &["platform"]),
    ("iscsi", &[], &[]),
    ("loadavg", &[], &[]),
    ("local", &[], &[]),
    ("lsb", &[], &[]),
    (
        "network",
        &["all_ipv4_addresses", "all_ipv6_addresses", "default_ipv4", "default_ipv6", "interfaces"],
        &["distribution", "platform"],
    ),
    ("nvme", &[], &[]),
    ("ohai", &[], &[]),
    ("pkg_mgr", &[], &["distribution"]),
    (
        "platform",
        &["architecture", "kernel", "kernel_version", "machine", "machine_id", "python_version", "system"],
        &[],
    ),
    ("python", &[], &[]),
    ("selinux", &[], &[]),
    ("service_mgr", &[], &["distribution", "platform"]),
    (
        "ssh_pub_keys",
        &[
            "ssh_host_key_dsa_public",
            "ssh_host_key_ecdsa_public",
            "ssh_host_key_ed25519_public",
            "ssh_host_key_rsa_public",
            "ssh_host_pub_keys",
        ],
        &[],
    ),
    ("systemd", &[], &[]),
    (
        "user",
        &[
            "effective_group_ids",
            "effective_user_id",
            "real_user_id",
            "user_dir",
            "user_gecos",
            "user_gid",
            "user_id",
            "user_shell",
            "user_uid",
        ],
        &[],
    ),
    (
        "virtual",
        &["virtualization_role", "virtualization_tech_guest", "virtualization_tech_host", "virtualization_type"],
        &[],
    ),
];

/// The setup module's `minimal_gather_subset`: what `min` means, and what `!all` keeps.
const MINIMAL: &[&str] = &[
    "apparmor",
    "caps",
    "cmdline",
    "date_time",
    "distribution",
    "dns",
    "env",
    "fips",
    "local",
    "lsb",
    "pkg_mgr",
    "platform",
    "python",
    "selinux",
    "service_mgr",
    "ssh_pub_keys",
    "user",
];

/// The facts copctl gathers, by the collector that gives them in Ansible (docs: ansible/facts.md).
pub const GATHERED: &[(&str, &[&str])] = &[
    (
        "distribution",
        &[
            "distribution",
            "distribution_major_version",
            "distribution_minor_version",
            "distribution_release",
            "distribution_version",
            "os_family",
        ],
    ),
    (
        "platform",
        &[
            "architecture",
            "domain",
            "fqdn",
            "hostname",
            "kernel",
            "kernel_version",
            "machine",
            "machine_id",
            "nodename",
            "python_version",
            "system",
        ],
    ),
    ("network", &["all_ipv4_addresses", "default_ipv4"]),
    (
        "hardware",
        &[
            "memfree_mb",
            "memory_mb",
            "memtotal_mb",
            "processor",
            "processor_cores",
            "processor_count",
            "processor_nproc",
            "processor_threads_per_core",
            "processor_vcpus",
            "swapfree_mb",
            "swaptotal_mb",
            "uptime_seconds",
        ],
    ),
    ("service_mgr", &["service_mgr"]),
    ("pkg_mgr", &["pkg_mgr"]),
    (
        "virtual",
        &["virtualization_role", "virtualization_tech_guest", "virtualization_tech_host", "virtualization_type"],
    ),
    (
        "user",
        &[
            "effective_group_id",
            "effective_user_id",
            "real_group_id",
            "real_user_id",
            "user_dir",
            "user_gecos",
            "user_gid",
            "user_id",
            "user_shell",
            "user_uid",
        ],
    ),
    ("python", &["python"]),
    ("date_time", &["date_time"]),
    ("env", &["env"]),
    ("dns", &["dns"]),
    ("selinux", &["selinux", "selinux_python_present"]),
    ("loadavg", &["loadavg"]),
];

/// A value as Ansible's `type='list', elements='str'` takes it: a list as it is, a text split
/// at each comma (nothing trimmed), a number as its text; each element as text.
fn ansible_list(name: &str, v: &Value) -> Result<Vec<String>, String> {
    let text = |x: &Value| match x {
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        other => other.to_string(),
    };
    match v {
        Value::Array(a) => Ok(a.iter().map(text).collect()),
        Value::String(s) => Ok(s.split(',').map(str::to_string).collect()),
        Value::Number(n) => Ok(vec![n.to_string()]),
        other => Err(format!(
            "argument '{name}' is of type {} and we were unable to convert to list: {} cannot be converted to a list",
            python_type(other),
            python_type_repr(other)
        )),
    }
}

/// Python's name for a JSON value's type.
fn python_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// `<class 'dict'>`, as Python prints a type.
fn python_type_repr(v: &Value) -> String {
    format!("<class '{}'>", python_type(v))
}

/// `gather_timeout` as Ansible's `type='int'` takes it: an integer, a text of one, a float
/// with no fraction.
fn ansible_int(name: &str, v: &Value) -> Result<i64, String> {
    let bad = |repr: String| {
        format!(
            "argument '{name}' is of type {} and we were unable to convert to int: {repr} cannot be converted to an int",
            python_type(v)
        )
    };
    match v {
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Ok(i),
            (None, Some(f)) if f.fract() == 0.0 => Ok(f as i64),
            _ => Err(bad(format!("\"{n}\""))),
        },
        Value::String(s) => s.trim().parse::<i64>().map_err(|_| bad(format!("\"'{}'\"", s.replace('\'', "\\'")))),
        Value::Bool(b) => Ok(*b as i64),
        other => Err(bad(python_type_repr(other))),
    }
}

/// The collectors `gather_subset` selects, as ansible-core's `get_collector_names` and
/// `_solve_deps` decide them; an unknown name is Ansible's error.
pub fn collectors(gather_subset: &[String]) -> Result<Vec<&'static str>, String> {
    use std::collections::BTreeSet;
    let mut valid: BTreeSet<&str> = BTreeSet::new();
    for (name, ids, _) in COLLECTORS {
        valid.insert(name);
        valid.extend(ids.iter().copied());
    }
    let aliases = |s: &str| -> Vec<&'static str> {
        COLLECTORS.iter().find(|(n, ..)| *n == s).map(|(_, ids, _)| ids.to_vec()).unwrap_or_default()
    };
    let minimal: BTreeSet<&str> = MINIMAL.iter().copied().collect();
    let (mut add, mut exclude, mut explicit): (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) =
        Default::default();
    let given: Vec<String> = if gather_subset.is_empty() { vec!["all".into()] } else { gather_subset.to_vec() };
    for subset in std::iter::once("min".to_string()).chain(given) {
        match subset.as_str() {
            "min" => add.extend(minimal.iter().map(|s| s.to_string())),
            "all" => add.extend(valid.iter().map(|s| s.to_string())),
            "!min" => exclude.extend(minimal.iter().map(|s| s.to_string())),
            "!all" => exclude.extend(valid.difference(&minimal).map(|s| s.to_string())),
            s if s.starts_with('!') => {
                let s = &s[1..];
                exclude.extend(aliases(s).into_iter().map(str::to_string));
                exclude.insert(s.to_string());
            }
            s => {
                if !valid.contains(s) {
                    let allowed: Vec<&str> = valid.iter().copied().collect();
                    return Err(format!(
                        "Bad subset '{s}' given to Ansible. gather_subset options allowed: all, {}",
                        allowed.join(", ")
                    ));
                }
                explicit.insert(s.to_string());
                add.insert(s.to_string());
            }
        }
    }
    if add.is_empty() {
        add.extend(valid.iter().map(|s| s.to_string()));
    }
    let dropped: BTreeSet<String> = exclude.difference(&explicit).cloned().collect();
    let names: Vec<String> = add.difference(&dropped).cloned().collect();
    // Each name → the collector that gives it (a fact id names its collector), then the
    // collectors those need.
    let mut chosen: BTreeSet<&'static str> = BTreeSet::new();
    for n in &names {
        for (name, ids, _) in COLLECTORS {
            if name == n || ids.contains(&n.as_str()) {
                chosen.insert(name);
            }
        }
    }
    loop {
        let more: Vec<&'static str> = COLLECTORS
            .iter()
            .filter(|(n, ..)| chosen.contains(n))
            .flat_map(|(_, _, needs)| needs.iter().copied())
            .filter(|n| !chosen.contains(n))
            .collect();
        if more.is_empty() {
            break;
        }
        chosen.extend(more);
    }
    Ok(chosen.into_iter().collect())
}

/// Python's `fnmatch.fnmatch` on Linux (case-sensitive), the project's one translation.
fn fnmatch(name: &str, pattern: &str) -> bool {
    crate::text::fnmatch::fnmatch_regex(pattern).is_ok_and(|r| r.is_match(name))
}

/// Whether `filter` keeps the fact `name` (as the collector names it: `ansible_os_family`,
/// `gather_subset`), as ansible-core's `_filter` decides: no pattern (or `*`) keeps all; a
/// pattern not starting with `ansible_`, `facter` or `ohai` also matches with `ansible_` before it.
fn kept(name: &str, filter: &[String]) -> bool {
    if filter.is_empty() || (filter.len() == 1 && filter[0] == "*") {
        return true;
    }
    filter.iter().any(|f| {
        f.is_empty()
            || fnmatch(name, f)
            || (!f.starts_with("ansible_")
                && !f.starts_with("facter")
                && !f.starts_with("ohai")
                && fnmatch(name, &format!("ansible_{f}")))
    })
}

/// What a gathering with these arguments keeps: the collectors' facts of `all`, filtered, and
/// Ansible's `gather_subset` and `module_setup` facts; or the error Ansible's module fails with.
pub fn selected(args: &SetupArgs, all: Map<String, Value>) -> Result<Map<String, Value>, String> {
    let subset = match &args.gather_subset {
        Some(v) => ansible_list("gather_subset", v)?,
        None => vec!["all".into()],
    };
    if let Some(t) = &args.gather_timeout {
        ansible_int("gather_timeout", t)?;
    }
    let filter = match &args.filter {
        Some(v) => ansible_list("filter", v)?,
        None => Vec::new(),
    };
    let chosen = collectors(&subset)?;
    let mut out = Map::new();
    for (k, v) in all {
        let collector = GATHERED.iter().find(|(_, facts)| facts.contains(&k.as_str())).map(|(c, _)| *c);
        if collector.is_some_and(|c| chosen.contains(&c)) && kept(&format!("ansible_{k}"), &filter) {
            out.insert(k, v);
        }
    }
    if kept("gather_subset", &filter) {
        out.insert("gather_subset".into(), json!(subset));
    }
    if kept("module_setup", &filter) {
        out.insert("module_setup".into(), json!(true));
    }
    Ok(out)
}

/// One `key=value` a line; the mapping to Ansible's names and values is done here, not there.
/// The address logic is Ansible's: the default route's source and device (`ip -4 route get
/// 8.8.8.8`), every IPv4 address but 127.0.0.0/8's; fqdn as Python's socket.getfqdn(); the
/// service manager as Ansible's ServiceMgrFactCollector decides it.
const SCRIPT: &str = r#"f=/etc/os-release; [ -r "$f" ] || f=/usr/lib/os-release
v() { sed -n "s/^$1=//p" "$f" 2>/dev/null | tail -n 1 | tr -d "\"'"; }
echo "id=$(v ID)"; echo "version_id=$(v VERSION_ID)"
[ -r /etc/debian_version ] && echo "debian_version=$(head -n 1 /etc/debian_version)"
n=$(uname -n); echo "node=$n"
fq=$n; a=$(getent hosts "$n" 2>/dev/null | awk 'NR==1{print $1}')
if [ -n "$a" ]; then r=$(getent hosts "$a" 2>/dev/null | head -n 1); [ -z "$r" ] || fq=$(echo "$r" | awk '{c=$2; for(i=2;i<=NF;i++) if (index($i, ".")) {c=$i; break}; print c}'); fi
echo "fqdn=$fq"
ip -4 route get 8.8.8.8 2>/dev/null | head -n 1 | awk '{for(i=1;i<NF;i++){if($i=="src")print "default_address="$(i+1); if($i=="dev")print "default_interface="$(i+1); if($i=="via")print "default_gateway="$(i+1)}}'
ip -o -4 addr show 2>/dev/null | awk '{split($4,x,"/"); if (x[1] !~ /^127\./) print "ipv4="x[1]}'
echo "machine=$(uname -m)"; echo "kernel=$(uname -r)"
awk '/^MemTotal:/{print "memtotal_mb=" int($2/1024)}' /proc/meminfo
awk -F: 'function t(s){gsub(/^[ \t]+|[ \t]+$/,"",s); return s}
{k=t($1); x=index($0,":"); val=x?t(substr($0,x+1)):""}
k=="model name"||k=="Processor"||k=="vendor_id"||k=="cpu"||k=="Vendor"||k=="processor"{print "cpu_proc=" val; if(k=="vendor_id")vid++; if(k=="model name")mn++; if(k=="processor")po++; i++; next}
k=="physical id"{phys=val; if(!(val in so)){so[val]=1; if(!ns++)s0=val} next}
k=="core id"{core=val; if(!(val in so)){if(!(val in co)){if(!nc++)c0=val} co[val]=1} next}
k=="cpu cores"{if(!(phys in so)){if(!ns++)s0=phys} so[phys]=val+0; next}
k=="siblings"{if(!(core in co)){if(!nc++)c0=core} co[core]=val+0; next}
END{print "cpu_i=" i+0; print "cpu_vid=" vid+0; print "cpu_mn=" mn+0; print "cpu_po=" po+0; print "cpu_ns=" ns+0; if(ns)print "cpu_s0=" so[s0]; print "cpu_nc=" nc+0; if(nc)print "cpu_c0=" co[c0]}' /proc/cpuinfo 2>/dev/null
echo "nproc=$(nproc 2>/dev/null)"
awk '/^(MemTotal|MemFree|SwapTotal|SwapFree|Buffers|Cached|SwapCached):/{sub(":","",$1); print "mem_" $1 "=" $2}' /proc/meminfo
for k in VERSION_CODENAME UBUNTU_CODENAME VERSION PRETTY_NAME NAME; do grep -q "^$k=" "$f" 2>/dev/null && echo "os_$k=$(v $k)"; done
[ -r /etc/redhat-release ] && echo "redhat_release=$(head -n 1 /etc/redhat-release)"
echo "kernel_version=$(uname -v)"
dt=$(date +%s.%N 2>/dev/null); y=${dt%%.*}; y=$(date -d "@$y" +%Y 2>/dev/null)
LC_ALL=C date -d "@$dt" '+dt_year=%Y%ndt_month=%m%ndt_weekday=%A%ndt_weekday_number=%w%ndt_weeknumber=%W%ndt_day=%d%ndt_hour=%H%ndt_minute=%M%ndt_second=%S%ndt_epoch=%s%ndt_date=%Y-%m-%d%ndt_time=%H:%M:%S%ndt_iso8601_basic=%Y%m%dT%H%M%S%N%ndt_iso8601_basic_short=%Y%m%dT%H%M%S%ndt_tz=%Z%ndt_tz_offset=%z' 2>/dev/null
LC_ALL=C date -u -d "@$dt" '+dt_iso8601_micro=%Y-%m-%dT%H:%M:%S.%NZ%ndt_iso8601=%Y-%m-%dT%H:%M:%SZ' 2>/dev/null
echo "dt_jan=$(date -d "$y-01-01T12:00" '+%z %Z' 2>/dev/null)"; echo "dt_jul=$(date -d "$y-07-01T12:00" '+%z %Z' 2>/dev/null)"
env -0 2>/dev/null | tr '\n\000' '\036\n' | sed 's/^/env:/'
[ -r /etc/resolv.conf ] && sed 's/^/resolv:/' /etc/resolv.conf
echo "user_pw=$(getent passwd "$(id -un)" 2>/dev/null || getent passwd "$(id -u)" 2>/dev/null)"
echo "ids=$(id -ru) $(id -u) $(id -rg)"
for m in /var/lib/dbus/machine-id /etc/machine-id; do if [ -s $m ]; then echo "machine_id=$(head -n 1 $m)"; break; fi; done
[ -r /proc/uptime ] && read up _ < /proc/uptime && echo "uptime=$up"
[ -r /proc/loadavg ] && read l1 l5 l15 _ < /proc/loadavg && echo "loadavg=$l1 $l5 $l15"
sp=0; for d in /lib /lib64 /usr/lib /usr/lib64 /lib/*-linux-gnu /usr/lib/*-linux-gnu; do [ -e "$d/libselinux.so.1" ] && sp=1; done; echo "selinux_py=$sp"
if [ $sp = 1 ] && [ -r /sys/fs/selinux/enforce ]; then echo "selinux_enforce=$(cat /sys/fs/selinux/enforce)"; echo "selinux_policyvers=$(cat /sys/fs/selinux/policyvers 2>/dev/null)"
  echo "selinux_config=$(sed -n 's/^SELINUX=//p' /etc/selinux/config 2>/dev/null)"; echo "selinux_type=$(sed -n 's/^SELINUXTYPE=//p' /etc/selinux/config 2>/dev/null)"; fi
p1=$(cat /proc/1/comm 2>/dev/null); p1=${p1##*/}
case "$p1" in init|*sh) p1= ;; runit-init) p1=runit ;; esac
sys=0; if command -v systemctl >/dev/null 2>&1; then for d in /run/systemd/system/ /dev/.run/systemd/ /dev/.systemd/; do [ -e "$d" ] && sys=1; done; fi
off=0; if command -v systemctl >/dev/null 2>&1 && [ -L /sbin/init ] && [ "$(basename "$(readlink -f /sbin/init)")" = systemd ]; then off=1; fi
if [ -n "$p1" ]; then m=$p1; elif [ $sys = 1 ]; then m=systemd; elif command -v initctl >/dev/null 2>&1 && [ -e /etc/init/ ]; then m=upstart
elif [ -e /sbin/openrc ]; then m=openrc; elif [ $off = 1 ]; then m=systemd; elif [ -e /etc/init.d/ ]; then m=sysvinit; elif [ -e /etc/dinit.d/ ]; then m=dinit; else m=service; fi
echo "service_mgr=$m"
echo "user_id=$(id -un)"
py=$(command -v python3 2>/dev/null || command -v python 2>/dev/null); echo "python=$py"
[ -z "$py" ] || echo "python_version=$("$py" --version 2>&1)"
for b in dnf5 dnf yum apt-get zypper apk pacman; do if command -v $b >/dev/null 2>&1; then echo "pkg_bin=$b"; fi; done
VIRT"#;

/// Ansible's Linux virtualization facts (its LinuxVirtual collector, check by check in its
/// order): containers from /proc/1/cgroup, /proc/1/environ, /run/systemd/container and
/// /.dockerenv; openvz, xen, DMI vendors and products, /proc/cpuinfo, the kvm/vboxdrv/virtio
/// modules, dmidecode, /dev/kvm; `NA` when nothing says.
const VIRT: &str = r#"found=0; vt=; vr=; gt=; ht=
addg() { case " $gt " in *" $1 "*) ;; *) gt="$gt $1" ;; esac; }
addh() { case " $ht " in *" $1 "*) ;; *) ht="$ht $1" ;; esac; }
virt() { if [ $found = 0 ]; then vt=$1; vr=$2; found=1; fi; }
first() { v=; [ -r "$1" ] && IFS=' 	' read -r v < "$1" 2>/dev/null; printf '%s' "$v"; }
if [ -r /proc/1/cgroup ]; then while IFS= read -r l; do
  case "$l" in */docker/*|*/docker-*.scope*) addg docker; virt docker guest ;; esac
  case "$l" in *"/lxc/"*|*"/machine.slice/machine-lxc"*) addg lxc; virt lxc guest ;; esac
  case "$l" in *"/system.slice/containerd.service"*) addg containerd; virt containerd guest ;; esac
done < /proc/1/cgroup; fi
if [ -r /proc/1/environ ]; then env1=$(tr '\000' '\n' 2>/dev/null < /proc/1/environ); while IFS= read -r l; do
  case "$l" in *container=lxc*) addg lxc; virt lxc guest ;; esac
  case "$l" in *container=podman*) addg podman; virt podman guest ;; esac
  case "$l" in container=?*) addg container; virt container guest ;; esac
done <<ENV
$env1
ENV
fi
if [ -e /proc/vz ] && [ ! -e /proc/lve ]; then vt=openvz
  if [ -e /proc/bc ]; then addh openvz; [ $found = 1 ] || vr=host; else addg openvz; [ $found = 1 ] || vr=guest; fi; found=1; fi
sc=$(first /run/systemd/container); if [ -n "$sc" ]; then addg "$sc"; virt "$sc" guest; fi
if [ -e /.dockerenv ] || [ -e /.dockerinit ]; then addg docker; virt docker guest; fi
case " $gt " in *" docker "*|*" lxc "*|*" podman "*|*" openvz "*|*" containerd "*) addg container ;; *) [ -z "$sc" ] || addg container ;; esac
if [ -e /proc/xen ]; then xh=0
  if [ -r /proc/xen/capabilities ]; then while IFS= read -r l; do case "$l" in *control_d*) xh=1 ;; esac; done < /proc/xen/capabilities; fi
  if [ $xh = 1 ]; then addh xen; [ $found = 1 ] || { vt=xen; vr=host; }
  else [ $found = 1 ] || { vt=xen; vr=guest; }; fi; found=1; fi
assumed=0; if [ $found = 0 ]; then vr=guest; assumed=1; fi
d=/sys/devices/virtual/dmi/id; pn=$(first $d/product_name); sv=$(first $d/sys_vendor); pf=$(first $d/product_family); bv=$(first $d/bios_vendor)
dmi() { addg "$1"; if [ $found = 0 ]; then vt=$1; found=1; fi; }
case "$pn" in KVM|"KVM Server"|Bochs|AHV|"CloudStack KVM Hypervisor") dmi kvm ;; esac
[ "$sv" = oVirt ] && dmi oVirt
if [ "$sv" = "Red Hat" ]; then if [ "$pf" = RHV ]; then dmi RHV; elif [ "$pn" = "RHEV Hypervisor" ]; then dmi RHEV; fi; fi
case "$pn" in VMware*) dmi VMware ;; esac
case "$pn" in "OpenStack Compute"|"OpenStack Nova") dmi openstack ;; esac
[ "$bv" = Xen ] && dmi xen
[ "$bv" = "innotek GmbH" ] && dmi virtualbox
case "$bv" in "Amazon EC2"|DigitalOcean|Hetzner|Linode) dmi kvm ;; esac
case "$sv" in QEMU|"Amazon EC2"|DigitalOcean|Google|Scaleway|Nutanix) dmi kvm ;; esac
[ "$sv" = KubeVirt ] && dmi KubeVirt
[ "$sv" = "Microsoft Corporation" ] && dmi VirtualPC
[ "$sv" = "Parallels Software International Inc." ] && dmi parallels
[ "$sv" = "OpenStack Foundation" ] && dmi openstack
if [ $found = 0 ] && [ $assumed = 1 ]; then vr=; fi
if [ -r /proc/self/status ]; then while IFS= read -r l; do case "$l" in VxID:*)
  x=${l#VxID:}; x=${x#"${x%%[![:space:]]*}"}; case "$x" in ''|*[!0-9]*) continue ;; esac
  [ $found = 1 ] || vt=linux_vserver
  if [ "$x" = 0 ]; then addh linux_vserver; [ $found = 1 ] || vr=host; else addg linux_vserver; [ $found = 1 ] || vr=guest; fi
  found=1 ;; esac; done < /proc/self/status; fi
if [ -r /proc/cpuinfo ]; then while IFS= read -r l; do t=
  case "$l" in "model name"*"QEMU Virtual CPU"*) t=kvm ;; "vendor_id"*"User Mode Linux"*) t=uml ;; "model name"*UML*) t=uml ;;
    "machine"*"CHRP IBM pSeries ?emulated by qemu?"*) t=kvm ;; "vendor_id"*"PowerVM Lx86"*) t=powervm_lx86 ;; "vendor_id"*"IBM/S390"*) t="PR/SM" ;; esac
  [ -n "$t" ] || continue
  addg "$t"; [ $found = 1 ] || vt=$t
  if [ "$t" = "PR/SM" ]; then
    if command -v lscpu >/dev/null 2>&1; then h=$(lscpu 2>/dev/null | sed -n 's/^Hypervisor:[[:space:]]*//p' | head -n 1)
      if [ -n "$h" ]; then addg "$h"; [ $found = 1 ] || vt=$h; fi
    else addg ibm_systemz; [ $found = 1 ] || vt=ibm_systemz; fi
  fi
  if [ "$vt" = "PR/SM" ]; then [ $found = 1 ] || vr=LPAR; else [ $found = 1 ] || vr=guest; fi
  found=1
done < /proc/cpuinfo; fi
if [ -r /proc/modules ]; then kvm=0 vbox=0 virtio=0
  while read -r m _; do case "$m" in kvm) kvm=1 ;; vboxdrv) vbox=1 ;; virtio) virtio=1 ;; esac; done < /proc/modules
  if [ $kvm = 1 ]; then addh kvm; [ $found = 1 ] || { vt=kvm; vr=host; }
    if [ -d /rhev/ ] && cat /proc/[0-9]*/comm 2>/dev/null | grep -qxE 'vdsmd?'; then addh RHEV; [ $found = 1 ] || vt=RHEV; fi; found=1; fi
  if [ $vbox = 1 ]; then addh virtualbox; virt virtualbox host; fi
  if [ $virtio = 1 ]; then addh kvm; virt kvm guest; fi
fi
if command -v dmidecode >/dev/null 2>&1 && dm=$(dmidecode -s system-product-name 2>/dev/null); then
  case "$(printf '%s\n' "$dm" | grep -v '^#' | tr -d '[:space:]')" in VMware*) addg VMware; virt VMware guest ;; esac
  case "$dm" in *BHYVE*) addg bhyve; virt bhyve guest ;; esac
fi
if [ -e /dev/kvm ]; then addh kvm; virt kvm host; fi
[ $found = 1 ] || { vt=NA; vr=NA; }
echo "virt_type=$vt"; [ -z "$vr" ] || echo "virt_role=$vr"
for x in $gt; do echo "virt_guest=$x"; done; for x in $ht; do echo "virt_host=$x"; done
"#;

/// The whole gathering script.
fn script() -> String {
    SCRIPT.replace("VIRT", VIRT)
}

/// Ansible's distribution name for an os-release ID, and its OS family.
fn distribution(id: &str) -> (String, &'static str) {
    let (name, family) = match id {
        "ubuntu" => ("Ubuntu", "Debian"),
        "debian" => ("Debian", "Debian"),
        "rhel" => ("RedHat", "RedHat"),
        "centos" => ("CentOS", "RedHat"),
        "rocky" => ("Rocky", "RedHat"),
        "almalinux" => ("AlmaLinux", "RedHat"),
        "ol" => ("OracleLinux", "RedHat"),
        "fedora" => ("Fedora", "RedHat"),
        "amzn" => ("Amazon", "RedHat"),
        "sles" => ("SLES", "Suse"),
        "opensuse-leap" | "opensuse" => ("openSUSE Leap", "Suse"),
        "alpine" => ("Alpine", "Alpine"),
        "arch" => ("Archlinux", "Archlinux"),
        other => return (capitalized(other), "Unknown"),
    };
    (name.to_string(), family)
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
}

/// The facts from the script's lines, under Ansible's names (without the `ansible_` prefix).
pub fn facts_from(out: &str) -> Map<String, Value> {
    let mut kv: Vec<(&str, &str)> = Vec::new();
    for l in out.lines() {
        if let Some((k, v)) = l.split_once('=') {
            kv.push((k, v.trim()));
        }
    }
    let get = |k: &str| kv.iter().find(|(x, _)| *x == k).map(|(_, v)| *v).unwrap_or("");
    let (dist, family) = distribution(get("id"));
    // Debian's own version file carries the point release (12.11); the others' VERSION_ID does.
    let version = if get("id") == "debian" && !get("debian_version").is_empty() {
        get("debian_version").to_string()
    } else {
        get("version_id").to_string()
    };
    let major = version.split('.').next().unwrap_or("").to_string();
    let node = get("node");
    let mut default_ipv4 = Map::new();
    for (k, name) in
        [("default_address", "address"), ("default_gateway", "gateway"), ("default_interface", "interface")]
    {
        if !get(k).is_empty() {
            default_ipv4.insert(name.into(), json!(get(k)));
        }
    }
    let ipv4: Vec<&str> = kv.iter().filter(|(k, _)| *k == "ipv4").map(|(_, v)| *v).collect();
    let bins: Vec<&str> = kv.iter().filter(|(k, _)| *k == "pkg_bin").map(|(_, v)| *v).collect();
    let pkg_mgr = if family == "Debian" && bins.contains(&"apt-get") {
        "apt"
    } else if bins.contains(&"dnf5") {
        "dnf5"
    } else if bins.contains(&"dnf") {
        "dnf"
    } else if bins.contains(&"yum") {
        "yum"
    } else if bins.contains(&"apt-get") {
        "apt"
    } else {
        bins.first().copied().unwrap_or("unknown")
    };
    let num = |k: &str| get(k).parse::<u64>().map(Value::from).unwrap_or(Value::Null);
    let mut m = Map::new();
    m.insert("distribution_release".into(), json!(release(get("id"), &kv)));
    if get("id") == "debian"
        && let Some(minor) = version.split('.').nth(1)
    {
        m.insert("distribution_minor_version".into(), json!(minor));
    }
    m.insert("distribution".into(), json!(dist));
    m.insert("os_family".into(), json!(family));
    m.insert("distribution_version".into(), json!(version));
    m.insert("distribution_major_version".into(), json!(major));
    m.insert("hostname".into(), json!(node.split('.').next().unwrap_or("")));
    m.insert("nodename".into(), json!(node));
    m.insert("fqdn".into(), json!(get("fqdn")));
    m.insert("default_ipv4".into(), Value::Object(default_ipv4));
    m.insert("all_ipv4_addresses".into(), json!(ipv4));
    m.insert("architecture".into(), json!(get("machine")));
    m.insert("machine".into(), json!(get("machine")));
    m.insert("kernel".into(), json!(get("kernel")));
    m.insert("system".into(), json!("Linux"));
    m.insert("memtotal_mb".into(), num("memtotal_mb"));
    cpu_facts(&mut m, &kv);
    m.insert("service_mgr".into(), json!(get("service_mgr")));
    m.insert("pkg_mgr".into(), json!(pkg_mgr));
    m.insert("virtualization_type".into(), json!(get("virt_type")));
    if !get("virt_role").is_empty() || get("virt_type").is_empty() {
        m.insert("virtualization_role".into(), json!(get("virt_role")));
    }
    let all = |k: &str| kv.iter().filter(|(x, _)| *x == k).map(|(_, v)| *v).collect::<Vec<_>>();
    m.insert("virtualization_tech_guest".into(), json!(all("virt_guest")));
    m.insert("virtualization_tech_host".into(), json!(all("virt_host")));
    // The user the facts were gathered as (Ansible's user_id: the remote user, or the become user).
    m.insert("user_id".into(), json!(get("user_id")));
    // The interpreter Ansible would discover (its path, and the version it prints).
    if !get("python").is_empty() {
        m.insert("python".into(), json!({"executable": get("python"), "type": "CPython"}));
    }
    more_facts(&mut m, out, &kv);
    m
}

/// Ansible's distribution_release: os-release's VERSION_CODENAME (even empty), UBUNTU_CODENAME,
/// the name in VERSION's parentheses, the release file's; Debian's from PRETTY_NAME; `NA`.
fn release(id: &str, kv: &[(&str, &str)]) -> String {
    let get = |k: &str| kv.iter().find(|(x, _)| *x == k).map(|(_, v)| *v);
    let paren = |t: &str| -> Option<String> {
        static P: std::sync::LazyLock<regex::Regex> =
            std::sync::LazyLock::new(|| regex::Regex::new(r"\((\D+)\)|,\s*(\D+)").expect("a valid pattern"));
        P.captures(t).and_then(|c| c.get(1).or(c.get(2))).map(|m| m.as_str().to_string())
    };
    if id == "debian"
        && let Some(p) = get("os_PRETTY_NAME")
    {
        static D: std::sync::LazyLock<regex::Regex> =
            std::sync::LazyLock::new(|| regex::Regex::new(r"^[^(]+ \(?([^)]+?)\)").expect("a valid pattern"));
        if let Some(c) = D.captures(p) {
            return c[1].to_string();
        }
    }
    let codename = get("os_VERSION_CODENAME")
        .map(str::to_string)
        .or_else(|| get("os_UBUNTU_CODENAME").map(str::to_string))
        .or_else(|| get("os_VERSION").and_then(paren))
        .or_else(|| get("redhat_release").and_then(paren).filter(|c| !c.is_empty()));
    match codename {
        None if id == "centos" && get("os_NAME").is_some_and(|n| n.contains("Stream")) => "Stream".into(),
        None => "NA".into(),
        Some(c) => c,
    }
}

/// Ansible's CPU facts from /proc/cpuinfo (its LinuxHardware counting, quirks and all: a core
/// id is looked for among the sockets), and the CPUs this process may run on.
fn cpu_facts(m: &mut Map<String, Value>, kv: &[(&str, &str)]) {
    let get = |k: &str| kv.iter().find(|(x, _)| *x == k).map(|(_, v)| *v).unwrap_or("");
    let n = |k: &str| get(k).parse::<i64>().unwrap_or(0);
    let arch = get("machine");
    let mut i = n("cpu_i");
    if n("cpu_vid") > 0 && n("cpu_vid") == n("cpu_mn") {
        i = n("cpu_vid");
    }
    if arch.starts_with("armv") || arch.starts_with("aarch") || arch.starts_with("ppc") {
        i = n("cpu_po");
    }
    let count = if n("cpu_ns") > 0 { n("cpu_ns") } else { i };
    let cores = if n("cpu_ns") > 0 && n("cpu_s0") != 0 { n("cpu_s0") } else { 1 };
    let per = if n("cpu_nc") > 0 { n("cpu_c0") as f64 } else { 1.0 };
    // Python's round: halves to even.
    let threads = (per / cores as f64).round_ties_even() as i64;
    let procs: Vec<&str> = kv.iter().filter(|(k, _)| *k == "cpu_proc").map(|(_, v)| *v).collect();
    m.insert("processor".into(), json!(procs));
    m.insert("processor_count".into(), json!(count));
    m.insert("processor_cores".into(), json!(cores));
    m.insert("processor_threads_per_core".into(), json!(threads));
    m.insert("processor_vcpus".into(), json!(threads * count * cores));
    m.insert("processor_nproc".into(), json!(get("nproc").parse::<i64>().unwrap_or(n("cpu_po"))));
}

/// The facts beyond the first set: memory, kernel_version, date_time, env, dns, the user's
/// entry, machine_id, uptime, loadavg, python_version, selinux.
fn more_facts(m: &mut Map<String, Value>, out: &str, kv: &[(&str, &str)]) {
    let get = |k: &str| kv.iter().find(|(x, _)| *x == k).map(|(_, v)| *v);
    let mb = |k: &str| get(&format!("mem_{k}")).and_then(|v| v.parse::<u64>().ok()).map(|kb| kb / 1024);
    for (k, name) in [("MemFree", "memfree_mb"), ("SwapTotal", "swaptotal_mb"), ("SwapFree", "swapfree_mb")] {
        if let Some(v) = mb(k) {
            m.insert(name.into(), json!(v));
        }
    }
    let sub = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a as i64 - b as i64);
    let nocache_free = mb("Cached").zip(mb("MemFree")).zip(mb("Buffers")).map(|((c, f), b)| c + f + b);
    m.insert(
        "memory_mb".into(),
        json!({
            "real": {"total": mb("MemTotal"), "used": sub(mb("MemTotal"), mb("MemFree")), "free": mb("MemFree")},
            "nocache": {"free": nocache_free, "used": sub(mb("MemTotal"), nocache_free)},
            "swap": {"total": mb("SwapTotal"), "free": mb("SwapFree"), "used": sub(mb("SwapTotal"), mb("SwapFree")), "cached": mb("SwapCached")},
        }),
    );
    m.insert("kernel_version".into(), json!(get("kernel_version").unwrap_or("")));
    let fqdn = m.get("fqdn").and_then(Value::as_str).unwrap_or("").to_string();
    m.insert("domain".into(), json!(fqdn.split_once('.').map_or("", |(_, d)| d)));
    m.insert("date_time".into(), date_time(kv));
    let env: Map<String, Value> = out
        .lines()
        .filter_map(|l| l.strip_prefix("env:"))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), json!(v.replace('\u{1e}', "\n"))))
        .collect();
    m.insert("env".into(), Value::Object(env));
    m.insert("dns".into(), dns(out.lines().filter_map(|l| l.strip_prefix("resolv:"))));
    // getent's passwd line: name:x:uid:gid:gecos:dir:shell.
    let pw: Vec<&str> = get("user_pw").unwrap_or("").split(':').collect();
    if pw.len() >= 7 {
        let int = |s: &str| s.parse::<u64>().map(Value::from).unwrap_or(Value::Null);
        m.insert("user_uid".into(), int(pw[2]));
        m.insert("user_gid".into(), int(pw[3]));
        m.insert("user_gecos".into(), json!(pw[4]));
        m.insert("user_dir".into(), json!(pw[5]));
        m.insert("user_shell".into(), json!(pw[6]));
    }
    let ids: Vec<u64> = get("ids").unwrap_or("").split_whitespace().filter_map(|x| x.parse().ok()).collect();
    if let [ruid, euid, rgid] = ids[..] {
        m.insert("real_user_id".into(), json!(ruid));
        m.insert("effective_user_id".into(), json!(euid));
        m.insert("real_group_id".into(), json!(rgid));
        // Ansible's is the real group too (os.getgid()).
        m.insert("effective_group_id".into(), json!(rgid));
    }
    if let Some(id) = get("machine_id") {
        m.insert("machine_id".into(), json!(id));
    }
    if let Some(up) = get("uptime").and_then(|u| u.parse::<f64>().ok()) {
        m.insert("uptime_seconds".into(), json!(up as u64));
    }
    let load: Vec<f64> = get("loadavg").unwrap_or("").split_whitespace().filter_map(|x| x.parse().ok()).collect();
    if let [a, b, c] = load[..] {
        m.insert("loadavg".into(), json!({"1m": a, "5m": b, "15m": c}));
    }
    if let Some(v) = get("python_version").and_then(|v| v.strip_prefix("Python ")).map(str::trim) {
        let parts: Vec<&str> = v.splitn(3, '.').collect();
        let num = |i: usize| {
            parts
                .get(i)
                .and_then(|p| p.chars().take_while(char::is_ascii_digit).collect::<String>().parse::<u64>().ok())
                .unwrap_or(0)
        };
        let tail = parts.get(2).map_or("", |p| p.trim_start_matches(|c: char| c.is_ascii_digit()));
        let (level, serial) = match tail.find(|c: char| c.is_ascii_digit()) {
            Some(i) => (&tail[..i], tail[i..].parse::<u64>().unwrap_or(0)),
            None => (tail, 0),
        };
        let level = match level {
            "" | "+" => "final",
            "a" => "alpha",
            "b" => "beta",
            _ => "candidate",
        };
        m.insert("python_version".into(), json!(format!("{}.{}.{}", num(0), num(1), num(2))));
        if let Some(Value::Object(py)) = m.get_mut("python") {
            py.insert(
                "version".into(),
                json!({"major": num(0), "minor": num(1), "micro": num(2), "releaselevel": level, "serial": serial}),
            );
            py.insert("version_info".into(), json!([num(0), num(1), num(2), level, serial]));
        }
    }
    // Ansible's selinux facts come from libselinux (its ctypes binding): without it, it says so.
    let (selinux, present) = match (get("selinux_py"), get("selinux_enforce")) {
        (Some("1"), None) => (json!({"status": "disabled"}), true),
        (Some("1"), Some(e)) => {
            let mode = |m: &str| match m.trim().to_lowercase().as_str() {
                "1" | "enforcing" => "enforcing",
                "0" | "permissive" => "permissive",
                "disabled" => "disabled",
                _ => "unknown",
            };
            (
                json!({"status": "enabled",
                       "policyvers": get("selinux_policyvers").and_then(|p| p.parse::<u64>().ok()).map_or(json!("unknown"), Value::from),
                       "config_mode": mode(get("selinux_config").unwrap_or("")),
                       "mode": mode(e),
                       "type": get("selinux_type").filter(|t| !t.is_empty()).unwrap_or("unknown")}),
                true,
            )
        }
        _ => (json!({"status": "Missing selinux Python library"}), false),
    };
    m.insert("selinux".into(), selinux);
    m.insert("selinux_python_present".into(), json!(present));
}

/// Ansible's date_time facts, all text, from one instant: local time, UTC for the iso8601
/// ones, and the zone's DST name as Python's time.tzname gives it (January's and July's names,
/// the one with the larger offset).
fn date_time(kv: &[(&str, &str)]) -> Value {
    let get =
        |k: &str| kv.iter().find(|(x, _)| *x == format!("dt_{k}")).map(|(_, v)| v.to_string()).unwrap_or_default();
    let mut d = Map::new();
    for k in ["year", "month", "weekday", "weekday_number", "weeknumber", "day", "hour", "minute", "second", "epoch"] {
        d.insert(k.into(), json!(get(k)));
    }
    d.insert("epoch_int".into(), json!(get("epoch")));
    d.insert("date".into(), json!(get("date")));
    d.insert("time".into(), json!(get("time")));
    // date's %N has nine digits, Python's %f six.
    let micro = get("iso8601_micro");
    let micro = match micro.strip_suffix('Z') {
        Some(m) if m.len() >= 3 => format!("{}Z", &m[..m.len() - 3]),
        _ => micro,
    };
    d.insert("iso8601_micro".into(), json!(micro));
    d.insert("iso8601".into(), json!(get("iso8601")));
    let basic = get("iso8601_basic");
    let basic = if basic.len() >= 3 { basic[..basic.len() - 3].to_string() } else { basic };
    d.insert("iso8601_basic".into(), json!(basic));
    d.insert("iso8601_basic_short".into(), json!(get("iso8601_basic_short")));
    d.insert("tz".into(), json!(get("tz")));
    let zone = |k: &str| -> (i64, String) {
        let v = get(k);
        let (off, name) = v.split_once(' ').unwrap_or(("", ""));
        (off.parse().unwrap_or(0), name.to_string())
    };
    let ((jan_off, jan), (jul_off, jul)) = (zone("jan"), zone("jul"));
    d.insert("tz_dst".into(), json!(if jan_off > jul_off { jan } else { jul }));
    d.insert("tz_offset".into(), json!(get("tz_offset")));
    Value::Object(d)
}

/// Ansible's dns facts from resolv.conf's lines.
fn dns<'a>(lines: impl Iterator<Item = &'a str>) -> Value {
    let mut d = Map::new();
    for line in lines {
        if line.starts_with('#') || line.starts_with(';') || line.trim().is_empty() {
            continue;
        }
        let t: Vec<&str> = line.split_whitespace().collect();
        match t[0] {
            "nameserver" => {
                let ns = d.entry("nameservers").or_insert_with(|| json!([]));
                if let Value::Array(a) = ns {
                    a.extend(t[1..].iter().map(|x| json!(x)));
                }
            }
            "domain" if t.len() > 1 => {
                d.insert("domain".into(), json!(t[1]));
            }
            "search" => {
                d.insert("search".into(), json!(t[1..]));
            }
            "sortlist" => {
                d.insert("sortlist".into(), json!(t[1..]));
            }
            "options" => {
                let o: Map<String, Value> = t[1..]
                    .iter()
                    .map(|x| match x.split_once(':') {
                        Some((k, v)) if !v.is_empty() => (k.to_string(), json!(v)),
                        _ => (x.split(':').next().unwrap_or(x).to_string(), json!(true)),
                    })
                    .collect();
                d.insert("options".into(), Value::Object(o));
            }
            _ => {}
        }
    }
    Value::Object(d)
}

/// The variables a gathering sets: `ansible_facts` and each fact as `ansible_X` (Ansible's
/// own `gather_subset` and `module_setup` under their names).
pub fn fact_vars(facts: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in &facts {
        let name =
            if matches!(k.as_str(), "gather_subset" | "module_setup") { k.clone() } else { format!("ansible_{k}") };
        out.insert(name, v.clone());
    }
    out.insert("ansible_facts".into(), Value::Object(facts));
    out
}

/// What the facts look like before they are gathered (plan-time template checks).
pub fn placeholder_vars() -> Map<String, Value> {
    let mut f = facts_from("");
    for k in [
        "memtotal_mb",
        "memfree_mb",
        "swaptotal_mb",
        "swapfree_mb",
        "processor_vcpus",
        "processor_count",
        "processor_cores",
        "processor_threads_per_core",
        "processor_nproc",
        "uptime_seconds",
        "user_uid",
        "user_gid",
        "real_user_id",
        "effective_user_id",
        "real_group_id",
        "effective_group_id",
    ] {
        f.insert(k.into(), json!(0));
    }
    for k in ["user_gecos", "user_dir", "user_shell", "machine_id", "python_version"] {
        f.insert(k.into(), json!(""));
    }
    f.insert("loadavg".into(), json!({"1m": 0.0, "5m": 0.0, "15m": 0.0}));
    f.insert("default_ipv4".into(), json!({"address": "", "gateway": "", "interface": ""}));
    // One address, so that `| first` (a node's own address) has something to give.
    f.insert("all_ipv4_addresses".into(), json!([""]));
    f.insert("python".into(), json!({"executable": "", "type": "CPython"}));
    f.insert("gather_subset".into(), json!(["all"]));
    f.insert("module_setup".into(), json!(true));
    fact_vars(f)
}

impl Kind for SetupArgs {
    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        // The arguments are checked first, as Ansible's module checks them before gathering.
        if let Err(e) = selected(self, Map::new()) {
            return Outcome::failed(e);
        }
        let out = match cx.sh(&script(), None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        if !out.success() {
            return Outcome::failed(format!("gathering facts: {}", String::from_utf8_lossy(&out.stderr).trim()))
                .with_output(&out);
        }
        let facts = match selected(self, facts_from(&String::from_utf8_lossy(&out.stdout))) {
            Ok(f) => f,
            Err(e) => return Outcome::failed(e),
        };
        let mut o = Outcome::ok("");
        // The module's result names the facts as its collectors do (`ansible_os_family`,
        // `gather_subset`); the host's variables without the prefix under `ansible_facts`.
        let named = fact_vars(facts.clone()).into_iter().filter(|(k, _)| k != "ansible_facts").collect();
        o.result.insert("ansible_facts".into(), Value::Object(named));
        o.facts = Some(fact_vars(facts));
        o.commands.push("gather facts".into());
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsets_and_filters_choose_as_ansible_does() {
        let names = |s: &[&str]| collectors(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(names(&["!all", "!min"]).unwrap(), Vec::<&str>::new());
        assert_eq!(names(&["!all", "!min", "network"]).unwrap(), ["distribution", "network", "platform"]);
        assert_eq!(names(&["!all", "!min", "os_family", "!nope"]).unwrap(), ["distribution"]);
        // Named outright wins over its negation; `!hardware` takes its fact ids too.
        assert_eq!(names(&["!all", "!min", "virtual", "!virtual"]).unwrap(), ["virtual"]);
        assert!(!names(&["all", "!hardware"]).unwrap().contains(&"hardware"));
        assert_eq!(names(&["min"]).unwrap(), names(&["!all"]).unwrap());
        let e = names(&["distribution", " network"]).unwrap_err();
        assert!(e.starts_with("Bad subset ' network' given to Ansible. gather_subset options allowed: all, all_ipv4_addresses, all_ipv6_addresses, apparmor,"), "{e}");
        assert!(e.ends_with(", virtualization_tech_host, virtualization_type"), "{e}");
        assert!(fnmatch("ansible_default_ipv4", "*ipv4*") && fnmatch("ansible_dns", "ansible_[dm]*"));
        assert!(!fnmatch("ansible_dns", "[!a]*") && fnmatch("a[b", "a[b") && fnmatch("ab", "a?"));
        assert!(kept("ansible_os_family", &["os_family".into()]) && !kept("module_setup", &["os*".into()]));
        assert!(kept("gather_subset", &["".into()]) && kept("x", &[]));
        assert_eq!(ansible_list("gather_subset", &json!("!all,network")).unwrap(), ["!all", "network"]);
        assert_eq!(ansible_list("gather_subset", &json!(5)).unwrap(), ["5"]);
        assert_eq!(
            ansible_int("gather_timeout", &json!("soon")).unwrap_err(),
            "argument 'gather_timeout' is of type str and we were unable to convert to int: \"'soon'\" cannot be converted to an int"
        );
        assert_eq!(ansible_int("gather_timeout", &json!("12")), Ok(12));
    }

    #[test]
    fn facts_are_named_and_valued_as_ansible_does() {
        let out = "id=debian\nversion_id=12\ndebian_version=12.11\nnode=vm\nfqdn=localhost\n\
                   default_address=192.0.2.2\ndefault_interface=eth0\ndefault_gateway=192.0.2.1\n\
                   ipv4=192.0.2.2\nmachine=x86_64\nkernel=6.1.0\nmemtotal_mb=24105\nvcpus=2\n\
                   service_mgr=systemd\npkg_bin=apt-get\n";
        let f = facts_from(out);
        assert_eq!(f["distribution"], "Debian");
        assert_eq!(f["os_family"], "Debian");
        assert_eq!(f["distribution_major_version"], "12");
        assert_eq!(f["distribution_version"], "12.11");
        assert_eq!(f["default_ipv4"], json!({"address": "192.0.2.2", "gateway": "192.0.2.1", "interface": "eth0"}));
        assert_eq!(f["all_ipv4_addresses"], json!(["192.0.2.2"]));
        assert_eq!(f["memtotal_mb"], 24105);
        assert_eq!(f["pkg_mgr"], "apt");
        let v = fact_vars(f);
        assert_eq!(v["ansible_os_family"], "Debian");
        assert_eq!(v["ansible_facts"]["hostname"], "vm");
        let rocky = facts_from("id=rocky\nversion_id=9.3\npkg_bin=dnf\npkg_bin=yum\n");
        assert_eq!((&rocky["distribution"], &rocky["distribution_major_version"]), (&json!("Rocky"), &json!("9")));
        assert_eq!(rocky["pkg_mgr"], "dnf");
    }

    #[test]
    fn cpus_dns_python_and_memory_as_ansible_counts_them() {
        // Two sockets of eight hyper-threaded cores, as /proc/cpuinfo's awk summary says it.
        let kv = [
            ("machine", "x86_64"),
            ("cpu_i", "64"),
            ("cpu_vid", "32"),
            ("cpu_mn", "32"),
            ("cpu_po", "32"),
            ("cpu_ns", "2"),
            ("cpu_s0", "8"),
            ("cpu_nc", "8"),
            ("cpu_c0", "16"),
            ("nproc", "30"),
        ];
        let mut m = Map::new();
        cpu_facts(&mut m, &kv);
        let got: Vec<&Value> =
            ["processor_count", "processor_cores", "processor_threads_per_core", "processor_vcpus", "processor_nproc"]
                .iter()
                .map(|k| &m[*k])
                .collect();
        assert_eq!(got, [&json!(2), &json!(8), &json!(2), &json!(32), &json!(30)]);
        let d = dns([
            "# generated",
            "nameserver 192.0.2.53",
            "nameserver 192.0.2.54",
            "search a.example b.example",
            "options ndots:2 rotate",
        ]
        .into_iter());
        assert_eq!(
            d,
            json!({"nameservers": ["192.0.2.53", "192.0.2.54"], "search": ["a.example", "b.example"], "options": {"ndots": "2", "rotate": true}})
        );
        let out = "python_version=Python 3.13.0rc2\nmem_MemTotal=2048000\nmem_MemFree=1024000\nmem_Buffers=10240\nmem_Cached=102400\n\
                   mem_SwapTotal=0\nmem_SwapFree=0\nmem_SwapCached=0\nloadavg=0.50 0.25 0.10\n";
        let kv: Vec<(&str, &str)> = out.lines().filter_map(|l| l.split_once('=')).collect();
        let mut m = Map::new();
        m.insert("python".into(), json!({"executable": "/usr/bin/python3"}));
        more_facts(&mut m, out, &kv);
        assert_eq!(m["python_version"], "3.13.0");
        assert_eq!(m["python"]["version_info"], json!([3, 13, 0, "candidate", 2]));
        assert_eq!(m["memory_mb"]["real"], json!({"total": 2000, "used": 1000, "free": 1000}));
        assert_eq!(m["memory_mb"]["nocache"], json!({"free": 1110, "used": 890}));
        assert_eq!(m["loadavg"], json!({"1m": 0.5, "5m": 0.25, "15m": 0.1}));
        assert_eq!(m["selinux"], json!({"status": "Missing selinux Python library"}));
    }
}
