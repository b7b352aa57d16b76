//! The DRA objects users write (ResourceClaim, ResourceClaimTemplate; DeviceClass for its API
//! version): the API version the cluster serves, `spec` once in a claim and twice in a template,
//! each request's device class under `exactly:` (v1's layout), and a class that exists.

use super::objects::Object;
use super::tree::Node;
use super::{Cx, closest};

const GROUP: &str = "resource.k8s.io/";

pub(super) fn check(cx: &mut Cx, o: &Object) {
    if !matches!(o.kind, "ResourceClaim" | "ResourceClaimTemplate" | "DeviceClass") {
        return;
    }
    let version = o.api_version.and_then(|v| v.strip_prefix(GROUP));
    if o.api_version.is_some() {
        api_version(cx, o, version);
    }
    if o.kind == "DeviceClass" {
        return;
    }
    let Some(spec) = claim_spec(cx, o) else { return };
    // v1beta1 wrote a request's class directly in it: said once, by the API version's finding.
    let beta1 = version == Some("v1beta1");
    for r in spec.at(&["devices", "requests"]).map(Node::items).unwrap_or_default() {
        request(cx, o, r, beta1);
    }
}

fn api_version(cx: &mut Cx, o: &Object, version: Option<&str>) {
    let line = o.node.key_line("apiVersion");
    let written = o.api_version.unwrap_or_default();
    let (message, help) = match version {
        Some("v1") => return,
        Some(v @ ("v1beta1" | "v1beta2")) => (
            format!(
                "{written} is a beta version of the DRA API: Kubernetes 1.34 serves resource.k8s.io/v1, and a beta \
                 version only where the API server's runtime-config turns it on"
            ),
            if v == "v1beta1" {
                "write apiVersion: resource.k8s.io/v1, and move each request's deviceClassName, allocationMode and count \
                 under exactly: (v1's layout)"
                    .to_string()
            } else {
                "write apiVersion: resource.k8s.io/v1 (the layout is v1beta2's)".to_string()
            },
        ),
        _ => (
            format!("{written} is not an API version of {}: the cluster serves resource.k8s.io/v1", o.kind),
            "write apiVersion: resource.k8s.io/v1, as the manual's examples do".to_string(),
        ),
    };
    cx.error(o, line, "api-version", message, help);
}

/// The claim's own spec: a claim's `spec`, a template's `spec.spec`; a finding where a claim
/// is written with a template's layout or the other way round.
fn claim_spec<'a>(cx: &mut Cx, o: &Object<'a>) -> Option<&'a Node> {
    let spec = o.node.get("spec")?;
    match (o.kind, spec.entry("spec")) {
        ("ResourceClaimTemplate", Some((_, inner))) => Some(inner),
        ("ResourceClaimTemplate", None) => {
            if spec.get("devices").is_some() {
                cx.error(
                    o,
                    spec.key_line("devices"),
                    "template-spec",
                    "devices is directly under spec; a template's claim goes under spec.spec".into(),
                    "write spec twice: the outer spec is the template's, the inner one that of the claims it stamps out \
                     (spec: {spec: {devices: ...}})"
                        .into(),
                );
            }
            None
        }
        (_, Some((k, _))) => {
            cx.error(
                o,
                k.line,
                "claim-spec",
                "spec.spec is a ResourceClaimTemplate's layout; a ResourceClaim has spec once".into(),
                "move devices up under the claim's spec (spec: {devices: ...}), or make it kind: ResourceClaimTemplate"
                    .into(),
            );
            None
        }
        (_, None) => Some(spec),
    }
}

fn request(cx: &mut Cx, o: &Object, r: &Node, beta1: bool) {
    let name = r.get("name").and_then(Node::text).unwrap_or_default();
    if let Some(exactly) = r.get("exactly") {
        class(cx, o, &name, exactly);
        allocation(cx, o, &name, exactly);
    } else if let Some((k, _)) = r.entry("deviceClassName") {
        if !beta1 {
            cx.error(
                o,
                k.line,
                "request-layout",
                format!(
                    "request '{name}' has deviceClassName directly, as resource.k8s.io/v1beta1 had it; in {} it goes \
                     under exactly:",
                    o.api_version.unwrap_or("resource.k8s.io/v1")
                ),
                "write exactly: {deviceClassName: ..., allocationMode: ExactCount, count: 1} in the request (the \
                 chapter's layout)"
                    .into(),
            );
        }
        class(cx, o, &name, r);
        allocation(cx, o, &name, r);
    } else if let Some(first) = r.get("firstAvailable") {
        for sub in first.items() {
            let sub_name = sub.get("name").and_then(Node::text).unwrap_or_default();
            let full = format!("{name}/{sub_name}");
            class(cx, o, &full, sub);
            allocation(cx, o, &full, sub);
        }
    } else {
        cx.error(
            o,
            r.key_line("name"),
            "request-layout",
            format!("request '{name}' names no device class: exactly: is missing"),
            "write exactly: {deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 1} in the request"
                .into(),
        );
    }
}

/// A device class that does not exist leaves the claim Pending for ever.
fn class(cx: &mut Cx, o: &Object, request: &str, n: &Node) {
    let Some((k, v)) = n.entry("deviceClassName") else { return };
    let Some(class) = v.text() else { return };
    if cx.classes.contains(&class) {
        return;
    }
    let known = cx.classes.join(", ");
    let help = if class == "nvidia.com/gpu" {
        format!(
            "nvidia.com/gpu is the old way's resource name, not a device class: write gpu.nvidia.com (known: {known})"
        )
    } else if let Some(near) = closest(&class, cx.classes.iter().map(String::as_str)) {
        format!("did you mean '{near}'? (known: {known}; name the cluster's other classes with --device-class NAME)")
    } else {
        format!(
            "use a name from Devices > Device Classes (known: {known}; name the cluster's other classes with \
             --device-class NAME)"
        )
    };
    cx.error(
        o,
        k.line,
        "device-class",
        format!("request '{request}' names the device class '{class}', which does not exist: the claim stays Pending"),
        help,
    );
}

fn allocation(cx: &mut Cx, o: &Object, request: &str, n: &Node) {
    if let Some((k, v)) = n.entry("allocationMode")
        && let Some(mode) = v.text()
        && mode != "ExactCount"
        && mode != "All"
    {
        cx.error(
            o,
            k.line,
            "allocation-mode",
            format!("request '{request}' has allocationMode '{mode}', which is neither ExactCount nor All"),
            "write ExactCount (as many devices as count) or All (every device matching the conditions)".into(),
        );
    }
    if let Some((k, v)) = n.entry("count")
        && v.as_u64() == Some(0)
    {
        cx.error(
            o,
            k.line,
            "allocation-mode",
            format!("request '{request}' has count 0; Kubernetes rejects the claim"),
            "write count: 1 or more".into(),
        );
    }
}

/// The devices a claim from template `t` takes: the sum of its requests' counts; none where one
/// takes every matching device (All) or cannot be read.
pub(super) fn devices_per_claim(t: &Object) -> Option<u64> {
    let requests = t.node.at(&["spec", "spec", "devices", "requests"])?.items();
    let mut sum = 0;
    for r in requests {
        let n = r.get("exactly").unwrap_or(r);
        if n.get("allocationMode").and_then(Node::as_str) == Some("All") {
            return None;
        }
        sum += n.get("count").map_or(Some(1), Node::as_u64)?;
    }
    Some(sum)
}
