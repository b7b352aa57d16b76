//! `get_url` (Ansible's get_url module): a file downloaded by the host itself (`http`, `https`,
//! `ftp`, `file` URLs: air-gapped sites serve their artifacts from a mirror the nodes reach),
//! with curl where the host has it, else Python's urllib. As the module decides it: a `checksum`
//! that the file at `dest` already has ends the step before any download (unless `force`);
//! otherwise the file is fetched (`If-Modified-Since` from `dest`'s time unless `force`: 304 is
//! no change), checked against `checksum`, and moved into place only when its sha1 differs from
//! `dest`'s (a new file gets 0644 under the usual umask, an existing one keeps its mode and
//! owner); `dest` a directory takes the URL's file name; then `mode`/`owner`/`group`.
//! Credentials travel on the command's standard input, never its arguments.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Flag, Guards, Kind, Mode, Outcome, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GetUrlArgs {
    pub url: String,
    pub dest: String,
    #[serde(default = "no")]
    pub force: Flag,
    /// `ALGORITHM:HEX` (sha1, sha224, sha256, sha384, sha512, md5).
    #[serde(default)]
    pub checksum: String,
    pub mode: Option<Mode>,
    pub owner: Option<String>,
    pub group: Option<String>,
    #[serde(default)]
    pub headers: indexmap::IndexMap<String, String>,
    #[serde(default = "yes")]
    pub validate_certs: Flag,
    /// Seconds to wait for the connection (and for data to keep coming).
    pub timeout: Option<super::Number>,
    pub url_username: Option<String>,
    pub url_password: Option<String>,
}

fn no() -> Flag {
    Flag::Value(false)
}

fn yes() -> Flag {
    Flag::Value(true)
}

const ALGORITHMS: &[&str] = &["md5", "sha1", "sha224", "sha256", "sha384", "sha512"];

impl Kind for GetUrlArgs {
    fn mode(&self) -> Option<&Mode> {
        self.mode.as_ref()
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        let (algo, sum) = match a.checksum.trim() {
            "" => (String::new(), String::new()),
            c => match c.split_once(':') {
                Some((al, h)) if ALGORITHMS.contains(&al.to_lowercase().as_str()) && !h.contains("://") => {
                    (al.to_lowercase(), h.trim().to_lowercase())
                }
                Some((_, h)) if h.contains("://") => {
                    return Outcome::failed("checksum: a URL of checksums is not supported yet: give ALGORITHM:HEX");
                }
                _ => return Outcome::failed("The checksum parameter has to be in format <algorithm>:<checksum>"),
            },
        };
        let mode = match a.mode.as_ref().map(Mode::bits).transpose() {
            Ok(m) => m,
            Err(e) => return Outcome::failed(e.to_string()),
        };
        let timeout = match a.timeout.as_ref().map(|t| t.get()).transpose() {
            Ok(t) => t.unwrap_or(10),
            Err(e) => return Outcome::failed(format!("timeout: {e}")),
        };
        let mut config = String::new();
        if let Some(u) = &a.url_username {
            let p = a.url_password.clone().unwrap_or_default();
            config.push_str(&format!("user = \"{}:{}\"\n", escape_config(u), escape_config(&p)));
        }
        for (k, v) in &a.headers {
            config.push_str(&format!("header = \"{}: {}\"\n", escape_config(k), escape_config(v)));
        }
        let script = format!(
            "url={url}; dest={dest}; force={force}; algo={algo}; sum={sum}; check={check}; insecure={insecure}; t={timeout}\n{BODY}",
            url = shell_quote(&a.url),
            dest = shell_quote(&a.dest),
            force = a.force.get() as u8,
            algo = shell_quote(&algo),
            sum = shell_quote(&sum),
            check = cx.check as u8,
            insecure = (!a.validate_certs.get()) as u8,
        );
        let out = match cx.sh(&script, Some(config.as_bytes())).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let field = |k: &str| text.lines().find_map(|l| l.strip_prefix(&format!("{k} "))).map(str::to_string);
        if let Some(msg) = field("FAIL") {
            let mut o = Outcome::failed(msg);
            if let Some(code) = field("CODE").and_then(|c| c.parse::<u64>().ok()) {
                o.result.insert("status_code".into(), json!(code));
            }
            o.result.insert("url".into(), json!(a.url));
            o.result.insert("dest".into(), json!(a.dest));
            return o;
        }
        if !out.success() {
            return Outcome::failed(String::from_utf8_lossy(&out.stderr).trim().to_string()).with_output(&out);
        }
        let dest = field("DEST").unwrap_or_else(|| a.dest.clone());
        let mut changed = text.lines().any(|l| l == "CHANGED");
        let mut msg = field("MSG").unwrap_or_default();
        // A file check mode would only now download has no attributes to compare yet.
        let there = !(cx.check && changed);
        if there {
            match super::file_attrs(cx, &dest, mode, a.owner.as_deref(), a.group.as_deref()).await {
                Ok(true) => {
                    if text.lines().any(|l| l == "EXISTS") {
                        msg = "file already exists but file attributes changed".into();
                    }
                    changed = true;
                }
                Ok(false) => {}
                Err(o) => return o,
            }
        }
        let mut o = if changed { Outcome::changed(format!("{} -> {dest}", a.url)) } else { Outcome::ok("") };
        o.result.insert("msg".into(), json!(msg));
        o.result.insert("url".into(), json!(a.url));
        o.result.insert("dest".into(), json!(dest));
        for (k, key) in [("SRC_SUM", "checksum_src"), ("DEST_SUM", "checksum_dest")] {
            if let Some(v) = field(k).filter(|v| !v.is_empty()) {
                o.result.insert(key.into(), json!(v));
            }
        }
        if let Some(code) = field("CODE").and_then(|c| c.parse::<u64>().ok()) {
            o.result.insert("status_code".into(), json!(code));
        }
        o
    }
}

/// A value inside a double-quoted curl config string.
fn escape_config(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The host's side: the module's decisions, in one script (curl's config on stdin).
const BODY: &str = r#"cfg=$(cat)
digest() { "${1}sum" "$2" 2>/dev/null | cut -d' ' -f1; }
isdir=0; [ -d "$dest" ] && isdir=1
cond=
if [ $isdir = 0 ] && [ -e "$dest" ]; then
  if [ $force = 0 ] && [ -n "$sum" ]; then
    if [ "$(digest "$algo" "$dest")" = "$sum" ]; then echo EXISTS; echo "MSG file already exists"; echo "DEST $dest"; exit 0; fi
    force=1
  fi
  [ $force = 1 ] || cond=1
fi
tmp=$(mktemp /tmp/.copctl-get_url-XXXXXX) || exit 1
trap 'rm -f "$tmp"' EXIT
if command -v curl >/dev/null 2>&1; then
  set -- -sSL --connect-timeout "$t" -o "$tmp" -w '%{http_code}' -K -
  [ $insecure = 1 ] && set -- "$@" -k
  [ -n "$cond" ] && set -- "$@" -z "$dest"
  code=$(printf '%s\n' "$cfg" | curl "$@" "$url" 2>"$tmp.err"); rc=$?
  err=$(cat "$tmp.err"); rm -f "$tmp.err"
  if [ $rc != 0 ]; then echo "FAIL Request failed: ${err#curl: }"; exit 0; fi
elif command -v python3 >/dev/null 2>&1; then
  code=$(printf '%s\n' "$cfg" | python3 -c '
import sys, ssl, urllib.request, urllib.error, os, email.utils, base64
url, out, t, insecure, cond, dest = sys.argv[1:7]
req = urllib.request.Request(url)
for line in sys.stdin.read().splitlines():
    k, _, v = line.partition(" = ")
    v = v.strip("\"").replace("\\\"", "\"").replace("\\\\", "\\")
    if k == "header":
        hk, _, hv = v.partition(": "); req.add_header(hk, hv)
    elif k == "user":
        req.add_header("Authorization", "Basic " + base64.b64encode(v.encode()).decode())
if cond == "1":
    req.add_header("If-Modified-Since", email.utils.formatdate(os.path.getmtime(dest), usegmt=True))
ctx = ssl._create_unverified_context() if insecure == "1" else None
try:
    r = urllib.request.urlopen(req, timeout=float(t), context=ctx)
    open(out, "wb").write(r.read()); print(getattr(r, "status", 200) or 200)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception as e:
    print("ERR %s" % e)
' "$url" "$tmp" "$t" "$insecure" "${cond:-0}" "$dest")
  case "$code" in ERR*) echo "FAIL Request failed: ${code#ERR }"; exit 0 ;; esac
else
  echo "FAIL get_url: the host has neither curl nor python3 to download with"; exit 0
fi
case "$url" in http://*|https://*)
  if [ "$code" = 304 ]; then echo "MSG Not Modified"; echo "CODE 304"; echo "DEST $dest"; exit 0; fi
  if [ "$code" -ge 400 ] 2>/dev/null; then echo "FAIL Request failed"; echo "CODE $code"; exit 0; fi ;;
esac
if [ $isdir = 1 ]; then
  p=${url%%[?#]*}; name=${p##*/}; case "$p" in */) name= ;; esac
  [ -n "$name" ] || name=index.html
  dest="${dest%/}/$name"
fi
src_sum=$(digest sha1 "$tmp"); dest_sum=
if [ -e "$dest" ]; then dest_sum=$(digest sha1 "$dest")
elif [ ! -d "$(dirname "$dest")" ]; then echo "FAIL Destination $(dirname "$dest") does not exist"; exit 0; fi
if [ -n "$sum" ] && [ $check = 0 ]; then got=$(digest "$algo" "$tmp")
  if [ "$got" != "$sum" ]; then echo "FAIL The checksum for $tmp did not match $sum; it was $got."; exit 0; fi; fi
size=$(wc -c < "$tmp" | tr -d ' ')
echo "SRC_SUM $src_sum"; echo "DEST_SUM $dest_sum"; echo "DEST $dest"; echo "MSG OK ($size bytes)"; echo "CODE ${code:-200}"
if [ "$src_sum" != "$dest_sum" ]; then
  echo CHANGED
  [ $check = 1 ] && exit 0
  if [ -e "$dest" ]; then chmod --reference="$dest" "$tmp" && chown --reference="$dest" "$tmp"
  else chmod "$(printf '%o' $((0666 & ~$(umask))))" "$tmp"; fi
  mv -f "$tmp" "$dest" || { echo "FAIL failed to copy $tmp to $dest"; exit 0; }
fi
"#;
