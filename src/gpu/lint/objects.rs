//! From YAML documents to the Kubernetes objects the lint knows: every document (and every item
//! of a `List`) with its kind, name and namespace, and the pod specs inside workloads, each with
//! how many pods of it run at once. Reading only; the rules are in `pods` and `claims`.

use super::tree::Node;

/// A Kubernetes object of one input file.
pub struct Object<'a> {
    /// The index of its file among the inputs.
    pub file: usize,
    pub kind: &'a str,
    pub api_version: Option<&'a str>,
    pub name: String,
    /// As written; none where the object is put in whatever namespace it is applied to.
    pub namespace: Option<&'a str>,
    pub node: &'a Node,
}

impl Object<'_> {
    /// How findings name it: `Deployment my-app`.
    pub fn label(&self) -> String {
        format!("{} {}", self.kind, self.name)
    }
}

/// The objects of one file's documents, a `List`'s items in its place.
pub fn objects(file: usize, docs: &[Node]) -> Vec<Object<'_>> {
    let mut out = Vec::new();
    for d in docs {
        push(file, d, &mut out);
    }
    out
}

fn push<'a>(file: usize, n: &'a Node, out: &mut Vec<Object<'a>>) {
    let Some(kind) = n.get("kind").and_then(Node::as_str) else { return };
    if kind == "List" || (kind.ends_with("List") && n.get("items").is_some()) {
        for item in n.get("items").map(Node::items).unwrap_or_default() {
            push(file, item, out);
        }
        return;
    }
    let meta = n.get("metadata");
    let name = meta.and_then(|m| m.get("name")).and_then(Node::text);
    let generate = meta.and_then(|m| m.get("generateName")).and_then(Node::text);
    out.push(Object {
        file,
        kind,
        api_version: n.get("apiVersion").and_then(Node::as_str),
        name: name.or(generate.map(|g| format!("{g}*"))).unwrap_or_else(|| "(unnamed)".into()),
        namespace: meta.and_then(|m| m.get("namespace")).and_then(Node::as_str),
        node: n,
    });
}

/// A pod spec as a workload writes it.
pub struct PodSpec<'o, 'a> {
    pub owner: &'o Object<'a>,
    pub spec: &'a Node,
    /// Pods of it that run at once, each with claims of its own from a template: a Deployment's
    /// replicas, a Job's parallelism; with what it is called.
    pub at_once: Option<(u64, String)>,
    /// A DaemonSet: a pod on every node it selects.
    pub per_node: bool,
}

/// The pod spec of a workload (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet,
/// ReplicationController, Job, CronJob); none for other kinds.
pub fn pod_spec<'o, 'a>(o: &'o Object<'a>) -> Option<PodSpec<'o, 'a>> {
    let n = o.node;
    let count = |node: Option<&Node>, key: &str, what: &dyn Fn(u64) -> String| {
        let v = node.and_then(|s| s.get(key)).map_or(Some(1), Node::as_u64)?;
        Some((v, what(v)))
    };
    let (spec, at_once, per_node) = match o.kind {
        "Pod" => (n.get("spec")?, None, false),
        "Deployment" | "StatefulSet" | "ReplicaSet" | "ReplicationController" => (
            n.at(&["spec", "template", "spec"])?,
            count(n.get("spec"), "replicas", &|v| format!("{v} replicas")),
            false,
        ),
        "DaemonSet" => (n.at(&["spec", "template", "spec"])?, None, true),
        "Job" => (
            n.at(&["spec", "template", "spec"])?,
            count(n.get("spec"), "parallelism", &|v| format!("parallelism {v}")),
            false,
        ),
        "CronJob" => {
            let job = n.at(&["spec", "jobTemplate", "spec"]);
            (job?.at(&["template", "spec"])?, count(job, "parallelism", &|v| format!("parallelism {v}")), false)
        }
        _ => return None,
    };
    Some(PodSpec { owner: o, spec, at_once, per_node })
}

/// Every container of a pod spec (init and ephemeral ones too).
pub fn containers(spec: &Node) -> impl Iterator<Item = &Node> {
    ["containers", "initContainers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |k| spec.get(k).map(Node::items).unwrap_or_default())
}
