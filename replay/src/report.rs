//! The conformance report: every step with the reply the model predicted
//! beside the reply real Redis gave, the real lock state read after it, and
//! a verdict stated from real observations. A step whose timing is finer
//! than a real server can reproduce (see `timemap`) is marked `~` and
//! listed: what real time gave there is shown, but it counts neither as a
//! match nor as a mismatch, and the replay does not pass.

/// One real reading compared with the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub text: String,
    pub ok: bool,
    /// The model's state was within the replay's timing uncertainty of a
    /// change (a key about to expire): the reading cannot be judged.
    pub unsure: bool,
}

/// One replayed step.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub index: usize,
    /// The step's exact model time, with its unit (`29.9952 s`).
    pub time: String,
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
    /// Why the step's timing is finer than the replay can reproduce (a
    /// server's decision, or a reading, within the real uncertainty).
    pub unsure: Vec<String>,
    /// The server's decision at this step (is the key still live?) was
    /// within the real uncertainty: its reply, and what the server reads
    /// after it, are not judged, and the replay is not exact.
    pub blind: bool,
}

impl Row {
    /// `Some(false)` if anything disagreed, `Some(true)` if something was
    /// compared and all agreed, `None` if nothing was compared. A reply
    /// whose server decided within the timing uncertainty, and an unsure
    /// reading, are not compared.
    pub fn ok(&self) -> Option<bool> {
        let mut seen = None;
        let reply = self.reply_ok.filter(|_| !self.blind);
        for ok in reply
            .into_iter()
            .chain(self.checks.iter().filter(|c| !c.unsure).map(|c| c.ok))
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
    /// Model time ran this many times as fast as real time.
    pub speed: u64,
    pub servers: Vec<ServerLine>,
    pub rows: Vec<Row>,
    /// Every serving server read at the end.
    pub finals: Vec<Check>,
    /// Why some final readings cannot be judged (see `Row::unsure`).
    pub final_unsure: Vec<String>,
    pub verdict: Verdict,
    /// Server PIDs that still existed after the stop (should be none).
    pub survivors: Vec<u32>,
    pub timing: Timing,
    /// `--until N`: only steps 1..=N were replayed (the violation is not
    /// judged; the exit code is conformance alone).
    pub until: Option<usize>,
    /// Why and how the steps were given other times than the trace's.
    pub retimed: Option<String>,
}

impl Report {
    /// Rows where reality disagreed with the model.
    pub fn mismatches(&self) -> Vec<&Row> {
        self.rows.iter().filter(|r| r.ok() == Some(false)).collect()
    }

    /// Every reply and every reading that could be judged matched the model.
    pub fn conforms(&self) -> bool {
        self.mismatches().is_empty() && self.finals.iter().all(|c| c.ok || c.unsure)
    }

    /// Rows whose server decision is finer than the replay can reproduce.
    pub fn blind(&self) -> Vec<&Row> {
        self.rows.iter().filter(|r| r.blind).collect()
    }

    /// Readings (after steps, and at the end) within the real timing
    /// uncertainty of a change, which were shown but not judged.
    pub fn unjudged_readings(&self) -> usize {
        self.rows
            .iter()
            .flat_map(|r| &r.checks)
            .chain(&self.finals)
            .filter(|c| c.unsure)
            .count()
    }

    /// Every server decision the trace relies on was reproducible in real
    /// time (readings near a change may still be unjudged: they are shown).
    pub fn exact(&self) -> bool {
        self.blind().is_empty()
    }

    /// 0: conformed, every step was reproducible in real time, and the
    /// violation happened for real (or, for a prefix, conformed); 1:
    /// otherwise.
    pub fn exit_code(&self) -> i32 {
        if self.conforms() && self.exact() && (self.verdict.reproduced || self.until.is_some()) {
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
        if let Some(r) = &self.retimed {
            p(&mut out, format!("           {r}"));
        }
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
                p(&mut out, format!("  {} {}", c.text, check_mark(c)));
            }
            for u in &self.final_unsure {
                p(&mut out, format!("  ~ {u}"));
            }
            out.push('\n');
        }
        let mism = self.mismatches();
        let replies = self.rows.iter().filter(|r| r.reply_ok.is_some()).count();
        let replies = replies - self.blind().iter().filter(|r| r.reply_ok.is_some()).count();
        let readings: usize = self
            .rows
            .iter()
            .flat_map(|r| &r.checks)
            .chain(&self.finals)
            .filter(|c| !c.unsure)
            .count();
        match mism.first() {
            None if self.conforms() => p(
                &mut out,
                format!(
                    "conformance: CONFORMS. All {replies} real replies and {readings} real lock readings that could be judged matched the model."
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
                let blind: Vec<String> = self
                    .blind()
                    .iter()
                    .filter(|u| u.index < r.index)
                    .map(|u| u.index.to_string())
                    .collect();
                p(
                    &mut out,
                    format!(
                        "conformance: MISMATCH at step {} ({}): {what}; {} step(s) disagree in all.{}",
                        r.index,
                        r.label,
                        mism.len(),
                        if blind.is_empty() {
                            String::new()
                        } else {
                            format!(
                                " It comes after step(s) {} whose timing real time could not reproduce: reality may have taken the other branch there.",
                                blind.join(", ")
                            )
                        }
                    ),
                );
            }
        }
        let fine = self.blind();
        if !self.exact() {
            let steps: Vec<String> = fine.iter().map(|r| r.index.to_string()).collect();
            p(
                &mut out,
                format!(
                    "exactness:   NOT EXACT. At step(s) {} real {} decided within its timing uncertainty at {}x speed (see the ~ lines): what it answered is shown but not judged. A smaller --speed narrows the uncertainty in model time; margins below a real millisecond cannot be replayed at all.",
                    steps.join(", "),
                    self.system,
                    self.speed
                ),
            );
        }
        let unjudged = self.unjudged_readings();
        if unjudged > 0 {
            p(
                &mut out,
                format!(
                    "readings:    {unjudged} real reading(s) came within the timing uncertainty of an expiry and were shown but not judged (~)."
                ),
            );
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
                    r.time.clone(),
                    r.at_ms.to_string(),
                    r.actor.clone(),
                    cell(r.model_reply.as_deref()),
                    cell(r.real_reply.as_deref()),
                    row_mark(r).to_string(),
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
                    check_mark(k)
                ));
            }
            for u in &r.unsure {
                out.push_str(&format!("{}~ {u}\n", " ".repeat(indent)));
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

/// A row's mark: `~` when its timing could not be reproduced and nothing
/// that could be judged disagreed.
fn row_mark(r: &Row) -> &'static str {
    match r.ok() {
        Some(false) => "✗",
        _ if r.blind || r.checks.iter().any(|c| c.unsure) => "~",
        ok => mark(ok),
    }
}

fn check_mark(c: &Check) -> &'static str {
    if c.unsure { "~" } else { mark(Some(c.ok)) }
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
            time: "0 µs".into(),
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
                    unsure: false,
                })
                .collect(),
            unsure: vec![],
            blind: false,
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

    #[test]
    fn a_step_too_fine_for_real_time_is_neither_a_match_nor_a_mismatch() {
        let mut r = row(Some(false), &[true]);
        r.unsure.push("within the uncertainty".into());
        r.blind = true;
        // The reply is not judged; the reading still is.
        assert_eq!(r.ok(), Some(true));
        assert_eq!(row_mark(&r), "~");
        r.checks[0].ok = false;
        assert_eq!(r.ok(), Some(false));
        r.checks[0].unsure = true;
        assert_eq!(r.ok(), None);
    }
}
