//! The conformance report: every step with the reply the model predicted
//! beside the reply real Redis gave, the real lock state read after it, and
//! a verdict stated from real observations.

/// One real reading compared with the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub text: String,
    pub ok: bool,
}

/// One replayed step.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub index: usize,
    /// Model time after the step, in ticks.
    pub time: u64,
    /// Real milliseconds since the replay's start when the step ran.
    pub at_ms: u64,
    pub actor: String,
    /// What happened in the model.
    pub label: String,
    /// What the driver really did.
    pub did: Vec<String>,
    pub model_reply: Option<String>,
    pub real_reply: Option<String>,
    /// Whether the replies agree, when a command ran.
    pub reply_ok: Option<bool>,
    /// Real lock state read after the step.
    pub checks: Vec<Check>,
}

impl Row {
    /// `Some(false)` if anything disagreed, `Some(true)` if something was
    /// compared and all agreed, `None` if nothing was compared.
    pub fn ok(&self) -> Option<bool> {
        let mut seen = None;
        for ok in self
            .reply_ok
            .into_iter()
            .chain(self.checks.iter().map(|c| c.ok))
        {
            if !ok {
                return Some(false);
            }
            seen = Some(true);
        }
        seen
    }
}

/// One server as the report lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerLine {
    pub name: String,
    pub port: u16,
    /// Every PID it had (more than one after a restart).
    pub pids: Vec<u32>,
    pub shimmed: bool,
    /// The server it replicated at the start.
    pub replica_of: Option<String>,
    /// A failover made it the primary.
    pub promoted: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The invariant violation happened on real Redis.
    pub reproduced: bool,
    /// The real observations it is stated from.
    pub lines: Vec<String>,
}

/// Wall-clock phases of the replay, in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    pub start_ms: f64,
    pub replay_ms: f64,
    pub stop_ms: f64,
    pub total_ms: f64,
    /// Worst lateness of a step behind its real-time schedule.
    pub max_late_ms: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub protocol: String,
    /// The real system replayed on ("Redis", "etcd", "ZooKeeper").
    pub system: String,
    /// How model time maps to real time (from `TimeMap::describe`).
    pub time_line: String,
    pub invariant: String,
    /// The model's sentence for the violation.
    pub violation: String,
    pub violation_step: usize,
    pub tick_ms: u64,
    pub servers: Vec<ServerLine>,
    pub rows: Vec<Row>,
    /// Every serving server read at the end.
    pub finals: Vec<Check>,
    pub verdict: Verdict,
    /// Server PIDs that still existed after the stop (should be none).
    pub survivors: Vec<u32>,
    pub timing: Timing,
    /// `--until N`: only steps 1..=N were replayed (the violation is not
    /// judged; the exit code is conformance alone).
    pub until: Option<usize>,
}

impl Report {
    /// Rows where reality disagreed with the model.
    pub fn mismatches(&self) -> Vec<&Row> {
        self.rows.iter().filter(|r| r.ok() == Some(false)).collect()
    }

    /// Every reply and every reading matched the model.
    pub fn conforms(&self) -> bool {
        self.mismatches().is_empty() && self.finals.iter().all(|c| c.ok)
    }

    /// 0: conformed and the violation happened for real (or, for a
    /// prefix, conformed); 1: otherwise.
    pub fn exit_code(&self) -> i32 {
        if self.conforms() && (self.verdict.reproduced || self.until.is_some()) {
            0
        } else {
            1
        }
    }

    /// Every PID any server of the replay had.
    pub fn pids(&self) -> Vec<u32> {
        self.servers
            .iter()
            .flat_map(|s| s.pids.iter().copied())
            .collect()
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let p = |out: &mut String, s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        p(
            &mut out,
            format!(
                "locklab replay: {}, {} trace ({} steps; the model breaks it at step {})",
                self.protocol,
                self.invariant,
                self.rows.len(),
                self.violation_step
            ),
        );
        p(&mut out, format!("  model:   {}", self.violation));
        p(&mut out, format!("  time:    {}", self.time_line));
        for (i, s) in self.servers.iter().enumerate() {
            let pids: Vec<String> = s.pids.iter().map(u32::to_string).collect();
            let mut extra = Vec::new();
            if let Some(r) = &s.replica_of {
                extra.push(format!("replica of {r}"));
            }
            if s.promoted {
                extra.push("promoted by the failover".to_string());
            }
            if s.shimmed {
                extra.push("under the clock-shift shim".to_string());
            }
            if s.pids.len() > 1 {
                extra.push("restarted".to_string());
            }
            p(
                &mut out,
                format!(
                    "  {} {} 127.0.0.1:{} pid {}{}",
                    if i == 0 { "servers:" } else { "        " },
                    s.name,
                    s.port,
                    pids.join(" -> "),
                    if extra.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", extra.join(", "))
                    }
                ),
            );
        }
        out.push('\n');
        out.push_str(&self.table());
        out.push('\n');
        if !self.finals.is_empty() {
            p(&mut out, "real state at the end:".into());
            for c in &self.finals {
                p(&mut out, format!("  {} {}", c.text, mark(Some(c.ok))));
            }
            out.push('\n');
        }
        let mism = self.mismatches();
        let replies = self.rows.iter().filter(|r| r.reply_ok.is_some()).count();
        let readings: usize =
            self.rows.iter().map(|r| r.checks.len()).sum::<usize>() + self.finals.len();
        match mism.first() {
            None if self.conforms() => p(
                &mut out,
                format!(
                    "conformance: CONFORMS. All {replies} real replies and {readings} real lock readings matched the model."
                ),
            ),
            None => p(
                &mut out,
                "conformance: MISMATCH in the real state at the end (see above).".into(),
            ),
            Some(r) => {
                let what = match (r.reply_ok, &r.model_reply, &r.real_reply) {
                    (Some(false), Some(m), Some(x)) => {
                        format!("the model predicted {m}, real {} replied {x}", self.system)
                    }
                    _ => {
                        let bad: Vec<&str> = r
                            .checks
                            .iter()
                            .filter(|c| !c.ok)
                            .map(|c| c.text.as_str())
                            .collect();
                        format!("real state differs: {}", bad.join("; "))
                    }
                };
                p(
                    &mut out,
                    format!(
                        "conformance: MISMATCH at step {} ({}): {what}; {} step(s) disagree in all.",
                        r.index,
                        r.label,
                        mism.len()
                    ),
                );
            }
        }
        p(
            &mut out,
            format!(
                "violation:   {} {} on real {}:",
                self.invariant,
                if self.until.is_some() {
                    "not judged (a prefix)"
                } else if self.verdict.reproduced {
                    "HAPPENED"
                } else {
                    "was NOT reproduced"
                },
                self.system
            ),
        );
        for l in &self.verdict.lines {
            p(&mut out, format!("  - {l}"));
        }
        let t = &self.timing;
        p(
            &mut out,
            format!(
                "timing:      started {} server(s) in {:.0} ms, replayed {} steps in {:.0} ms, stopped them in {:.0} ms: {:.0} ms in all; the driver ran at most {:.1} ms behind schedule",
                self.servers.len(),
                t.start_ms,
                self.rows.len(),
                t.replay_ms,
                t.stop_ms,
                t.total_ms,
                t.max_late_ms
            ),
        );
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
        p(
            &mut out,
            if self.survivors.is_empty() {
                format!(
                    "cleanup:     every server started was stopped (pids {}; none exists any more); their directories are removed",
                    list(&self.pids())
                )
            } else {
                format!(
                    "cleanup:     WARNING: pids {} still exist after the stop",
                    list(&self.survivors)
                )
            },
        );
        out
    }

    fn table(&self) -> String {
        let head = ["step", "t", "real ms", "actor", "model", "real", "ok"];
        let cells: Vec<[String; 7]> = self
            .rows
            .iter()
            .map(|r| {
                [
                    r.index.to_string(),
                    r.time.to_string(),
                    r.at_ms.to_string(),
                    r.actor.clone(),
                    cell(r.model_reply.as_deref()),
                    cell(r.real_reply.as_deref()),
                    mark(r.ok()).to_string(),
                ]
            })
            .collect();
        let mut width = head.map(|h| h.chars().count());
        for c in &cells {
            for (w, x) in width.iter_mut().zip(c.iter()) {
                *w = (*w).max(x.chars().count());
            }
        }
        let line = |c: &[String; 7]| -> String {
            let mut s = String::new();
            for (i, x) in c.iter().enumerate() {
                let pad = width[i] - x.chars().count();
                // Numbers right-aligned, words left-aligned.
                if i < 3 {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(x);
                } else {
                    s.push_str(x);
                    s.push_str(&" ".repeat(pad));
                }
                s.push_str("  ");
            }
            s
        };
        let indent = width.iter().sum::<usize>() + 2 * width.len();
        let mut out = line(&head.map(String::from));
        out.push_str("what happened (model) / what the driver did (real)\n");
        for (r, c) in self.rows.iter().zip(&cells) {
            out.push_str(&line(c));
            out.push_str(&r.label);
            out.push('\n');
            for d in &r.did {
                out.push_str(&format!("{}real:  {d}\n", " ".repeat(indent)));
            }
            for k in &r.checks {
                out.push_str(&format!(
                    "{}state: {} {}\n",
                    " ".repeat(indent),
                    k.text,
                    mark(Some(k.ok))
                ));
            }
        }
        out
    }
}

/// A reply in the table, cut short (the mismatch line gives it whole).
fn cell(reply: Option<&str>) -> String {
    const MAX: usize = 24;
    match reply {
        None => "-".into(),
        Some(r) if r.chars().count() > MAX => {
            format!("{}...", r.chars().take(MAX - 3).collect::<String>())
        }
        Some(r) => r.into(),
    }
}

fn mark(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "✓",
        Some(false) => "✗",
        None => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(reply_ok: Option<bool>, checks: &[bool]) -> Row {
        Row {
            index: 1,
            time: 0,
            at_ms: 0,
            actor: "redis".into(),
            label: "x".into(),
            did: vec![],
            model_reply: reply_ok.map(|_| "OK".into()),
            real_reply: reply_ok.map(|_| "OK".into()),
            reply_ok,
            checks: checks
                .iter()
                .map(|ok| Check {
                    text: "s".into(),
                    ok: *ok,
                })
                .collect(),
        }
    }

    #[test]
    fn a_row_fails_if_any_comparison_fails() {
        assert_eq!(row(None, &[]).ok(), None);
        assert_eq!(row(Some(true), &[]).ok(), Some(true));
        assert_eq!(row(Some(true), &[true, false]).ok(), Some(false));
        assert_eq!(row(Some(false), &[true]).ok(), Some(false));
        assert_eq!(row(None, &[true]).ok(), Some(true));
    }
}
