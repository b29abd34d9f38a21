//! The committed gallery (docs/gallery) is what `locklab docs` generates
//! now: regenerated into a temporary directory and compared byte for byte,
//! file for file — its manifest (`.locklab-docs-manifest`, the list of
//! files `locklab docs` owns there) included.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.expect("readable").path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .expect("inside")
                    .to_string_lossy()
                    .to_string();
                out.insert(rel, std::fs::read(&p).expect("readable"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

#[test]
fn committed_gallery_is_up_to_date() {
    let committed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/gallery");
    let fresh = common::scratch("gallery");
    // As if an earlier run had written a page the gallery no longer has:
    // the manifest lists it, so it goes; the user's own file stays.
    std::fs::write(
        fresh.join(".locklab-docs-manifest"),
        "# an earlier run\nREADME.md\ngone.md\n",
    )
    .unwrap();
    std::fs::write(fresh.join("gone.md"), "old page").unwrap();
    std::fs::write(fresh.join("notes.txt"), "mine").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["docs", "--out"])
        .arg(fresh.path())
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "locklab docs failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !fresh.join("gone.md").exists(),
        "a file the old manifest listed and the gallery no longer has is removed"
    );
    assert_eq!(
        std::fs::read_to_string(fresh.join("notes.txt")).unwrap(),
        "mine",
        "a file locklab docs did not write is left alone"
    );
    std::fs::remove_file(fresh.join("notes.txt")).unwrap();
    let want = files(&fresh);
    let have = files(&committed);
    let regenerate =
        "regenerate it with `cargo run --release -- docs --out docs/gallery` and commit the result";
    let missing: Vec<&String> = want.keys().filter(|k| !have.contains_key(*k)).collect();
    let extra: Vec<&String> = have.keys().filter(|k| !want.contains_key(*k)).collect();
    let stale: Vec<&String> = want
        .iter()
        .filter(|(k, v)| have.get(*k).is_some_and(|h| h != *v))
        .map(|(k, _)| k)
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty() && stale.is_empty(),
        "docs/gallery is stale ({regenerate}):\n  missing: {missing:?}\n  no longer generated: {extra:?}\n  different: {stale:?}"
    );
    assert!(want.contains_key("README.md"), "the gallery has an index");
    let manifest = String::from_utf8(want[".locklab-docs-manifest"].clone()).unwrap();
    let listed: Vec<&str> = manifest.lines().filter(|l| !l.starts_with('#')).collect();
    let written: Vec<&str> = want
        .keys()
        .map(String::as_str)
        .filter(|k| *k != ".locklab-docs-manifest")
        .collect();
    assert_eq!(listed, written, "the manifest lists every generated file");
}
