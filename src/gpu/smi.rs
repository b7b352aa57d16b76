//! What `nvidia-smi` prints, read: `nvidia-smi -L` (a `GPU i: NAME (UUID: GPU-...)` line per GPU,
//! each MIG partition under its GPU as `  MIG PROFILE Device j: (UUID: MIG-...)`) and
//! `--query-gpu=... --format=csv,noheader` rows. `gpu check` compares what two pods see; the
//! driver check script runs these against a real driver.

use serde::Serialize;

/// One device `nvidia-smi -L` lists: a whole GPU, or a MIG partition of one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listed {
    /// `GPU-…` for a GPU, `MIG-…` for a partition.
    pub uuid: String,
    pub name: String,
    /// The MIG profile (`1g.10gb`) of a partition.
    pub mig_profile: Option<String>,
    /// The GPU a partition is part of.
    pub parent_uuid: Option<String>,
}

/// The devices a container can use: each MIG partition, and each GPU that has none listed.
pub fn list(text: &str) -> Result<Vec<Listed>, String> {
    let mut out: Vec<Listed> = Vec::new();
    let mut gpu: Option<(String, String, bool)> = None; // uuid, name, has partitions
    let flush = |gpu: &mut Option<(String, String, bool)>, out: &mut Vec<Listed>| {
        if let Some((uuid, name, false)) = gpu.take() {
            out.push(Listed { uuid, name, mig_profile: None, parent_uuid: None });
        }
    };
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(rest) = t.strip_prefix("GPU ") {
            flush(&mut gpu, &mut out);
            let (_, rest) = rest.split_once(": ").ok_or_else(|| format!("not an nvidia-smi -L line: {t:?}"))?;
            let (name, uuid) = uuid_of(rest).ok_or_else(|| format!("no UUID in nvidia-smi -L line: {t:?}"))?;
            gpu = Some((uuid, name, false));
        } else if let Some(rest) = t.strip_prefix("MIG ") {
            let (parent, _, has) = gpu.as_mut().ok_or_else(|| format!("a MIG device before any GPU: {t:?}"))?;
            *has = true;
            let parent = parent.clone();
            let profile = rest.split_whitespace().next().unwrap_or("").to_string();
            let (_, uuid) = uuid_of(rest).ok_or_else(|| format!("no UUID in nvidia-smi -L line: {t:?}"))?;
            out.push(Listed {
                uuid,
                name: format!("MIG {profile}"),
                mig_profile: Some(profile),
                parent_uuid: Some(parent),
            });
        } else if t.starts_with("No devices were found") {
            return Ok(Vec::new());
        } else {
            return Err(format!("not an nvidia-smi -L line: {t:?}"));
        }
    }
    flush(&mut gpu, &mut out);
    Ok(out)
}

/// `NAME (UUID: X)` → (NAME, X).
fn uuid_of(s: &str) -> Option<(String, String)> {
    let at = s.rfind("(UUID: ")?;
    let uuid = s[at + 7..].strip_suffix(')')?.trim().to_string();
    (!uuid.is_empty()).then(|| (s[..at].trim().to_string(), uuid))
}

/// Rows of `nvidia-smi --query-gpu=A,B,... --format=csv,noheader[,nounits]`: each row's fields
/// by the names queried. Errors name the row that does not have as many fields.
pub fn query(fields: &[&str], text: &str) -> Result<Vec<Vec<(String, String)>>, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let vals: Vec<&str> = l.split(", ").map(str::trim).collect();
            if vals.len() != fields.len() {
                return Err(format!("nvidia-smi row {l:?} has {} field(s), {} were queried", vals.len(), fields.len()));
            }
            Ok(fields.iter().zip(vals).map(|(f, v)| (f.to_string(), v.to_string())).collect())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_gpus_and_mig_partitions_are_listed_as_a_container_sees_them() {
        let text = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5e2b1c3a-0000-1111-2222-333344445555)\n\
                    GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-aaaa)\n  \
                    MIG 1g.5gb      Device  0: (UUID: MIG-bbbb)\n  \
                    MIG 1g.5gb      Device  1: (UUID: MIG-cccc)\n";
        let l = list(text).unwrap();
        assert_eq!(
            l,
            vec![
                Listed {
                    uuid: "GPU-5e2b1c3a-0000-1111-2222-333344445555".into(),
                    name: "NVIDIA H100 80GB HBM3".into(),
                    mig_profile: None,
                    parent_uuid: None
                },
                Listed {
                    uuid: "MIG-bbbb".into(),
                    name: "MIG 1g.5gb".into(),
                    mig_profile: Some("1g.5gb".into()),
                    parent_uuid: Some("GPU-aaaa".into())
                },
                Listed {
                    uuid: "MIG-cccc".into(),
                    name: "MIG 1g.5gb".into(),
                    mig_profile: Some("1g.5gb".into()),
                    parent_uuid: Some("GPU-aaaa".into())
                },
            ]
        );
        assert_eq!(list("No devices were found\n").unwrap(), vec![]);
        assert_eq!(
            list("Failed to initialize NVML: Unknown Error").unwrap_err(),
            "not an nvidia-smi -L line: \"Failed to initialize NVML: Unknown Error\""
        );
        assert_eq!(list("GPU 0: NVIDIA H100").unwrap_err(), "no UUID in nvidia-smi -L line: \"GPU 0: NVIDIA H100\"");
    }

    #[test]
    fn query_rows_are_read_by_field() {
        let rows = query(&["name", "driver_version", "memory.total"], "NVIDIA H100 80GB HBM3, 580.95.05, 81559 MiB\n")
            .unwrap();
        assert_eq!(rows[0][1], ("driver_version".to_string(), "580.95.05".to_string()));
        assert_eq!(rows[0][2].1, "81559 MiB");
        assert_eq!(
            query(&["name", "driver_version"], "NVIDIA H200\n").unwrap_err(),
            "nvidia-smi row \"NVIDIA H200\" has 1 field(s), 2 were queried"
        );
    }
}
