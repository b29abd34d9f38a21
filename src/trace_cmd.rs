//! `locklab trace`: render a trace file, tell its story, or check that it
//! replays. Every trace is replayed through the model before anything is
//! drawn from it.

use crate::util::Failure;
use clap::{Subcommand, ValueEnum};
use locklab_models::trace;
use locklab_traces::{Document, Format, Trace};
use std::path::PathBuf;

/// The formats a trace can be drawn in (`check` and `trace render` share them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RenderFormat {
    /// A sequence diagram in the terminal (a lane per participant, time going down), then the story
    Text,
    /// A table with one row per step and the state after it, then the story
    Table,
    /// Markdown with the story and a Mermaid sequence diagram (renders on GitHub and GitLab)
    Mermaid,
    /// A standalone SVG: lanes, a true time axis, each client's believed lock beside the server's key and its TTL
    Svg,
    /// A narrower SVG with larger text (800 px wide, no text below 12 px) that stays readable inline on a code host
    SvgEmbed,
    /// One self-contained offline HTML file that steps through the states
    Html,
    /// The happens-before graph in Graphviz DOT (`dot -Tsvg`)
    Dot,
    /// The trace as JSON
    Json,
    /// The Informal Trace Format of Apalache and Quint (ITF JSON): a state per step, times in µs
    Itf,
}

impl RenderFormat {
    pub fn format(self) -> Format {
        match self {
            RenderFormat::Text => Format::Text,
            RenderFormat::Table => Format::Table,
            RenderFormat::Mermaid => Format::Mermaid,
            RenderFormat::Svg => Format::Svg,
            RenderFormat::SvgEmbed => Format::SvgEmbed,
            RenderFormat::Html => Format::Html,
            RenderFormat::Dot => Format::Dot,
            RenderFormat::Json => Format::Json,
            RenderFormat::Itf => Format::Itf,
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Draw a trace (or every trace of a check report)
    ///
    /// svg, svg-embed, html and itf hold one trace each: for a report with several, pick one with --invariant.
    Render {
        /// A trace file or a check report written by `locklab check --json` (`-`: standard input)
        file: PathBuf,
        /// Output format
        #[arg(long, value_enum, default_value = "text")]
        format: RenderFormat,
        /// From a check report, only the trace of this invariant
        #[arg(long, value_name = "NAME")]
        invariant: Option<String>,
    },
    /// Tell a counterexample as a short story, one sentence per step that matters
    Explain {
        /// A trace file or a check report written by `locklab check --json` (`-`: standard input)
        file: PathBuf,
        /// From a check report, only the trace of this invariant
        #[arg(long, value_name = "NAME")]
        invariant: Option<String>,
    },
    /// Replay a trace through the model and report the first step that does not match
    Validate {
        /// A trace file or a check report (`-`: standard input)
        file: PathBuf,
    },
    /// Run a counterexample's schedule against another protocol (or other knobs) and show where the fix blocks it
    ///
    /// Exit codes: 0 the target blocks it, 1 the target breaks too, 2 bad
    /// input, 3 inconclusive (the schedules part before the violation).
    #[command(allow_negative_numbers = true)]
    Against(Box<crate::against::AgainstArgs>),
}

/// Reads a trace file and replays every trace in it; nothing is rendered
/// from a trace that does not replay.
pub fn load(file: &std::path::Path, invariant: Option<&str>) -> Result<Vec<Trace>, Failure> {
    let text = crate::util::read_input(file)?;
    let doc = Document::parse(&text)
        .map_err(|e| Failure::input(format!("{}: {e}", crate::util::input_name(file))))?;
    let mut traces: Vec<Trace> = doc.traces().into_iter().cloned().collect();
    if let Some(name) = invariant {
        let held: Vec<String> = traces.iter().map(|t| t.invariant.clone()).collect();
        traces.retain(|t| t.invariant == name);
        if traces.is_empty() {
            return Err(Failure::input(format!(
                "{}: no trace for invariant '{name}' (it holds traces for: {})",
                crate::util::input_name(file),
                if held.is_empty() {
                    "none".to_string()
                } else {
                    held.join(", ")
                }
            )));
        }
    }
    for t in &traces {
        verify(t).map_err(|e| {
            Failure::input(format!(
                "{}: the {} trace does not replay through the model: {e}",
                crate::util::input_name(file),
                t.invariant
            ))
        })?;
    }
    Ok(traces)
}

/// Replays `t` through the model (`trace::validate`: every action enabled,
/// every recorded state and time as the model computes them), then rebuilds
/// the whole trace from its actions and requires every field a reader is
/// shown — labels, events, actors, messages, the violation text, the
/// participants, the configuration — to be exactly what the model says.
/// The error names the first field that differs.
pub fn verify(t: &Trace) -> Result<(), String> {
    trace::validate(t).map_err(|e| e.to_string())?;
    let m = trace::model_from_config(&t.config)?;
    let inv = locklab_models::Invariant::from_name(&t.invariant)
        .ok_or_else(|| format!("unknown invariant {:?} in the trace", t.invariant))?;
    let path = trace::actions(t).map_err(|e| e.to_string())?;
    let given = trace::given_answers(t);
    let want = trace::build_answered(&m, &path, &given, inv, &t.engine, t.seed)
        .map_err(|e| e.to_string())?;
    compare(&want, t)
}

/// The first field of `have` that is not what the model rebuilt (`want`).
fn compare(want: &Trace, have: &Trace) -> Result<(), String> {
    fn differs(field: &str, want: impl std::fmt::Debug, have: impl std::fmt::Debug) -> String {
        format!("field `{field}` is {have:?} but the model says {want:?}")
    }
    macro_rules! same {
        ($field:literal, $w:expr, $h:expr) => {
            if $w != $h {
                return Err(differs($field, &$w, &$h));
            }
        };
    }
    same!("schema_version", want.schema_version, have.schema_version);
    same!("kind", want.kind, have.kind);
    if have.engine != "check" && have.engine != "simulate" {
        return Err(format!(
            "field `engine` is {:?}; a trace comes from \"check\" or \"simulate\"",
            have.engine
        ));
    }
    same!(
        "config.protocol",
        want.config.protocol,
        have.config.protocol
    );
    same!("config.clients", want.config.clients, have.config.clients);
    same!(
        "config.acquisitions",
        want.config.acquisitions,
        have.config.acquisitions
    );
    same!("config.faults", want.config.faults, have.config.faults);
    same!("config.params", want.config.params, have.config.params);
    same!("config.time", want.config.time, have.config.time);
    same!("participants", want.participants, have.participants);
    same!("invariant", want.invariant, have.invariant);
    same!(
        "invariant_meaning",
        want.invariant_meaning,
        have.invariant_meaning
    );
    same!("violation_step", want.violation_step, have.violation_step);
    same!("violation", want.violation, have.violation);
    same!("faults_used", want.faults_used, have.faults_used);
    same!("initial", want.initial, have.initial);
    same!("steps (count)", want.steps.len(), have.steps.len());
    for (w, h) in want.steps.iter().zip(&have.steps) {
        let at = |field: &str| format!("step {}: field `steps[{}].{field}`", h.index, h.index - 1);
        let check =
            |field: &str, same: bool, wv: &dyn std::fmt::Debug, hv: &dyn std::fmt::Debug| {
                if same {
                    Ok(())
                } else {
                    Err(format!("{} is {hv:?} but the model says {wv:?}", at(field)))
                }
            };
        check("index", w.index == h.index, &w.index, &h.index)?;
        check("at_us", w.at_us == h.at_us, &w.at_us, &h.at_us)?;
        check("time", w.time == h.time, &w.time, &h.time)?;
        check("actor", w.actor == h.actor, &w.actor, &h.actor)?;
        check("action", w.action == h.action, &w.action, &h.action)?;
        check("label", w.label == h.label, &w.label, &h.label)?;
        check("message", w.message == h.message, &w.message, &h.message)?;
        check("events", w.events == h.events, &w.events, &h.events)?;
        check("answers", w.answers == h.answers, &w.answers, &h.answers)?;
        check(
            "state",
            w.state == h.state,
            &"(the model's state)",
            &"(another state)",
        )?;
        check(
            "violations",
            w.violations == h.violations,
            &w.violations,
            &h.violations,
        )?;
    }
    Ok(())
}

/// Several traces in one output: separated so that the whole stays
/// readable in its format (a rule between Markdown sections, a blank line
/// elsewhere).
pub fn join(traces: &[Trace], format: Format, color: bool) -> String {
    let sep = if format == Format::Mermaid {
        "\n---\n\n"
    } else {
        "\n"
    };
    traces
        .iter()
        .map(|t| format.render(t, color))
        .collect::<Vec<_>>()
        .join(sep)
}

pub fn run(cmd: &TraceCommand) -> Result<i32, Failure> {
    match cmd {
        TraceCommand::Against(a) => crate::against::run(a),
        TraceCommand::Render {
            file,
            format,
            invariant,
        } => {
            let traces = load(file, invariant.as_deref())?;
            let format = format.format();
            if traces.len() > 1 && !format.concatenates() && format != Format::Json {
                let names: Vec<&str> = traces.iter().map(|t| t.invariant.as_str()).collect();
                return Err(Failure::input(format!(
                    "{} holds {} traces ({}); --format {} draws one per file: add --invariant NAME",
                    crate::util::input_name(file),
                    traces.len(),
                    names.join(", "),
                    format.name()
                )));
            }
            if traces.is_empty() {
                note!(
                    "{}: no counterexample to draw",
                    crate::util::input_name(file)
                );
                return Ok(0);
            }
            out!("{}", join(&traces, format, crate::util::stdout_color()))?;
            Ok(0)
        }
        TraceCommand::Explain { file, invariant } => {
            let traces = load(file, invariant.as_deref())?;
            if traces.is_empty() {
                note!(
                    "{}: no counterexample to explain",
                    crate::util::input_name(file)
                );
            }
            out!("{}", join(&traces, Format::Story, false))?;
            Ok(0)
        }
        TraceCommand::Validate { file } => {
            let traces = load(file, None)?;
            for t in &traces {
                outln!(
                    "{}: {} trace replays: {} steps, violation at step {}",
                    crate::util::input_name(file),
                    t.invariant,
                    t.steps.len(),
                    t.violation_step
                )?;
            }
            Ok(0)
        }
    }
}
