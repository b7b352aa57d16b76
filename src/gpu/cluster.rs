//! The cluster's DRA objects (resource.k8s.io/v1) as `kubectl get ... -o json` lists them, read
//! into what the chapter talks about: device classes, each node's devices (model, memory,
//! shareable, capacity, request range, MIG partition), claims (state, allocation, consumers) and
//! the pods using them. Reads only; unknown fields are ignored, as kubectl's readers do.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// A quantity (`143771Mi`, `1Gi`, `4`, `500m`) in thousandths, or None when it is not one.
pub fn milli(q: &str) -> Option<i128> {
    let q = q.trim();
    let end = q.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(q.len());
    let (num, unit) = q.split_at(end);
    let mult: i128 = match unit {
        "" => 1000,
        "m" => 1,
        "k" => 1000 * 1000,
        "M" => 1000 * 1_000_000,
        "G" => 1000 * 1_000_000_000,
        "T" => 1000 * 1_000_000_000_000,
        "Ki" => 1000 << 10,
        "Mi" => 1000 << 20,
        "Gi" => 1000 << 30,
        "Ti" => 1000 << 40,
        _ => return None,
    };
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if whole.is_empty() && frac.is_empty() {
        return None;
    }
    let w: i128 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    let mut v = w * mult;
    if !frac.is_empty() {
        let f: i128 = frac.parse().ok()?;
        v += f * mult / 10i128.pow(frac.len() as u32);
    }
    Some(v)
}

/// One device of a node's resource slice.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Device {
    pub node: String,
    pub driver: String,
    pub name: String,
    pub model: Option<String>,
    pub uuid: Option<String>,
    pub memory: Option<String>,
    /// `allowMultipleAllocations`: several claims may hold it at once.
    pub shareable: bool,
    /// Each capacity: its total and the range one request may take.
    pub capacity: BTreeMap<String, Capacity>,
    /// The MIG profile of a partition (`1g.10gb`); None for a whole GPU.
    pub mig_profile: Option<String>,
    #[serde(skip)]
    pub attributes: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Capacity {
    pub value: String,
    /// `min..max` (step) from the request policy; None when a request takes it whole.
    pub request_range: Option<String>,
    pub default: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Request {
    pub name: String,
    pub device_class: String,
    pub mode: String,
    pub count: u64,
    /// Capacity asked (`memory: 1Gi`).
    pub capacity: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Allocated {
    pub request: String,
    pub node: String,
    pub device: String,
    pub share_id: Option<String>,
    pub consumed: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Claim {
    pub namespace: String,
    pub name: String,
    pub requests: Vec<Request>,
    pub allocated: Vec<Allocated>,
    /// `status.reservedFor`: the pods using it.
    pub consumers: Vec<String>,
    /// Made from a template for one pod (it goes with the pod).
    pub from_template: bool,
}

impl Claim {
    pub fn state(&self) -> &'static str {
        if self.allocated.is_empty() { "Pending" } else { "Allocated" }
    }

    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Pod {
    pub namespace: String,
    pub name: String,
    pub phase: String,
    pub node: Option<String>,
    /// The claims it uses, by claim name (resourceClaimName, or the one made from its template).
    pub claims: Vec<String>,
    /// Names of templates whose claim is not made yet.
    pub templates: Vec<String>,
    /// The scheduler's message while it is not scheduled.
    pub unschedulable: Option<String>,
    /// The node its nodeSelector names (`kubernetes.io/hostname`), if it names one.
    pub for_node: Option<String>,
    #[serde(skip)]
    pub node_pinned: bool,
}

/// Everything `gpu status` and `gpu check` read, from one `kubectl get -o json` List.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    pub classes: Vec<DeviceClass>,
    pub devices: Vec<Device>,
    pub claims: Vec<Claim>,
    pub pods: Vec<Pod>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DeviceClass {
    pub name: String,
    pub selectors: Vec<String>,
}

fn s(v: &Value) -> String {
    v.as_str().map(str::to_string).unwrap_or_default()
}

fn items(v: &Value) -> &[Value] {
    v["items"].as_array().map(Vec::as_slice).unwrap_or(&[])
}

/// An attribute's value whatever its type (`{"string": "x"}`, `{"int": 0}`, `{"version": ...}`).
fn attribute(v: &Value) -> Option<String> {
    let (_, val) = v.as_object()?.iter().next()?;
    Some(match val {
        Value::String(t) => t.clone(),
        other => other.to_string(),
    })
}

impl Snapshot {
    /// A List of any of the kinds read; other kinds are skipped.
    pub fn from_list(list: &Value) -> Snapshot {
        let mut snap = Snapshot::default();
        for it in items(list) {
            match it["kind"].as_str() {
                Some("DeviceClass") => snap.classes.push(DeviceClass {
                    name: s(&it["metadata"]["name"]),
                    selectors: it["spec"]["selectors"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|x| x["cel"]["expression"].as_str().map(str::to_string))
                        .collect(),
                }),
                Some("ResourceSlice") => snap.devices.extend(devices_of(it)),
                Some("ResourceClaim") => snap.claims.push(claim_of(it)),
                Some("Pod") => snap.pods.push(pod_of(it)),
                _ => {}
            }
        }
        snap
    }

    pub fn class(&self, name: &str) -> Option<&DeviceClass> {
        self.classes.iter().find(|c| c.name == name)
    }

    /// The claims holding `device` of `node`.
    pub fn holders(&self, node: &str, device: &str) -> Vec<&Claim> {
        self.claims.iter().filter(|c| c.allocated.iter().any(|a| a.node == node && a.device == device)).collect()
    }

    /// The pods that use claim `ns/name`: its consumers, and pods naming it that wait.
    pub fn users(&self, c: &Claim) -> Vec<&Pod> {
        self.pods.iter().filter(|p| p.namespace == c.namespace && p.claims.contains(&c.name)).collect()
    }

    /// Whether `dev` is one a class selects: its selectors, as far as the chapter's classes
    /// write them (`device.driver == '...'` and `device.attributes['D'].NAME == '...'`, joined
    /// by `&&`); a selector copctl cannot read counts as matching.
    pub fn class_selects(&self, class: &DeviceClass, dev: &Device) -> bool {
        class.selectors.iter().all(|e| selects(e, dev).unwrap_or(true))
    }
}

fn selects(expr: &str, dev: &Device) -> Option<bool> {
    for term in expr.split("&&") {
        let (lhs, rhs) = term.split_once("==")?;
        let (lhs, rhs) = (lhs.trim(), rhs.trim());
        let want = rhs
            .strip_prefix('\'')
            .and_then(|r| r.strip_suffix('\''))
            .or_else(|| rhs.strip_prefix('"').and_then(|r| r.strip_suffix('"')))?;
        let have = if lhs == "device.driver" {
            Some(dev.driver.clone())
        } else {
            let rest = lhs.strip_prefix("device.attributes[")?;
            let (domain, name) = rest.split_once("].")?;
            let domain = domain.trim_matches(|c| c == '\'' || c == '"');
            if domain != dev.driver {
                return Some(false);
            }
            dev.attributes.get(name).cloned()
        };
        if have.as_deref() != Some(want) {
            return Some(false);
        }
    }
    Some(true)
}

fn devices_of(slice: &Value) -> Vec<Device> {
    let spec = &slice["spec"];
    let node = s(&spec["nodeName"]);
    let driver = s(&spec["driver"]);
    spec["devices"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            let attributes: BTreeMap<String, String> = d["attributes"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| attribute(v).map(|a| (k.clone(), a)))
                .collect();
            let capacity: BTreeMap<String, Capacity> = d["capacity"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, c)| {
                    let p = &c["requestPolicy"];
                    let range = p["validRange"].as_object().map(|r| {
                        let min = r.get("min").and_then(Value::as_str).unwrap_or("0");
                        let max = r.get("max").and_then(Value::as_str).unwrap_or(c["value"].as_str().unwrap_or(""));
                        match r.get("step").and_then(Value::as_str) {
                            Some(step) => format!("{min}..{max} step {step}"),
                            None => format!("{min}..{max}"),
                        }
                    });
                    let range = range.or_else(|| {
                        p["validValues"]
                            .as_array()
                            .map(|vs| vs.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
                    });
                    (
                        k.clone(),
                        Capacity {
                            value: s(&c["value"]),
                            request_range: range,
                            default: p["default"].as_str().map(str::to_string),
                        },
                    )
                })
                .collect();
            let mig = attributes.get("type").is_some_and(|t| t == "mig");
            Device {
                node: node.clone(),
                driver: driver.clone(),
                name: s(&d["name"]),
                model: attributes.get("productName").cloned(),
                uuid: attributes.get("uuid").cloned(),
                memory: capacity.get("memory").map(|c| c.value.clone()),
                shareable: d["allowMultipleAllocations"].as_bool().unwrap_or(false),
                mig_profile: if mig { Some(attributes.get("profile").cloned().unwrap_or_default()) } else { None },
                capacity,
                attributes,
            }
        })
        .collect()
}

fn claim_of(it: &Value) -> Claim {
    let requests = it["spec"]["devices"]["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let ex = if r["exactly"].is_object() { &r["exactly"] } else { r };
            Request {
                name: s(&r["name"]),
                device_class: s(&ex["deviceClassName"]),
                mode: ex["allocationMode"].as_str().unwrap_or("ExactCount").to_string(),
                count: ex["count"].as_u64().unwrap_or(1),
                capacity: ex["capacity"]["requests"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))
                    .collect(),
            }
        })
        .collect();
    let alloc = &it["status"]["allocation"];
    let node_of_alloc = alloc["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0].as_str();
    let allocated = alloc["devices"]["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| Allocated {
            request: s(&r["request"]),
            node: node_of_alloc.map(str::to_string).unwrap_or_else(|| s(&r["pool"])),
            device: s(&r["device"]),
            share_id: r["shareID"].as_str().map(str::to_string),
            consumed: r["consumedCapacity"].as_object().into_iter().flatten().map(|(k, v)| (k.clone(), s(v))).collect(),
        })
        .collect();
    let ns = s(&it["metadata"]["namespace"]);
    Claim {
        consumers: it["status"]["reservedFor"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| format!("{ns}/{}", s(&r["name"])))
            .collect(),
        from_template: it["metadata"]["ownerReferences"]
            .as_array()
            .is_some_and(|o| o.iter().any(|r| r["kind"] == "Pod" && r["controller"] == true)),
        namespace: ns,
        name: s(&it["metadata"]["name"]),
        requests,
        allocated,
    }
}

fn pod_of(it: &Value) -> Pod {
    let made: BTreeMap<String, String> = it["status"]["resourceClaimStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|st| Some((st["name"].as_str()?.to_string(), st["resourceClaimName"].as_str()?.to_string())))
        .collect();
    let (mut claims, mut templates) = (Vec::new(), Vec::new());
    for rc in it["spec"]["resourceClaims"].as_array().into_iter().flatten() {
        if let Some(n) = rc["resourceClaimName"].as_str() {
            claims.push(n.to_string());
        } else if let Some(n) = made.get(rc["name"].as_str().unwrap_or("")) {
            claims.push(n.clone());
        } else if let Some(t) = rc["resourceClaimTemplateName"].as_str() {
            templates.push(t.to_string());
        }
    }
    let unschedulable = it["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "PodScheduled" && c["status"] == "False")
        .map(|c| s(&c["message"]));
    Pod {
        namespace: s(&it["metadata"]["namespace"]),
        name: s(&it["metadata"]["name"]),
        phase: it["status"]["phase"].as_str().unwrap_or("Pending").to_string(),
        node: it["spec"]["nodeName"].as_str().map(str::to_string),
        for_node: it["spec"]["nodeSelector"]["kubernetes.io/hostname"].as_str().map(str::to_string),
        node_pinned: it["spec"]["nodeName"].is_string()
            && unschedulable.is_none()
            && it["status"]["phase"] != "Running",
        claims,
        templates,
        unschedulable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_kubernetes_writes_them() {
        assert_eq!(milli("1Gi"), Some(1000 << 30));
        assert_eq!(milli("1024Mi"), milli("1Gi"));
        assert_eq!(milli("500m"), Some(500));
        assert_eq!(milli("1.5"), Some(1500));
        assert_eq!(milli("2k"), Some(2_000_000));
        assert_eq!(milli("x"), None);
        assert_eq!(milli("1Qi"), None);
    }

    #[test]
    fn a_class_selects_by_driver_and_attributes() {
        let dev = Device {
            node: "n".into(),
            driver: "gpu.nvidia.com".into(),
            name: "gpu-0".into(),
            model: None,
            uuid: None,
            memory: None,
            shareable: false,
            capacity: BTreeMap::new(),
            mig_profile: None,
            attributes: [("type".to_string(), "gpu".to_string()), ("productName".into(), "NVIDIA H200".into())].into(),
        };
        assert_eq!(
            selects("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'", &dev),
            Some(true)
        );
        assert_eq!(selects("device.attributes[\"gpu.nvidia.com\"].productName == \"NVIDIA A100\"", &dev), Some(false));
        assert_eq!(selects("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('10Gi')) >= 0", &dev), None);
    }
}
