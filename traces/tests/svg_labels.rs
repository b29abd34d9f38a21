//! The SVG's labels do not collide: in every gallery trace, no two upright
//! labels overlap, by the width estimate the layout itself uses.

use locklab_traces::svg::{LabelBox, label_boxes};
use locklab_traces::{Document, Trace};
use std::path::PathBuf;

fn gallery() -> Vec<(String, Trace)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/gallery/traces");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no gallery trace in {}", dir.display());
    files
        .into_iter()
        .flat_map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            let doc = Document::parse(&std::fs::read_to_string(&p).unwrap()).unwrap();
            doc.traces()
                .into_iter()
                .cloned()
                .map(move |t| (name.clone(), t))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every pair of overlapping labels, described.
fn collisions(boxes: &[LabelBox]) -> Vec<String> {
    let mut found = Vec::new();
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            if a.overlaps(b) {
                found.push(format!(
                    "{:?} ({:.0},{:.0}..{:.0},{:.0}) and {:?} ({:.0},{:.0}..{:.0},{:.0})",
                    a.text, a.x0, a.y0, a.x1, a.y1, b.text, b.x0, b.y0, b.x1, b.y1
                ));
            }
        }
    }
    found
}

#[test]
fn no_two_labels_overlap_in_any_gallery_picture() {
    let mut report = Vec::new();
    let mut labels = 0;
    for (name, t) in gallery() {
        let boxes = label_boxes(&t);
        labels += boxes.len();
        for c in collisions(&boxes) {
            report.push(format!("{name}: {c}"));
        }
    }
    assert!(
        labels > 1000,
        "only {labels} labels: the boxes are not recorded"
    );
    assert!(
        report.is_empty(),
        "{} label collisions:\n{}",
        report.len(),
        report.join("\n")
    );
}

#[test]
fn the_overlap_test_sees_an_overlap() {
    let b = |x0: f64, y0: f64| LabelBox {
        text: "x".into(),
        x0,
        y0,
        x1: x0 + 20.0,
        y1: y0 + 10.0,
    };
    assert!(b(0.0, 0.0).overlaps(&b(10.0, 5.0)));
    assert!(!b(0.0, 0.0).overlaps(&b(20.0, 0.0)), "touching is fine");
    assert!(!b(0.0, 0.0).overlaps(&b(0.0, 10.0)));
}

/// The width an SVG asks for, and the smallest font size it sets.
fn width_and_min_font(svg: &str) -> (f64, f64) {
    let num = |s: &str| -> f64 {
        let v: String = s.chars().take_while(|c| *c != '"').collect();
        v.parse().unwrap()
    };
    let head = svg.lines().find(|l| l.starts_with("<svg ")).expect("<svg>");
    let width = num(&head[head.find(" width=\"").unwrap() + 8..]);
    let min = svg
        .split("font-size=\"")
        .skip(1)
        .map(num)
        .fold(f64::INFINITY, f64::min);
    (width, min)
}

#[test]
fn the_embeddable_svg_keeps_text_readable_at_800_px() {
    use locklab_traces::Format;
    for (name, t) in gallery() {
        let svg = Format::SvgEmbed.render(&t, false);
        let (width, min) = width_and_min_font(&svg);
        // A code host shows an image at most as wide as its text column
        // (about 800 px): the text scales by 800 / width when it is wider.
        let shown = min * (800.0 / width).min(1.0);
        assert!(
            shown >= 11.0,
            "{name}: {min} px text at {width} px wide shows at {shown:.1} px"
        );
        // The full picture is what needs this: its text shrinks below 11 px.
        let (fw, fmin) = width_and_min_font(&Format::Svg.render(&t, false));
        assert!(
            fmin * 800.0 / fw < 11.0,
            "{name}: the full picture is readable too?"
        );
        let boxes = locklab_traces::svg::embed::label_boxes(&t);
        let c = collisions(&boxes);
        assert!(c.is_empty(), "{name}: embed collisions:\n{}", c.join("\n"));
        assert!(svg.contains(&t.invariant) && svg.ends_with("</svg>\n"));
    }
}
