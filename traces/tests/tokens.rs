//! Fencing tokens are drawn wherever a trace records them. The trace is
//! the hand-built lost update of `common`, with tokens written into its
//! states: the renderers read only the trace.

mod common;

use locklab_traces::{Format, Trace};

fn trace_with_tokens() -> Trace {
    let mut t = common::lost_update();
    // Each client holds the token of its acquisition (c1: 1, c2: 2) while
    // it holds the lock; the resource remembers the highest it has seen.
    for st in &mut t.steps {
        for c in &mut st.state.clients {
            if c.holds {
                c.token = Some(if c.id == "c1" { 1 } else { 2 });
            }
        }
        if st.state.resource.accepted_writes > 0 {
            st.state.resource.max_token = Some(2);
        }
    }
    t
}

#[test]
fn tokens_are_drawn() {
    let t = trace_with_tokens();
    let svg = Format::Svg.render(&t, false);
    assert!(
        svg.contains(">token 1</text>"),
        "c1's token at its acquisition"
    );
    assert!(
        svg.contains(">token 2</text>"),
        "c2's token at its acquisition"
    );
    assert!(svg.contains("max token 2"), "the resource's highest token");
    let story = Format::Story.render(&t, false);
    assert!(story.contains("acquires the lock with token 1"), "{story}");
    let html = Format::Html.render(&t, false);
    assert!(
        html.contains("\"max_token\":2"),
        "the viewer has the resource's token"
    );
}
