//! A protocol's own words. The `queue` protocol is modelled by the fencing
//! rules (a coordinator's exclusive assignment on a heartbeated session,
//! with a monotonic number), but its traces speak of what it is: a
//! partition assigned to one consumer of a group, heartbeats, evictions,
//! rebalances and generations (epochs). Every text a trace shows for such
//! a protocol (events, messages, the violation, the story, the diagrams)
//! goes through [`speak`].

/// `(lock-service words, queue words)`, longest first where one contains
/// another. Replaced at word boundaries.
const QUEUE: &[(&str, &str)] = &[
    ("open session / grant lease", "join the consumer group"),
    ("session alive: true", "in the group: true"),
    ("session alive: false", "in the group: false (evicted)"),
    (
        "learns its session expired; the heartbeat stops (the lock holder is not told)",
        "learns it was evicted from the group; its heartbeat stops (its processing is not told)",
    ),
    (
        "session expires: its lock entries are deleted",
        "heartbeats stopped: evicted from the group, its partition is rebalanced",
    ),
    ("its session expired", "it was evicted from the group"),
    (
        "the lock is held by someone else",
        "the partition is assigned to another consumer",
    ),
    ("close session", "leave the group"),
    ("keepalive", "heartbeat"),
    ("LOCK", "ASSIGN partition"),
    ("busy", "assigned to another consumer"),
    ("acquires the lock", "is assigned the partition"),
    ("acquiring the lock", "joining the group"),
    ("releasing the lock", "leaving the group"),
    ("releases the lock", "gives the partition back"),
    (
        "believe they hold the lock",
        "believe they own the partition",
    ),
    (
        "believes it holds the lock",
        "believes it owns the partition",
    ),
    (
        "believing it still holds the lock",
        "believing it still owns the partition",
    ),
    ("still believes it holds it", "still believes it owns it"),
    ("holds the lock", "owns the partition"),
    ("hold the lock", "own the partition"),
    ("holding the lock", "owning the partition"),
    ("the lock service", "the group coordinator"),
    ("lock expires", "assignment lapses (a rebalance)"),
    ("lock entries", "assignments"),
    ("the lock", "the partition"),
    ("session", "group membership"),
    ("tokens", "generations"),
    ("token", "generation"),
];

fn boundary(c: Option<char>) -> bool {
    c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
}

/// `text` in `protocol`'s own words (unchanged for a protocol that has
/// none of its own).
pub fn speak(protocol: &str, text: &str) -> String {
    let table = match protocol {
        "queue" => QUEUE,
        _ => return text.to_string(),
    };
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    'scan: while i < text.len() {
        let before = text[..i].chars().next_back();
        if boundary(before) {
            for (from, to) in table {
                if text[i..].starts_with(from) && boundary(text[i + from.len()..].chars().next()) {
                    out.push_str(to);
                    i += from.len();
                    continue 'scan;
                }
            }
        }
        let c = text[i..].chars().next().expect("inside the text");
        out.push(c);
        i += c.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_speaks_of_partitions_and_generations() {
        assert_eq!(
            speak("queue", "c1 acquires the lock with token 1"),
            "c1 is assigned the partition with generation 1"
        );
        assert_eq!(
            speak("queue", "LOCK -> token 3"),
            "ASSIGN partition -> generation 3"
        );
        // Whole words only: a BLOCK is no LOCK, tokenizer no token.
        assert_eq!(speak("queue", "BLOCK tokenizer"), "BLOCK tokenizer");
        assert_eq!(speak("fencing", "LOCK -> token 3"), "LOCK -> token 3");
    }
}
