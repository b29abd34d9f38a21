//! `locklab trace`: render a trace file, or check that it replays.

use crate::util::Failure;
use clap::{Subcommand, ValueEnum};
use locklab_models::trace;
use locklab_traces::{Document, Trace, text};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RenderFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Render a trace (or every trace of a check report)
    Render {
        /// A trace file or a check report written by `locklab check --json`
        file: PathBuf,
        /// Output format
        #[arg(long, value_enum, default_value = "text")]
        format: RenderFormat,
        /// From a check report, only the trace of this invariant
        #[arg(long, value_name = "NAME")]
        invariant: Option<String>,
    },
    /// Replay a trace through the model and report the first step that does not match
    Validate {
        /// A trace file or a check report
        file: PathBuf,
    },
}

/// Reads a trace file and replays every trace in it; nothing is rendered
/// from a trace that does not replay.
pub fn load(file: &PathBuf, invariant: Option<&str>) -> Result<Vec<Trace>, Failure> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::input(format!("cannot read {}: {e}", file.display())))?;
    let doc =
        Document::parse(&text).map_err(|e| Failure::input(format!("{}: {e}", file.display())))?;
    let mut traces: Vec<Trace> = doc.traces().into_iter().cloned().collect();
    if let Some(name) = invariant {
        traces.retain(|t| t.invariant == name);
        if traces.is_empty() {
            return Err(Failure::input(format!(
                "{}: no trace for invariant '{name}'",
                file.display()
            )));
        }
    }
    for t in &traces {
        trace::validate(t).map_err(|e| {
            Failure::input(format!(
                "{}: the {} trace does not replay through the model: {e}",
                file.display(),
                t.invariant
            ))
        })?;
    }
    Ok(traces)
}

pub fn run(cmd: &TraceCommand) -> Result<i32, Failure> {
    match cmd {
        TraceCommand::Render {
            file,
            format,
            invariant,
        } => {
            let traces = load(file, invariant.as_deref())?;
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            for (i, t) in traces.iter().enumerate() {
                if i > 0 {
                    println!();
                }
                match format {
                    RenderFormat::Text => print!("{}", text::render(t, color)),
                    RenderFormat::Json => print!("{}", t.to_json()),
                }
            }
            Ok(0)
        }
        TraceCommand::Validate { file } => {
            let traces = load(file, None)?;
            for t in &traces {
                println!(
                    "{}: {} trace replays: {} steps, violation at step {}",
                    file.display(),
                    t.invariant,
                    t.steps.len(),
                    t.violation_step
                );
            }
            Ok(0)
        }
    }
}
