//! The HTML viewer in a real browser: headless Chromium driven through
//! chromedriver's WebDriver HTTP API (plain TCP, no extra crates). It
//! checks that the page loads with no console error and that stepping
//! forward — with the arrow key, the button and the slider's end — changes
//! the state the page displays.
//!
//! `.ci/run` installs Debian's `chromium` and `chromium-driver`. Without
//! them the test fails in CI (`CI=true`) and is skipped elsewhere, with a
//! `SKIPPED:` line naming the packages (tests/common).

mod common;

use common::{CHROMEDRIVER, CHROMIUM};
use locklab_models::search::{SearchOptions, search};
use locklab_models::{Budgets, FaultKind, Invariant, LockModel, Params, protocols, trace};
use locklab_traces::{Document, Format};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One HTTP exchange with chromedriver.
fn http(port: u16, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(60))).ok();
    s.set_write_timeout(Some(Duration::from_secs(10))).ok();
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
        payload.len()
    );
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    // chromedriver keeps connections alive: read the header, then exactly
    // the body it announces.
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let got = s.read(&mut buf).map_err(|e| e.to_string())?;
        if got == 0 {
            return Err("connection closed before the header ended".into());
        }
        raw.extend_from_slice(&buf[..got]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_string();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .ok_or_else(|| format!("no Content-Length in {head}"))?;
    let mut body = raw[head_end + 4..].to_vec();
    while body.len() < length {
        let got = s.read(&mut buf).map_err(|e| e.to_string())?;
        if got == 0 {
            return Err("connection closed before the body ended".into());
        }
        body.extend_from_slice(&buf[..got]);
    }
    let body = String::from_utf8_lossy(&body[..length]).to_string();
    let v: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
    if head.starts_with("HTTP/1.1 2") {
        Ok(v)
    } else {
        Err(format!("{method} {path}: {head}: {body}"))
    }
}

struct Driver {
    child: Child,
    port: u16,
    session: String,
    profile: PathBuf,
}

impl Driver {
    fn start(chromium: &Path, chromedriver: &Path) -> Driver {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let deadline = Instant::now() + Duration::from_secs(20);
        while http(port, "GET", "/status", None).is_err() {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not answer on port {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = std::env::temp_dir().join(format!("locklab-chromium-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&profile);
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {
                "binary": chromium.to_string_lossy(),
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--window-size=1400,1000",
                    format!("--user-data-dir={}", profile.display()),
                ]
            }
        }}});
        let mut driver = Driver {
            child,
            port,
            session: String::new(),
            profile,
        };
        let v = http(port, "POST", "/session", Some(&caps)).expect("a browser session");
        driver.session = v["value"]["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        driver
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let p = format!("/session/{}{path}", self.session);
        http(self.port, method, &p, body.as_ref()).unwrap_or_else(|e| panic!("{e}"))["value"]
            .clone()
    }

    fn open(&self, file: &Path) {
        self.call(
            "POST",
            "/url",
            Some(json!({"url": format!("file://{}", file.display())})),
        );
    }

    fn eval(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    /// Presses a key (a WebDriver key code) as a user would.
    fn key(&self, code: &str) {
        self.call(
            "POST",
            "/actions",
            Some(
                json!({"actions": [{"type": "key", "id": "keyboard", "actions": [
                    {"type": "keyDown", "value": code}, {"type": "keyUp", "value": code}
                ]}]}),
            ),
        );
    }

    fn click(&self, css: &str) {
        let el = self.call(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        let id = el
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(|v| v.as_str())
            .expect("an element id")
            .to_string();
        self.call("POST", &format!("/element/{id}/click"), Some(json!({})));
    }

    /// Console messages since the last call, as (level, message).
    fn console(&self) -> Vec<(String, String)> {
        self.call("POST", "/se/log", Some(json!({"type": "browser"})))
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|e| {
                (
                    e["level"].as_str().unwrap_or("").to_string(),
                    e["message"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    /// What the state panel shows.
    fn shown(&self) -> String {
        self.eval(
            "return ['ll-position','ll-invariant','ll-caption','ll-clients','ll-servers','ll-resource','ll-network']
               .map(function (id) { return document.getElementById(id).textContent; }).join(' | ');",
        )
        .as_str()
        .expect("text")
        .to_string()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = http(
                self.port,
                "DELETE",
                &format!("/session/{}", self.session),
                None,
            );
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

const ARROW_RIGHT: &str = "\u{E014}";
const END: &str = "\u{E010}";
const HOME: &str = "\u{E011}";

#[test]
fn html_viewer_steps_through_states_without_console_errors() {
    if !common::require(
        "browser::html_viewer_steps_through_states_without_console_errors",
        &[CHROMIUM, CHROMEDRIVER],
    ) {
        return;
    }
    let chromium = common::find(CHROMIUM).expect("require found it");
    let chromedriver = common::find(CHROMEDRIVER).expect("require found it");

    // The viewer of a real counterexample, searched for, written out, read
    // back and replayed through the model first: a paused lua-release
    // holder writes after its key expired and a second holder wrote.
    let proto = protocols::by_name("lua-release").expect("known protocol");
    let mut p = Params::defaults(proto);
    p.faults = Budgets::none();
    p.faults.set(FaultKind::Pause, 1);
    let m = LockModel::new(proto, p).expect("valid parameters");
    let inv = Invariant::NoLostUpdate;
    let r = search(
        &m,
        &SearchOptions {
            subsume_budgets: true,
            invariants: vec![inv],
            max_states: None,
            max_depth: None,
            symmetry: true,
            threads: 1,
            spill: None,
        },
    );
    let path = r.violations.get(&inv).expect("lua-release loses an update");
    let built = trace::build(&m, path, inv, "check", None).expect("builds");
    let t = match Document::parse(&built.to_json()) {
        Ok(Document::Trace(t)) => *t,
        other => panic!("not a trace: {other:?}"),
    };
    trace::validate(&t).expect("replays");
    let dir = common::scratch("browser");
    let page = dir.join("viewer.html");
    std::fs::write(&page, Format::Html.render(&t, false)).unwrap();
    let probe = dir.join("probe.html");
    std::fs::write(
        &probe,
        "<!doctype html><html><head><link rel=\"icon\" href=\"data:,\"></head><body><script>console.error('locklab-probe')</script></body></html>",
    )
    .unwrap();

    let d = Driver::start(&chromium, &chromedriver);

    // The console check can fail: a page that logs an error is caught.
    d.open(&probe);
    let probe_log = d.console();
    assert!(
        probe_log
            .iter()
            .any(|(level, m)| level == "SEVERE" && m.contains("locklab-probe")),
        "the console log does not see errors: {probe_log:?}"
    );

    d.open(&page);
    let n = t.steps.len();
    let v = t.violation_step;
    // With no step in its address the viewer opens where the invariant
    // breaks, and the address names that step.
    let opened = d.shown();
    assert!(opened.starts_with(&format!("step {v} of {n}")), "{opened}");
    assert!(opened.contains("no_lost_update: BROKEN"), "{opened}");
    assert_eq!(d.eval("return location.hash;"), json!(format!("#step={v}")));

    d.key(HOME);
    let first = d.shown();
    assert!(
        first.starts_with(&format!("step 0 of {n} · t=0")),
        "{first}"
    );
    assert!(first.contains("holds so far"), "{first}");
    assert!(first.contains("nothing in flight"), "{first}");

    // The arrow key steps forward: c1 sends its SET.
    d.key(ARROW_RIGHT);
    let second = d.shown();
    assert!(second.starts_with(&format!("step 1 of {n}")), "{second}");
    assert_ne!(
        first, second,
        "stepping forward changed nothing on the page"
    );
    assert!(
        second.contains("c1 → redis: SET lock c1#1 NX PX 30000"),
        "{second}"
    );
    let highlighted =
        d.eval("return document.querySelector('.ll-row.current').getAttribute('data-step');");
    assert_eq!(
        highlighted,
        json!("1"),
        "the diagram highlights the current step"
    );
    assert_eq!(
        d.eval("return location.hash;"),
        json!("#step=1"),
        "the address follows the step"
    );

    // The button steps forward too: redis now stores c1's key, its TTL
    // counted from the moment the SET ran.
    d.click("#ll-next");
    let third = d.shown();
    assert!(third.starts_with(&format!("step 2 of {n}")), "{third}");
    assert!(third.contains("c1#1 (c1) · 30 s left"), "{third}");

    // At the end the invariant is broken and the update lost.
    d.key(END);
    let last = d.shown();
    assert!(last.starts_with(&format!("step {n} of {n}")), "{last}");
    assert!(last.contains("no_lost_update: BROKEN"), "{last}");
    assert!(last.contains("1 update(s) lost"), "{last}");
    let slider = d.eval("return document.getElementById('ll-slider').value;");
    assert_eq!(slider, json!(n.to_string()));

    // The picture fits the window; the 1:1 button draws it at its size.
    let width = |css: &str, of: &str| {
        d.eval(&format!(
            "return Math.round(document.querySelector('{css}'){of});"
        ))
    };
    let column = width(".diagram", ".clientWidth");
    assert_eq!(
        width(".diagram svg", ".getBoundingClientRect().width"),
        column
    );
    d.click("#ll-zoom");
    assert_eq!(
        width(".diagram svg", ".getBoundingClientRect().width"),
        width(".diagram svg", ".getAttribute('width')"),
        "1:1 draws the picture at its own width"
    );

    // A link to a step opens there (a fresh load, from another page).
    d.call("POST", "/url", Some(json!({"url": "about:blank"})));
    d.call(
        "POST",
        "/url",
        Some(json!({"url": format!("file://{}#step=2", page.display())})),
    );
    let linked = d.shown();
    assert!(linked.starts_with(&format!("step 2 of {n}")), "{linked}");

    let errors: Vec<(String, String)> = d
        .console()
        .into_iter()
        .filter(|(level, _)| level == "SEVERE" || level == "WARNING")
        .collect();
    assert!(errors.is_empty(), "the viewer logged: {errors:?}");
    drop(d);
}
