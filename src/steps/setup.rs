//! `setup`: gathers the facts Ansible playbooks read most (distribution, os_family, hostname,
//! addresses, architecture, kernel, memory, CPUs, service and package manager, virtualization)
//! in one remote
//! command, and sets them as `ansible_facts.X` and `ansible_X`, with the values Ansible's own
//! setup module reports on the same host. What the Ansible front-end puts first in a play that
//! gathers facts; a native step may use it too.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Guards, Kind, Outcome, StepCtx};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct SetupArgs {}

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
awk -F: '/^processor/{n++} /^physical id/{s[$2]=1} /^siblings/{sib=$2+0} END{c=0; for(k in s)c++; if (c>0 && sib>0) print "vcpus=" c*sib; else print "vcpus=" n}' /proc/cpuinfo
p1=$(cat /proc/1/comm 2>/dev/null); p1=${p1##*/}
case "$p1" in init|*sh) p1= ;; runit-init) p1=runit ;; esac
sys=0; if command -v systemctl >/dev/null 2>&1; then for d in /run/systemd/system/ /dev/.run/systemd/ /dev/.systemd/; do [ -e "$d" ] && sys=1; done; fi
off=0; if command -v systemctl >/dev/null 2>&1 && [ -L /sbin/init ] && [ "$(basename "$(readlink -f /sbin/init)")" = systemd ]; then off=1; fi
if [ -n "$p1" ]; then m=$p1; elif [ $sys = 1 ]; then m=systemd; elif command -v initctl >/dev/null 2>&1 && [ -e /etc/init/ ]; then m=upstart
elif [ -e /sbin/openrc ]; then m=openrc; elif [ $off = 1 ]; then m=systemd; elif [ -e /etc/init.d/ ]; then m=sysvinit; elif [ -e /etc/dinit.d/ ]; then m=dinit; else m=service; fi
echo "service_mgr=$m"
echo "user_id=$(id -un)"
echo "python=$(command -v python3 2>/dev/null || command -v python 2>/dev/null)"
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
    for (k, name) in [("default_address", "address"), ("default_gateway", "gateway"), ("default_interface", "interface")]
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
    m.insert("processor_vcpus".into(), num("vcpus"));
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
    // The interpreter Ansible would discover (its path only: no Python runs to ask its version).
    if !get("python").is_empty() {
        m.insert("python".into(), json!({"executable": get("python"), "type": "CPython"}));
    }
    m
}

/// The variables a gathering sets: `ansible_facts` and each fact as `ansible_X`.
pub fn fact_vars(facts: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in &facts {
        out.insert(format!("ansible_{k}"), v.clone());
    }
    out.insert("ansible_facts".into(), Value::Object(facts));
    out
}

/// What the facts look like before they are gathered (plan-time template checks).
pub fn placeholder_vars() -> Map<String, Value> {
    let mut f = facts_from("");
    for k in ["memtotal_mb", "processor_vcpus"] {
        f.insert(k.into(), json!(0));
    }
    f.insert("default_ipv4".into(), json!({"address": "", "gateway": "", "interface": ""}));
    // One address, so that `| first` (a node's own address) has something to give.
    f.insert("all_ipv4_addresses".into(), json!([""]));
    f.insert("python".into(), json!({"executable": "", "type": "CPython"}));
    fact_vars(f)
}

impl Kind for SetupArgs {
    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let out = match cx.sh(&script(), None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        if !out.success() {
            return Outcome::failed(format!("gathering facts: {}", String::from_utf8_lossy(&out.stderr).trim()))
                .with_output(&out);
        }
        let facts = facts_from(&String::from_utf8_lossy(&out.stdout));
        let mut o = Outcome::ok("");
        o.result.insert("ansible_facts".into(), Value::Object(facts.clone()));
        o.facts = Some(fact_vars(facts));
        o.commands.push("gather facts".into());
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
