//! stateright's Explorer over the zone graph.
//!
//! The world holds no time (design: `docs/model.md`), so
//! [`LockModel`] itself is not a `stateright::Model`: a world alone does not
//! say which steps are possible. [`ZoneModel`] is: its states are the zone
//! engine's symbolic states ([`ZState`]: a world and the zone of its clock
//! values, `engine/zone.rs`), and its actions are a step together with the
//! answers its timing questions took, exactly the successors
//! [`LockModel::successors`] lists (same order, so stateright's action
//! indices are stable) and [`LockModel::follow`] rebuilds.
//!
//! The Explorer (stateright 0.31, `src/checker/explorer.rs`) asks for
//! `actions`, `next_state`, `format_action` and `format_step`; the
//! invariants of the model are its `properties`.

use crate::action::Action;
use crate::engine::zone::ZState;
use crate::invariants::Invariant;
use crate::model::LockModel;
use crate::world::World;

/// A step of the zone graph: the action and the answers to its timing
/// questions (`true` = "yes", in the order the rules asked them).
pub type ZAction = (Action, Vec<bool>);

/// A [`LockModel`] seen as a `stateright::Model` over zone states.
#[derive(Clone, Debug)]
pub struct ZoneModel(pub LockModel);

fn answers_text(answers: &[bool]) -> String {
    if answers.is_empty() {
        return String::new();
    }
    let a: Vec<&str> = answers
        .iter()
        .map(|&y| if y { "yes" } else { "no" })
        .collect();
    format!(" [timing: {}]", a.join(", "))
}

macro_rules! prop {
    ($name:ident, $inv:expr) => {
        fn $name(m: &ZoneModel, s: &ZState) -> bool {
            $inv.holds_in(&m.0, s)
        }
    };
}
prop!(prop_me, Invariant::MutualExclusion);
prop!(prop_ownership, Invariant::Ownership);
prop!(prop_lost, Invariant::NoLostUpdate);
prop!(prop_token, Invariant::TokenMonotonic);
prop!(prop_orphan, Invariant::NoOrphanLock);
prop!(prop_oversell, Invariant::NoOversell);
prop!(prop_duplicate, Invariant::NoDuplicateEffect);
prop!(prop_detected, Invariant::DetectedWithin);
prop!(prop_validity, Invariant::WithinValidity);

impl ZoneModel {
    /// The readable form of a state: the world and its zone (clock `xi`
    /// is the i-th clock of the world's walk order, in µs).
    pub fn describe(&self, s: &ZState) -> String {
        let w: &World = &s.world;
        format!("{w:#?}\nzone (µs): {}", s.zone)
    }
}

impl stateright::Model for ZoneModel {
    type State = ZState;
    type Action = ZAction;

    fn init_states(&self) -> Vec<ZState> {
        vec![self.0.zinit()]
    }

    fn actions(&self, state: &ZState, actions: &mut Vec<ZAction>) {
        let mut out = Vec::new();
        self.0.successors(state, &mut out);
        actions.extend(out.into_iter().map(|s| (s.action, s.answers)));
    }

    fn next_state(&self, last: &ZState, action: ZAction) -> Option<ZState> {
        self.0.follow(last, &action.0, &action.1)
    }

    fn format_action(&self, action: &ZAction) -> String {
        format!(
            "{}{}",
            crate::trace::action_text(&action.0),
            answers_text(&action.1)
        )
    }

    fn format_step(&self, last: &ZState, action: ZAction) -> Option<String> {
        self.next_state(last, action).map(|s| self.describe(&s))
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        self.0
            .properties
            .iter()
            .map(|i| {
                let f: fn(&ZoneModel, &ZState) -> bool = match i {
                    Invariant::MutualExclusion => prop_me,
                    Invariant::Ownership => prop_ownership,
                    Invariant::NoLostUpdate => prop_lost,
                    Invariant::TokenMonotonic => prop_token,
                    Invariant::NoOrphanLock => prop_orphan,
                    Invariant::NoOversell => prop_oversell,
                    Invariant::NoDuplicateEffect => prop_duplicate,
                    Invariant::DetectedWithin => prop_detected,
                    Invariant::WithinValidity => prop_validity,
                };
                stateright::Property::always(i.name(), f)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stateright::Model;

    #[test]
    fn explorer_actions_follow_the_zone_successors() {
        let proto = crate::protocols::by_name("get-del").expect("get-del exists");
        let m = LockModel::new(proto, crate::Params::defaults(proto)).expect("defaults are valid");
        let z = ZoneModel(m);
        let init = z.init_states().remove(0);
        let mut acts = Vec::new();
        z.actions(&init, &mut acts);
        assert!(!acts.is_empty());
        for a in acts {
            let next = z
                .next_state(&init, a.clone())
                .expect("listed step is followable");
            assert_ne!(next, init, "{}", z.format_action(&a));
        }
    }
}
