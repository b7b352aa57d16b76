//! A pod's claims as the chapter writes them: listed in both places (the pod's
//! `spec.resourceClaims` and a container's `resources.claims`) under one name, each naming
//! either a claim or a template, in the pod's own namespace; no `nodeName` beside them and no
//! `nvidia.com/gpu` limit (the old way) beside them; a template under several replicas
//! needing that many devices.

use super::objects::{Object, PodSpec, containers};
use super::tree::Node;
use super::{Cx, claims, closest};

const CLAIM: &str = "resourceClaimName";
const TEMPLATE: &str = "resourceClaimTemplateName";

/// One entry of the pod's `spec.resourceClaims`.
struct PodClaim<'a> {
    name: String,
    line: usize,
    entry: &'a Node,
}

pub(super) fn check(cx: &mut Cx, p: &PodSpec) {
    let o = p.owner;
    let claims = pod_claims(cx, o, p.spec);
    let names: Vec<&str> = claims.iter().map(|c| c.name.as_str()).collect();
    let mut used: Vec<String> = Vec::new();
    let mut unmatched = false;
    for c in containers(p.spec) {
        let cname = c.get("name").and_then(Node::text).unwrap_or_default();
        for e in c.at(&["resources", "claims"]).map(Node::items).unwrap_or_default() {
            let Some(name) = e.get("name").and_then(Node::text) else { continue };
            unmatched |= !names.contains(&name.as_str());
            container_claim(cx, o, &cname, &name, e.key_line("name"), &names);
            used.push(name);
        }
        old_gpu_limit(cx, o, c, &cname, &names);
    }
    for c in &claims {
        // A name differing in the two places is said once, where the container uses it.
        if !used.contains(&c.name) && !unmatched {
            cx.error(
                o,
                c.line,
                "unused-claim",
                format!(
                    "the pod's claim '{}' is used by no container: the device is allocated and held, and no container \
                     sees the GPU",
                    c.name
                ),
                format!(
                    "add it to the container that needs the GPU: resources: {{claims: [{{name: {}}}]}} (the chapter: \
                     it has to be written in two places)",
                    c.name
                ),
            );
        }
        references(cx, p, c);
    }
    if let Some((k, v)) = p.spec.entry("nodeName")
        && !claims.is_empty()
    {
        let node = v.text().unwrap_or_default();
        cx.error(
            o,
            k.line,
            "node-name",
            format!(
                "nodeName pins the pod to '{node}' and the pod has claims: a pinned pod skips the scheduler, which \
                 allocates the devices, so its claims are never allocated"
            ),
            format!("send it to the node with nodeSelector: {{kubernetes.io/hostname: {node}}} instead of nodeName"),
        );
    }
}

/// The pod's `spec.resourceClaims`, each checked on its own: a name, once, and exactly one of
/// a claim or a template.
fn pod_claims<'a>(cx: &mut Cx, o: &Object, spec: &'a Node) -> Vec<PodClaim<'a>> {
    let mut out: Vec<PodClaim> = Vec::new();
    for e in spec.get("resourceClaims").map(Node::items).unwrap_or_default() {
        let Some(name) = e.get("name").and_then(Node::text) else {
            cx.error(
                o,
                e.line,
                "pod-claim",
                "an entry of spec.resourceClaims has no name; Kubernetes rejects the pod".into(),
                "give it the name the containers' resources.claims use: - name: gpu".into(),
            );
            continue;
        };
        let line = e.key_line("name");
        if out.iter().any(|c| c.name == name) {
            cx.error(
                o,
                line,
                "pod-claim",
                format!("the claim name '{name}' is listed twice in spec.resourceClaims; Kubernetes rejects the pod"),
                "give each entry a name of its own".into(),
            );
            continue;
        }
        match (e.entry(CLAIM), e.entry(TEMPLATE)) {
            (Some((_, claim)), Some((k, _))) => cx.error(
                o,
                k.line,
                "pod-claim",
                format!("claim '{name}' gives both {CLAIM} and {TEMPLATE}; Kubernetes rejects the pod"),
                format!(
                    "keep {CLAIM} to share the claim '{}' with other pods, or {TEMPLATE} for a claim of the pod's own",
                    claim.text().unwrap_or_default()
                ),
            ),
            (None, None) if e.get("source").is_some() => cx.error(
                o,
                e.key_line("source"),
                "pod-claim",
                format!("claim '{name}' is written under source:, which Kubernetes 1.31 removed; it rejects the pod"),
                format!("write {CLAIM}: or {TEMPLATE}: directly in the entry, without source:"),
            ),
            (None, None) => cx.error(
                o,
                line,
                "pod-claim",
                format!("claim '{name}' gives neither {CLAIM} nor {TEMPLATE}; Kubernetes rejects the pod"),
                format!(
                    "{CLAIM}: CLAIM shares a claim created beforehand; {TEMPLATE}: TEMPLATE gives each pod a claim of \
                     its own"
                ),
            ),
            _ => {}
        }
        out.push(PodClaim { name, line, entry: e });
    }
    out
}

/// A container's claim must be one of the pod's, by the same name.
fn container_claim(cx: &mut Cx, o: &Object, container: &str, name: &str, line: usize, names: &[&str]) {
    if names.contains(&name) {
        return;
    }
    if names.is_empty() {
        cx.error(
            o,
            line,
            "container-claim",
            format!(
                "container '{container}' uses the claim '{name}', and the pod has no spec.resourceClaims: Kubernetes \
                 rejects the pod"
            ),
            format!(
                "list it in the pod's spec.resourceClaims too: - name: {name} with {CLAIM}: or {TEMPLATE}: (the \
                 chapter: it has to be written in two places)"
            ),
        );
        return;
    }
    let listed = names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
    let help = match closest(name, names.iter().copied()) {
        Some(near) => format!("did you mean '{near}'? the name must be the same in both places"),
        None => format!("use a name from spec.resourceClaims ({listed}); the name must be the same in both places"),
    };
    cx.error(
        o,
        line,
        "container-claim",
        format!(
            "container '{container}' uses the claim '{name}', which is not in the pod's spec.resourceClaims ({listed}): \
             Kubernetes rejects the pod"
        ),
        help,
    );
}

/// `nvidia.com/gpu` in a container's limits or requests: the old way, beside a claim a second
/// device; alone, a resource a DRA cluster (its device plugin off) offers on no node.
fn old_gpu_limit(cx: &mut Cx, o: &Object, c: &Node, container: &str, claims: &[&str]) {
    for section in ["limits", "requests"] {
        let Some((k, _)) = c.at(&["resources", section]).and_then(|r| r.entry("nvidia.com/gpu")) else { continue };
        if claims.is_empty() {
            cx.warning(
                o,
                k.line,
                "old-gpu-limit",
                format!(
                    "container '{container}' asks for nvidia.com/gpu in its {section}, the old way: under DRA the \
                     device plugin is off and no node offers nvidia.com/gpu"
                ),
                "request the GPU with a claim: spec.resourceClaims in the pod and resources.claims in the container \
                 (the chapter's method 1 or 2)"
                    .into(),
            );
        } else {
            cx.error(
                o,
                k.line,
                "old-gpu-limit",
                format!(
                    "container '{container}' asks for nvidia.com/gpu in its {section} beside the pod's claims: the GPU \
                     is requested twice, the old way and through DRA"
                ),
                format!(
                    "remove {section}.nvidia.com/gpu (the claim requests the GPU); leave the CPU and memory {section} \
                     as they are"
                ),
            );
        }
    }
}

/// What a pod's claim points at among the manifests: a claim or template in another namespace,
/// one of the other kind, a near miss; a template under several replicas; a claim shared by a
/// DaemonSet's pods on every node.
fn references(cx: &mut Cx, p: &PodSpec, c: &PodClaim) {
    let o = p.owner;
    let (key, target, kind, other) = match (c.entry.entry(CLAIM), c.entry.entry(TEMPLATE)) {
        (Some((k, v)), None) => (k, v, "ResourceClaim", "ResourceClaimTemplate"),
        (None, Some((k, v))) => (k, v, "ResourceClaimTemplate", "ResourceClaim"),
        _ => return,
    };
    let Some(target) = target.text() else { return };
    let ns = o.namespace;
    let same_ns = |x: &Object| x.namespace == ns;
    let of_kind: Vec<&Object> = cx.objects.iter().filter(|x| x.kind == kind).collect();
    let here = of_kind.iter().find(|x| x.name == target && same_ns(x)).copied();
    if here.is_none() {
        let elsewhere: Vec<&str> =
            of_kind.iter().filter(|x| x.name == target && x.namespace.is_some()).filter_map(|x| x.namespace).collect();
        if let (Some(pod_ns), Some(first)) = (ns, elsewhere.first())
            && !elsewhere.contains(&pod_ns)
        {
            cx.error(
                o,
                key.line,
                "claim-namespace",
                format!(
                    "the {kind} '{target}' is in namespace {first} and the pod in {pod_ns}: claims are \
                     namespace-scoped, and a pod uses only those of its own namespace"
                ),
                format!(
                    "create the {kind} in {pod_ns} too; pods of two namespaces share one device only where the driver \
                     shares devices (ask operations staff)"
                ),
            );
            return;
        }
        if cx.objects.iter().any(|x| x.kind == other && x.name == target && same_ns(x)) {
            let fix = if kind == "ResourceClaim" { TEMPLATE } else { CLAIM };
            cx.warning(
                o,
                key.line,
                "claim-kind",
                format!("{} names a {kind}, and '{target}' is a {other}", key.name),
                format!("write {fix}: {target}, or create a {kind} '{target}'"),
            );
            return;
        }
        let names = of_kind.iter().filter(|x| same_ns(x)).map(|x| x.name.as_str());
        if let Some(near) = closest(&target, names) {
            cx.warning(
                o,
                key.line,
                "claim-missing",
                format!(
                    "no {kind} '{target}' among the manifests, and '{near}' is: the pod stays Pending until a {kind} \
                     '{target}' exists"
                ),
                format!("did you mean '{near}'?"),
            );
        }
    }
    if kind == "ResourceClaimTemplate" {
        if let Some((n, what)) = &p.at_once
            && *n > 1
        {
            let per = here.and_then(claims::devices_per_claim).unwrap_or(1);
            cx.warning(
                o,
                key.line,
                "template-replicas",
                format!(
                    "{what}, each pod with a claim of its own from the template '{target}': {} devices are needed, \
                     and the pods beyond the free devices stay Pending",
                    n * per
                ),
                format!(
                    "to share one device among the pods, create a ResourceClaim and point at it with {CLAIM} (the \
                     chapter's method 1); keep the template where each pod needs a device of its own"
                ),
            );
        }
    } else if p.per_node {
        cx.warning(
            o,
            key.line,
            "daemonset-claim",
            format!(
                "a DaemonSet runs a pod on every node it selects, and the claim '{target}' is a device on one node: \
                 the pods on the other nodes stay Pending"
            ),
            format!("give each pod a claim of its own on its node: {TEMPLATE}"),
        );
    }
}
