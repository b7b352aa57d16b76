//! `getent`: a host's name service database (passwd, group, hosts, services, ...) as facts,
//! as Ansible's getent module sets them: `getent_<database>` maps each record's first field to
//! the rest (split at `:` for passwd, shadow, group and gshadow, else at blanks; a key seen
//! twice holds a list of records). Never a change.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Flag, Guards, Kind, Outcome, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GetentArgs {
    pub database: String,
    pub key: Option<String>,
    /// The NSS service to ask (`getent -s`).
    pub service: Option<String>,
    /// What a record's fields are split at.
    pub split: Option<String>,
    /// A key that is not there fails the step (the default), or is set to null.
    pub fail_key: Option<Flag>,
}

impl Kind for GetentArgs {
    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let mut cmd = format!("getent {}", shell_quote(&self.database));
        if let Some(k) = &self.key {
            cmd.push(' ');
            cmd.push_str(&shell_quote(k));
        }
        if let Some(s) = &self.service {
            cmd.push_str(&format!(" -s {}", shell_quote(s)));
        }
        let out = match cx.sh(&cmd, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let tree = format!("getent_{}", self.database);
        let done = |db: Map<String, Value>, msg: Option<&str>| {
            let mut o = Outcome::ok("");
            o.commands.push(cmd.clone());
            let facts = json!({ &tree: db });
            o.result.insert("ansible_facts".into(), facts.clone());
            if let Some(m) = msg {
                o.result.insert("msg".into(), json!(m));
            }
            o.facts = Some(Map::from_iter([(tree.clone(), facts[&tree].clone()), ("ansible_facts".into(), facts)]));
            o
        };
        let fail = |msg: &str| {
            let mut o = Outcome::failed(msg);
            o.commands.push(cmd.clone());
            o
        };
        match out.status {
            Some(0) => done(records(&String::from_utf8_lossy(&out.stdout), &self.database, self.split.as_deref()), None),
            Some(1) => fail("Missing arguments, or database unknown."),
            Some(2) if !self.fail_key.as_ref().is_none_or(Flag::get) => {
                let mut db = Map::new();
                db.insert(self.key.clone().unwrap_or_else(|| "None".into()), Value::Null);
                done(db, Some("One or more supplied key could not be found in the database."))
            }
            Some(2) => fail("One or more supplied key could not be found in the database."),
            Some(3) => fail("Enumeration not supported on this database."),
            _ => fail("Unexpected failure!"),
        }
    }
}

/// The module's parse: Python's `line.split(sep)` (blank runs where no separator is given).
fn records(out: &str, database: &str, split: Option<&str>) -> Map<String, Value> {
    let colon = ["passwd", "shadow", "group", "gshadow"].contains(&database);
    let sep = split.or(colon.then_some(":"));
    let mut db = Map::new();
    let mut seen: std::collections::HashMap<String, usize> = Default::default();
    for line in out.lines() {
        let record: Vec<&str> = match sep {
            Some(s) => line.split(s).collect(),
            None => line.split_whitespace().collect(),
        };
        let Some((first, rest)) = record.split_first() else {
            // Python's split() of a blank line is empty: record[0] fails there; skip it here.
            continue;
        };
        let rest = json!(rest);
        let n = seen.entry(first.to_string()).or_insert(0);
        *n += 1;
        match (*n, db.get_mut(*first)) {
            (1, _) | (_, None) => {
                db.insert(first.to_string(), rest);
            }
            (2, Some(v)) => {
                let old = v.take();
                *v = json!([old, rest]);
            }
            (_, Some(Value::Array(a))) => a.push(rest),
            (_, Some(_)) => {}
        }
    }
    db
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_split_as_the_module_splits_them() {
        let db = records("root:x:0:0:root:/root:/bin/bash\n", "passwd", None);
        assert_eq!(db["root"], json!(["x", "0", "0", "root", "/root", "/bin/bash"]));
        let hosts = records("127.0.0.1       localhost\n127.0.0.1 cop-1 cop\n::1 localhost\n", "hosts", None);
        assert_eq!(hosts["127.0.0.1"], json!([["localhost"], ["cop-1", "cop"]]));
        assert_eq!(hosts["::1"], json!(["localhost"]));
        let svc = records("ssh 22/tcp\n", "services", Some("/"));
        assert_eq!(svc["ssh 22"], json!(["tcp"]));
    }
}
