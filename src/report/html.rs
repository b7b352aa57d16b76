//! A past run as one self-contained HTML file (`copctl runs report`): header, recap, failures
//! first, a timeline per host (a bar per task, coloured by result), changes with their diffs
//! folded, the slowest tasks. Its style and script are inline and it loads nothing, so it can be
//! attached to a change ticket and opened anywhere, offline. Pure: a `RunView` in, text out.

use std::fmt::Write as _;

use super::history::{RunView, TaskRecord};

/// HTML text with `&`, `<`, `>`, `"` and `'` escaped.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

fn secs(ms: u64) -> String {
    format!("{:.2}s", ms as f64 / 1000.0)
}

const STYLE: &str = r#"
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1d2430;background:#fff}
h1{font-size:1.3em;margin:0 0 .3em}h2{font-size:1.1em;margin:1.4em 0 .5em;border-bottom:1px solid #dde}
code,pre{font:12px/1.35 ui-monospace,monospace}pre{background:#f5f6f8;padding:.5em;overflow:auto;margin:.3em 0}
table{border-collapse:collapse}td,th{padding:.15em .7em;text-align:right;border-bottom:1px solid #eee}
td:first-child,th:first-child{text-align:left}
.meta{color:#555}.result-ok{color:#1a7f37}.result-failed{color:#b42318}
.task{margin:.4em 0 .8em}.task .where{font-weight:600}
.tl{position:relative;height:18px;background:#f3f4f6;flex:1;border-radius:2px}
.row{display:flex;align-items:center;margin:2px 0}.row .h{width:14em;font:12px ui-monospace,monospace;overflow:hidden}
.bar{position:absolute;top:2px;height:14px;min-width:2px;border-radius:2px;opacity:.9}
.s-ok{background:#4caf50}.s-changed{background:#f0a500}.s-failed{background:#d93025}.s-unreachable{background:#8e24aa}
.s-skipped{background:#b0b7c3}.s-ignored{background:#f28b82}
.legend span{display:inline-block;padding:0 .5em;margin-right:.4em;border-radius:2px;color:#fff;font-size:12px}
details summary{cursor:pointer}#filter{margin:.3em 0 .6em;padding:.2em .4em}
"#;

/// Shows only the timeline rows whose host matches the filter, and records on the page that
/// the script ran (the browser check reads `data-hosts`).
const SCRIPT: &str = r#"
(function(){
  var rows=document.querySelectorAll('.row');
  var f=document.getElementById('filter');
  f.addEventListener('input',function(){
    var q=f.value.toLowerCase();
    rows.forEach(function(r){r.style.display=r.dataset.host.toLowerCase().indexOf(q)>=0?'':'none';});
  });
  document.body.setAttribute('data-hosts',String(rows.length));
})();
"#;

/// The report of run `r`.
pub fn render(r: &RunView, started: &str) -> String {
    let mut h = String::new();
    let ok = r.exit_code == Some(0);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>copctl run {id}</title><style>{STYLE}</style></head><body>\n\
         <h1>copctl run {id}</h1>\n<p class=\"meta\"><code>{what}</code><br>started {started}, took {took} — \
         <strong class=\"{class}\">{result}</strong></p>\n",
        id = esc(&r.id),
        what = esc(&r.what()),
        took = r.seconds.map(|s| format!("{s:.1}s")).unwrap_or_else(|| "-".into()),
        class = if ok { "result-ok" } else { "result-failed" },
        result = esc(&r.result()),
    );
    recap(&mut h, r);
    failures(&mut h, r);
    timeline(&mut h, r);
    changes(&mut h, r);
    slowest(&mut h, r);
    let _ = write!(h, "<script>{SCRIPT}</script>\n</body></html>\n");
    h
}

fn recap(h: &mut String, r: &RunView) {
    h.push_str("<h2>Recap</h2>\n<table><tr><th>host</th><th>ok</th><th>changed</th><th>failed</th><th>skipped</th><th>unreachable</th><th>ignored</th><th>time</th></tr>\n");
    for host in r.hosts() {
        let mine: Vec<&TaskRecord> = r.tasks.iter().filter(|t| t.host == host).collect();
        let count = |k: &str| match r.recap.get(&host) {
            Some(c) => c[k].as_u64().unwrap_or(0),
            None => mine.iter().filter(|t| t.status == k).count() as u64,
        };
        let time =
            r.recap.get(&host).and_then(|c| c["seconds"].as_f64()).map(|s| format!("{s:.1}s")).unwrap_or_default();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{time}</td></tr>",
            esc(&host),
            count("ok"),
            count("changed"),
            count("failed"),
            count("skipped"),
            count("unreachable"),
            count("ignored"),
        );
    }
    h.push_str("</table>\n");
}

fn failures(h: &mut String, r: &RunView) {
    let failed: Vec<&TaskRecord> = r.tasks.iter().filter(|t| t.failed()).collect();
    let _ = writeln!(h, "<h2>Failed tasks ({})</h2>", failed.len());
    if failed.is_empty() {
        h.push_str("<p>none</p>\n");
    }
    for t in failed {
        let _ = write!(
            h,
            "<div class=\"task\"><span class=\"where\">{}</span>: {} <span class=\"meta\">({}, {})</span>",
            esc(&t.host),
            esc(&t.path()),
            esc(&t.status),
            secs(t.duration_ms)
        );
        if !t.msg.is_empty() {
            let _ = write!(h, "<pre>{}</pre>", esc(&t.msg));
        }
        if !t.commands.is_empty() {
            let cmds: Vec<String> = t.commands.iter().map(|c| format!("$ {c}")).collect();
            let _ = write!(h, "<pre>{}</pre>", esc(&cmds.join("\n")));
        }
        if !t.stderr.is_empty() {
            let _ = write!(h, "<details open><summary>stderr</summary><pre>{}</pre></details>", esc(&t.stderr));
        }
        if !t.stdout.is_empty() {
            let _ = write!(h, "<details><summary>stdout</summary><pre>{}</pre></details>", esc(&t.stdout));
        }
        h.push_str("</div>\n");
    }
}

/// A row per host, a bar per task placed by its start and end within the run: serial batches
/// read as a staircase, a slow host as a long row.
fn timeline(h: &mut String, r: &RunView) {
    let span = |t: &TaskRecord| {
        let end = t.end_ms.unwrap_or(0);
        (t.start_ms.unwrap_or(end.saturating_sub(t.duration_ms)), end)
    };
    let t0 = r.tasks.iter().map(|t| span(t).0).filter(|s| *s > 0).min().or(r.started_ms).unwrap_or(0);
    let t1 = r.tasks.iter().map(|t| span(t).1).max().unwrap_or(t0).max(t0 + 1);
    let width = (t1 - t0) as f64;
    h.push_str(
        "<h2>Timeline</h2>\n<p class=\"legend\"><span class=\"s-ok\">ok</span><span class=\"s-changed\">changed</span>\
                <span class=\"s-failed\">failed</span><span class=\"s-unreachable\">unreachable</span>\
                <span class=\"s-skipped\">skipped</span><span class=\"s-ignored\">failed, ignored</span></p>\n\
                <input id=\"filter\" placeholder=\"filter hosts\" aria-label=\"filter hosts\">\n",
    );
    for host in r.hosts() {
        let _ =
            write!(h, "<div class=\"row\" data-host=\"{0}\"><div class=\"h\">{0}</div><div class=\"tl\">", esc(&host));
        for t in r.tasks.iter().filter(|t| t.host == host) {
            let (s, e) = span(t);
            let left = (s.saturating_sub(t0)) as f64 * 100.0 / width;
            let w = (e.saturating_sub(s)) as f64 * 100.0 / width;
            let class = if t.ignored { "ignored" } else { t.status.as_str() };
            let _ = write!(
                h,
                "<div class=\"bar s-{class}\" style=\"left:{left:.3}%;width:{w:.3}%\" title=\"{} ({}, {})\"></div>",
                esc(&t.path()),
                esc(&t.status),
                secs(t.duration_ms)
            );
        }
        h.push_str("</div></div>\n");
    }
}

fn changes(h: &mut String, r: &RunView) {
    let changed: Vec<&TaskRecord> = r.tasks.iter().filter(|t| t.status == "changed").collect();
    let _ = writeln!(h, "<h2>Changed tasks ({})</h2>", changed.len());
    for t in changed {
        let _ = write!(h, "<div class=\"task\"><span class=\"where\">{}</span>: {}", esc(&t.host), esc(&t.path()));
        match &t.diff {
            Some(d) => {
                let _ = write!(h, "<details><summary>diff</summary><pre>{}</pre></details>", esc(d));
            }
            None => h.push_str(" <span class=\"meta\">(no diff recorded)</span>"),
        }
        h.push_str("</div>\n");
    }
}

fn slowest(h: &mut String, r: &RunView) {
    let mut by_time: Vec<&TaskRecord> = r.tasks.iter().collect();
    by_time.sort_by_key(|t| std::cmp::Reverse(t.duration_ms));
    h.push_str("<h2>Slowest tasks</h2>\n<table><tr><th>task</th><th>host</th><th>status</th><th>time</th></tr>\n");
    for t in by_time.into_iter().take(10) {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&t.path()),
            esc(&t.host),
            esc(&t.status),
            secs(t.duration_ms)
        );
    }
    h.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_from_the_run_is_escaped() {
        assert_eq!(esc("<b>\"x\" & 'y'</b>"), "&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/b&gt;");
        let r = RunView { id: "1".into(), playbooks: vec!["<script>".into()], ..RunView::default() };
        let page = render(&r, "-");
        assert!(page.contains("<code>&lt;script&gt;</code>") && !page.contains("<code><script>"), "{page}");
    }
}
