//! The machine-readable outputs: the committed JSON Schemas match the
//! types that write the documents, real documents conform to them, and
//! `trace render --format itf` is ITF that the `itf` crate reads back.

mod common;

use common::{locklab, scratch, stderr, stdout};
use std::path::{Path, PathBuf};

const SCHEMAS: [&str; 5] = [
    "trace.schema.json",
    "check-report.schema.json",
    "simulation.schema.json",
    "audit-report.schema.json",
    "check-shard.schema.json",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("JSON")
}

/// The committed schema `name`, compiled.
fn validator(name: &str) -> jsonschema::Validator {
    let schema = json(&read(&repo().join("docs/schemas").join(name)));
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{name} is not a schema: {e}"))
}

/// Every way `doc` (named `what`) breaks the schema, for a message.
fn conform(v: &jsonschema::Validator, what: &str, doc: &serde_json::Value) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .take(5)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} breaks its schema:\n{}",
        errors.join("\n")
    );
}

#[test]
fn committed_schemas_are_the_generated_ones() {
    let dir = scratch("schemas");
    let o = locklab(&["schema", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for name in SCHEMAS {
        let fresh = read(&dir.join(name));
        let committed = repo().join("docs/schemas").join(name);
        let old = std::fs::read_to_string(&committed).unwrap_or_default();
        assert!(
            old == fresh,
            "docs/schemas/{name} is stale: the types that write it changed. Regenerate the schemas with\n  cargo run --release -- schema --out docs/schemas\nand commit them"
        );
    }
    // One schema by name, on standard output.
    let o = locklab(&["schema", "trace"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), read(&dir.join("trace.schema.json")));
}

#[test]
fn schema_rejects_bad_input() {
    common::rejects(&["schema"], "required");
    common::rejects(&["schema", "nonsense"], "invalid value");
    let dir = scratch("schema-file");
    let file = dir.join("plain");
    std::fs::write(&file, "x").unwrap();
    common::rejects(
        &["schema", "--out", file.join("sub").to_str().unwrap()],
        "not a directory",
    );
}

#[test]
fn real_documents_conform_to_the_schemas() {
    let (trace, report, summary) = (
        validator("trace.schema.json"),
        validator("check-report.schema.json"),
        validator("simulation.schema.json"),
    );
    let dir = scratch("conform");

    // A check report with counterexamples, and each of its traces.
    let o = locklab(&["check", "naive-del", "--no-fault-analysis", "--json", "-"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let doc = json(&stdout(&o));
    conform(&report, "check naive-del --json", &doc);
    let traces = doc["traces"].as_array().expect("traces");
    assert!(!traces.is_empty());
    for t in traces {
        conform(&trace, "a trace of check naive-del", t);
    }

    // A simulation summary and the traces simulate writes.
    let o = locklab(&[
        "simulate",
        "lua-release",
        "--pause-p99",
        "20s",
        "--runs",
        "300",
        "--json",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    conform(&summary, "simulate --json", &json(&stdout(&o)));
    let mut written = 0;
    for e in std::fs::read_dir(&*dir).unwrap() {
        let p = e.unwrap().path();
        conform(&trace, &p.display().to_string(), &json(&read(&p)));
        written += 1;
    }
    assert!(written > 0, "simulate wrote no trace");

    // A shard of `check all`, and a shard of a swarm.
    let shard = validator("check-shard.schema.json");
    for args in [
        &[
            "check",
            "all",
            "--faults",
            "none",
            "--max-states",
            "3000",
            "--shard",
            "2/3",
        ][..],
        &[
            "check",
            "naive-del",
            "--swarm",
            "2",
            "--max-states",
            "3000",
            "--shard",
            "1/2",
        ][..],
    ] {
        let mut a = args.to_vec();
        a.extend(["--json", "-"]);
        let o = locklab(&a);
        assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{}", stderr(&o));
        conform(&shard, &args.join(" "), &json(&stdout(&o)));
    }

    // An audit report.
    let audit = validator("audit-report.schema.json");
    let o = locklab(&[
        "audit",
        &repo()
            .join("examples/watchdog-long-renewal.toml")
            .display()
            .to_string(),
        "--json",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let doc = json(&stdout(&o));
    conform(&audit, "audit --json", &doc);
    let mut bare = doc.clone();
    bare.as_object_mut().unwrap().remove("checklist");
    assert!(
        !audit.is_valid(&bare),
        "an audit without its checklist passed"
    );

    // Every gallery trace.
    for e in std::fs::read_dir(repo().join("docs/gallery/traces")).unwrap() {
        let p = e.unwrap().path();
        conform(&trace, &p.display().to_string(), &json(&read(&p)));
    }

    // And the schemas are not vacuous: a trace without its steps fails.
    let mut broken = traces[0].clone();
    broken.as_object_mut().unwrap().remove("steps");
    assert!(!trace.is_valid(&broken), "a trace without steps passed");
}

/// Whether `v` holds no plain JSON number (ITF integers are `#bigint`).
fn no_bare_numbers(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Number(_) => false,
        serde_json::Value::Array(a) => a.iter().all(no_bare_numbers),
        serde_json::Value::Object(o) => o.values().all(no_bare_numbers),
        _ => true,
    }
}

/// The state of an ITF trace as locklab writes it, decoded with the `itf`
/// crate (big integers, maps, sets and Quint options included).
#[derive(serde::Deserialize, Debug)]
struct ItfState {
    step: i64,
    time_us: i64,
    time_exact_us: String,
    actor: String,
    action: String,
    #[serde(with = "itf::de::As::<itf::de::Option<_>>")]
    message: Option<ItfMessage>,
    events: Vec<ItfEvent>,
    clients: std::collections::BTreeMap<String, ItfClient>,
    servers: std::collections::BTreeMap<String, ItfServer>,
    resource: ItfResource,
    network: Vec<ItfMessage>,
    faults_left: std::collections::BTreeMap<String, i64>,
    violations: std::collections::BTreeSet<String>,
    invariant_broken: bool,
}

#[derive(serde::Deserialize, Debug)]
#[allow(dead_code)]
struct ItfMessage {
    from: String,
    to: String,
    text: String,
    held: bool,
    age_us: i64,
}

#[derive(serde::Deserialize, Debug)]
#[allow(dead_code)]
struct ItfEvent {
    kind: String,
    at: String,
    #[serde(with = "itf::de::As::<itf::de::Option<_>>")]
    peer: Option<String>,
    text: String,
}

#[derive(serde::Deserialize, Debug)]
#[allow(dead_code)]
struct ItfClient {
    phase: String,
    holds: bool,
    alive: bool,
    #[serde(with = "itf::de::As::<itf::de::Option<_>>")]
    paused_us: Option<i64>,
    #[serde(with = "itf::de::As::<itf::de::Option<_>>")]
    value: Option<String>,
    #[serde(with = "itf::de::As::<itf::de::Option<_>>")]
    token: Option<i64>,
    #[serde(with = "itf::de::As::<itf::de::Option<_>>")]
    read: Option<i64>,
    #[serde(with = "itf::de::As::<itf::de::Option<_>>")]
    believed_lease_us: Option<i64>,
    clock_offset_us: i64,
    #[serde(with = "itf::de::As::<itf::de::Option<_>>")]
    watchdog: Option<String>,
    acquisitions_done: i64,
    service_holds: bool,
    service_votes: i64,
    #[serde(with = "itf::de::As::<itf::de::Option<_>>")]
    service_ttl_us: Option<i64>,
}

#[derive(serde::Deserialize, Debug)]
#[allow(dead_code)]
struct ItfServer {
    role: String,
    status: String,
    clock_offset_us: i64,
    entries: std::collections::BTreeMap<String, ItfEntry>,
    unreplicated: Vec<String>,
    watches: std::collections::BTreeSet<String>,
}

#[derive(serde::Deserialize, Debug)]
#[allow(dead_code)]
struct ItfEntry {
    value: String,
    #[serde(with = "itf::de::As::<itf::de::Option<_>>")]
    owner: Option<String>,
    #[serde(with = "itf::de::As::<itf::de::Option<_>>")]
    ttl_us: Option<i64>,
    expired: bool,
}

#[derive(serde::Deserialize, Debug)]
#[allow(dead_code)]
struct ItfResource {
    value: i64,
    accepted_writes: i64,
    #[serde(with = "itf::de::As::<itf::de::Option<_>>")]
    max_token: Option<i64>,
    #[serde(with = "itf::de::As::<itf::de::Option<_>>")]
    stock: Option<i64>,
}

#[test]
fn itf_reads_back_with_the_itf_crate() {
    let gallery = repo().join("docs/gallery/traces");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&gallery)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for file in &files {
        let f = file.to_str().unwrap();
        let o = locklab(&["trace", "render", f, "--format", "itf"]);
        assert_eq!(o.status.code(), Some(0), "{f}: {}", stderr(&o));
        let text = stdout(&o);
        let t: serde_json::Value = json(&read(file));
        let steps = t["steps"].as_array().unwrap();

        // The ITF frame: #meta, vars, a state per step plus the initial one,
        // each with its index, and every integer a #bigint. (The generic
        // `itf::Value` of itf 0.4 cannot take an empty record, which Quint
        // writes for `None` too, so the typed decoding below is the check.)
        let doc = json(&text);
        assert_eq!(doc["#meta"]["format"], "ITF", "{f}");
        let vars: Vec<&str> = doc["vars"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let states = doc["states"].as_array().unwrap();
        assert_eq!(states.len(), steps.len() + 1, "{f}");
        for s in states {
            let mut keys: Vec<&str> = s
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .filter(|k| *k != "#meta")
                .collect();
            keys.sort();
            let mut want = vars.clone();
            want.sort();
            assert_eq!(keys, want, "{f}: every state has exactly the vars");
            let mut body = s.clone();
            body.as_object_mut().unwrap().remove("#meta");
            assert!(no_bare_numbers(&body), "{f}: a bare JSON number in {body}");
        }

        // Typed: every variable has the type the module documents.
        let typed = itf::trace_from_str::<ItfState>(&text)
            .unwrap_or_else(|e| panic!("{f}: ITF of the wrong shape: {e}"));
        for (i, s) in typed.states.iter().enumerate() {
            assert_eq!(s.meta.index, Some(i as u64), "{f}");
            assert_eq!(s.value.step, i as i64, "{f}");
        }
        let last_step = t["violation_step"].as_u64().unwrap() as usize;
        for (s, step) in typed.states[1..].iter().zip(steps) {
            let v = &s.value;
            assert_eq!(v.actor, step["actor"].as_str().unwrap(), "{f}");
            assert_eq!(v.action, step["label"].as_str().unwrap(), "{f}");
            assert_eq!(v.time_exact_us, step["at_us"].as_str().unwrap(), "{f}");
            // Whole microseconds, and the true time in ms within one µs.
            let ms = step["time"].as_f64().unwrap();
            assert!(
                ((v.time_us as f64) - ms * 1000.0).abs() <= 1.0,
                "{f}: {v:?}"
            );
            assert_eq!(v.events.len(), step["events"].as_array().unwrap().len());
            assert_eq!(
                v.clients.len(),
                step["state"]["clients"].as_array().unwrap().len()
            );
            assert_eq!(
                v.servers.len(),
                step["state"]["servers"].as_array().unwrap().len()
            );
            assert_eq!(
                v.network.len(),
                step["state"]["network"].as_array().unwrap().len()
            );
            assert_eq!(
                v.resource.value,
                step["state"]["resource"]["value"].as_i64().unwrap()
            );
            assert_eq!(
                v.message.is_some(),
                !step["message"].is_null(),
                "{f}: step {}",
                v.step
            );
            let _ = (&v.faults_left, &v.violations);
        }
        let broken = &typed.states[last_step].value;
        assert!(broken.invariant_broken, "{f}: step {last_step}");
        assert!(
            broken.violations.contains(t["invariant"].as_str().unwrap()),
            "{f}"
        );
        assert!(!typed.states[0].value.invariant_broken, "{f}");
    }
}

#[test]
fn check_writes_itf_files_into_out_dir() {
    let dir = scratch("itf-out");
    let o = locklab(&[
        "check",
        "naive-del",
        "--no-fault-analysis",
        "--invariants",
        "mutual_exclusion",
        "--format",
        "itf",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let itf = dir.join("naive-del.mutual_exclusion.itf.json");
    let t = itf::trace_from_str::<ItfState>(&read(&itf)).expect("ITF");
    assert!(t.states.last().unwrap().value.invariant_broken);
}
