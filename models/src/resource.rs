//! The protected resource: a counter that each critical section increments
//! by read-modify-write (read at entry, write `read + 1` after the work).
//!
//! When the protocol fences, the resource keeps the highest token it has
//! seen and checks tokens where `--resource-check` says (`write` is the
//! article's form, `read-write` also fences reads), comparing as
//! `--token-rule` says (`ge`: accept `token >= max`; `gt`: accept
//! `token > max`). The check and the update are one atomic step, as a
//! conditional `UPDATE ... WHERE fence <= ?` is. A rejected operation is
//! reported back: the client learns it is stale and abandons its critical
//! section.

use crate::client::Ctx;
use crate::ev;
use crate::params::{ResourceCheck, TokenRule};
use locklab_traces::EventKind;

/// Whether the resource accepts an operation carrying `token`.
fn admits(x: &Ctx, token: Option<u16>) -> bool {
    let Some(t) = token else { return true };
    match x.w.resource.max_token {
        None => true,
        Some(max) => match x.m.params.token_rule {
            TokenRule::Ge => t >= max,
            TokenRule::Gt => t > max,
        },
    }
}

fn raise(x: &mut Ctx, token: Option<u16>) {
    if let Some(t) = token {
        let r = &mut x.w.resource;
        r.max_token = Some(r.max_token.map_or(t, |m| m.max(t)));
    }
}

/// Client `c` reads the resource on entering its critical section. Returns
/// false if a fenced read was rejected.
pub fn read(x: &mut Ctx, c: u8) -> bool {
    let token = x.w.clients[c as usize].token;
    let fenced = token.is_some() && x.m.params.resource_check == ResourceCheck::ReadWrite;
    if fenced {
        if !admits(x, token) {
            ev!(
                x.log,
                EventKind::Reject,
                "resource".to_string(),
                Some(x.w.client_name(c)),
                "rejects {}'s read: token {} is stale (highest seen {})",
                x.w.client_name(c),
                token.unwrap_or(0),
                x.w.resource.max_token.unwrap_or(0)
            );
            return false;
        }
        raise(x, token);
    }
    let v = x.w.resource.value;
    x.w.clients[c as usize].read = Some(v);
    ev!(
        x.log,
        EventKind::Read,
        x.w.client_name(c),
        Some("resource".to_string()),
        "reads the resource: {v}{}",
        if fenced {
            format!(" (token {} checked)", token.unwrap_or(0))
        } else {
            String::new()
        }
    );
    true
}

/// Client `c` writes `read + 1`; then its critical section is over.
pub fn write(x: &mut Ctx, c: u8) {
    let cl = &x.w.clients[c as usize];
    let token = cl.token;
    let new = cl.read.unwrap_or(0).saturating_add(1);
    let fenced = token.is_some() && x.m.params.resource_check != ResourceCheck::None;
    if fenced && !admits(x, token) {
        ev!(
            x.log,
            EventKind::Reject,
            "resource".to_string(),
            Some(x.w.client_name(c)),
            "rejects {}'s write of {new}: token {} is stale (highest seen {})",
            x.w.client_name(c),
            token.unwrap_or(0),
            x.w.resource.max_token.unwrap_or(0)
        );
    } else {
        if fenced {
            raise(x, token);
        }
        let r = &mut x.w.resource;
        r.value = new;
        r.accepted = r.accepted.saturating_add(1);
        ev!(
            x.log,
            EventKind::Write,
            x.w.client_name(c),
            Some("resource".to_string()),
            "writes {new} (read + 1){}",
            if fenced {
                format!(" with token {}", token.unwrap_or(0))
            } else {
                String::new()
            }
        );
    }
    x.leave(c);
}
