//! `copctl gpu status`: the chapter's questions answered from one read of the cluster — which
//! device classes there are, which devices each node has and what is left of them, which claims
//! hold what and who uses them — with the two things the chapter asks operators to look for
//! flagged: claims Allocated with no consumer ("held without use — cleanup candidate") and
//! Pending claims and pods, each with the likely cause from its "When Nothing Is Allocated" table.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::cluster::{Claim, Device, Pod, Snapshot, milli};
use crate::text::closest::closest;

#[derive(Debug, Serialize)]
pub struct Status {
    pub device_classes: Vec<super::cluster::DeviceClass>,
    pub nodes: Vec<NodeDevices>,
    pub claims: Vec<ClaimStatus>,
    /// Pods that wait although their claims are allocated, or that can never get a device.
    pub pods: Vec<PodStatus>,
    pub summary: Summary,
}

#[derive(Debug, Serialize)]
pub struct NodeDevices {
    pub node: String,
    pub devices: Vec<DeviceStatus>,
}

#[derive(Debug, Serialize)]
pub struct DeviceStatus {
    #[serde(flatten)]
    pub device: Device,
    pub partitioned: bool,
    /// The claims holding it (`ns/name`) and what each consumes.
    pub allocated_to: Vec<Holding>,
    pub free: bool,
    /// A shareable device's capacity not consumed yet.
    pub remaining: BTreeMap<String, String>,
}

#[derive(Debug, Serialize)]
pub struct Holding {
    pub claim: String,
    pub consumed: BTreeMap<String, String>,
}

#[derive(Debug, Serialize)]
pub struct ClaimStatus {
    #[serde(flatten)]
    pub claim: Claim,
    pub state: &'static str,
    /// `held without use — cleanup candidate`, or why it is Pending.
    pub flag: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct PodStatus {
    pub pod: String,
    pub phase: String,
    pub cause: String,
}

#[derive(Debug, Serialize)]
pub struct Summary {
    pub nodes: usize,
    pub devices: usize,
    pub free: usize,
    pub allocated: usize,
    pub pending: usize,
    pub held_without_use: usize,
}

/// Thousandths as Kubernetes writes a quantity: the largest binary unit that divides it.
fn quantity(m: i128) -> String {
    for (unit, f) in [("Ti", 1i128 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
        if m != 0 && m % (f * 1000) == 0 {
            return format!("{}{unit}", m / (f * 1000));
        }
    }
    if m % 1000 == 0 { format!("{}", m / 1000) } else { format!("{m}m") }
}

pub const HELD: &str = "held without use — cleanup candidate";

pub fn status(snap: &Snapshot) -> Status {
    let mut by_node: BTreeMap<&str, Vec<DeviceStatus>> = BTreeMap::new();
    for d in &snap.devices {
        let holders = snap.holders(&d.node, &d.name);
        let allocated_to: Vec<Holding> = holders
            .iter()
            .map(|c| Holding {
                claim: c.key(),
                consumed: c
                    .allocated
                    .iter()
                    .filter(|a| a.node == d.node && a.device == d.name)
                    .flat_map(|a| a.consumed.clone())
                    .collect(),
            })
            .collect();
        let remaining = if d.shareable {
            d.capacity
                .iter()
                .filter_map(|(k, c)| {
                    let total = milli(&c.value)?;
                    let used: i128 = allocated_to.iter().filter_map(|h| h.consumed.get(k).and_then(|q| milli(q))).sum();
                    Some((k.clone(), quantity(total - used)))
                })
                .collect()
        } else {
            BTreeMap::new()
        };
        by_node.entry(&d.node).or_default().push(DeviceStatus {
            device: d.clone(),
            partitioned: d.mig_profile.is_some(),
            free: allocated_to.is_empty(),
            allocated_to,
            remaining,
        });
    }
    let nodes: Vec<NodeDevices> =
        by_node.into_iter().map(|(n, devices)| NodeDevices { node: n.to_string(), devices }).collect();
    let claims: Vec<ClaimStatus> = snap
        .claims
        .iter()
        .map(|c| {
            let flag = if !c.allocated.is_empty() && c.consumers.is_empty() {
                Some(HELD.to_string())
            } else if c.allocated.is_empty() {
                Some(pending_cause(snap, c))
            } else {
                None
            };
            ClaimStatus { claim: c.clone(), state: c.state(), flag }
        })
        .collect();
    let pods = snap
        .pods
        .iter()
        .filter_map(|p| pod_cause(snap, p).map(|cause| (p, cause)))
        .map(|(p, cause)| PodStatus { pod: format!("{}/{}", p.namespace, p.name), phase: p.phase.clone(), cause });
    let pods: Vec<PodStatus> = pods.collect();
    let devices: usize = nodes.iter().map(|n| n.devices.len()).sum();
    let free = nodes.iter().flat_map(|n| &n.devices).filter(|d| d.free).count();
    let summary = Summary {
        nodes: nodes.len(),
        devices,
        free,
        allocated: claims.iter().filter(|c| c.state == "Allocated").count(),
        pending: claims.iter().filter(|c| c.state == "Pending").count(),
        held_without_use: claims.iter().filter(|c| c.flag.as_deref() == Some(HELD)).count(),
    };
    Status { device_classes: snap.classes.clone(), nodes, claims, pods, summary }
}

/// Why a claim is Pending, in the chapter's terms.
pub fn pending_cause(snap: &Snapshot, c: &Claim) -> String {
    let users = snap.users(c);
    if users.is_empty() {
        return "waiting for a pod: a claim is allocated when a pod using it is scheduled".into();
    }
    for r in &c.requests {
        let Some(class) = snap.class(&r.device_class) else {
            let names: Vec<&str> = snap.classes.iter().map(|k| k.name.as_str()).collect();
            let near = closest(&r.device_class, names.iter().copied(), 1);
            return format!(
                "no device matches: device class '{}' does not exist{}{}",
                r.device_class,
                match near.first() {
                    Some(n) => format!(" (did you mean '{n}'?)"),
                    None => String::new(),
                },
                if names.is_empty() {
                    "; the cluster has no device class: the DRA driver is not installed or not running".to_string()
                } else {
                    format!("; the cluster's: {}", names.join(", "))
                }
            );
        };
        // Where its pods may go: the node a nodeSelector names, else any.
        let on = users.iter().find_map(|p| p.for_node.as_deref());
        let matching: Vec<&Device> =
            snap.devices.iter().filter(|d| snap.class_selects(class, d) && on.is_none_or(|n| d.node == n)).collect();
        if matching.is_empty() {
            let models: Vec<String> = {
                let mut m: Vec<String> = snap
                    .devices
                    .iter()
                    .filter(|d| on.is_none_or(|n| d.node == n))
                    .filter_map(|d| d.model.clone())
                    .collect();
                m.sort();
                m.dedup();
                m
            };
            return format!(
                "no device matches the conditions: {} publishes no device of class {}{}",
                on.unwrap_or("no node"),
                class.name,
                match (models.is_empty(), on) {
                    (true, Some(_)) =>
                        " (it publishes no device: is the DRA driver's kubelet plugin running there?)".to_string(),
                    (true, None) => String::new(),
                    (false, _) => format!(" (its devices: {})", models.join(", ")),
                }
            );
        }
        let free: Vec<&&Device> = matching.iter().filter(|d| snap.holders(&d.node, &d.name).is_empty()).collect();
        if free.is_empty() {
            let held: Vec<String> = matching
                .iter()
                .map(|d| {
                    let by: Vec<String> = snap.holders(&d.node, &d.name).iter().map(|h| h.key()).collect();
                    format!("{}/{} to {}", d.node, d.name, by.join(", "))
                })
                .collect();
            if matching.iter().all(|d| !d.shareable) {
                return format!(
                    "no devices left: the {} device(s) of class {} are allocated ({}) and none is shareable \
                     (sharing is off): wait for a holder to end, or free one held without use",
                    matching.len(),
                    class.name,
                    held.join("; ")
                );
            }
            if !r.capacity.is_empty() && !fits_somewhere(snap, &matching, &r.capacity) {
                let asked: Vec<String> = r.capacity.iter().map(|(k, v)| format!("{k} {v}")).collect();
                return format!(
                    "no devices left: the shareable devices of class {} have no room for {} ({})",
                    class.name,
                    asked.join(", "),
                    held.join("; ")
                );
            }
        }
    }
    // Devices are there: what the scheduler said of the pods waiting on it.
    let said: Vec<&str> = users.iter().filter_map(|p| p.unschedulable.as_deref()).collect();
    match said.first() {
        Some(m) => scheduler_cause(m),
        None if users.iter().any(|p| p.node_pinned) => PINNED.into(),
        None => "waiting for the scheduler".into(),
    }
}

const PINNED: &str = "the pod names its node (spec.nodeName): DRA needs the scheduler to allocate the device, \
                      so it never is; use a nodeSelector instead";

/// Whether some device among `devs` has room for `asked`.
fn fits_somewhere(snap: &Snapshot, devs: &[&Device], asked: &BTreeMap<String, String>) -> bool {
    devs.iter().any(|d| {
        d.shareable
            && asked.iter().all(|(k, v)| {
                let Some(cap) = d.capacity.get(k).and_then(|c| milli(&c.value)) else { return false };
                let used: i128 = snap
                    .holders(&d.node, &d.name)
                    .iter()
                    .flat_map(|c| &c.allocated)
                    .filter(|a| a.node == d.node && a.device == d.name)
                    .filter_map(|a| a.consumed.get(k).and_then(|q| milli(q)))
                    .sum();
                milli(v).is_some_and(|want| used + want <= cap)
            })
    })
}

/// The scheduler's message read as the chapter's causes.
fn scheduler_cause(m: &str) -> String {
    if m.contains("Insufficient cpu") || m.contains("Insufficient memory") {
        format!("the node lacks CPU or memory: {m}")
    } else if m.contains("untolerated taint") {
        format!("the pod does not tolerate the GPU nodes' taint (add a toleration for its key): {m}")
    } else if m.contains("node affinity/selector") && !m.contains("cannot allocate") {
        format!("no node matches the pod's nodeSelector: {m}")
    } else if m.contains("Insufficient nvidia.com/gpu") {
        format!(
            "the pod still asks for nvidia.com/gpu in its limits (the old way): under DRA no node has it; \
             remove the limit and keep the claim: {m}"
        )
    } else {
        m.to_string()
    }
}

/// A pod worth a line: waiting although its claims are allocated (the node lacks resources), or
/// pinned to a node so that its claims never are.
fn pod_cause(snap: &Snapshot, p: &Pod) -> Option<String> {
    if p.phase == "Running" || p.phase == "Succeeded" || (p.claims.is_empty() && p.templates.is_empty()) {
        return None;
    }
    if p.node_pinned {
        return Some(PINNED.into());
    }
    let claims: Vec<&Claim> =
        snap.claims.iter().filter(|c| c.namespace == p.namespace && p.claims.contains(&c.name)).collect();
    let missing: Vec<&String> = p.claims.iter().filter(|n| !claims.iter().any(|c| &c.name == *n)).collect();
    if let Some(n) = missing.first() {
        return Some(format!(
            "its claim {}/{n} does not exist: create the claim before the pod (resourceClaimName)",
            p.namespace
        ));
    }
    if !claims.is_empty() && claims.iter().all(|c| !c.allocated.is_empty()) && p.templates.is_empty() {
        let m = p.unschedulable.as_deref().unwrap_or("not scheduled yet");
        return Some(format!("the claim was allocated but the pod waits: {}", scheduler_cause(m)));
    }
    None
}

fn table(out: &mut String, indent: &str, rows: &[Vec<String>]) {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..cols).map(|i| rows.iter().map(|r| r.get(i).map_or(0, |c| c.chars().count())).max().unwrap_or(0)).collect();
    for r in rows {
        let mut line = indent.to_string();
        for (i, c) in r.iter().enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                let _ = write!(line, "{c:<w$}  ", w = widths[i]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

pub fn human(st: &Status) -> String {
    let mut out = String::new();
    let classes: Vec<&str> = st.device_classes.iter().map(|c| c.name.as_str()).collect();
    let _ = writeln!(
        out,
        "Device classes: {}",
        if classes.is_empty() {
            "none (no DRA driver is installed or running)".to_string()
        } else {
            classes.join(", ")
        }
    );
    for n in &st.nodes {
        let _ = writeln!(out, "\n{}", n.node);
        let mut rows = vec![
            ["DEVICE", "MODEL", "MEMORY", "SHAREABLE", "CAPACITY", "REQUEST RANGE", "MIG", "ALLOCATED TO"]
                .map(String::from)
                .to_vec(),
        ];
        for d in &n.devices {
            let dev = &d.device;
            let caps: Vec<String> = if dev.shareable {
                dev.capacity.iter().map(|(k, c)| format!("{k} {}", c.value)).collect()
            } else {
                Vec::new()
            };
            let ranges: Vec<String> = if dev.shareable {
                dev.capacity.iter().filter_map(|(k, c)| c.request_range.as_ref().map(|r| format!("{k} {r}"))).collect()
            } else {
                Vec::new()
            };
            let held: Vec<String> = d
                .allocated_to
                .iter()
                .map(|h| {
                    let c: Vec<String> = h.consumed.iter().map(|(k, v)| format!("{k} {v}")).collect();
                    if c.is_empty() { h.claim.clone() } else { format!("{} ({})", h.claim, c.join(", ")) }
                })
                .collect();
            rows.push(vec![
                dev.name.clone(),
                dev.model.clone().unwrap_or_else(|| "-".into()),
                dev.memory.clone().unwrap_or_else(|| "-".into()),
                if dev.shareable { "yes" } else { "no" }.into(),
                if caps.is_empty() { "-".into() } else { caps.join(", ") },
                if ranges.is_empty() { "-".into() } else { ranges.join(", ") },
                dev.mig_profile.clone().unwrap_or_else(|| "-".into()),
                match (held.is_empty(), d.remaining.is_empty()) {
                    (true, _) => "free".into(),
                    (false, true) => held.join(", "),
                    (false, false) => {
                        let left: Vec<String> = d.remaining.iter().map(|(k, v)| format!("{k} {v}")).collect();
                        format!("{}; {} left", held.join(", "), left.join(", "))
                    }
                },
            ]);
        }
        table(&mut out, "  ", &rows);
    }
    if st.nodes.is_empty() {
        out.push_str("\nNo node publishes a resource slice: no GPU node runs the DRA driver's kubelet plugin.\n");
    }
    out.push_str("\nClaims\n");
    if st.claims.is_empty() {
        out.push_str("  none\n");
    } else {
        let mut rows = vec![["CLAIM", "STATE", "ALLOCATION", "CONSUMERS"].map(String::from).to_vec()];
        let mut flags = Vec::new();
        for c in &st.claims {
            let alloc: Vec<String> = c.claim.allocated.iter().map(|a| format!("{}/{}", a.node, a.device)).collect();
            rows.push(vec![
                c.claim.key(),
                c.state.to_string(),
                if alloc.is_empty() { "-".into() } else { alloc.join(", ") },
                if c.claim.consumers.is_empty() { "-".into() } else { c.claim.consumers.join(", ") },
            ]);
            if let Some(f) = &c.flag {
                flags.push(format!("  {}: {f}\n", c.claim.key()));
            }
        }
        table(&mut out, "  ", &rows);
        if !flags.is_empty() {
            out.push('\n');
            for f in flags {
                out.push_str(&f);
            }
        }
    }
    if !st.pods.is_empty() {
        out.push_str("\nPods waiting\n");
        for p in &st.pods {
            let _ = writeln!(out, "  {} ({}): {}", p.pod, p.phase, p.cause);
        }
    }
    let s = &st.summary;
    let _ = writeln!(
        out,
        "\n{} device(s) on {} node(s), {} free; {} claim(s) Allocated, {} Pending, {} held without use",
        s.devices, s.nodes, s.free, s.allocated, s.pending, s.held_without_use
    );
    out
}
