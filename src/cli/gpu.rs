//! `copctl gpu lint`: the manifests read, checked offline (no site, no cluster) and reported;
//! exit 1 when any finding is an error.

use std::io::Write;

use super::args::{GpuCmd, GpuLintArgs};
use crate::error::Result;
use crate::gpu::lint;
use crate::report::OutputFormat;

pub fn gpu(what: &GpuCmd) -> Result<i32> {
    match what {
        GpuCmd::Lint(args) => lint_cmd(args),
    }
}

fn lint_cmd(args: &GpuLintArgs) -> Result<i32> {
    let inputs = lint::read_inputs(&args.paths)?;
    let report = lint::lint(&inputs, &args.device_classes);
    let text = match args.output {
        OutputFormat::Human => lint::human(&report),
        OutputFormat::Json => serde_json::to_string_pretty(&report).expect("JSON") + "\n",
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(if report.errors > 0 { 1 } else { 0 })
}
