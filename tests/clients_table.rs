//! docs/clients-table.md is what `locklab docs --clients` generates now:
//! every preset × fault cell is a search, and the committed page cannot
//! drift from the model.

mod common;
use common::{locklab, stderr, stdout};

#[test]
fn committed_clients_table_is_up_to_date() {
    let o = locklab(&["docs", "--clients", "--threads", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let now = stdout(&o);
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/clients-table.md"
    ))
    .expect("docs/clients-table.md");
    assert!(
        now == committed,
        "docs/clients-table.md is stale: regenerate it with\n  cargo run --release -- docs --clients > docs/clients-table.md\nand commit it"
    );
    // The cells tell the clients apart where the model says they differ.
    let header: Vec<String> = now
        .lines()
        .find(|l| l.starts_with("| preset |"))
        .expect("a header")
        .split('|')
        .map(|c| c.trim().to_string())
        .collect();
    let cell = |preset: &str, protocol: &str, column: &str| {
        let row = now
            .lines()
            .find(|l| l.starts_with(&format!("| `{preset}` | {protocol} |")))
            .unwrap_or_else(|| panic!("no row for {preset} on {protocol}"));
        let i = header.iter().position(|h| h == column).expect("a column");
        row.split('|').nth(i).expect("a cell").trim().to_string()
    };
    // Redisson up to 3.43 stops renewing after a lost renewal; 3.44 retries.
    assert_eq!(cell("redisson", "watchdog", "loss+slow"), "holds");
    assert!(cell("redisson@3.43", "watchdog", "loss+slow").starts_with("ME "));
    // python-redis-lock on redis-py 8.1: the transport re-sends the lost
    // renewal (--transport-retries 10), and the renewal thread never sees
    // the error that would stop it.
    assert_eq!(cell("python-redis-lock", "watchdog", "loss+slow"), "holds");
    // A failover: Redisson WAITs for its replica, python-redis-lock does not.
    assert_eq!(cell("redisson", "replicated", "failover"), "holds");
    assert!(cell("python-redis-lock", "replicated", "failover").starts_with("ME "));
    // A stale unlock under delay: a value per attempt (pottery) keeps
    // ownership, one reused across retries (redsync) does not.
    assert_eq!(cell("pottery", "redlock", "delay"), "holds");
    assert!(cell("redsync", "redlock", "delay").starts_with("OW "));
}
